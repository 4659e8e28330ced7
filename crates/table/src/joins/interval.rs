//! Flink's interval join (`IntervalJoin`): rows of equal keys with
//! `left.ts + lower <= right.ts <= left.ts + upper` (Flink normalizes every time-bounded
//! condition to these bounds), on the DataStream API's interval join: each side buffered in
//! keyed state until the watermark passes the last time it can match.
//!
//! One difference from Flink SQL's operator: a row older than the watermark on arrival is
//! dropped (the DataStream API's rule); Flink SQL's still joins it with the rows it holds.

use sluice_sql::{Expr, Result, Row};

use super::{drop_null_keys, joined, key_of, JoinType};
use crate::row_errors::RowErrors;
use crate::scan::with_rowtime;
use crate::stateful::OperatorIds;
use sluice_datastream::DataStream;

/// A planned interval join.
#[derive(Clone, Debug)]
pub struct IntervalJoinSpec {
    /// INNER only so far.
    pub join_type: JoinType,
    /// The left input's equi-join columns.
    pub left_keys: Vec<usize>,
    /// The right input's equi-join columns, pairwise with `left_keys`.
    pub right_keys: Vec<usize>,
    /// The left input's rowtime column.
    pub left_time: usize,
    /// The right input's rowtime column.
    pub right_time: usize,
    /// The lower bound of `right.ts - left.ts`, ms (inclusive).
    pub lower: i64,
    /// The upper bound of `right.ts - left.ts`, ms (inclusive).
    pub upper: i64,
    /// The rest of the join condition, over `left ++ right`.
    pub condition: Option<Expr>,
}

/// Adds the interval join of `left` and `right` (the stateful operator named and uid'd by
/// `ids`). Output: the left columns, then the right ones; no event time (Flink's output
/// rowtimes are plain timestamps).
pub fn interval_join(
    left: &DataStream<Row>,
    right: &DataStream<Row>,
    spec: &IntervalJoinSpec,
    ids: &OperatorIds,
    errors: &RowErrors,
) -> Result<DataStream<Row>> {
    spec.join_type.require_inner("interval join")?;
    let (lk, rk) = (spec.left_keys.clone(), spec.right_keys.clone());
    let l = with_rowtime(drop_null_keys(left, &lk), spec.left_time)
        .key_by(move |r: &Row| key_of(&lk, r));
    let r = with_rowtime(drop_null_keys(right, &rk), spec.right_time)
        .key_by(move |r: &Row| key_of(&rk, r));
    let (condition, errors, name) = (spec.condition.clone(), errors.clone(), ids.name.clone());
    let pairs = l
        .interval_join(&r, spec.lower, spec.upper)
        .process(move |a: &Row, b: &Row| joined(a, b, condition.as_ref(), &errors, &name))
        .name(&ids.name)
        .uid(&ids.uid);
    Ok(pairs.flat_map(|r: Option<Row>| r))
}
