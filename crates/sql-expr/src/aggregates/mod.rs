//! Flink's built-in aggregate functions for append-only input: which exist, the type each gives
//! ([`resolve_aggregate`]), and the accumulators that compute them ([`Accumulator`]).
//!
//! An aggregate call is planned once ([`AggregateCall`]: the function, `DISTINCT`, the argument
//! and result types) and computed per group by an [`Accumulator`]: `add` one row's argument
//! values, `merge` another accumulator of the same call (Flink's two-phase local/global window
//! aggregation merges the local ones), `result` the value. Accumulators are plain data
//! (`Serialize`/`Deserialize`) so keyed state and checkpoints can store them.
//!
//! The semantics are Flink 2.3's, checked against a real Flink (the tests quote the queries and
//! Flink's answers): integer `SUM`/`AVG` wrap like Java, `AVG` of integers divides as integers,
//! `SUM` of decimals is exact in `DECIMAL(38, s)` and gives NULL on overflow, NULL inputs are
//! skipped, an empty group gives NULL (0 for `COUNT`).

mod accumulator;
mod numeric;
mod resolve;
#[cfg(test)]
mod tests;

pub use accumulator::Accumulator;
pub use resolve::resolve_aggregate;

use serde::{Deserialize, Serialize};

use crate::types::DataType;

/// One of Flink's built-in aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AggregateFunction {
    /// `COUNT(*)`: the rows of the group.
    CountStar,
    /// `COUNT(x [, y …])`: the rows where every argument is non-NULL.
    Count,
    /// `SUM(x)`: NULL for no non-NULL value.
    Sum,
    /// `$SUM0(x)`: `SUM` that gives 0 instead of NULL (internal: the planner's rewrite of a
    /// `SUM` over `COUNT`s; not callable by name).
    Sum0,
    /// `MIN(x)`.
    Min,
    /// `MAX(x)`.
    Max,
    /// `AVG(x)`: integer division for integer arguments.
    Avg,
    /// `FIRST_VALUE(x)`: the first non-NULL value.
    FirstValue,
    /// `LAST_VALUE(x)`: the last non-NULL value.
    LastValue,
    /// `LISTAGG(x [, separator])`: the non-NULL values joined, `,` by default.
    ListAgg,
    /// `STDDEV_POP(x)`.
    StddevPop,
    /// `STDDEV_SAMP(x)` (`STDDEV`).
    StddevSamp,
    /// `VAR_POP(x)`.
    VarPop,
    /// `VAR_SAMP(x)` (`VARIANCE`).
    VarSamp,
}

impl AggregateFunction {
    /// The functions callable by name, with their SQL names (aliases included).
    pub const NAMED: &'static [(&'static str, AggregateFunction)] = &[
        ("COUNT", AggregateFunction::Count),
        ("SUM", AggregateFunction::Sum),
        ("MIN", AggregateFunction::Min),
        ("MAX", AggregateFunction::Max),
        ("AVG", AggregateFunction::Avg),
        ("FIRST_VALUE", AggregateFunction::FirstValue),
        ("LAST_VALUE", AggregateFunction::LastValue),
        ("LISTAGG", AggregateFunction::ListAgg),
        ("STDDEV_POP", AggregateFunction::StddevPop),
        ("STDDEV_SAMP", AggregateFunction::StddevSamp),
        ("STDDEV", AggregateFunction::StddevSamp),
        ("VAR_POP", AggregateFunction::VarPop),
        ("VAR_SAMP", AggregateFunction::VarSamp),
        ("VARIANCE", AggregateFunction::VarSamp),
    ];

    /// The name Flink's plans print (`COUNT`, `$SUM0`, `LISTAGG`…).
    pub fn name(self) -> &'static str {
        match self {
            AggregateFunction::CountStar | AggregateFunction::Count => "COUNT",
            AggregateFunction::Sum => "SUM",
            AggregateFunction::Sum0 => "$SUM0",
            AggregateFunction::Min => "MIN",
            AggregateFunction::Max => "MAX",
            AggregateFunction::Avg => "AVG",
            AggregateFunction::FirstValue => "FIRST_VALUE",
            AggregateFunction::LastValue => "LAST_VALUE",
            AggregateFunction::ListAgg => "LISTAGG",
            AggregateFunction::StddevPop => "STDDEV_POP",
            AggregateFunction::StddevSamp => "STDDEV_SAMP",
            AggregateFunction::VarPop => "VAR_POP",
            AggregateFunction::VarSamp => "VAR_SAMP",
        }
    }

    /// Whether it can take rows out again (an aggregate over an updating input): `COUNT`,
    /// `SUM`, `$SUM0` and `AVG` through [`Accumulator::retract`], `MIN`/`MAX` through a
    /// multiset of the values (Flink's `MinWithRetractAggFunction`).
    pub fn can_retract(self) -> bool {
        use AggregateFunction as F;
        matches!(
            self,
            F::CountStar | F::Count | F::Sum | F::Sum0 | F::Avg | F::Min | F::Max
        )
    }

    /// Whether two accumulators of it can be merged, so the planner may split it into a local
    /// and a global phase. Flink's `FIRST_VALUE`/`LAST_VALUE` have no `merge` (their order is the
    /// arrival order), so a query using them aggregates in one phase.
    pub fn is_mergeable(self) -> bool {
        !matches!(
            self,
            AggregateFunction::FirstValue | AggregateFunction::LastValue
        )
    }
}

/// A resolved aggregate call: what the planner keeps and the runtime computes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AggregateCall {
    /// The function.
    pub function: AggregateFunction,
    /// `DISTINCT`: each distinct argument tuple counts once.
    pub distinct: bool,
    /// The argument types, in order (empty for `COUNT(*)`).
    pub arg_types: Vec<DataType>,
    /// The result type, as Flink infers it.
    pub result_type: DataType,
}

impl AggregateCall {
    /// Whether accumulators of this call can be merged (two-phase aggregation).
    pub fn is_mergeable(&self) -> bool {
        self.function.is_mergeable()
    }

    /// A fresh accumulator for one group.
    pub fn create_accumulator(&self) -> Accumulator {
        Accumulator::new(self)
    }

    /// The call as Flink's plans print it, over argument names: `COUNT(*)`,
    /// `COUNT(DISTINCT bidder)`, `SUM(price)`.
    pub fn display(&self, args: &[&str]) -> String {
        let inner = if self.function == AggregateFunction::CountStar {
            "*".to_string()
        } else {
            args.join(", ")
        };
        let distinct = if self.distinct { "DISTINCT " } else { "" };
        format!("{}({distinct}{inner})", self.function.name())
    }
}
