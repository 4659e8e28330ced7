//! [`StreamTables`]: tables whose rows a program gives as DataStreams (the `sluice` crate's
//! `TableEnv::from_data_stream`, Flink's `StreamTableEnvironment.fromDataStream`), and
//! [`Translation`], what a plan's translation reads besides the plan.
//!
//! Such a table is in the session's catalog like any other (its schema, maybe its watermark),
//! so the planner plans its `TableSourceScan` as usual; the translator takes the table's rows
//! from here instead of a connector. Its rows are made per translation (each scan gets its
//! own conversion operator, named and uid'd after the plan node), so one program stream can
//! feed several SQL jobs of the same environment.
//!
//! A table whose rows carry the program stream's event time (its `rowtime` metadata column,
//! the stream's watermarks passing through) may declare `WATERMARK FOR rowtime AS
//! SOURCE_WATERMARK()`: the translator then assigns no watermark of its own (Flink's
//! `SupportsSourceWatermark`). Every other source refuses `SOURCE_WATERMARK()`.

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use sluice_datastream::{DataStream, StreamEnv};
use sluice_sql::Row;

use crate::row_errors::RowErrors;
use crate::stateful::LateRecords;

/// One table of rows from a program's stream.
#[derive(Clone)]
pub struct StreamTable {
    /// Adds the conversion of the program's stream to rows (in the table's physical column
    /// order) and returns its output; called once per scan.
    rows: Rc<dyn Fn() -> DataStream<Row>>,
    /// The rows carry the stream's event time and watermarks (`SOURCE_WATERMARK()` allowed).
    pub source_watermark: bool,
}

impl StreamTable {
    /// A table whose rows `rows` adds to the program's environment.
    pub fn new(rows: impl Fn() -> DataStream<Row> + 'static, source_watermark: bool) -> Self {
        StreamTable {
            rows: Rc::new(rows),
            source_watermark,
        }
    }
}

impl fmt::Debug for StreamTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamTable")
            .field("source_watermark", &self.source_watermark)
            .finish()
    }
}

/// The stream tables of a program, by catalog name.
#[derive(Clone, Debug, Default)]
pub struct StreamTables {
    tables: BTreeMap<String, StreamTable>,
    /// Scans read empty streams on the translation's own environment (a plan checked on a
    /// scratch environment before it is added to the program's job).
    stand_ins: bool,
}

impl StreamTables {
    /// No tables.
    pub fn new() -> StreamTables {
        StreamTables::default()
    }

    /// Adds (or replaces) the table of catalog name `name`.
    pub fn insert(&mut self, name: impl Into<String>, table: StreamTable) {
        self.tables.insert(name.into(), table);
    }

    /// The table of catalog name `name`, if it is a stream table.
    pub fn get(&self, name: &str) -> Option<&StreamTable> {
        self.tables.get(name)
    }

    /// The same tables, each read as an empty stream on the environment a plan is translated
    /// onto: what a plan is checked against on a scratch environment.
    pub fn stand_ins(&self) -> StreamTables {
        StreamTables {
            tables: self.tables.clone(),
            stand_ins: true,
        }
    }

    /// The rows of table `name` on `env`, if it is a stream table.
    pub(crate) fn rows(&self, name: &str, env: &StreamEnv) -> Option<DataStream<Row>> {
        let t = self.tables.get(name)?;
        Some(if self.stand_ins {
            env.from_vec(Vec::<Row>::new())
        } else {
            (t.rows)()
        })
    }
}

/// What a plan's translation reads besides the plan and the session.
#[derive(Clone, Debug, Default)]
pub struct Translation {
    /// Tables read from the program's streams.
    pub tables: StreamTables,
    /// Where rows that fail evaluation are counted (shared by every job of a program).
    pub errors: RowErrors,
    /// Where rows dropped as late are counted.
    pub late: LateRecords,
    /// Plan node ids start after this many (Flink numbers the exec nodes of every plan of a
    /// session from one counter, so two SQL jobs added to one environment keep distinct uids).
    pub uid_offset: usize,
    /// Every plan node its own operator: no scan fusion ([`crate::fused`]; tests compare).
    pub unfused: bool,
}
