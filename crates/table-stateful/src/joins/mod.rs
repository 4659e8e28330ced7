//! Flink SQL's joins of append-only inputs, each a keyed operator over both inputs keyed by
//! their equi-join columns ([`SqlKey`]), emitting `left columns ++ right columns` for every
//! matching pair whose residual condition holds:
//!
//! * [`interval`]: the time-bounded join (`right.ts BETWEEN left.ts + lower AND left.ts +
//!   upper`, Flink SQL's row-time `IntervalJoin`: late rows still join what is cached, the
//!   output watermark is held back by the bounds).
//! * [`window`]: the join of two windowed inputs per window (Flink's `WindowJoin`).
//! * [`regular`]: the unbounded join (Flink's `Join`), every row of both sides kept in keyed
//!   state, forever or for `table.exec.state.ttl`.
//!
//! Only inner joins for now: the others are refused by [`JoinType::require_inner`]. A row with
//! a NULL equi-join column never matches (SQL's `=`), so it is dropped before the exchange.

mod by_window;
pub mod interval;
pub mod regular;
pub mod regular_changes;
pub mod window;

use sluice_datastream::DataStream;
use sluice_sql::{Expr, Result, Row, SqlError, Value};

use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;

pub use interval::{interval_join, IntervalJoinSpec};
pub use regular::{regular_join, RegularJoinSpec};
pub use regular_changes::regular_join_changes;
pub use window::{window_join, WindowJoinSpec};

/// A join's type, as Flink's plans print it (`joinType=[InnerJoin]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinType {
    /// `INNER JOIN`.
    Inner,
    /// `LEFT [OUTER] JOIN`.
    Left,
    /// `RIGHT [OUTER] JOIN`.
    Right,
    /// `FULL [OUTER] JOIN`.
    Full,
    /// `… WHERE EXISTS` / `IN` (semi join).
    Semi,
    /// `… WHERE NOT EXISTS` / `NOT IN` (anti join).
    Anti,
}

impl JoinType {
    /// Flink's plan name: `InnerJoin`, `LeftOuterJoin`…
    pub fn flink_name(self) -> &'static str {
        match self {
            JoinType::Inner => "InnerJoin",
            JoinType::Left => "LeftOuterJoin",
            JoinType::Right => "RightOuterJoin",
            JoinType::Full => "FullOuterJoin",
            JoinType::Semi => "LeftSemiJoin",
            JoinType::Anti => "LeftAntiJoin",
        }
    }

    /// Refuses any type but INNER for the operator `what`, naming both.
    pub fn require_inner(self, what: &str) -> Result<()> {
        if self == JoinType::Inner {
            Ok(())
        } else {
            Err(SqlError::unsupported(
                None,
                format!(
                    "{} in a {what} (only inner joins so far)",
                    self.flink_name()
                ),
            ))
        }
    }
}

/// The equi-join key of a row: its `columns`.
fn key_of(columns: &[usize], row: &Row) -> SqlKey<KeyRow> {
    SqlKey(KeyRow::of(row, columns))
}

/// `input` without the rows that have a NULL in a key column (they match nothing).
fn drop_null_keys(input: &DataStream<Row>, columns: &[usize]) -> DataStream<Row> {
    let columns = columns.to_vec();
    input.filter(move |r: &Row| columns.iter().all(|&i| !matches!(r.get(i), Value::Null)))
}

/// `left ++ right` if `condition` (over that row) is TRUE; a failing condition is counted in
/// `errors` and gives nothing.
fn joined(
    left: &Row,
    right: &Row,
    condition: Option<&Expr>,
    errors: &RowErrors,
    what: &str,
) -> Option<Row> {
    let mut values = Vec::with_capacity(left.0.len() + right.0.len());
    values.extend(left.0.iter().cloned());
    values.extend(right.0.iter().cloned());
    let row = Row(values);
    match condition.map(|c| c.eval_predicate(&row)) {
        None | Some(Ok(true)) => Some(row),
        Some(Ok(false)) => None,
        Some(Err(e)) => {
            errors.record(|| format!("{what}: {e}"));
            None
        }
    }
}
