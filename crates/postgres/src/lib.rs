//! PostgreSQL for Sluice: a sink that appends (binary `COPY`) or upserts by primary key
//! (`INSERT … ON CONFLICT DO UPDATE`), batched and flushed at every checkpoint, exactly once.
//!
//! Main types: [`PostgresSink`] (the builder), [`RowMapping`] (record → typed columns),
//! [`Mode`], [`SinkOptions`] (Flink JDBC option names), [`PostgresSinkHandle`] (metrics),
//! [`PostgresSinkExt`] (`stream.sink_to_postgres(…)`), [`SinkUrl`] (one URL for a whole sink:
//! `postgres://USER@HOST:PORT/DB?table=T&key=K&sink.buffer-flush.max-rows=1000`), [`PostgresError`];
//! [`bench`](mod@bench): the sink benchmark beside `psql \copy` (`cargo bench`, `sluice bench postgres`).
//!
//! ```no_run
//! use sluice_datastream::StreamEnv;
//! use sluice_postgres::{PostgresSink, PostgresSinkExt, RowMapping};
//!
//! let env = StreamEnv::new();
//! let sums = env.generate(1_000, |i| (i % 10, i));
//! let sink = PostgresSink::builder(
//!     "postgres://sluice@127.0.0.1:5432/sluice",
//!     "totals",
//!     RowMapping::new()
//!         .column("key", |r: &(u64, u64)| r.0 as i64)
//!         .column("total", |r: &(u64, u64)| r.1 as i64),
//! )
//! .upsert(&["key"])
//! .option("sink.buffer-flush.max-rows", "1000")
//! .unwrap();
//! sums.sink_to_postgres(sink).unwrap();
//! ```
//!
//! # What a flush is
//! Rows are buffered and flushed when `sink.buffer-flush.max-rows` wait, when the oldest has
//! waited `sink.buffer-flush.interval`, at every checkpoint barrier and at end of input (Flink
//! JDBC's options). What a flush does depends on the mode:
//! - **Append with two-phase commit**: the batch's binary COPY tuples are written into the
//!   checkpoint transaction's one open `COPY … FROM STDIN` (opened by the first flush after a
//!   barrier, finished at the next barrier just before `PREPARE TRANSACTION`). A flush puts
//!   the bytes on the wire and waits for no answer; the rows are invisible until `COMMIT
//!   PREPARED` anyway. The batch size sets how often bytes go out, not a round trip.
//! - **Append without periodic checkpoints**: one `COPY` per flush, committed (visible) when
//!   the flush returns.
//! - **Upsert**: one `INSERT … ON CONFLICT` statement per flush (65,535 parameters at most for
//!   multi-row `VALUES`), sent and left in flight: at most [`PIPELINE_DEPTH`] are, a flush
//!   first waits for the oldest beyond that, and every barrier waits for all of them. Each
//!   commits on its own (autocommit), in the order sent.
//!
//! All batches of a subtask go through one connection (tokio-postgres on
//! a current-thread runtime of the subtask's own); `COMMIT PREPARED`, the table check and the
//! restore use a second, synchronous one.
//!
//! # Guarantees
//! - **Upsert** is idempotent: after a failure the job replays from its checkpoint and the
//!   same keys are written again with the same values, so the table converges. Every barrier
//!   writes the buffer before it is acknowledged, so a completed checkpoint's rows are in the
//!   table.
//! - **Append** in a job with periodic checkpoints uses two-phase commit, as Flink's XA JDBC
//!   sink: each subtask copies into one open transaction per checkpoint (one `COPY` held
//!   open across its batches); at the barrier it finishes the `COPY` and runs `PREPARE
//!   TRANSACTION '<gid>'` (gid: prefix, subtask, checkpoint, attempt; see
//!   [`xa`]) and lists the prepared gids in its snapshot; when the checkpoint completes it
//!   runs `COMMIT PREPARED` on a second connection. No row is visible before its checkpoint
//!   completed. On restore it commits what the checkpoint names (a gid already gone was
//!   committed) and rolls back every other prepared transaction of its subtasks (found in
//!   `pg_prepared_xacts` by prefix). The server needs `max_prepared_transactions` ≥ the
//!   sink's parallelism × [`xa::prepared_per_subtask`] (max concurrent checkpoints +
//!   tolerated failed checkpoints + 1): a job that needs more is refused before it starts,
//!   and a server whose slots others took fails the job with a message naming the setting.
//!   Rows of the transaction after the last checkpoint are committed when the whole job has
//!   finished.
//! - **Append without periodic checkpoints** commits every batch (`COPY` in autocommit):
//!   at least once — a batch retried after a lost connection may have been written already.
//! - **Lost connections** (I/O errors, `pg_terminate_backend`, a server restart) are retried
//!   `sink.max-retries` times on a new connection with a doubling backoff; the open
//!   transaction is rebuilt from the COPY tuples it held (kept in memory, encoded, until its
//!   barrier — memory proportional to the rows per checkpoint interval and subtask), and the
//!   upsert statements not yet acknowledged are sent again in their order (idempotent; one
//!   acknowledged just before the loss may run twice, to the same effect). Then the task fails
//!   and the job master restarts the job from its checkpoint.
//! - The table is checked when the job is deployed (before any record flows) and again by each
//!   subtask: every mapped column exists with a type the mapping writes, no NOT NULL column
//!   without default is left out, a nullable mapping does not target a NOT NULL column, and an
//!   upsert key is the primary key or a unique index. Errors name the table and the column.
//!   An unreachable server fails within `connection.connect-timeout` (10 s), naming the address.
//! - Two jobs that append to the same table through operators with the same id must set
//!   distinct [`PostgresSink::gid_prefix`]es, or one's restore rolls back the other's
//!   transactions.

#![warn(missing_docs)]

pub mod bench;
mod connect;
mod copy_format;
mod error;
mod mapping;
mod metrics;
mod options;
mod schema;
mod session;
mod sink;
mod url;
mod value;
mod write;
pub mod xa;

use std::sync::Arc;

use sluice_datastream::{DataStream, Sink, SinkDeployment};
use sluice_types::{Data, OperatorError};

pub use connect::Endpoint;
pub use error::PostgresError;
pub use mapping::{Column, RowMapping};
pub use metrics::{SinkMetrics, SinkMetricsSnapshot};
pub use options::{Mode, SinkOptions, UpsertStatement};
pub use session::PIPELINE_DEPTH;
pub use sink::PostgresSinkWriter;
pub use url::SinkUrl;
pub use value::{ColumnType, PgValue, Value};

use sink::SinkSpec;

/// Builds a PostgreSQL sink: connection, table, row mapping, mode and options.
pub struct PostgresSink<T> {
    conn: String,
    table: String,
    mapping: RowMapping<T>,
    mode: Mode,
    options: SinkOptions,
    gid_prefix: Option<String>,
    name: Option<String>,
}

/// What the sink's [`Sink`] handle holds: its counters (all subtasks).
#[derive(Clone, Debug)]
pub struct PostgresSinkHandle {
    /// Rows, batches, retries and transactions of all subtasks.
    pub metrics: Arc<SinkMetrics>,
}

impl<T: Data> PostgresSink<T> {
    /// A sink writing to `table` (`name` or `schema.name`, taken literally) of the database at
    /// `conn` (`postgres://USER[:PASSWORD]@HOST:PORT/DB` or `host=… port=… user=… dbname=…`).
    /// Appends by default.
    pub fn builder(conn: &str, table: &str, mapping: RowMapping<T>) -> Self {
        PostgresSink {
            conn: conn.to_string(),
            table: table.to_string(),
            mapping,
            mode: Mode::Append,
            options: SinkOptions::default(),
            gid_prefix: None,
            name: None,
        }
    }

    /// The same sink with its row mapping changed by `f` (e.g. [`RowMapping::deleted_when`]).
    pub fn map_mapping(mut self, f: impl FnOnce(RowMapping<T>) -> RowMapping<T>) -> Self {
        self.mapping = f(self.mapping);
        self
    }

    /// Sets how rows reach the table (append or upsert).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// A sink from one URL (`postgres://USER@HOST:PORT/DB?table=T[&key=K1,K2][&sink.…=…]`,
    /// see [`SinkUrl`]): what `sluice run --to postgres://…` takes.
    pub fn from_url(url: &str, mapping: RowMapping<T>) -> Result<Self, PostgresError> {
        let u = SinkUrl::parse(url)?;
        Ok(Self::builder(&u.conn, &u.table, mapping)
            .mode(u.mode)
            .options(u.options))
    }

    /// Upsert by these key columns (the table's primary key or a unique index on them).
    pub fn upsert(self, key: &[&str]) -> Self {
        self.mode(Mode::Upsert {
            key: key.iter().map(|k| k.to_string()).collect(),
        })
    }

    /// Sets the batching, retry and timeout options.
    pub fn options(mut self, options: SinkOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets one option by its Flink name (see [`SinkOptions::set`]).
    pub fn option(mut self, name: &str, value: &str) -> Result<Self, PostgresError> {
        self.options.set(name, value)?;
        Ok(self)
    }

    /// The gid prefix of two-phase commit (default `sluice:<table>:<operator id>`).
    pub fn gid_prefix(mut self, prefix: &str) -> Self {
        self.gid_prefix = Some(prefix.to_string());
        self
    }

    /// The operator's name (default `PostgreSQL: <table>`, shown as `Sink: PostgreSQL: <table>`).
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Runs the table check now, on a connection of its own (the same check the sink runs when
    /// its job is deployed): for a caller that wants a bad table refused while it builds the
    /// job (a SQL script, before its first job starts).
    pub fn check(&self) -> Result<(), PostgresError> {
        let endpoint = Endpoint::parse(&self.conn, self.options.connect_timeout)?;
        let mut client = endpoint.connect(&format!("sluice sink {} (check)", self.table))?;
        schema::check_table(&mut client, &self.table, self.mapping.columns(), &self.mode)?;
        Ok(())
    }

    /// Adds the sink to `stream` (through [`DataStream::add_sink`]). The connection string is
    /// parsed now; the table is checked when the job is deployed.
    pub fn add_to(self, stream: &DataStream<T>) -> Result<Sink<PostgresSinkHandle>, PostgresError> {
        let endpoint = Endpoint::parse(&self.conn, self.options.connect_timeout)?;
        if self.mapping.columns().is_empty() {
            return Err(PostgresError::Schema {
                table: self.table,
                problem: "the row mapping has no columns".into(),
            });
        }
        if self.mapping.deletes() && self.mode == Mode::Append {
            return Err(PostgresError::Schema {
                table: self.table,
                problem: "deletions need a key to delete by: use the upsert mode".into(),
            });
        }
        let metrics = Arc::new(SinkMetrics::default());
        let name = self
            .name
            .unwrap_or_else(|| format!("PostgreSQL: {}", self.table));
        let spec = Arc::new(SinkSpec {
            endpoint,
            table: self.table,
            mapping: self.mapping,
            mode: self.mode,
            options: self.options,
            gid_prefix: self.gid_prefix,
            metrics: metrics.clone(),
        });
        let check = spec.clone();
        // The batching options are declared on the plan node (the doctor's "batch the writes"
        // is a plan change the fixer makes there); each subtask applies the node's values.
        let declared = [
            (
                "sink.buffer-flush.max-rows",
                spec.options.max_rows.to_string(),
            ),
            (
                "sink.buffer-flush.interval",
                format!("{}ms", spec.options.flush_interval.as_millis()),
            ),
        ];
        let sink = stream.add_sink_deployed(
            &name,
            PostgresSinkHandle { metrics },
            move |d: &SinkDeployment| {
                // Before any task starts: reachable, the table fits the mapping, and the
                // server has room for the prepared transactions of two-phase commit.
                let mut client = check
                    .endpoint
                    .connect(&format!("sluice sink {} (check)", check.table))?;
                schema::check_table(
                    &mut client,
                    &check.table,
                    check.mapping.columns(),
                    &check.mode,
                )?;
                // The sink's own rule for two-phase commit (see `PostgresSinkWriter::open`).
                if check.mode == Mode::Append && d.checkpoints.interval.is_some() {
                    xa::check_capacity(&mut client, &check.table, d.parallelism, &d.checkpoints)?;
                }
                Ok::<(), OperatorError>(())
            },
            move |ctx| PostgresSinkWriter::open(spec.with_node_options(ctx)?, ctx),
        );
        Ok(declared
            .into_iter()
            .fold(sink, |s, (key, value)| s.option(key, value)))
    }
}

/// `stream.sink_to_postgres(PostgresSink::builder(…))`.
pub trait PostgresSinkExt<T: Data> {
    /// Adds `sink` as this stream's sink and returns its handle (the metrics).
    fn sink_to_postgres(
        &self,
        sink: PostgresSink<T>,
    ) -> Result<Sink<PostgresSinkHandle>, PostgresError>;
}

impl<T: Data> PostgresSinkExt<T> for DataStream<T> {
    fn sink_to_postgres(
        &self,
        sink: PostgresSink<T>,
    ) -> Result<Sink<PostgresSinkHandle>, PostgresError> {
        sink.add_to(self)
    }
}
