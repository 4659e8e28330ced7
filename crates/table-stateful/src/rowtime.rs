//! The rowtime column as a stream's event timestamp.

use sluice_datastream::DataStream;
use sluice_sql::{Row, Value};

/// Milliseconds of a timestamp value (`None` for NULL or another value).
pub fn millis(v: &Value) -> Option<i64> {
    match v {
        Value::Timestamp(ts) => Some(ts.millis),
        _ => None,
    }
}

/// Reads the rowtime column of a row as its event timestamp (a NULL rowtime reads as the
/// smallest timestamp).
pub fn with_rowtime(stream: DataStream<Row>, column: usize) -> DataStream<Row> {
    stream.with_timestamps(move |r: &Row| millis(r.get(column)).unwrap_or(i64::MIN))
}
