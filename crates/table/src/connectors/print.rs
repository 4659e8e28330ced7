//! `'connector' = 'print'`: Flink's print sink. Each row is a line `+I[1, abc]` (the row kind,
//! then the fields as Flink's external Java types print them: `null`, timestamps as
//! `LocalDateTime` does, `2015-07-15T00:00:00.001`), prefixed `identifier> ` with
//! `print-identifier`, `identifier:k> ` (or `k> `) at parallelism above 1 — to stdout, stderr
//! (`standard-error`), or in memory for tests ([`PrintSpec::to_lines`]).

use std::io::Write;
use std::sync::{Arc, Mutex};

use sluice_datastream::{DataStream, OperatorError, Sink};
use sluice_sql::cast::{java_double, java_float};
use sluice_sql::datetime::{civil_from_days, Civil};
use sluice_sql::{Change, DataType, LogicalType, Result, Row, RowKind, Value};
use sluice_types::{Collector, ControlEvent};

use crate::options::Options;
use crate::schema::PhysicalSchema;

const KNOWN: &[&str] = &[
    "connector",
    "print-identifier",
    "standard-error",
    "sink.parallelism",
];

/// Where printed lines go.
#[derive(Clone, Debug)]
pub enum PrintTarget {
    /// Standard output.
    Stdout,
    /// Standard error (`standard-error` = `true`).
    Stderr,
    /// Kept in memory (tests).
    Lines(Arc<Mutex<Vec<String>>>),
}

/// A `print` table's settings.
#[derive(Clone, Debug)]
pub struct PrintSpec {
    /// `print-identifier`.
    pub identifier: Option<String>,
    /// Where the lines go.
    pub target: PrintTarget,
    types: Arc<[DataType]>,
}

impl PrintSpec {
    /// Reads and checks the options.
    pub fn new(options: &Options, schema: &PhysicalSchema) -> Result<PrintSpec> {
        options.check_known("print", KNOWN)?;
        let stderr = options.bool("standard-error")?.unwrap_or(false);
        options.parse::<u32>("sink.parallelism", "a whole number")?;
        Ok(PrintSpec {
            identifier: options.get("print-identifier").map(str::to_string),
            target: if stderr {
                PrintTarget::Stderr
            } else {
                PrintTarget::Stdout
            },
            types: schema.types.clone().into(),
        })
    }

    /// The same sink, its lines kept in `lines` instead of printed.
    pub fn to_lines(mut self, lines: Arc<Mutex<Vec<String>>>) -> PrintSpec {
        self.target = PrintTarget::Lines(lines);
        self
    }

    /// Writes the rows (each `+I`).
    pub fn write(&self, rows: &DataStream<Row>) -> Sink<()> {
        let spec = self.clone();
        rows.add_sink(
            "Print to System.out",
            (),
            |_| Ok(()),
            move |ctx| Ok(spec.printer(ctx.parallelism, ctx.subtask_index)),
        )
    }

    /// Writes a changelog, each row with its kind (`-U[…]`, `+U[…]`), as Flink's print sink.
    pub fn write_changes(&self, changes: &DataStream<Change>) -> Sink<()> {
        let spec = self.clone();
        changes.add_sink(
            "Print to System.out",
            (),
            |_| Ok(()),
            move |ctx| Ok(spec.printer(ctx.parallelism, ctx.subtask_index)),
        )
    }

    /// The printer of one subtask: Flink's `identifier:subtask> ` prefix (the subtask from 1,
    /// shown at parallelism above 1).
    fn printer(&self, parallelism: usize, subtask_index: usize) -> PrintRows {
        let mut prefix = self.identifier.clone().unwrap_or_default();
        if parallelism > 1 {
            if !prefix.is_empty() {
                prefix.push(':');
            }
            prefix.push_str(&(subtask_index + 1).to_string());
        }
        if !prefix.is_empty() {
            prefix.push_str("> ");
        }
        PrintRows {
            prefix,
            target: self.target.clone(),
            types: self.types.clone(),
            line: String::new(),
        }
    }
}

struct PrintRows {
    prefix: String,
    target: PrintTarget,
    types: Arc<[DataType]>,
    line: String,
}

impl PrintRows {
    fn print(&mut self, kind: RowKind, row: &Row) -> std::result::Result<(), OperatorError> {
        self.line.clear();
        self.line.push_str(&self.prefix);
        self.line.push_str(kind.short_string());
        push_fields(&mut self.line, &row.0, &self.types);
        let written = match &self.target {
            PrintTarget::Stdout => writeln!(std::io::stdout().lock(), "{}", self.line),
            PrintTarget::Stderr => writeln!(std::io::stderr().lock(), "{}", self.line),
            PrintTarget::Lines(lines) => {
                lines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(self.line.clone());
                Ok(())
            }
        };
        match written {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(OperatorError::io("printing a row", e))
            }
            _ => Ok(()),
        }
    }
}

impl Collector<Row> for PrintRows {
    fn collect(&mut self, row: Row) -> std::result::Result<(), OperatorError> {
        self.print(RowKind::Insert, &row)
    }

    fn emit_event(&mut self, _event: ControlEvent) -> std::result::Result<(), OperatorError> {
        Ok(())
    }
}

impl Collector<Change> for PrintRows {
    fn collect(&mut self, c: Change) -> std::result::Result<(), OperatorError> {
        self.print(c.kind, &c.row)
    }

    fn emit_event(&mut self, _event: ControlEvent) -> std::result::Result<(), OperatorError> {
        Ok(())
    }
}

/// `[a, b, …]`, each field as [`java_text`].
fn push_fields(out: &mut String, values: &[Value], types: &[DataType]) {
    out.push('[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let ty = types.get(i).cloned().unwrap_or_else(DataType::string);
        out.push_str(&java_text(v, &ty));
    }
    out.push(']');
}

/// `LocalTime.toString()`: `HH:mm`, then `:ss` and the fraction only when not zero.
fn local_time(h: u32, m: u32, s: u32, nano: u32) -> String {
    let mut t = format!("{h:02}:{m:02}");
    if s > 0 || nano > 0 {
        t.push_str(&format!(":{s:02}"));
        if nano > 0 {
            if nano.is_multiple_of(1_000_000) {
                t.push_str(&format!(".{:03}", nano / 1_000_000));
            } else if nano.is_multiple_of(1000) {
                t.push_str(&format!(".{:06}", nano / 1000));
            } else {
                t.push_str(&format!(".{nano:09}"));
            }
        }
    }
    t
}

/// A value as the `toString()` of Flink's external Java type for it.
pub fn java_text(v: &Value, ty: &DataType) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => java_float(*x),
        Value::Double(x) => java_double(*x),
        Value::Decimal(d) => d.to_string(),
        Value::Str(s) => s.to_string(),
        Value::Bytes(b) => format!("{:?}", b.iter().map(|x| *x as i8).collect::<Vec<_>>()),
        Value::Date(d) => {
            let (y, m, day) = civil_from_days(i64::from(*d));
            format!("{y:04}-{m:02}-{day:02}")
        }
        Value::Time(t) => {
            let (secs, nano) = (
                t.div_euclid(1_000_000_000),
                t.rem_euclid(1_000_000_000) as u32,
            );
            local_time(
                (secs / 3600) as u32,
                (secs / 60 % 60) as u32,
                (secs % 60) as u32,
                nano,
            )
        }
        Value::Timestamp(ts) => {
            let c = Civil::of(*ts);
            format!(
                "{:04}-{:02}-{:02}T{}",
                c.year,
                c.month,
                c.day,
                local_time(c.hour, c.minute, c.second, c.nano)
            )
        }
        Value::Row(fields) => {
            let types: Vec<DataType> = match &ty.logical {
                LogicalType::Row(fs) => fs.iter().map(|f| f.ty.clone()).collect(),
                _ => Vec::new(),
            };
            let mut s = String::from("+I");
            push_fields(&mut s, fields, &types);
            s
        }
        other => sluice_sql::cast::to_text(other, ty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::Timestamp;

    #[test]
    fn values_print_as_java_types() {
        let ts = |ms| Value::Timestamp(Timestamp::from_millis(ms));
        assert_eq!(
            java_text(&ts(1_436_918_400_000), &DataType::timestamp(3)),
            "2015-07-15T00:00"
        );
        assert_eq!(
            java_text(&ts(1_436_918_400_001), &DataType::timestamp(3)),
            "2015-07-15T00:00:00.001"
        );
        assert_eq!(java_text(&Value::Null, &DataType::int()), "null");
        assert_eq!(java_text(&Value::Double(1.0), &DataType::double()), "1.0");
    }
}
