//! The doctor's scenario suite (issue 5): one small job per bottleneck cause, so `sluice run
//! scenario <name>` shows each cause live and tests check that `sluice doctor` names it.
//!
//! Every scenario takes the same [`ScenarioConfig`]; by default the input is effectively unbounded
//! (10^12 records) for live diagnosis, and a bounded count runs to the end like any job.
//!
//! | scenario | the job | what the doctor should say |
//! |---|---|---|
//! | `skew` | [`crate::skew`] with its 80 % hot key | key skew at `sum-per-key`, one subtask |
//! | `under-provisioned` | skew without a hot key, an expensive `map` chained behind the source (FORWARD) | under-provisioned, operator `map` |
//! | `blocking` | REBALANCE → `blocking-call`, a sync lookup join against the HTTP lookup service (2 ms per request, [`crate::blocking`]) | blocking calls at `blocking-call`; fix: async lookup, capacity N |
//! | `state-heavy` | key_by → a `KeyedProcess` doing several map-state calls per record on the LSM backend | state access |
//! | `slow-sink` | keyed running sum → a table sink (not chained) that pays a round trip per write of `sink.buffer-flush.max-rows` rows (1) | sink limit, fix: batch the writes |
//! | `stalls` | REBALANCE → an expensive map that, on every subtask at once, stops for 2.2 s every 5 s | periodic stalls |
//! | `source-ceiling` | a generator whose function is expensive → REBALANCE → discard | source ceiling |
//! | `source-ceiling` with `splits` | the same input in that many parts that cannot be cut further (files, partitions of a system that does not report them): subtasks beyond the parts idle | source ceiling; a raised parallelism does not help (the autopilot's rollback) |
//! | `input-limited` | a source that waits for its input (counted as idle) → cheap map → discard | no bottleneck |
//! | `serialization` | a generator of wide records ([`WIDE`] large integers, cheap to make) → REBALANCE → a cheap sum → discard; run with `--processes 2` | serialization cost at the exchange (its encoding at `generator`); in one process nothing crosses, so the source is the limit |

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_datastream::{
    Collector, GraphError, KeyedProcessFunction, OperatorError, ProcessContext, StateBackendKind,
    StreamEnv,
};
use sluice_runtime::sources::{split_range, SourceContext, SourceFunction, SOURCE_BATCH};

use crate::skew::{self, mix, work};

/// The scenarios: name and one-line description.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("skew", "a hot key (80% of records) on one subtask of the keyed sum: key skew"),
    (
        "under-provisioned",
        "an expensive map chained behind the source (FORWARD), no skew: under-provisioned",
    ),
    (
        "blocking",
        "a sync lookup join against an HTTP service (2 ms per request) behind REBALANCE: blocking calls (busy, little CPU)",
    ),
    (
        "state-heavy",
        "a keyed process function doing map-state calls per record on the LSM backend: state access",
    ),
    (
        "slow-sink",
        "running sums upserted into a table one row per round trip: sink limit, batch the writes",
    ),
    (
        "stalls",
        "an expensive map that stops on every subtask at once for 2.2 s every 5 s: periodic stalls",
    ),
    (
        "source-ceiling",
        "a generator whose function is expensive, cheap downstream: source ceiling",
    ),
    (
        "input-limited",
        "a source waiting for slow input, everything else cheap: no bottleneck",
    ),
    (
        "serialization",
        "wide records behind REBALANCE to a cheap consumer; over --processes 2 the exchange's encoding is the limit: serialization cost",
    ),
];

/// `serialization`: integers per record (each a full 64-bit value: 10 bytes as a varint).
pub const WIDE: usize = 64;

/// Default record count: effectively unbounded (hours at any of the scenarios' rates).
pub const UNBOUNDED: u64 = 1_000_000_000_000;

/// Settings of a scenario job.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioConfig {
    /// One of [`SCENARIOS`].
    pub name: String,
    /// Records generated in total ([`UNBOUNDED`]: practically endless).
    pub records: u64,
    /// Default parallelism of every operator.
    pub parallelism: usize,
    /// `slow-sink`: rounds of CPU burn per record in the sink (`HEAVY` rounds when unset; ~1–2 µs
    /// per 1000), so a benchmark can make the sink a chosen factor slower than the source.
    pub sink_work: Option<u32>,
    /// `slow-sink` with `sink_work`: rounds of CPU burn per record in the map chained to the
    /// generator (none when unset), so the source's own cost per record is a chosen one: a
    /// realistic source parses what it reads, and "1000× slower than the source" then names a
    /// sink rate, not only a factor over a bare counter.
    pub source_work: Option<u32>,
    /// `blocking`: distinct keys looked up (values modulo this; [`crate::blocking::LOOKUP_KEYS`]
    /// when unset). Few keys repeat, which makes the doctor propose a cache instead of async.
    pub lookup_keys: Option<u64>,
    /// `blocking`: look up in this PostgreSQL table (columns `key` bigint, `score` bigint)
    /// instead of the in-process HTTP service.
    pub lookup_table: Option<crate::blocking::PostgresTable>,
    /// `source-ceiling`: the input comes in this many parts that cannot be cut further, each read
    /// whole by one subtask ([`SplitInput`]); `None`: a generator that splits at any parallelism.
    pub splits: Option<u64>,
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        ScenarioConfig {
            name: "skew".into(),
            records: UNBOUNDED,
            parallelism: 2,
            sink_work: None,
            source_work: None,
            lookup_keys: None,
            lookup_table: None,
            splits: None,
        }
    }
}

impl ScenarioConfig {
    /// The named scenario with default settings.
    pub fn new(name: &str) -> Self {
        ScenarioConfig {
            name: name.into(),
            ..ScenarioConfig::default()
        }
    }

    /// Rejects an unknown name (listing the known ones), parallelism 0, and an option given to a
    /// scenario it does not belong to (it would otherwise be ignored without a word).
    pub fn validate(&self) -> Result<(), String> {
        if !SCENARIOS.iter().any(|(n, _)| *n == self.name) {
            let names: Vec<&str> = SCENARIOS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "unknown scenario `{}`; known: {}",
                self.name,
                names.join(", ")
            ));
        }
        if self.parallelism == 0 {
            return Err("--parallelism must be at least 1".into());
        }
        if self.sink_work.is_some() && self.name != "slow-sink" {
            return Err("--sink-work is an option of the slow-sink scenario only".into());
        }
        if self.source_work.is_some() && self.sink_work.is_none() {
            return Err(
                "--source-work needs --sink-work (the slow-sink scenario's CPU-burning variant)"
                    .into(),
            );
        }
        match self.splits {
            Some(_) if self.name != "source-ceiling" => {
                Err("--splits is an option of the source-ceiling scenario only".into())
            }
            Some(0) => Err("--splits must be at least 1".into()),
            _ => Ok(()),
        }
    }
}

/// A built scenario: what its sink received, after (or during) the run.
pub struct ScenarioJob {
    /// The scenario's name.
    pub name: String,
    sunk: Arc<AtomicU64>,
    skew: Option<skew::SkewJob>,
    table: Option<crate::remote_table::TableHandle>,
    lookup: Option<crate::blocking::LookupOutput>,
}

impl ScenarioJob {
    /// Records that reached the sink (for `skew` / `under-provisioned`: keys in the final sums).
    pub fn records_sunk(&self) -> u64 {
        match &self.skew {
            Some(j) => j.final_sums().len() as u64,
            None => self.sunk.load(Relaxed),
        }
    }

    /// The skew job inside `skew` and `under-provisioned`.
    pub fn skew_job(&self) -> Option<&skew::SkewJob> {
        self.skew.as_ref()
    }

    /// What `blocking`'s lookup join emitted, as digests (in order per subtask, and as a set).
    pub fn lookup_output(&self) -> Option<crate::blocking::LookupDigest> {
        self.lookup.as_ref().map(|l| l.digest())
    }

    /// The table `slow-sink` upserts into (key → latest running sum).
    pub fn table(&self) -> Option<&crate::remote_table::TableHandle> {
        self.table.as_ref()
    }
}

/// Keys of `slow-sink`'s table.
const SLOW_SINK_KEYS: u64 = 1024;

/// Multiply/xor-shift rounds: the CPU burn of the expensive operators (~1 µs per 1000 rounds).
const HEAVY: u32 = 2000;

/// Adds the scenario's job to `env` (job name = scenario name).
pub fn build(env: &StreamEnv, cfg: &ScenarioConfig) -> Result<ScenarioJob, GraphError> {
    cfg.validate().map_err(GraphError::invalid_config)?;
    let n = cfg.records;
    let sunk: Arc<AtomicU64> = Arc::default();
    let mut skew_job = None;
    let mut table = None;
    let mut lookup = None;
    let count = {
        let s = sunk.clone();
        move |_: i64| -> Result<(), OperatorError> {
            s.fetch_add(1, Relaxed);
            Ok(())
        }
    };
    match cfg.name.as_str() {
        "skew" | "under-provisioned" => {
            let mut sc = skew::SkewConfig {
                records: n,
                parallelism: cfg.parallelism,
                ..skew::SkewConfig::default()
            };
            if cfg.name == "under-provisioned" {
                sc.hot_key_share = 0.0;
                sc.map_work = HEAVY;
            }
            skew_job = Some(skew::build(env, &sc)?);
        }
        "blocking" => {
            lookup = Some(crate::blocking::build(
                env,
                n,
                cfg.parallelism,
                cfg.lookup_keys.unwrap_or(crate::blocking::LOOKUP_KEYS),
                cfg.lookup_table.as_ref(),
                sunk.clone(),
            )?);
        }
        "state-heavy" => {
            env.set_parallelism(cfg.parallelism);
            env.set_state_backend(StateBackendKind::lsm_in_temp_dir());
            env.generate(n, |i| {
                let h = mix(i);
                ((h % 4096) as i64, (h >> 32) as i64)
            })
            .name("generator")
            .key_by(|r: &(i64, i64)| r.0)
            .process(StateHeavy)
            .name("state-heavy")
            .sink_fn("count", count);
        }
        "slow-sink" => {
            env.set_parallelism(cfg.parallelism);
            if let Some(rounds) = cfg.sink_work {
                // The debloating benchmark's variant: a sink that burns CPU per record.
                let source_rounds = cfg.source_work.unwrap_or(0);
                env.generate(n, |i| mix(i) as i64)
                    .name("generator")
                    .map(move |v: i64| {
                        if source_rounds > 0 {
                            std::hint::black_box(work(v, source_rounds));
                        }
                        v & 0xFFFF
                    })
                    .name("map")
                    .sink_fn("slow-sink", move |v: i64| {
                        std::hint::black_box(work(v, rounds));
                        count(v)
                    })
                    .disable_chaining();
            } else {
                let t = crate::remote_table::TableHandle::default();
                let sunk = sunk.clone();
                env.generate(n, |i| {
                    let h = mix(i);
                    ((h % SLOW_SINK_KEYS) as i64, (h >> 48) as i64)
                })
                .name("generator")
                .key_by(|r: &(i64, i64)| r.0)
                .sum(|r: &mut (i64, i64)| &mut r.1)
                .name("sum-per-key")
                .add_sink("slow-sink", (), |_| Ok(()), {
                    let t = t.clone();
                    move |ctx| t.writer(ctx, sunk.clone())
                })
                .option(crate::remote_table::MAX_ROWS, 1)
                .option(crate::remote_table::FLUSH_INTERVAL, "1s")
                .disable_chaining();
                table = Some(t);
            }
        }
        "stalls" => {
            env.set_parallelism(cfg.parallelism);
            env.generate(n, |i| mix(i) as i64)
                .name("generator")
                .rebalance()
                .map(|v: i64| {
                    stall_if_due();
                    work(v, HEAVY / 4)
                })
                .name("stalling-map")
                .sink_fn("count", count);
        }
        "source-ceiling" => {
            env.set_parallelism(cfg.parallelism);
            let source = match cfg.splits {
                None => env.generate(n, |i| work(mix(i) as i64, HEAVY)),
                Some(parts) => env.add_source("expensive-generator", move |i, p| {
                    Ok(SplitInput::assigned(n, parts, i, p, n == UNBOUNDED))
                }),
            };
            source
                .name("expensive-generator")
                .rebalance()
                .sink_fn("count", count);
        }
        "input-limited" => {
            env.set_parallelism(cfg.parallelism);
            env.add_source("slow-input", move |i, p| {
                Ok(SlowInput {
                    range: split_range(n, i, p),
                })
            })
            .map(|v: i64| v & 0xFFFF)
            .name("map")
            .sink_fn("count", count);
        }
        "serialization" => {
            env.set_parallelism(cfg.parallelism);
            env.exchange_type::<Vec<u64>>();
            // Making a record is a copy of a template with one field set: far cheaper than
            // encoding its 64 varints for the wire, and decoding them.
            let template: Vec<u64> = (0..WIDE as u64).map(|j| mix(j) | (1 << 63)).collect();
            env.generate(n, move |i| {
                let mut r = template.clone();
                r[0] = i;
                r
            })
            .name("generator")
            .rebalance()
            .map(|r: Vec<u64>| r.iter().fold(0u64, |a, v| a ^ v) as i64)
            .name("fold")
            .sink_fn("count", count);
        }
        other => unreachable!("validated scenario {other}"),
    }
    env.set_job_name(cfg.name.clone());
    Ok(ScenarioJob {
        name: cfg.name.clone(),
        sunk,
        skew: skew_job,
        table,
        lookup,
    })
}

/// `stalls`: wall-clock periods shared by every subtask; in the first part of each, stop. A
/// stall longer than two 1 s metric samples fully covers at least one of them, however the
/// samples fall, so the doctor sees a sample with (almost) no progress in every period.
const STALL_PERIOD_MS: u64 = 5000;
const STALL_MS: u64 = 2200;

fn stall_if_due() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let phase = now % STALL_PERIOD_MS;
    if phase < STALL_MS {
        std::thread::sleep(Duration::from_millis(STALL_MS - phase));
    }
}

/// `state-heavy`: per record, reads 8 entries of the key's map state and writes one, and keeps a
/// per-key count in value state: ten state calls per record.
#[derive(Clone)]
struct StateHeavy;

impl KeyedProcessFunction<i64, (i64, i64), i64> for StateHeavy {
    fn process_element(
        &mut self,
        (_, v): (i64, i64),
        ctx: &mut ProcessContext<'_, i64>,
        out: &mut dyn Collector<i64>,
    ) -> Result<(), OperatorError> {
        let slot = (v as u64 % 64) as u32;
        let mut acc = v;
        {
            let mut m = ctx.map_state::<u32, i64>("entries");
            for j in 0..8u32 {
                if let Some(x) = m.get(&((slot + j * 8) % 64))? {
                    acc = acc.wrapping_add(x);
                }
            }
            m.put(slot, acc)?;
        }
        let mut n = ctx.value_state::<u64>("count");
        let c = n.value()?.unwrap_or(0) + 1;
        n.update(c)?;
        out.collect(acc)
    }
}

/// `input-limited`: emits its share in batches of 64 records, waiting 2 ms for each batch as if
/// for an external system with nothing more to read yet; the wait is counted as idle time (as
/// Flink counts a source waiting for data), so the job shows no busy vertex.
struct SlowInput {
    range: std::ops::Range<u64>,
}

const SLOW_BATCH: u64 = 64;
const SLOW_WAIT: Duration = Duration::from_millis(2);

/// Waits [`SLOW_WAIT`] for input, counted as the subtask's idle time.
fn idle_wait(ctx: &SourceContext) {
    let t = std::time::Instant::now();
    std::thread::sleep(SLOW_WAIT);
    ctx.metrics
        .waits
        .idle_ns
        .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
}

impl SourceFunction<i64> for SlowInput {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<i64>,
    ) -> Result<(), OperatorError> {
        let mut i = self.range.start;
        let mut since_publish = 0;
        while i < self.range.end {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            idle_wait(ctx);
            let stop = (i + SLOW_BATCH).min(self.range.end);
            for j in i..stop {
                out.collect(mix(j) as i64)?;
            }
            since_publish += stop - i;
            if since_publish >= SOURCE_BATCH || stop == self.range.end {
                ctx.add_emitted(since_publish);
                since_publish = 0;
            }
            i = stop;
        }
        Ok(())
    }
}

/// `source-ceiling --splits N`: records `0..n` in `N` contiguous parts that are never cut
/// further; part `s` belongs to subtask `s mod p`, so subtasks beyond the parts read nothing
/// (they idle, and on unbounded input stay running so the job can still be changed). Its
/// position is the remaining `(part, next, end)` list; a restore at any parallelism deals the
/// remaining parts out again by part number, so the union of the work is unchanged and a
/// raised parallelism still cannot read one part with two subtasks.
pub struct SplitInput {
    parts: std::collections::VecDeque<(u64, u64, u64)>,
    wait_when_done: bool,
}

impl SplitInput {
    /// Subtask `index` of `parallelism`: its parts of `records` split into `parts`.
    pub fn assigned(
        records: u64,
        parts: u64,
        index: usize,
        parallelism: usize,
        wait_when_done: bool,
    ) -> SplitInput {
        let parts = (0..parts)
            .filter(|s| (s % parallelism as u64) as usize == index)
            .map(|s| {
                let r = split_range(records, s as usize, parts as usize);
                (s, r.start, r.end)
            })
            .filter(|(_, a, b)| a < b)
            .collect();
        SplitInput {
            parts,
            wait_when_done,
        }
    }

    fn position(&self) -> Result<Vec<u8>, OperatorError> {
        let v: Vec<(u64, u64, u64)> = self.parts.iter().copied().collect();
        sluice_runtime::state::layout::encode(&v)
    }
}

impl SourceFunction<i64> for SplitInput {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<i64>,
    ) -> Result<(), OperatorError> {
        loop {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            ctx.checkpoint_if_due(out, || self.position())?;
            let Some(front) = self.parts.front_mut() else {
                break;
            };
            let (_, next, end) = *front;
            let stop = (next + SOURCE_BATCH).min(end);
            for i in next..stop {
                out.collect(work(mix(i) as i64, HEAVY))?;
            }
            ctx.add_emitted(stop - next);
            front.1 = stop;
            if stop == end {
                self.parts.pop_front();
            }
        }
        // No part (left) to read: on unbounded input wait, idle, until the job stops, so a
        // savepoint (a live change) still finds this task running.
        if self.wait_when_done {
            loop {
                if ctx.should_stop() {
                    return Err(OperatorError::Cancelled);
                }
                ctx.checkpoint_if_due(out, || self.position())?;
                idle_wait(ctx);
            }
        }
        ctx.await_final_checkpoint(out, || self.position())
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        let mut all: Vec<(u64, u64, u64)> = Vec::new();
        for (_, bytes) in parts {
            let v: Vec<(u64, u64, u64)> = sluice_runtime::state::layout::decode(bytes)?;
            all.extend(v);
        }
        all.sort_unstable();
        let p = op.parallelism.max(1) as u64;
        self.parts = all
            .into_iter()
            .filter(|(s, a, b)| s % p == op.subtask_index as u64 && a < b)
            .collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_builds_and_runs_bounded() {
        for (name, _) in SCENARIOS {
            let env = StreamEnv::new();
            let cfg = ScenarioConfig {
                records: 200,
                ..ScenarioConfig::new(name)
            };
            let job = build(&env, &cfg).unwrap();
            env.execute().unwrap_or_else(|e| panic!("{name}: {e}"));
            let sunk = job.records_sunk();
            match *name {
                "skew" | "under-provisioned" => assert!(sunk > 0, "{name}"),
                _ => assert_eq!(sunk, 200, "{name}"),
            }
        }
    }

    #[test]
    fn unknown_names_are_rejected_with_the_list() {
        let e = ScenarioConfig::new("nope").validate().unwrap_err();
        assert!(e.contains("blocking") && e.contains("nope"), "{e}");
    }

    #[test]
    fn work_options_outside_the_slow_sink_are_rejected() {
        let skew = ScenarioConfig {
            sink_work: Some(10),
            ..ScenarioConfig::new("skew")
        };
        assert!(skew.validate().unwrap_err().contains("--sink-work"));
        let alone = ScenarioConfig {
            source_work: Some(10),
            ..ScenarioConfig::new("slow-sink")
        };
        assert!(alone.validate().unwrap_err().contains("--source-work"));
        let both = ScenarioConfig {
            sink_work: Some(1000),
            source_work: Some(1),
            records: 50,
            ..ScenarioConfig::new("slow-sink")
        };
        assert_eq!(both.validate(), Ok(()));
        let env = StreamEnv::new();
        let job = build(&env, &both).unwrap();
        env.execute().unwrap();
        assert_eq!(
            job.records_sunk(),
            50,
            "the burning variant sinks every record"
        );
    }
}
