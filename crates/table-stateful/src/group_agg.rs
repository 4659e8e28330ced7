//! Flink's unbounded aggregation (`GroupAggregate`): per key, the aggregates of every row seen,
//! and a changelog of the key's result row (keys, then aggregates).
//!
//! A key's first row emits `+I`; a row that changes its aggregates emits `-U` (the old row, when
//! the consumer needs it: [`GroupAggSpec::update_before`]) and `+U`; a row that changes nothing
//! emits nothing (Flink's `GroupAggFunction` without state TTL). Over an updating input (another
//! aggregate's changelog) `-U` and `-D` rows are taken out again — `COUNT`, `SUM`, `AVG` retract
//! in their accumulators, `MIN`/`MAX` keep a multiset of their values — and a key whose rows are
//! all retracted emits `-D` and forgets its state. A retraction for a key with no state is
//! ignored, as Flink ignores it.
//!
//! `DISTINCT` calls count each distinct argument tuple (value → how many rows hold it), so that
//! the tuple is added once and retracted when its last row is; `FILTER (WHERE …)` calls only see
//! the rows whose condition column is TRUE. The distinct calls over the same arguments share one
//! map (a count per call), as Flink's distinct views do: q15's twelve filtered distinct counts
//! keep three maps per key, not twelve.
//!
//! The state is one keyed value per key ([`GroupState`], serde), so it checkpoints, restores and
//! rescales by key group as any keyed state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sluice_datastream::{DataStream, KeyedProcessFunction, ProcessContext};
use sluice_sql::{Accumulator, AggregateCall, AggregateFunction, Change, Result, Row, RowKind};
use sluice_sql::{SqlError, Value};
use sluice_types::{Collector, OperatorError};

use crate::key::{KeyRow, SqlKey};
use crate::stateful::OperatorIds;

/// One aggregate call of a group aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupAggCall {
    /// The resolved call.
    pub call: AggregateCall,
    /// The input columns passed to it, in order.
    pub args: Vec<usize>,
    /// `FILTER (WHERE …)`: the input column holding the condition.
    pub filter: Option<usize>,
}

/// A planned group aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupAggSpec {
    /// The grouping columns of the input, in output order.
    pub keys: Vec<usize>,
    /// The aggregate calls, in output order.
    pub aggs: Vec<GroupAggCall>,
    /// Emit `-U` before each `+U` (a retracting consumer), or `+U` alone (an upsert sink).
    pub update_before: bool,
    /// `table.exec.state.ttl` or the `STATE_TTL` hint: a key's state is forgotten this long
    /// (processing time) after it was last written, never read once expired (Flink's
    /// `OnCreateAndWrite`, `NeverReturnExpired`); `None`: kept forever.
    pub state_ttl: Option<std::time::Duration>,
}

/// State TTL cleanup (a processing-time timer fired at `now`): forgets the current key's value
/// of state `name` if it expired by then (`expires` reads its expiry), moving it, never cloning.
pub(crate) fn clear_expired<V: sluice_runtime::state::StateValue>(
    ctx: &mut sluice_datastream::OnTimerContext<'_, SqlKey<KeyRow>>,
    name: &str,
    now: i64,
    expires: impl Fn(&V) -> i64,
) -> Result<(), OperatorError> {
    ctx.value_state::<V>(name).modify(|v| match v {
        Some(v) if expires(&v) > now => (Some(v), ()),
        _ => (None, ()),
    })
}

/// A state time-to-live in ms (`None`, or zero: none).
pub(crate) fn ttl_ms(ttl: Option<std::time::Duration>) -> Option<i64> {
    ttl.filter(|d| !d.is_zero())
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl GroupAggSpec {
    /// Refuses calls that cannot take rows out again, for an updating input.
    pub fn check_retractable(&self) -> Result<()> {
        for a in &self.aggs {
            if !a.call.function.can_retract() {
                return Err(SqlError::unsupported(
                    None,
                    format!(
                        "{} over an updating input (its rows can be retracted): this version retracts COUNT, SUM, AVG, MIN and MAX",
                        a.call.function.name()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A row of an aggregate's input: a plain row (an insertion) or a change.
pub trait ChangeInput: Clone + Send + 'static {
    /// Whether rows of this type can be retractions (a changelog), not only insertions.
    const UPDATING: bool;
    /// What the row does.
    fn kind(&self) -> RowKind;
    /// Its values.
    fn row(&self) -> &Row;
}

impl ChangeInput for Row {
    const UPDATING: bool = false;
    fn kind(&self) -> RowKind {
        RowKind::Insert
    }
    fn row(&self) -> &Row {
        self
    }
}

impl ChangeInput for Change {
    const UPDATING: bool = true;
    fn kind(&self) -> RowKind {
        self.kind
    }
    fn row(&self) -> &Row {
        &self.row
    }
}

/// How one call accumulates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Accumulating {
    /// The function's accumulator (retracting through [`Accumulator::retract`]).
    Acc(Accumulator),
    /// `MIN`/`MAX` over an updating input: each value and how many rows hold it.
    Extreme {
        counts: BTreeMap<Value, i64>,
        max: bool,
    },
}

/// One call's state for one key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CallState {
    acc: Accumulating,
    /// Rows whose arguments are all non-NULL, net of retractions (a `SUM` of none is NULL).
    values: i64,
}

/// The distinct argument tuples of the `DISTINCT` calls over the same arguments (Flink's
/// shared distinct view: `COUNT(DISTINCT b)` and `COUNT(DISTINCT b) FILTER (…)` keep one map):
/// each tuple and, per call sharing it, how many of its rows pass that call's filter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct DistinctView {
    seen: BTreeMap<Vec<Value>, Vec<i64>>,
}

/// A key's state: its rows net of retractions, each call's state, and when it expires
/// (processing time, ms; `i64::MAX` without a TTL).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupState {
    rows: i64,
    calls: Vec<CallState>,
    /// One per distinct argument list of the `DISTINCT` calls ([`GroupAggFn::views`]).
    distinct: Vec<DistinctView>,
    expires: i64,
}

const STATE: &str = "group-agg-state";

/// What one row did to its key's result.
enum Step {
    /// Nothing (a retraction for a key without state).
    Nothing,
    /// The result before (none for a new key) and after.
    Updated(Option<Row>, Row),
    /// The key's rows are all gone: its last result, if it had one.
    Gone(Option<Row>),
}

#[derive(Clone)]
struct GroupAggFn {
    spec: GroupAggSpec,
    retract: bool,
    name: String,
    /// The distinct views: each distinct argument list and the calls (indexes) over it.
    views: Vec<(Vec<usize>, Vec<usize>)>,
}

/// The distinct views of `spec`'s calls, in order of first appearance.
fn distinct_views(spec: &GroupAggSpec) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut views: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    for (i, a) in spec.aggs.iter().enumerate() {
        if !a.call.distinct {
            continue;
        }
        match views.iter_mut().find(|(args, _)| *args == a.args) {
            Some((_, calls)) => calls.push(i),
            None => views.push((a.args.clone(), vec![i])),
        }
    }
    views
}

fn fail(name: &str, e: SqlError) -> OperatorError {
    OperatorError::failed(format!("{name}: {e}"))
}

impl GroupAggFn {
    fn fresh(&self) -> GroupState {
        GroupState {
            expires: i64::MAX,
            rows: 0,
            calls: self
                .spec
                .aggs
                .iter()
                .map(|a| {
                    let mut plain = a.call.clone();
                    plain.distinct = false;
                    let acc = match a.call.function {
                        AggregateFunction::Min | AggregateFunction::Max if self.retract => {
                            Accumulating::Extreme {
                                counts: BTreeMap::new(),
                                max: a.call.function == AggregateFunction::Max,
                            }
                        }
                        _ => Accumulating::Acc(plain.create_accumulator()),
                    };
                    CallState { acc, values: 0 }
                })
                .collect(),
            distinct: self
                .views
                .iter()
                .map(|_| DistinctView {
                    seen: BTreeMap::new(),
                })
                .collect(),
        }
    }

    /// Whether `row` passes call `a`'s `FILTER` (every row without one).
    fn passes(a: &GroupAggCall, row: &Row) -> bool {
        a.filter.is_none_or(|f| row.get(f) == &Value::Bool(true))
    }

    /// Adds (`add`) or retracts one row into every call of `state`.
    fn apply(&self, state: &mut GroupState, row: &Row, add: bool) -> Result<()> {
        state.rows += if add { 1 } else { -1 };
        let step = if add { 1 } else { -1 };
        // The distinct calls first: a call takes the row when its tuple's count for that call
        // goes 0 → 1 (added) or 1 → 0 (retracted).
        let mut takes = vec![false; self.spec.aggs.len()];
        for ((args, calls), view) in self.views.iter().zip(state.distinct.iter_mut()) {
            let tuple: Vec<Value> = args.iter().map(|&i| row.get(i).clone()).collect();
            if tuple.iter().any(Value::is_null) {
                continue;
            }
            let passing: Vec<bool> = calls
                .iter()
                .map(|&c| Self::passes(&self.spec.aggs[c], row))
                .collect();
            if !passing.iter().any(|p| *p) {
                continue;
            }
            let counts = view
                .seen
                .entry(tuple.clone())
                .or_insert_with(|| vec![0; calls.len()]);
            for (slot, &c) in calls.iter().enumerate() {
                if passing[slot] {
                    counts[slot] += step;
                    takes[c] = if add {
                        counts[slot] == 1
                    } else {
                        counts[slot] == 0
                    };
                }
            }
            if counts.iter().all(|n| *n <= 0) {
                view.seen.remove(&tuple);
            }
        }
        for (i, (a, c)) in self
            .spec
            .aggs
            .iter()
            .zip(state.calls.iter_mut())
            .enumerate()
        {
            if a.call.distinct {
                if !takes[i] {
                    continue;
                }
            } else if !Self::passes(a, row) {
                continue;
            }
            let args: Vec<Value> = a.args.iter().map(|&i| row.get(i).clone()).collect();
            if !args.iter().any(Value::is_null) {
                c.values += step;
            }
            match &mut c.acc {
                Accumulating::Acc(acc) if add => acc.add(&args)?,
                Accumulating::Acc(acc) => acc.retract(&args)?,
                Accumulating::Extreme { counts, .. } => {
                    let Some(v) = args.into_iter().next().filter(|v| !v.is_null()) else {
                        continue;
                    };
                    let n = counts.entry(v.clone()).or_insert(0);
                    *n += step;
                    if *n <= 0 {
                        counts.remove(&v);
                    }
                }
            }
        }
        Ok(())
    }

    /// The key's output row: its key columns (from `row`, a row of the key), then each result.
    fn result(&self, state: &GroupState, row: &Row) -> Row {
        let mut values: Vec<Value> = self.spec.keys.iter().map(|&i| row.get(i).clone()).collect();
        for (a, c) in self.spec.aggs.iter().zip(&state.calls) {
            values.push(match &c.acc {
                Accumulating::Acc(_)
                    if c.values == 0 && a.call.function == AggregateFunction::Sum =>
                {
                    Value::Null
                }
                Accumulating::Acc(acc) => acc.result(),
                Accumulating::Extreme { counts, max } => {
                    let v = if *max {
                        counts.keys().next_back()
                    } else {
                        counts.keys().next()
                    };
                    v.cloned().unwrap_or(Value::Null)
                }
            });
        }
        Row(values)
    }
}

impl<I: ChangeInput> KeyedProcessFunction<SqlKey<KeyRow>, I, Change> for GroupAggFn {
    fn process_element(
        &mut self,
        input: I,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        let add = input.kind().is_addition();
        let row = input.row();
        let ttl = ttl_ms(self.spec.state_ttl);
        let now = match ttl {
            Some(_) => ctx.timer_service().current_processing_time(),
            None => i64::MIN,
        };
        // The key's state is moved in and out of the store, never cloned (a distinct map can
        // be large); expired state is never read: the key starts over.
        let step = ctx
            .value_state::<GroupState>(STATE)
            .modify(|before| {
                let before = before.filter(|s| s.expires > now);
                let first = before.is_none();
                if first && !add {
                    return (None, Ok(Step::Nothing));
                }
                let mut state = before.unwrap_or_else(|| self.fresh());
                let prev = (!first).then(|| self.result(&state, row));
                if let Err(e) = self.apply(&mut state, row, add) {
                    return (Some(state), Err(e));
                }
                if state.rows > 0 {
                    if let Some(ttl) = ttl {
                        state.expires = now.saturating_add(ttl);
                    }
                    let now_row = self.result(&state, row);
                    (Some(state), Ok(Step::Updated(prev, now_row)))
                } else {
                    (None, Ok(Step::Gone(prev)))
                }
            })?
            .map_err(|e| fail(&self.name, e))?;
        match step {
            Step::Nothing => {}
            Step::Updated(prev, now_row) => {
                if let Some(ttl) = ttl {
                    ctx.timer_service()
                        .register_processing_time_timer(now.saturating_add(ttl));
                }
                match prev {
                    None => out.collect(Change::new(RowKind::Insert, now_row))?,
                    // Unchanged: nothing to say (with a TTL Flink re-emits it, refreshing it
                    // downstream too).
                    Some(p) if p == now_row && ttl.is_none() => {}
                    Some(p) => {
                        if self.spec.update_before {
                            out.collect(Change::new(RowKind::UpdateBefore, p))?;
                        }
                        out.collect(Change::new(RowKind::UpdateAfter, now_row))?;
                    }
                }
            }
            Step::Gone(prev) => {
                if let Some(p) = prev {
                    out.collect(Change::new(RowKind::Delete, p))?;
                }
            }
        }
        Ok(())
    }

    /// State TTL cleanup: forgets the key's state if it expired by `now`.
    fn on_timer(
        &mut self,
        now: i64,
        ctx: &mut sluice_datastream::OnTimerContext<'_, SqlKey<KeyRow>>,
        _out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        clear_expired::<GroupState>(ctx, STATE, now, |s| s.expires)
    }
}

/// The group aggregate of `input` (insertions, or an updating input's changes), keyed by
/// `spec.keys` (all rows on one key, and one subtask, without keys), named and uid'd by `ids`.
pub fn group_aggregate<I: ChangeInput>(
    input: &DataStream<I>,
    spec: &GroupAggSpec,
    ids: &OperatorIds,
) -> Result<DataStream<Change>> {
    let retract = I::UPDATING;
    if retract {
        spec.check_retractable()?;
    }
    let keys = spec.keys.clone();
    let f = GroupAggFn {
        spec: spec.clone(),
        retract,
        name: ids.name.clone(),
        views: distinct_views(spec),
    };
    let out = input
        .key_by(move |r: &I| SqlKey(KeyRow::of(r.row(), &keys)))
        .process(f)
        .name(&ids.name)
        .uid(&ids.uid);
    Ok(if spec.keys.is_empty() {
        out.set_parallelism(1)
    } else {
        out
    })
}
