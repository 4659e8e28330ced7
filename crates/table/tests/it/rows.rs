//! Hand-made rows with event time, for the stateful operators' tests.

use sluice_datastream::{DataStream, StreamEnv, WatermarkStrategy};
use sluice_sql::{resolve_aggregate, AggregateCall, DataType, Row, Timestamp, Value};

/// A `TIMESTAMP(3)` value.
pub fn ts(millis: i64) -> Value {
    Value::Timestamp(Timestamp::from_millis(millis))
}

/// Milliseconds of a timestamp value.
pub fn millis(v: &Value) -> i64 {
    match v {
        Value::Timestamp(t) => t.millis,
        other => panic!("not a timestamp: {other:?}"),
    }
}

/// `rows` as a stream whose event time is column `rowtime` (watermark: the largest time seen;
/// the bounded source ends with the final watermark).
pub fn timed(env: &StreamEnv, rows: Vec<Row>, rowtime: usize) -> DataStream<Row> {
    env.from_vec(rows).assign_timestamps_and_watermarks(
        WatermarkStrategy::for_bounded_out_of_orderness(0, move |r: &Row| millis(r.get(rowtime))),
    )
}

/// A resolved aggregate call of a grouped aggregation.
pub fn agg(name: &str, args: &[DataType]) -> AggregateCall {
    resolve_aggregate(name, args, false, true, None).unwrap()
}

/// Sorted, for comparing multisets of rows.
pub fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    rows
}
