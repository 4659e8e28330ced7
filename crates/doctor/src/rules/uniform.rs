//! Rules for a uniform bottleneck: the busy subtasks are alike, so the cause is in what each of
//! them does (or in how many there are).

use super::{Breakdown, Finding};
use crate::ShipStrategy;
use crate::{
    mean_opt, pct, Cause, FixProposal, PlanChange, LOW_CPU_RATIO, STATE_RATIO, TARGET_BUSY,
};

/// A flame graph with this share of the working samples blocked off CPU shows blocking calls.
pub const BLOCKED_SHARE: f64 = 0.5;
/// A flame graph with this share of on-CPU samples in serialization frames shows its cost.
pub const SERIALIZATION_SHARE: f64 = 0.4;

/// Evidence shared by the uniform rules: all subtasks busy alike, and an oversubscribed
/// machine when the busy time is largely waiting for a free CPU.
pub(super) fn shape_evidence(b: &Breakdown) -> Vec<String> {
    let mut evidence = vec![format!(
        "all {} subtask(s) are busy alike ({} on average, min {})",
        b.p,
        pct(b.avg_busy()),
        pct(b.busy.iter().copied().fold(f64::INFINITY, f64::min))
    )];
    if let (Some(c), Some(w)) = (b.cpu, b.cpu_wait) {
        if w > 0.25 * b.hot_busy {
            evidence.push(format!(
                "the machine is oversubscribed: of busy {} the thread computed {} and waited {} for a free CPU",
                pct(b.hot_busy),
                pct(c),
                pct(w)
            ));
        }
    }
    evidence
}

/// The record rate collapses now and then while the busy time stays up, in every subtask at
/// once: pauses, not a lack of capacity.
pub(super) fn stalls(b: &Breakdown) -> Option<Finding> {
    let k = b.stall_samples?;
    Some(Finding::new(
        Cause::Stalls,
        0.6,
        vec![format!(
            "in {k} of {} samples the record rate fell below a third of its median while the \
             busy time stayed high, in every subtask at once",
            b.sample_count
        )],
        None,
        "look for allocation, compaction or pauses (GC, swapping) at those moments; more \
         parallelism would stall the same way"
            .to_string(),
    ))
}

/// Busy but hardly on the CPU: the thread waits inside the operator. Async I/O keeps several
/// requests in flight. Decided by the CPU time when it is reported, else (Flink) by the flame
/// graph: mostly off CPU inside the operator.
pub(super) fn blocking_calls(b: &Breakdown) -> Option<Finding> {
    // A sink that waits is the sink rules' (batch or scale it): async I/O is for lookups.
    let alone = b.operator.is_none() && b.v.operators.len() <= 1;
    if b.v.is_sink && (b.operator_is_last() || alone) {
        return None;
    }
    let hot_busy = b.hot_busy;
    // From the metrics: little CPU per busy ms (time waiting for a free core counts as CPU).
    let by_metrics = b
        .cpu
        .filter(|c| *c + b.cpu_wait.unwrap_or(0.0) < LOW_CPU_RATIO * hot_busy);
    // From the flame graph: most working samples off CPU inside the operator (a direct look,
    // so it also decides when the CPU metrics are missing, as on Flink, or blurred by a
    // loaded machine).
    let by_profile = b
        .profile
        .as_ref()
        .filter(|p| p.blocked_share >= BLOCKED_SHARE);
    let on_cpu = match (by_metrics, by_profile) {
        (Some(c), _) => c,
        (None, Some(p)) => hot_busy * (1.0 - p.blocked_share),
        (None, None) => return None,
    };
    let mut evidence = Vec::new();
    if let Some(c) = by_metrics {
        evidence.push(format!(
            "busy {} but on the CPU only {}: the thread waits inside the operator (synchronous I/O, sleeps, locks)",
            pct(hot_busy),
            pct(c)
        ));
    }
    evidence.extend(b.profile.as_ref().and_then(|p| p.blocked_line()));
    // Little's law: requests in flight = arrival rate × time each stays in flight. The rate
    // to aim at is what a subtask sustains when it only computes (its CPU per record), the
    // time in flight the observed busy time per record; with headroom for latency spread.
    let per_subtask = b.hot_rate / b.hot.len().max(1) as f64;
    let ratio = hot_busy / on_cpu.max(1.0);
    let capacity = ((ratio * LITTLE_HEADROOM).ceil() as usize).clamp(2, MAX_CAPACITY);
    if per_subtask > 0.0 {
        let latency_ms = hot_busy / per_subtask;
        let target = per_subtask * ratio;
        // The rate cancels out (target = rate × busy/CPU, latency = busy/rate), so the
        // capacity holds even where the record rate is sampled coarsely.
        evidence.push(format!(
            "Little's law: capacity = target rate × latency = ({target:.0} records/s per subtask if it only computed) × ({latency_ms:.2} ms per record in the call) = busy/CPU = {ratio:.1}, × {LITTLE_HEADROOM} headroom ≈ {capacity}"
        ));
    }
    // Without per-operator time the vertex is all that is known; a chain holds at most one
    // lookup join in practice, and then it is the call that blocks.
    let lookups: Vec<&str> =
        b.v.options
            .iter()
            .filter(|o| o.key == LOOKUP_ASYNC_OPTION)
            .map(|o| o.operator.as_str())
            .collect();
    let op = match (&b.operator, lookups.as_slice()) {
        (None, [one]) => one.to_string(),
        _ => b.op_or_vertex.clone(),
    };
    let op = &op;
    let options = |key: &str| {
        b.v.options
            .iter()
            .any(|o| (o.operator == *op || b.v.operators.len() == 1) && o.key == key)
    };
    // Rule order: a lookup whose keys repeat gets a cache first (each hit is a call saved, at
    // no CPU or service cost); async with the capacity above when they do not.
    let repeat = mean_opt(b.hot.iter().map(|&i| b.v.subtasks[i].key_repeat));
    let cache_off =
        b.v.options.iter().rfind(|o| {
            (o.operator == *op || b.v.operators.len() == 1) && o.key == LOOKUP_CACHE_OPTION
        });
    let cache_off = cache_off.is_some_and(|o| o.value.eq_ignore_ascii_case("NONE"));
    if let Some(r) = repeat.filter(|_| options(LOOKUP_ASYNC_OPTION)) {
        if let Some(f) = cache_finding(op, r, cache_off, &mut evidence, by_metrics.is_some()) {
            return Some(f);
        }
    }
    let (description, change) = if options(LOOKUP_ASYNC_OPTION) {
        (
            format!(
                "make the lookup join asynchronous (its plan option lookup.async) with {capacity} requests per subtask in flight instead of one; output order is kept (ORDERED)"
            ),
            format!("async lookup in `{op}` with capacity {capacity}"),
        )
    } else if options(ASYNC_CAPACITY_OPTION) {
        (
            format!("raise the async operator's capacity to {capacity} requests per subtask"),
            format!("async I/O in `{op}` with capacity {capacity}"),
        )
    } else {
        (
            format!(
                "call the external system asynchronously (async I/O: ordered_wait / unordered_wait) so {capacity} requests per subtask are in flight instead of one"
            ),
            format!("async I/O in `{op}` with capacity {capacity}"),
        )
    };
    Some(Finding::new(
        Cause::BlockingCalls,
        if by_metrics.is_some() { 0.8 } else { 0.7 },
        evidence,
        Some(FixProposal {
            description,
            change,
            plan_change: Some(PlanChange::AsyncCapacity {
                operator: op.clone(),
                capacity,
            }),
        }),
        format!("up to {ratio:.1}x the throughput before the CPU becomes the limit"),
    ))
}

/// The cache fix of a blocking lookup whose keys repeat (ratio `repeat` ≥ [`REPEAT_FOR_CACHE`]
/// and no cache yet); else the reason goes into `evidence` and the async fix follows.
fn cache_finding(
    op: &str,
    repeat: f64,
    cache_off: bool,
    evidence: &mut Vec<String>,
    from_metrics: bool,
) -> Option<Finding> {
    let seen = format!(
        "{:.0}% of `{op}`'s recent lookups (its last 1024) repeat a key seen earlier among them",
        repeat * 100.0
    );
    if repeat < REPEAT_FOR_CACHE {
        evidence.push(format!(
            "{seen}: below {:.0}%, a cache would mostly miss, so the fix is async (a cache comes first when keys repeat)",
            REPEAT_FOR_CACHE * 100.0
        ));
        return None;
    }
    if !cache_off {
        evidence.push(format!(
            "{seen}, but the lookup already has a cache: the misses block, so the fix is async"
        ));
        return None;
    }
    evidence.push(format!(
        "{seen}: at or above {:.0}% a cache answers those without a call, so the fix is a cache before async (async with the Little's-law capacity when keys do not repeat)",
        REPEAT_FOR_CACHE * 100.0
    ));
    Some(Finding::new(
        Cause::BlockingCalls,
        if from_metrics { 0.8 } else { 0.7 },
        std::mem::take(evidence),
        Some(FixProposal {
            description: format!(
                "cache the lookup: LookupCache::partial({CACHE_ROWS}, 60s) (plan options lookup.cache = PARTIAL, lookup.partial-cache.max-rows = {CACHE_ROWS}); a repeated key is answered without a call"
            ),
            change: format!("cache the lookup in `{op}`: LookupCache::partial({CACHE_ROWS}, 60s)"),
            plan_change: Some(PlanChange::LookupCache {
                operator: op.to_string(),
                max_rows: CACHE_ROWS,
            }),
        }),
        format!(
            "about {:.1}x fewer calls (a {:.0}% hit rate) while the cache holds the repeated keys",
            1.0 / (1.0 - repeat).max(0.01),
            repeat * 100.0
        ),
    ))
}

/// A lookup whose key repeat ratio reaches this gets a cache rather than async I/O.
pub const REPEAT_FOR_CACHE: f64 = 0.5;
/// Rows of the cache the blocking-calls fix proposes (far above the 1024-lookup window's keys).
pub const CACHE_ROWS: usize = 10_000;
/// A lookup join's cache option (`NONE` / `PARTIAL`).
pub const LOOKUP_CACHE_OPTION: &str = "lookup.cache";

/// Headroom over Little's law for the capacity the blocking-calls fix proposes.
pub const LITTLE_HEADROOM: f64 = 1.25;
/// The largest capacity the blocking-calls fix proposes.
pub const MAX_CAPACITY: usize = 1000;
/// A lookup join's plan option for its mode (`sluice-lookup`): what makes the fix a plan change.
pub const LOOKUP_ASYNC_OPTION: &str = "lookup.async";
/// The async wait operator's capacity option.
pub const ASYNC_CAPACITY_OPTION: &str = "async.capacity";

/// Most of the busy time goes to keyed-state calls: the state-access time when reported, else
/// the flame graph's on-CPU samples in state frames.
pub(super) fn state_access(b: &Breakdown) -> Option<Finding> {
    let hot_busy = b.hot_busy;
    let from_profile = b
        .profile
        .as_ref()
        .filter(|p| p.state.0 >= STATE_RATIO)
        .map(|p| {
            format!(
                "flame graph: {:.0}% of on-CPU samples in keyed-state calls, outermost `{}`",
                p.state.0 * 100.0,
                p.state.1.as_deref().unwrap_or("?")
            )
        });
    let mut evidence = Vec::new();
    match b.state {
        Some(s) if s >= STATE_RATIO * hot_busy => evidence.push(format!(
            "{} of the busy time goes to keyed-state calls ({} of {})",
            pct(1000.0 * s / hot_busy.max(1.0)),
            pct(s),
            pct(hot_busy)
        )),
        Some(_) => return None,
        None if from_profile.is_none() => return None,
        None => {}
    }
    evidence.extend(from_profile);
    Some(Finding::new(
        Cause::StateAccess,
        0.7,
        evidence,
        Some(FixProposal {
            description: "use the memory backend if the state fits in memory, keep less state \
                          (TTL, smaller values), or raise the parallelism to split the key groups"
                .to_string(),
            change: format!("cheaper state access in `{}`", b.op_or_vertex),
            plan_change: None,
        }),
        "the busy time falls with the state-access time".to_string(),
    ))
}

/// The flame graph's on-CPU samples are mostly in serialization frames (Kryo fallback, a
/// generic serializer, JSON): the records' encoding costs more than the work on them.
pub(super) fn serialization(b: &Breakdown) -> Option<Finding> {
    let p = b.profile.as_ref()?;
    let (share, frame) = (&p.serialization.0, &p.serialization.1);
    if *share < SERIALIZATION_SHARE {
        return None;
    }
    let mut evidence = vec![format!(
        "flame graph: {:.0}% of on-CPU samples in serialization, outermost `{}`",
        share * 100.0,
        frame.as_deref().unwrap_or("?")
    )];
    if let Some(k) = p.kryo.as_ref().filter(|k| k.share >= 0.5 * share) {
        return Some(kryo(b, k, evidence));
    }
    Some(Finding::new(
        Cause::Serialization,
        0.65,
        std::mem::take(&mut evidence),
        Some(FixProposal {
            description: "give the records a type with a dedicated serializer (no generic or \
                          reflective fallback), send fewer or smaller fields, or chain the \
                          operators so records are not serialized between them"
                .to_string(),
            change: format!("cheaper record encoding in `{}`", b.op_or_vertex),
            plan_change: None,
        }),
        "the busy time falls with the serialization time".to_string(),
    ))
}

/// Serialization in Kryo: Flink fell back to generic serialization for a type it cannot analyse
/// as a POJO. Names the edge (the records the vertex reads, or those it sends), the type when the
/// frames show it, and Flink's fixes.
fn kryo(b: &Breakdown, k: &crate::profile::KryoUse, mut evidence: Vec<String>) -> Finding {
    let v = b.v;
    let last = |w: &crate::VertexView| {
        w.operators
            .last()
            .cloned()
            .unwrap_or_else(|| w.name.clone())
    };
    // The type is the output type of the operator that emits the records: upstream of the
    // vertex when it reads them, its last operator when it sends them.
    let (edge, op, emitter) = if k.reading >= 0.5 {
        let op = v
            .operators
            .first()
            .cloned()
            .unwrap_or_else(|| v.name.clone());
        let up = v.inputs.first().map(|&u| last(&b.job.vertices[u]));
        (format!("the records `{op}` reads from its input"), op, up)
    } else {
        let op = last(v);
        (
            format!("the records `{op}` sends downstream"),
            op.clone(),
            Some(op),
        )
    };
    let ty = match (k.types.first(), &emitter) {
        (Some(t), _) => format!("type `{t}`"),
        (None, Some(e)) => format!(
            "the type `{e}` emits (the frames do not name it; Flink logs it at submission: \
             \"… cannot be used as a POJO type … must be processed as GenericType\")"
        ),
        (None, None) => "the record type (the frames do not name it)".to_string(),
    };
    evidence.push(format!(
        "{:.0}% of on-CPU samples are in Kryo ({:.0}% of them reading): Flink fell back to \
         generic serialization (Kryo) for {ty}, {edge}",
        k.share * 100.0,
        k.reading * 100.0
    ));
    let short = match (k.types.first(), &emitter) {
        (Some(t), _) => format!("`{t}`"),
        (None, Some(e)) => format!("the type `{e}` emits"),
        (None, None) => "the record type".to_string(),
    };
    Finding::new(
        Cause::Serialization,
        0.75,
        evidence,
        Some(FixProposal {
            description: format!(
                "Flink serializes {short} with Kryo because it is no POJO it can analyse: make it \
                 a POJO (a public class with a public no-arg constructor and public non-final \
                 fields or public getters/setters, so Flink uses its PojoSerializer), or register \
                 a serializer for it (`pipeline.serialization-config`: a TypeInfoFactory, or a \
                 Kryo serializer of its own); and set \
                 `pipeline.generic-types: false`, so Flink refuses every type that would fall \
                 back to Kryo at submission and names it"
            ),
            change: format!(
                "a POJO or a registered serializer for {short} (into `{op}`); \
                 `pipeline.generic-types: false`"
            ),
            plan_change: None,
        }),
        "the busy time falls with the Kryo time".to_string(),
    )
}

/// The source operator itself (named, or alone in its vertex) runs flat out. Its splits are
/// unknown here (a partitioned source that reports them is `partition_ceiling`'s), so more
/// subtasks may or may not read faster: with free cores the fix is a parallelism change that a
/// re-measurement judges (the autopilot keeps it only if the rate rises, else rolls it back).
pub(super) fn source_ceiling(b: &Breakdown) -> Option<Finding> {
    let v = b.v;
    let alone = b.operator.is_none() && v.operators.len() <= 1;
    if !(v.is_source && (b.operator_is_first() || alone)) {
        return None;
    }
    let (n, p) = (b.n, b.p);
    let target = b.operator.clone().unwrap_or_else(|| v.name.clone());
    let mut evidence = vec![format!(
        "the source itself runs flat out ({}) and nothing downstream holds it back",
        pct(b.hot_busy)
    )];
    let plan_change = (n > p).then(|| PlanChange::Parallelism {
        operator: target.clone(),
        parallelism: n,
        ship: ShipStrategy::Rebalance,
    });
    if plan_change.is_none() {
        evidence.push(format!("no free cores beyond the {p} subtasks in use"));
    }
    Some(Finding::new(
        Cause::SourceCeiling,
        if b.operator.is_some() { 0.75 } else { 0.6 },
        evidence,
        Some(FixProposal {
            description: "read with more parallel source subtasks (up to the partitions/splits \
                          of the input); if the source already has one subtask per partition, the \
                          source system is the limit: add partitions"
                .to_string(),
            change: format!("raise `{target}` to parallelism {n} if its input has ≥ {n} splits"),
            plan_change,
        }),
        format!(
            "up to {:.1}x the input rate with {n} source subtasks",
            n as f64 / p as f64
        ),
    ))
}

/// A busy source chain whose operator times are not reported: the source cannot be told from
/// the operators chained to it.
pub(super) fn busy_source_chain(b: &Breakdown) -> Option<Finding> {
    if !(b.v.is_source && b.operator.is_none()) {
        return None;
    }
    Some(Finding::new(
        Cause::SourceCeiling,
        0.5,
        vec![format!(
            "a source chain is busy ({}) and not backpressured; without per-operator time the \
             source cannot be told from the operators chained to it",
            pct(b.hot_busy)
        )],
        None,
        "unknown until the operator inside the chain is known".to_string(),
    ))
}

/// The sink operator (named, or alone in its vertex) is busy writing.
pub(super) fn sink_limit(b: &Breakdown) -> Option<Finding> {
    let v = b.v;
    let alone = b.operator.is_none() && v.operators.len() <= 1;
    if !(v.is_sink && (b.operator_is_last() || alone)) {
        return None;
    }
    let n = b.n;
    let target = b.operator.clone().unwrap_or_else(|| v.name.clone());
    let (operator, ship, how) = super::connectors::scale_target(b, &target);
    Some(Finding::new(
        Cause::SinkLimit,
        0.7,
        vec![format!("the sink is busy writing ({})", pct(b.hot_busy))],
        Some(FixProposal {
            description: format!(
                "batch the writes (larger, fewer requests) or scale the sink{how}"
            ),
            change: format!(
                "raise `{operator}` to parallelism {n} behind {ship}, or batch its writes"
            ),
            plan_change: Some(PlanChange::Parallelism {
                operator,
                parallelism: n,
                ship,
            }),
        }),
        format!(
            "up to {:.1}x the write rate if the external system keeps up",
            n as f64 / b.p as f64
        ),
    ))
}

/// Real work on every subtask: more subtasks (N for [`TARGET_BUSY`]), or cheaper work when no
/// cores are free. Always matches a uniform breakdown.
pub(super) fn under_provisioned(b: &Breakdown) -> Finding {
    let (v, p, n) = (b.v, b.p, b.n);
    let mut confidence = if b.operator.is_some() || v.operators.len() <= 1 {
        0.75
    } else {
        0.6
    };
    let mut evidence = Vec::new();
    if let Some(cpu) = b.cpu {
        evidence.push(format!(
            "the busy time is CPU time (cpu {} of busy {}): real work",
            pct(cpu),
            pct(b.hot_busy)
        ));
    }
    let target = b.operator.clone().unwrap_or_else(|| v.name.clone());
    // A keyed operator heading its chain keeps HASH; anything else gets REBALANCE (a chained
    // operator raised alone leaves its chain through a redistributing edge).
    let ship = if b.keyed && (b.operator_is_first() || b.operator.is_none()) {
        ShipStrategy::Hash
    } else {
        ShipStrategy::Rebalance
    };
    let (fix, effect) = if n <= p {
        evidence.push(format!("no free cores beyond the {p} subtasks in use"));
        (
            FixProposal {
                description: format!("make `{target}` cheaper: no cores are free to scale it"),
                change: format!("cheaper work in `{target}`"),
                plan_change: None,
            },
            "the throughput rises as the per-record cost falls".to_string(),
        )
    } else {
        let capped = if b.job.available_cores.is_some() {
            " (capped by the free cores)"
        } else {
            ""
        };
        // A chained operator after the head is raised alone: it leaves its chain.
        let split = if b.operator.is_some() && !b.operator_is_first() && v.operators.len() > 1 {
            format!(
                "split `{target}` from its chain (`startNewChain()` or `disableChaining()` on \
                 it) and "
            )
        } else {
            String::new()
        };
        let fix = FixProposal {
            description: format!(
                "{split}run `{target}` on more subtasks: N = ceil({p} × {:.2} / {TARGET_BUSY}) = \
                 {n}{capped}, fed by {ship} instead of FORWARD; {}or make it cheaper",
                b.busy_ratio,
                if split.is_empty() {
                    ""
                } else {
                    "or raise the parallelism of the whole chain; "
                }
            ),
            change: format!("raise `{target}` to parallelism {n} behind {ship}"),
            plan_change: Some(PlanChange::Parallelism {
                operator: target.clone(),
                parallelism: n,
                ship,
            }),
        };
        let effect = format!(
            "{}{:.1}x the throughput, busy per subtask near {:.0}%",
            if b.saturated { "at least " } else { "about " },
            n as f64 / p as f64,
            TARGET_BUSY * 100.0
        );
        if b.saturated {
            evidence.push(
                "the subtasks are saturated, so the true demand may be higher than N covers"
                    .to_string(),
            );
        }
        (fix, effect)
    };
    if b.cpu.is_none() {
        confidence -= 0.1;
    }
    Finding::new(
        Cause::UnderProvisioned,
        confidence,
        evidence,
        Some(fix),
        effect,
    )
}
