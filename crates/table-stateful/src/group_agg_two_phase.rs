//! Flink's two-phase unbounded aggregation under mini-batch: `LocalGroupAggregate` →
//! `Exchange` → `GlobalGroupAggregate`.
//!
//! The local phase ([`LocalGroupAgg`], not keyed, before the shuffle) accumulates each key's
//! rows of a bundle in memory and emits one [`Partial`] (the key, its accumulators) per key
//! when the bundle closes: at `table.exec.mini-batch.size` rows, when `allow-latency` has passed
//! since the bundle opened (on the task's tick), before a checkpoint barrier (so a checkpoint
//! never holds rows in a bundle: Flink's `prepareSnapshotPreBarrier`), and at end of input. A
//! hot key's rows thus cross the network once per bundle and upstream subtask, not once each.
//!
//! The global phase merges the partials per key in keyed state and emits the key's row as
//! [`group_aggregate`](crate::group_aggregate) does: `+I` first, then `-U`/`+U` when the result
//! changed. Only insertions are split this way (the planner keeps one phase otherwise).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sluice_datastream::{DataStream, KeyedProcessFunction, ProcessContext};
use sluice_sql::{Accumulator, Change, Result, Row, RowKind, Value};
use sluice_types::{Collector, Operator, OperatorError};

use crate::group_agg::GroupAggSpec;
use crate::key::{KeyRow, SqlKey};
use crate::stateful::OperatorIds;

/// One key's accumulators over one bundle of one local subtask.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Partial {
    /// The key's values.
    pub key: Row,
    /// One accumulator per call.
    pub accs: Vec<Accumulator>,
}

/// When a bundle closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bundle {
    /// `table.exec.mini-batch.size`.
    pub size: usize,
    /// `table.exec.mini-batch.allow-latency`.
    pub latency: Duration,
}

/// The local phase.
pub struct LocalGroupAgg {
    spec: GroupAggSpec,
    bundle: Bundle,
    keys: HashMap<Row, Vec<Accumulator>>,
    rows: usize,
    opened: Option<Instant>,
    name: String,
}

impl LocalGroupAgg {
    fn flush(&mut self, out: &mut dyn Collector<Partial>) -> Result<(), OperatorError> {
        for (key, accs) in self.keys.drain() {
            out.collect(Partial { key, accs })?;
        }
        self.rows = 0;
        self.opened = None;
        Ok(())
    }

    fn fresh(&self) -> Vec<Accumulator> {
        self.spec
            .aggs
            .iter()
            .map(|a| a.call.create_accumulator())
            .collect()
    }
}

impl Operator<Row, Partial> for LocalGroupAgg {
    fn process(&mut self, row: Row, out: &mut dyn Collector<Partial>) -> Result<(), OperatorError> {
        let key = Row(self.spec.keys.iter().map(|&i| row.get(i).clone()).collect());
        if !self.keys.contains_key(&key) {
            let fresh = self.fresh();
            self.keys.insert(key.clone(), fresh);
        }
        if let Some(accs) = self.keys.get_mut(&key) {
            for (a, acc) in self.spec.aggs.iter().zip(accs.iter_mut()) {
                if let Some(f) = a.filter {
                    if row.get(f) != &Value::Bool(true) {
                        continue;
                    }
                }
                let args: Vec<Value> = a.args.iter().map(|&i| row.get(i).clone()).collect();
                acc.add(&args)
                    .map_err(|e| OperatorError::failed(format!("{}: {e}", self.name)))?;
            }
        }
        self.rows += 1;
        let opened = *self.opened.get_or_insert_with(Instant::now);
        if self.rows >= self.bundle.size || opened.elapsed() >= self.bundle.latency {
            self.flush(out)?;
        }
        Ok(())
    }

    fn tick(&mut self, out: &mut dyn Collector<Partial>) -> Result<(), OperatorError> {
        if self
            .opened
            .is_some_and(|o| o.elapsed() >= self.bundle.latency)
        {
            self.flush(out)?;
        }
        Ok(())
    }

    fn prepare_snapshot_pre_barrier(
        &mut self,
        out: &mut dyn Collector<Partial>,
    ) -> Result<(), OperatorError> {
        self.flush(out)
    }

    fn finish(&mut self, out: &mut dyn Collector<Partial>) -> Result<(), OperatorError> {
        self.flush(out)
    }
}

const STATE: &str = "global-group-agg-state";

#[derive(Clone)]
struct GlobalGroupAggFn {
    update_before: bool,
    ttl: Option<i64>,
    name: String,
}

fn result(key: &Row, accs: &[Accumulator]) -> Row {
    let mut v = key.0.clone();
    v.extend(accs.iter().map(Accumulator::result));
    Row(v)
}

impl KeyedProcessFunction<SqlKey<KeyRow>, Partial, Change> for GlobalGroupAggFn {
    fn process_element(
        &mut self,
        p: Partial,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        let now_ms = match self.ttl {
            Some(_) => ctx.timer_service().current_processing_time(),
            None => i64::MIN,
        };
        // The accumulators and when they expire; expired state is never read.
        let before = ctx
            .value_state::<(Vec<Accumulator>, i64)>(STATE)
            .value()?
            .filter(|(_, expires)| *expires > now_ms)
            .map(|(accs, _)| accs);
        let (prev, now, accs) = match before {
            None => {
                let now = result(&p.key, &p.accs);
                (None, now, p.accs)
            }
            Some(mut accs) => {
                let prev = result(&p.key, &accs);
                for (a, b) in accs.iter_mut().zip(&p.accs) {
                    a.merge(b)
                        .map_err(|e| OperatorError::failed(format!("{}: {e}", self.name)))?;
                }
                (Some(prev), result(&p.key, &accs), accs)
            }
        };
        let expires = match self.ttl {
            Some(ttl) => {
                let at = now_ms.saturating_add(ttl);
                ctx.timer_service().register_processing_time_timer(at);
                at
            }
            None => i64::MAX,
        };
        ctx.value_state::<(Vec<Accumulator>, i64)>(STATE)
            .update((accs, expires))?;
        match prev {
            None => out.collect(Change::new(RowKind::Insert, now)),
            Some(p) if p == now && self.ttl.is_none() => Ok(()),
            Some(p) => {
                if self.update_before {
                    out.collect(Change::new(RowKind::UpdateBefore, p))?;
                }
                out.collect(Change::new(RowKind::UpdateAfter, now))
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
        crate::group_agg::clear_expired::<(Vec<Accumulator>, i64)>(ctx, STATE, now, |s| s.1)
    }
}

/// The two phases over `input` (insertions): the local phase chained where the rows are, a
/// keyed exchange, the global phase (one subtask without keys).
pub fn two_phase_group_aggregate(
    input: &DataStream<Row>,
    spec: &GroupAggSpec,
    bundle: Bundle,
    local: &OperatorIds,
    global: &OperatorIds,
) -> Result<DataStream<Change>> {
    for a in &spec.aggs {
        if a.call.distinct || !a.call.is_mergeable() {
            return Err(sluice_sql::SqlError::validation(
                None,
                format!(
                    "internal plan error: {} cannot run in two phases",
                    a.call.function.name()
                ),
            ));
        }
    }
    let (s, name) = (spec.clone(), local.name.clone());
    let partials = input
        .transform(&local.name, move |_| LocalGroupAgg {
            spec: s.clone(),
            bundle,
            keys: HashMap::new(),
            rows: 0,
            opened: None,
            name: name.clone(),
        })
        .uid(&local.uid);
    let idx: Vec<usize> = (0..spec.keys.len()).collect();
    let f = GlobalGroupAggFn {
        update_before: spec.update_before,
        ttl: crate::group_agg::ttl_ms(spec.state_ttl),
        name: global.name.clone(),
    };
    let out = partials
        .key_by(move |p: &Partial| SqlKey(KeyRow::of(&p.key, &idx)))
        .process(f)
        .name(&global.name)
        .uid(&global.uid);
    Ok(if spec.keys.is_empty() {
        out.set_parallelism(1)
    } else {
        out
    })
}
