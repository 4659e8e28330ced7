//! Flink's regular join (`Join`) of two append-only inputs, INNER: per key, every row of both
//! sides is kept in keyed map state (row → how many copies, and when they expire), and each
//! new row meets the other side's rows. Without `table.exec.state.ttl` the state grows forever,
//! as in Flink; with it a row is forgotten that long (processing time) after it was last
//! written (Flink's `OnCreateAndWrite`, never returning an expired row), cleaned up by a
//! processing-time timer.

use std::time::Duration;

use sluice_datastream::{KeyedCoProcessFunction, OnTimerContext, ProcessContext};
use sluice_sql::{Expr, Result, Row};
use sluice_types::{Collector, OperatorError};

use super::{drop_null_keys, joined, key_of, JoinType};
use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::stateful::OperatorIds;
use sluice_datastream::DataStream;

/// A planned regular join.
#[derive(Clone, Debug)]
pub struct RegularJoinSpec {
    /// INNER only so far.
    pub join_type: JoinType,
    /// The left input's equi-join columns.
    pub left_keys: Vec<usize>,
    /// The right input's equi-join columns, pairwise with `left_keys`.
    pub right_keys: Vec<usize>,
    /// The rest of the join condition, over `left ++ right`.
    pub condition: Option<Expr>,
    /// `table.exec.state.ttl` (`None` or zero: rows are kept forever).
    pub state_ttl: Option<Duration>,
}

const LEFT: &str = "join-left-records";
const RIGHT: &str = "join-right-records";

/// A kept row's copies and when they expire (processing time, ms; `i64::MAX`: never).
type Kept = (u64, i64);

#[derive(Clone)]
struct RegularJoinFn {
    condition: Option<Expr>,
    ttl_ms: Option<i64>,
    name: String,
    errors: RowErrors,
}

impl RegularJoinFn {
    /// Joins `row` (of the side whose state is `own`) with the other side's live rows, then
    /// keeps it.
    fn on_row(
        &self,
        row: Row,
        own: &str,
        other: &str,
        row_is_left: bool,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let now = match self.ttl_ms {
            Some(_) => ctx.timer_service().current_processing_time(),
            None => i64::MIN,
        };
        // The other side's rows by reference, not copied out of the state.
        ctx.map_state::<Row, Kept>(other)
            .for_each(|r, &(copies, expires)| {
                if expires <= now {
                    return Ok(());
                }
                let (l, r) = if row_is_left { (&row, r) } else { (r, &row) };
                if let Some(j) = joined(l, r, self.condition.as_ref(), &self.errors, &self.name) {
                    for _ in 1..copies {
                        out.collect(j.clone())?;
                    }
                    out.collect(j)?;
                }
                Ok(())
            })?;
        let expires = match self.ttl_ms {
            Some(ttl) => now.saturating_add(ttl),
            None => i64::MAX,
        };
        // One more live copy of the row (an expired count starts over), updated in place.
        ctx.map_state::<Row, Kept>(own).upsert(
            row,
            || (0, expires),
            |(copies, until)| {
                if *until <= now {
                    *copies = 0;
                }
                *copies += 1;
                *until = expires;
            },
        )?;
        if self.ttl_ms.is_some() {
            ctx.timer_service().register_processing_time_timer(expires);
        }
        Ok(())
    }
}

impl KeyedCoProcessFunction<SqlKey<KeyRow>, Row, Row, Row> for RegularJoinFn {
    fn process_left(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.on_row(row, LEFT, RIGHT, true, ctx, out)
    }

    fn process_right(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.on_row(row, RIGHT, LEFT, false, ctx, out)
    }

    /// State TTL cleanup: forgets the key's rows that expired by `now`.
    fn on_timer(
        &mut self,
        now: i64,
        ctx: &mut OnTimerContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        for side in [LEFT, RIGHT] {
            let mut kept = ctx.map_state::<Row, Kept>(side);
            let mut expired = Vec::new();
            kept.for_each(|r, &(_, expires)| {
                if expires <= now {
                    expired.push(r.clone());
                }
                Ok(())
            })?;
            for r in expired {
                kept.remove(&r)?;
            }
        }
        Ok(())
    }
}

/// Adds the regular join of `left` and `right` (named and uid'd by `ids`). Output: the left
/// columns, then the right ones, append-only (both inputs must be); no event time (Flink
/// materializes time attributes through a regular join).
pub fn regular_join(
    left: &DataStream<Row>,
    right: &DataStream<Row>,
    spec: &RegularJoinSpec,
    ids: &OperatorIds,
    errors: &RowErrors,
) -> Result<DataStream<Row>> {
    spec.join_type.require_inner("regular join")?;
    let (lk, rk) = (spec.left_keys.clone(), spec.right_keys.clone());
    let l = drop_null_keys(left, &lk).key_by(move |r: &Row| key_of(&lk, r));
    let r = drop_null_keys(right, &rk).key_by(move |r: &Row| key_of(&rk, r));
    let f = RegularJoinFn {
        condition: spec.condition.clone(),
        ttl_ms: spec
            .state_ttl
            .filter(|d| !d.is_zero())
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        name: ids.name.clone(),
        errors: errors.clone(),
    };
    Ok(l.connect(&r).process(f).name(&ids.name).uid(&ids.uid))
}
