//! Rules for real sources and sinks: a partitioned source at its partition ceiling, and a sink
//! waiting on its external system. They come before the generic rules of either shape, because
//! their facts (assigned splits, send time, connector options) say more than the busy-time shape.

use super::{Breakdown, Finding};
use crate::ShipStrategy;
use crate::{
    pct, Cause, FixProposal, PlanChange, SourceSplits, BATCH_ROWS, LOW_CPU_RATIO, MAX_ROWS_OPTION,
};

/// A partitioned source (Kafka: one split per partition) busy and not backpressured, with at
/// least as many subtasks as partitions: a partition is read by one subtask only, so more
/// subtasks cannot read faster. The fix is more partitions; the subtasks that own none idle.
/// Applies to either shape (owners busy and the rest idle looks skewed).
pub(super) fn partition_ceiling(b: &Breakdown) -> Option<Finding> {
    let v = b.v;
    if !v.is_source || v.subtasks.is_empty() {
        return None;
    }
    // A chained operator that takes the time is not the source's ceiling.
    if b.operator.is_some() && !b.operator_is_first() {
        return None;
    }
    let assigned: Vec<usize> = v
        .subtasks
        .iter()
        .map(|s| s.assigned_splits.map(|a| a.max(0.0).round() as usize))
        .collect::<Option<_>>()?;
    let partitions: usize = assigned.iter().sum();
    let p = b.p;
    if partitions == 0 || p < partitions || b.hot.iter().any(|&i| assigned[i] == 0) {
        return None;
    }
    let idle: Vec<usize> = (0..assigned.len()).filter(|&i| assigned[i] == 0).collect();
    let mut evidence = vec![format!(
        "the source reads {partitions} partition(s) with {p} subtask(s): each partition is read \
         by one subtask, so at most {partitions} can work"
    )];
    if !idle.is_empty() {
        let names: Vec<String> = idle.iter().map(|i| format!("{}/{p}", i + 1)).collect();
        evidence.push(format!(
            "subtask(s) {} own no partition and idle",
            names.join(", ")
        ));
    }
    evidence.push(format!(
        "the subtasks that own partitions run flat out ({}) and nothing downstream holds them back",
        pct(b.hot_busy)
    ));
    // With idle subtasks, partitions up to the parallelism put them to work; at one subtask per
    // partition both must grow.
    let (target, change, effect) = if p > partitions {
        (
            p,
            format!("add partitions to the source's topic: {partitions} → {p} (one per subtask)"),
            format!(
                "up to {:.1}x the input rate with the {p} subtasks already running",
                p as f64 / partitions as f64
            ),
        )
    } else {
        let n = b.n.max(p + 1);
        (
            n,
            format!(
                "add partitions to the source's topic: {partitions} → {n}, and run the source \
                 at parallelism {n}"
            ),
            format!(
                "up to {:.1}x the input rate with {n} partitions and subtasks",
                n as f64 / partitions as f64
            ),
        )
    };
    let mut f = Finding::new(
        Cause::SourceCeiling,
        if b.operator.is_some() { 0.85 } else { 0.7 },
        evidence,
        Some(FixProposal {
            description: format!(
                "add partitions (at least {target}); raising the source's parallelism alone \
                 cannot help: subtasks beyond the partitions get nothing to read"
            ),
            change,
            plan_change: None,
        }),
        effect,
    );
    f.source_splits = Some(SourceSplits {
        partitions,
        idle_subtasks: idle,
    });
    Some(f)
}

/// The sink operator (last in its chain, or alone) is busy. While its batches are small (a
/// declared `sink.buffer-flush.max-rows` below [`BATCH_ROWS`]) the fix is to batch the writes —
/// a connector option the fixer sets — whatever the CPU says: every request costs a round trip
/// and a statement. With batched writes, a sink that waits on its system (little CPU per busy
/// ms, or its send time reported where CPU is not) is scaled, which helps while the external
/// system has room; a sink that computes is left to the generic sink rule.
pub(super) fn waiting_sink(b: &Breakdown) -> Option<Finding> {
    let v = b.v;
    let alone = b.operator.is_none() && v.operators.len() <= 1;
    if !(v.is_sink && (b.operator_is_last() || alone)) {
        return None;
    }
    let send_time = crate::mean_opt(b.hot.iter().map(|&i| v.subtasks[i].send_time));
    let blocked = sink_blocked(b, alone);
    let waiting = match b.cpu {
        Some(c) => c + b.cpu_wait.unwrap_or(0.0) < LOW_CPU_RATIO * b.hot_busy,
        None => send_time.is_some() || blocked.is_some(),
    };
    let target = b.operator.clone().unwrap_or_else(|| v.name.clone());
    let mut evidence = vec![match (b.cpu, &blocked) {
        (Some(c), _) if waiting => format!(
            "the sink is busy {} but on the CPU only {}: it waits on the system it writes to",
            pct(b.hot_busy),
            pct(c)
        ),
        (None, Some((share, what))) => format!(
            "the sink `{target}` is busy {} and {:.0}% of its flame-graph samples are off CPU \
             in {what}: it waits on the system it writes to",
            pct(b.hot_busy),
            share * 100.0
        ),
        _ => format!("the sink is busy writing ({})", pct(b.hot_busy)),
    }];
    // The CPU figure said it waits; the flame graph says in what.
    if let (Some(_), true, Some((share, what))) = (b.cpu, waiting, &blocked) {
        evidence.push(format!(
            "{:.0}% of the sink `{target}`'s flame-graph samples are off CPU in {what}",
            share * 100.0
        ));
    }
    if let Some(t) = send_time {
        evidence.push(format!("its last write took {t:.1} ms (currentSendTime)"));
    }
    let max_rows = v
        .options
        .iter()
        .rfind(|o| o.operator == target && o.key == MAX_ROWS_OPTION)
        .or_else(|| v.options.iter().rfind(|o| o.key == MAX_ROWS_OPTION));
    let small_batches = max_rows.and_then(|o| {
        let rows: usize = o.value.trim().parse().ok()?;
        (rows < BATCH_ROWS).then_some((o, rows))
    });
    if let Some((o, rows)) = small_batches {
        evidence.push(format!(
            "it writes at most {rows} row(s) per request ({MAX_ROWS_OPTION} = {}): one round \
             trip per {rows} row(s)",
            o.value
        ));
        return Some(Finding::new(
            Cause::SinkLimit,
            if waiting || send_time.is_some() {
                0.8
            } else {
                0.7
            },
            evidence,
            Some(FixProposal {
                description: format!(
                    "batch the writes: {rows} → {BATCH_ROWS} rows per request (the sink still \
                     flushes at every checkpoint and at its flush interval, so what reaches \
                     the table is unchanged)"
                ),
                change: format!(
                    "set `{}` option {MAX_ROWS_OPTION} = {BATCH_ROWS}",
                    o.operator
                ),
                plan_change: Some(PlanChange::SinkOption {
                    operator: o.operator.clone(),
                    key: MAX_ROWS_OPTION.to_string(),
                    value: BATCH_ROWS.to_string(),
                }),
            }),
            format!(
                "up to {:.0}x fewer round trips; the write rate rises until the system's \
                 per-row cost dominates",
                BATCH_ROWS as f64 / rows.max(1) as f64
            ),
        ));
    }
    if !waiting {
        return None;
    }
    // Batch size unknown (Flink reports none): a wait per record as long as a round trip says
    // each record is its own request, so batching comes first.
    let rate = sink_rate(b);
    let wait_share = blocked.as_ref().map_or(1.0, |(s, _)| *s);
    let per_record = rate.map(|r| b.hot_busy * wait_share / r.max(1e-9));
    if let (None, Some(r), Some(w)) = (max_rows, rate, per_record) {
        evidence.push(format!(
            "it takes {r:.0} records/s per subtask and waits {w:.2} ms per record"
        ));
        if w >= ROUND_TRIP_MS {
            return Some(batch_unknown(b, &target, r, w, evidence));
        }
    }
    if let Some(o) = max_rows {
        evidence.push(format!(
            "its writes are already batched ({MAX_ROWS_OPTION} = {})",
            o.value
        ));
    }
    let (p, n) = (b.p, b.n);
    let (operator, ship, how) = scale_target(b, &target);
    let split = if v.operators.len() > 1 && operator == target {
        format!(
            " (split `{target}` from its chain — `disableChaining()` or `startNewChain()` on \
             it — with its own parallelism)"
        )
    } else {
        String::new()
    };
    Some(Finding::new(
        Cause::SinkLimit,
        0.7,
        evidence,
        Some(FixProposal {
            description: format!(
                "scale the sink: {n} subtasks write in parallel{split}, if the external system \
                 has room (its own CPU and I/O are not saturated){how}"
            ),
            change: format!("raise `{operator}` to parallelism {n} behind {ship}"),
            plan_change: Some(PlanChange::Parallelism {
                operator,
                parallelism: n,
                ship,
            }),
        }),
        format!(
            "up to {:.1}x the write rate while the external system keeps up",
            n as f64 / p as f64
        ),
    ))
}

/// A sink waiting at least this long per record (ms) makes one request per record: batching
/// is its fix before scaling.
pub const ROUND_TRIP_MS: f64 = 0.05;

/// The share of the sink's flame-graph samples spent off CPU, with what it waits in, when it
/// reaches [`BLOCKED_SHARE`](super::uniform::BLOCKED_SHARE): the sink's own samples when the
/// frames tell the chain's operators apart, else the whole vertex's when the sink is alone.
fn sink_blocked(b: &Breakdown, alone: bool) -> Option<(f64, String)> {
    let p = b.profile.as_ref()?;
    let share = match (&b.chain_time, b.operator_position()) {
        (Some(t), Some(k)) => t.blocked_share(k),
        _ if alone => p.blocked_share,
        _ => return None,
    };
    let what = match &p.blocked_in {
        Some((kind, frame, _)) => format!("{} (`{frame}`)", kind.describe()),
        None => "a blocking call".to_string(),
    };
    (share >= super::uniform::BLOCKED_SHARE).then_some((share, what))
}

/// Records per second into one busy sink subtask: the sink operator's own input rate when
/// reported (a sink chained behind a source), else the vertex's.
fn sink_rate(b: &Breakdown) -> Option<f64> {
    let v = b.v;
    crate::mean_opt(b.hot.iter().map(|&i| v.subtasks[i].last_records_in))
        .or_else(|| (b.hot_rate > 0.0).then(|| b.hot_rate / b.hot.len().max(1) as f64))
        .filter(|r| *r > 0.0)
}

/// The batch fix of a sink whose batch size is unknown and which waits a round trip per
/// record (`r` records/s per subtask, `w` ms waited per record).
fn batch_unknown(
    b: &Breakdown,
    target: &str,
    r: f64,
    w: f64,
    mut evidence: Vec<String>,
) -> Finding {
    evidence.push(format!(
        "{w:.2} ms per record is a request per record (≥ {ROUND_TRIP_MS} ms): the writes are \
         not batched, so batching comes before scaling"
    ));
    let (p, n) = (b.p, b.n);
    // Busy ms per record now, and after the wait is shared by a batch: the chain's time on the
    // CPU (the flame graph's on-CPU share, when sampled) stays.
    let per = b.hot_busy / r.max(1e-9);
    let computing = match &b.profile {
        Some(p) => per * (1.0 - p.blocked_share),
        None => (per - w).max(0.0),
    };
    let after = (computing + w / BATCH_ROWS as f64).max(1e-9);
    let speedup = (per / after).max(1.0);
    let scale = if n > p {
        format!("with its own parallelism {n} behind REBALANCE")
    } else {
        format!(
            "with its own, higher parallelism behind REBALANCE once the cluster has free slots \
             (none beyond the {p} in use)"
        )
    };
    Finding::new(
        Cause::SinkLimit,
        0.75,
        evidence,
        Some(FixProposal {
            description: format!(
                "batch the writes: buffer records and write them {BATCH_ROWS} per request \
                 (the connector's buffer-flush options: JDBC `JdbcExecutionOptions.withBatchSize` \
                 / SQL `{MAX_ROWS_OPTION}` with `sink.buffer-flush.interval`; flushed at every \
                 checkpoint, so what reaches the system is unchanged). If they are already \
                 batched, scale the sink instead: split `{target}` from its chain {scale}, where \
                 the external system has room"
            ),
            change: format!(
                "batch the writes of `{target}` ({MAX_ROWS_OPTION} = {BATCH_ROWS} or the \
                 connector's batch size)"
            ),
            plan_change: None,
        }),
        format!(
            "the wait per record falls from {w:.2} ms toward {:.1} µs (one round trip per \
             {BATCH_ROWS} rows): up to {speedup:.0}x the write rate ({r:.0} records/s per \
             subtask now), until the chain's own work or the system's per-row cost is the limit",
            1000.0 * w / BATCH_ROWS as f64
        ),
    )
}

/// What to raise to scale sink `target`, behind which ship strategy, and a note. A sink fed a
/// keyed stream (chained behind a keyed operator, or FORWARD from one) must keep each key's
/// updates in order, or an upsert's last write per key changes: raise the keyed operator with
/// HASH kept (its FORWARD successors, the sink among them, move with it). Otherwise REBALANCE
/// into the sink.
pub(super) fn scale_target(b: &Breakdown, target: &str) -> (String, ShipStrategy, &'static str) {
    const NOTE: &str = "; together with the keyed operator feeding it, HASH kept, so each \
                        key's updates stay in order";
    if b.keyed {
        if let Some(head) = &b.first_op {
            return (head.clone(), ShipStrategy::Hash, NOTE);
        }
    }
    let v = b.v;
    let forward = !v.ship_strategies.is_empty()
        && v.ship_strategies
            .iter()
            .all(|s| s.eq_ignore_ascii_case("FORWARD"));
    if forward && v.inputs.len() == 1 {
        let u = &b.job.vertices[v.inputs[0]];
        if u.ship_strategies
            .iter()
            .any(|s| s.eq_ignore_ascii_case("HASH"))
        {
            if let Some(head) = u.operators.first() {
                return (head.clone(), ShipStrategy::Hash, NOTE);
            }
        }
    }
    (target.to_string(), ShipStrategy::Rebalance, "")
}
