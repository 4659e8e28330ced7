//! Flink's `Rank` (a Top-N per partition by `ROW_NUMBER()`) and `Deduplicate` (a Top-1 by a
//! time attribute), each a changelog of its result.
//!
//! **Rank.** Per partition the rows in order (ties in arrival order, as Flink's Top-N keeps
//! them); a change of the input compares the Top-N before and after it and emits the
//! difference in the rank range: with the number as a column, each rank whose row changed is
//! `-U`/`+U` (a new rank `+I`, a lost one `-D`); without it, rows that left `-D` and rows that
//! entered `+I`, deletions first. Over insertions only (Flink's `AppendFastStrategy`) rows past
//! the last rank can never come back, so only the Top-N is kept; over a changelog (Flink's
//! `RetractStrategy`) every row is kept, so that a retracted row's successor is known.
//!
//! **Deduplicate.** Per key the row kept: the first by time (a later row with an earlier event
//! time replaces it; by processing time the first row stays, an insert-only output) or the last
//! (a row at least as late replaces it). A replacement emits `-U` (if wanted) and `+U`.

use serde::{Deserialize, Serialize};
use sluice_datastream::{DataStream, KeyedProcessFunction, ProcessContext};
use sluice_sql::{Change, Result, Row, RowKind, Value};
use sluice_types::{Collector, OperatorError};

use crate::group_agg::{clear_expired, ttl_ms, ChangeInput};
use crate::key::{KeyRow, SqlKey};
use crate::stateful::OperatorIds;

/// One `ORDER BY` key of a rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankOrder {
    /// The input column.
    pub column: usize,
    /// `DESC`.
    pub descending: bool,
    /// NULLs before the other values.
    pub nulls_first: bool,
}

/// A planned rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSpec {
    /// The partition columns.
    pub partition: Vec<usize>,
    /// The order.
    pub order: Vec<RankOrder>,
    /// The first rank emitted (from 1).
    pub start: i64,
    /// The last rank emitted.
    pub end: i64,
    /// Whether the number is appended to each row.
    pub output_rank: bool,
    /// Whether a changed rank's old row is retracted (`-U`) before its new one.
    pub update_before: bool,
    /// The state TTL (see [`GroupAggSpec::state_ttl`](crate::GroupAggSpec)).
    pub state_ttl: Option<std::time::Duration>,
}

impl RankSpec {
    fn compare(&self, a: &Row, b: &Row) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        for k in &self.order {
            let (x, y) = (a.get(k.column), b.get(k.column));
            let o = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) if k.nulls_first => Ordering::Less,
                (true, false) => Ordering::Greater,
                (false, true) if k.nulls_first => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) if k.descending => y.cmp(x),
                (false, false) => x.cmp(y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}

/// A partition's rows in rank order, each with its arrival number (ties keep arrival order).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RankState {
    next: u64,
    rows: Vec<(Row, u64)>,
    /// When it expires (processing time, ms; `i64::MAX` without a TTL).
    expires: i64,
}

const RANK_STATE: &str = "rank-state";

#[derive(Clone)]
struct RankFn {
    spec: RankSpec,
    /// Over a changelog: every row is kept.
    keep_all: bool,
}

impl RankFn {
    fn top(&self, st: &RankState) -> Vec<Row> {
        let n = usize::try_from(self.spec.end).unwrap_or(usize::MAX);
        st.rows.iter().take(n).map(|(r, _)| r.clone()).collect()
    }

    fn numbered(row: &Row, rank: i64) -> Row {
        let mut v = row.0.clone();
        v.push(Value::Int(rank));
        Row(v)
    }

    fn emit(
        &self,
        before: &[Row],
        after: &[Row],
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        let first = usize::try_from(self.spec.start.max(1) - 1).unwrap_or(0);
        if self.spec.output_rank {
            let last = before.len().max(after.len());
            for i in first..last {
                let rank = i as i64 + 1;
                match (before.get(i), after.get(i)) {
                    (Some(o), Some(n)) if o == n => {}
                    (Some(o), Some(n)) => {
                        if self.spec.update_before {
                            out.collect(Change::new(
                                RowKind::UpdateBefore,
                                Self::numbered(o, rank),
                            ))?;
                        }
                        out.collect(Change::new(RowKind::UpdateAfter, Self::numbered(n, rank)))?;
                    }
                    (None, Some(n)) => {
                        out.collect(Change::new(RowKind::Insert, Self::numbered(n, rank)))?
                    }
                    (Some(o), None) => {
                        out.collect(Change::new(RowKind::Delete, Self::numbered(o, rank)))?
                    }
                    (None, None) => {}
                }
            }
            return Ok(());
        }
        let old = before.get(first..).unwrap_or(&[]);
        let new = after.get(first..).unwrap_or(&[]);
        let mut added: Vec<&Row> = new.iter().collect();
        let mut removed = Vec::new();
        for o in old {
            match added.iter().position(|n| *n == o) {
                Some(i) => {
                    added.remove(i);
                }
                None => removed.push(o),
            }
        }
        for r in removed {
            out.collect(Change::new(RowKind::Delete, r.clone()))?;
        }
        for a in added {
            out.collect(Change::new(RowKind::Insert, a.clone()))?;
        }
        Ok(())
    }
}

impl<I: ChangeInput> KeyedProcessFunction<SqlKey<KeyRow>, I, Change> for RankFn {
    fn process_element(
        &mut self,
        input: I,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        let row = input.row();
        let ttl = ttl_ms(self.spec.state_ttl);
        let now = match ttl {
            Some(_) => ctx.timer_service().current_processing_time(),
            None => i64::MIN,
        };
        let add = input.kind().is_addition();
        let end = usize::try_from(self.spec.end).unwrap_or(usize::MAX);
        // The partition's rows are moved in and out of the store, never cloned (over a
        // changelog it keeps every row); the Top-N before and after the change come back.
        let tops = ctx.value_state::<RankState>(RANK_STATE).modify(|kept| {
            let kept = kept.filter(|s| s.expires > now);
            let mut st = kept.unwrap_or(RankState {
                next: 0,
                rows: Vec::new(),
                expires: i64::MAX,
            });
            let at = st
                .rows
                .partition_point(|(r, _)| self.spec.compare(r, row) != std::cmp::Ordering::Greater);
            let keep = |st: RankState| (!st.rows.is_empty()).then_some(st);
            if add && !self.keep_all && at >= end {
                // Past the last rank of an insert-only input: it can never enter.
                return (keep(st), None);
            }
            let before = self.top(&st);
            if add {
                st.rows.insert(at, (row.clone(), st.next));
                st.next += 1;
                if !self.keep_all {
                    st.rows.truncate(end);
                }
            } else {
                // The same content among the rows of equal order (a retraction of a row never
                // kept is ignored, as Flink ignores it).
                let from = st.rows.partition_point(|(r, _)| {
                    self.spec.compare(r, row) == std::cmp::Ordering::Less
                });
                match st.rows[from..at].iter().position(|(r, _)| r == row) {
                    Some(i) => {
                        st.rows.remove(from + i);
                    }
                    None => return (keep(st), None),
                }
            }
            if let Some(ttl) = ttl {
                st.expires = now.saturating_add(ttl);
            }
            let after = self.top(&st);
            (keep(st), Some((before, after)))
        })?;
        let Some((before, after)) = tops else {
            return Ok(());
        };
        if let Some(ttl) = ttl {
            ctx.timer_service()
                .register_processing_time_timer(now.saturating_add(ttl));
        }
        self.emit(&before, &after, out)
    }

    /// State TTL cleanup.
    fn on_timer(
        &mut self,
        now: i64,
        ctx: &mut sluice_datastream::OnTimerContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        clear_expired::<RankState>(ctx, RANK_STATE, now, |s| s.expires)
    }
}

/// The rank of `input` (insertions, or a changelog's changes), keyed by its partition (one
/// subtask without one), named and uid'd by `ids`.
pub fn rank<I: ChangeInput>(
    input: &DataStream<I>,
    spec: &RankSpec,
    ids: &OperatorIds,
) -> DataStream<Change> {
    let keys = spec.partition.clone();
    let f = RankFn {
        spec: spec.clone(),
        keep_all: I::UPDATING,
    };
    let out = input
        .key_by(move |r: &I| SqlKey(KeyRow::of(r.row(), &keys)))
        .process(f)
        .name(&ids.name)
        .uid(&ids.uid);
    if spec.partition.is_empty() {
        out.set_parallelism(1)
    } else {
        out
    }
}

/// A planned deduplication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DedupSpec {
    /// The key columns.
    pub keys: Vec<usize>,
    /// The time attribute column.
    pub order: usize,
    /// Keep the last row (else the first).
    pub keep_last: bool,
    /// By event time (else processing time: arrival order).
    pub rowtime: bool,
    /// Whether a replaced row is retracted (`-U`) before its successor.
    pub update_before: bool,
    /// The state TTL (see [`GroupAggSpec::state_ttl`](crate::GroupAggSpec)).
    pub state_ttl: Option<std::time::Duration>,
}

const DEDUP_STATE: &str = "deduplicate-state";

#[derive(Clone)]
struct DedupFn {
    spec: DedupSpec,
}

impl DedupFn {
    /// Whether `row` replaces the kept `prev`.
    fn replaces(&self, prev: &Row, row: &Row) -> bool {
        let (t, p) = (row.get(self.spec.order), prev.get(self.spec.order));
        match (self.spec.keep_last, self.spec.rowtime) {
            (true, false) => true,
            (true, true) => t >= p,
            (false, true) => t < p,
            (false, false) => false,
        }
    }
}

impl KeyedProcessFunction<SqlKey<KeyRow>, Row, Change> for DedupFn {
    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        let ttl = ttl_ms(self.spec.state_ttl);
        let now = match ttl {
            Some(_) => ctx.timer_service().current_processing_time(),
            None => i64::MIN,
        };
        // The kept row and when it expires; an expired row is never read.
        let prev = ctx
            .value_state::<(Row, i64)>(DEDUP_STATE)
            .value()?
            .filter(|(_, expires)| *expires > now)
            .map(|(r, _)| r);
        if prev.as_ref().is_some_and(|p| !self.replaces(p, &row)) {
            return Ok(());
        }
        let expires = match ttl {
            Some(ttl) => {
                let at = now.saturating_add(ttl);
                ctx.timer_service().register_processing_time_timer(at);
                at
            }
            None => i64::MAX,
        };
        ctx.value_state::<(Row, i64)>(DEDUP_STATE)
            .update((row.clone(), expires))?;
        match prev {
            None => out.collect(Change::new(RowKind::Insert, row)),
            Some(p) => {
                if self.spec.update_before {
                    out.collect(Change::new(RowKind::UpdateBefore, p))?;
                }
                out.collect(Change::new(RowKind::UpdateAfter, row))
            }
        }
    }

    /// State TTL cleanup.
    fn on_timer(
        &mut self,
        now: i64,
        ctx: &mut sluice_datastream::OnTimerContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        clear_expired::<(Row, i64)>(ctx, DEDUP_STATE, now, |s| s.1)
    }
}

/// Keeps the first row per key by processing time: insertions only. Its state is when the
/// key's row expires (`i64::MAX` without a TTL): after that, the next row is a first row again.
#[derive(Clone)]
struct FirstRowFn {
    ttl: Option<i64>,
}

impl KeyedProcessFunction<SqlKey<KeyRow>, Row, Row> for FirstRowFn {
    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let now = match self.ttl {
            Some(_) => ctx.timer_service().current_processing_time(),
            None => i64::MIN,
        };
        let seen = ctx.value_state::<i64>(DEDUP_STATE).value()?;
        if seen.is_some_and(|expires| expires > now) {
            return Ok(());
        }
        let expires = match self.ttl {
            Some(ttl) => {
                let at = now.saturating_add(ttl);
                ctx.timer_service().register_processing_time_timer(at);
                at
            }
            None => i64::MAX,
        };
        ctx.value_state::<i64>(DEDUP_STATE).update(expires)?;
        out.collect(row)
    }

    fn on_timer(
        &mut self,
        now: i64,
        ctx: &mut sluice_datastream::OnTimerContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        clear_expired::<i64>(ctx, DEDUP_STATE, now, |e| *e)
    }
}

/// The deduplication of `input` as a changelog (every mode but the first row by processing
/// time, which is [`deduplicate_first_rows`]).
pub fn deduplicate(
    input: &DataStream<Row>,
    spec: &DedupSpec,
    ids: &OperatorIds,
) -> DataStream<Change> {
    let keys = spec.keys.clone();
    let out = input
        .key_by(move |r: &Row| SqlKey(KeyRow::of(r, &keys)))
        .process(DedupFn { spec: spec.clone() })
        .name(&ids.name)
        .uid(&ids.uid);
    if spec.keys.is_empty() {
        out.set_parallelism(1)
    } else {
        out
    }
}

/// The first row per key by processing time: an append-only stream.
pub fn deduplicate_first_rows(
    input: &DataStream<Row>,
    keys: &[usize],
    state_ttl: Option<std::time::Duration>,
    ids: &OperatorIds,
) -> DataStream<Row> {
    let k = keys.to_vec();
    let out = input
        .key_by(move |r: &Row| SqlKey(KeyRow::of(r, &k)))
        .process(FirstRowFn {
            ttl: ttl_ms(state_ttl),
        })
        .name(&ids.name)
        .uid(&ids.uid);
    if keys.is_empty() {
        out.set_parallelism(1)
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(output_rank: bool) -> RankSpec {
        RankSpec {
            partition: vec![],
            order: vec![RankOrder {
                column: 0,
                descending: true,
                nulls_first: false,
            }],
            start: 1,
            end: 2,
            output_rank,
            update_before: true,
            state_ttl: None,
        }
    }

    fn row(v: i64) -> Row {
        Row(vec![Value::Int(v)])
    }

    #[test]
    fn a_new_top_row_shifts_the_ranks_or_replaces_the_last() {
        let f = RankFn {
            spec: spec(true),
            keep_all: false,
        };
        let mut out = sluice_types::VecCollector::default();
        f.emit(&[row(5), row(3)], &[row(7), row(5)], &mut out)
            .unwrap();
        let got: Vec<String> = out
            .records
            .iter()
            .map(|c| format!("{}{:?}", c.kind, c.row.0))
            .collect();
        assert_eq!(
            got,
            [
                "-U[Int(5), Int(1)]",
                "+U[Int(7), Int(1)]",
                "-U[Int(3), Int(2)]",
                "+U[Int(5), Int(2)]"
            ]
        );
        let f = RankFn {
            spec: spec(false),
            keep_all: false,
        };
        let mut out = sluice_types::VecCollector::default();
        f.emit(&[row(5), row(3)], &[row(7), row(5)], &mut out)
            .unwrap();
        let got: Vec<String> = out
            .records
            .iter()
            .map(|c| format!("{}{:?}", c.kind, c.row.0))
            .collect();
        assert_eq!(got, ["-D[Int(3)]", "+I[Int(7)]"]);
    }
}
