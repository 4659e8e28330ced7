//! The skew workload (docs/src/reference/skew-workload.md), bit-exact.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use sluice_datastream::{ControlEvent, DataStream, GraphError, StreamEnv};

/// Settings of the skew job; names match the CLI flags.
#[derive(Clone, Debug, PartialEq)]
pub struct SkewConfig {
    /// Records generated in total.
    pub records: u64,
    /// Share of records carrying the hot key 0 (0.0..=1.0).
    pub hot_key_share: f64,
    /// Number of non-hot keys (keys 1..=keys).
    pub keys: u64,
    /// Multiply/xor-shift rounds per record in the map.
    pub map_work: u32,
    /// Multiply/xor-shift rounds per record in the keyed sum's update (0: a plain sum): an
    /// aggregate whose update costs (a sketch, a scoring model). The map's work spreads over
    /// its subtasks whatever the keys; this work lands where the key does, so a hot key makes
    /// it one subtask's, until the two-phase fix spreads it.
    pub sum_work: u32,
    /// Default parallelism of every operator.
    pub parallelism: usize,
    /// The source's parallelism, when not the default.
    pub source_parallelism: Option<usize>,
    /// The map's parallelism, when not the default.
    pub map_parallelism: Option<usize>,
    /// The keyed sum's parallelism, when not the default.
    pub sum_parallelism: Option<usize>,
    /// Put `rebalance()` between the source and the map.
    pub rebalance_before_map: bool,
    /// Aggregate in two phases with this many salt buckets (the hot-key fix).
    pub two_phase: Option<u32>,
    /// With `two_phase`: salt only the keys the salter's sketch reports hot.
    pub adaptive: bool,
}

impl Default for SkewConfig {
    fn default() -> Self {
        SkewConfig {
            records: 1_000_000,
            hot_key_share: 0.8,
            keys: 10_000,
            map_work: 4,
            sum_work: 0,
            parallelism: 2,
            source_parallelism: None,
            map_parallelism: None,
            sum_parallelism: None,
            rebalance_before_map: false,
            two_phase: None,
            adaptive: false,
        }
    }
}

impl SkewConfig {
    /// Rejects settings the workload does not define, naming the flag.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.hot_key_share) || self.hot_key_share.is_nan() {
            return Err(format!(
                "--hot-key-share must be between 0 and 1, got {}",
                self.hot_key_share
            ));
        }
        if self.two_phase == Some(0) {
            return Err("--buckets must be at least 1".into());
        }
        if self.keys == 0 {
            return Err("--keys must be at least 1".into());
        }
        for (flag, p) in [
            ("--parallelism", Some(self.parallelism)),
            ("--source-parallelism", self.source_parallelism),
            ("--map-parallelism", self.map_parallelism),
            ("--sum-parallelism", self.sum_parallelism),
        ] {
            if p == Some(0) {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        Ok(())
    }

    /// `round(hot_key_share * 2^20)`.
    pub fn hot_limit(&self) -> u64 {
        (self.hot_key_share * (1u64 << 20) as f64).round() as u64
    }
}

/// SplitMix64's finaliser: `mix` of docs/src/reference/skew-workload.md#generator.
#[inline]
pub fn mix(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Record `i`: `(key, value)`.
#[inline]
pub fn record(i: u64, hot_limit: u64, keys: u64) -> (i64, i64) {
    RecordGenerator::new(hot_limit, keys).record(i)
}

/// The generator with its settings prepared: `h mod keys` by a precomputed reciprocal
/// (multiplications) instead of a division per non-hot record, which the CPU does in tens of
/// cycles (about a sixth of the generator's time in a profile of the skew job). Same results,
/// bit for bit. Build it once per source: [`record`] prepares one per call.
#[derive(Clone, Copy, Debug)]
pub struct RecordGenerator {
    hot_limit: u64,
    keys: strength_reduce::StrengthReducedU64,
}

impl RecordGenerator {
    /// `keys` ≥ 1 (a [`SkewConfig`] is validated for it); 0 is taken as 1.
    pub fn new(hot_limit: u64, keys: u64) -> Self {
        RecordGenerator {
            hot_limit,
            keys: strength_reduce::StrengthReducedU64::new(keys.max(1)),
        }
    }

    /// Record `i`: `(key, value)`.
    #[inline]
    pub fn record(&self, i: u64) -> (i64, i64) {
        let h = mix(i);
        let key = if (h >> 44) < self.hot_limit {
            0
        } else {
            1 + (h % self.keys) as i64
        };
        (key, ((h >> 8) & 0xFFFF) as i64)
    }
}

/// The map's CPU work.
#[inline]
pub fn work(v: i64, rounds: u32) -> i64 {
    let mut v = v as u64;
    for _ in 0..rounds {
        v = v
            .wrapping_mul(0x5851_F42D_4C95_7F2D)
            .wrapping_add(0x1405_7B7E_F767_814F);
        v ^= v >> 29;
    }
    v as i64
}

/// The keyed sum's update with `rounds` of CPU work on the incoming value first, whose result
/// is consumed ([`std::hint::black_box`]) but does not enter the sum: the work must not change
/// the answer, so the two-phase fix (which folds partial sums with the same function) keeps
/// every final sum.
#[inline]
pub fn costly_add(a: (i64, i64), b: (i64, i64), rounds: u32) -> (i64, i64) {
    std::hint::black_box(work(b.1, rounds));
    (a.0, a.1.wrapping_add(b.1))
}

/// A built skew job: read its result after `execute()`.
pub struct SkewJob {
    finals: Arc<Mutex<BTreeMap<i64, i64>>>,
}

impl SkewJob {
    /// The final running sum per key (the last update the sum emitted for it), sorted by key.
    pub fn final_sums(&self) -> BTreeMap<i64, i64> {
        self.finals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Writes `key,sum` CSV sorted by key, with a header line.
    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
        writeln!(w, "key,sum")?;
        for (k, s) in self.final_sums() {
            writeln!(w, "{k},{s}")?;
        }
        w.flush()
    }
}

/// Adds the skew job to `env`: `Source: generator` → `map` → key_by → `sum-per-key` →
/// `Sink: final-sums` (names as in the Flink reference job).
pub fn build(env: &StreamEnv, cfg: &SkewConfig) -> Result<SkewJob, GraphError> {
    let source = generated_source(env, cfg)?;
    let summed = sums(cfg, source)?;
    Ok(final_sums_sink(cfg, &summed))
}

/// The skew workload's records from its generator (`Source: generator`), with the job's
/// parallelism and name set on `env`.
pub fn generated_source(
    env: &StreamEnv,
    cfg: &SkewConfig,
) -> Result<DataStream<(i64, i64)>, GraphError> {
    cfg.validate().map_err(GraphError::invalid_config)?;
    env.set_parallelism(cfg.parallelism);
    env.set_job_name("skew");
    let generator = RecordGenerator::new(cfg.hot_limit(), cfg.keys);
    let mut source = env
        .generate(cfg.records, move |i| generator.record(i))
        .name("generator");
    if let Some(p) = cfg.source_parallelism {
        source = source.set_parallelism(p);
    }
    Ok(source)
}

/// The workload's processing on any source of its `(key, value)` records (the generator, or
/// the same records read back from Kafka or a socket): `map` → key_by → `sum-per-key`, one
/// running-sum update `(key, sum)` per record.
pub fn sums(
    cfg: &SkewConfig,
    source: DataStream<(i64, i64)>,
) -> Result<DataStream<(i64, i64)>, GraphError> {
    cfg.validate().map_err(GraphError::invalid_config)?;
    // Its one record type crosses processes when the job is split over several (whatever
    // the source: the generator, Kafka, a socket).
    source.env().exchange_type::<(i64, i64)>();
    let rounds = cfg.map_work;
    let input = if cfg.rebalance_before_map {
        source.rebalance()
    } else {
        source
    };
    let mut mapped = input
        .map(move |(k, v): (i64, i64)| (k, work(v, rounds) & 0xF_FFFF))
        .name("map");
    if let Some(p) = cfg.map_parallelism {
        mapped = mapped.set_parallelism(p);
    }
    let keyed = mapped.key_by(|r: &(i64, i64)| r.0);
    let sum_rounds = cfg.sum_work;
    let mut summed = match cfg.two_phase {
        None if sum_rounds > 0 => keyed
            .reduce(move |a: (i64, i64), b: (i64, i64)| costly_add(a, b, sum_rounds))
            .name("sum-per-key"),
        None => keyed.sum(|r: &mut (i64, i64)| &mut r.1).name("sum-per-key"),
        Some(buckets) if cfg.adaptive => keyed
            .two_phase_adaptive(buckets, 0.05, |a: (i64, i64), b: (i64, i64)| {
                (a.0, a.1.wrapping_add(b.1))
            })
            .name("sum-per-key (combine)"),
        Some(buckets) => keyed
            .two_phase_sum(buckets, |r: &mut (i64, i64)| &mut r.1)
            .name("sum-per-key (combine)"),
    };
    if let Some(p) = cfg.sum_parallelism {
        summed = summed.set_parallelism(p);
    }
    Ok(summed)
}

/// `Sink: final-sums`: keeps the latest sum per key (checkpointed), read after the run with
/// [`SkewJob::final_sums`].
pub fn final_sums_sink(cfg: &SkewConfig, summed: &DataStream<(i64, i64)>) -> SkewJob {
    let finals: Arc<Mutex<BTreeMap<i64, i64>>> = Arc::default();
    let (f1, f2) = (finals.clone(), finals.clone());
    let keys = cfg.keys;
    let sink = summed.add_sink(
        "final-sums",
        (),
        move |_| {
            f1.lock().unwrap_or_else(|p| p.into_inner()).clear();
            Ok(())
        },
        move |ctx| FinalSums::new(f2.clone(), keys, ctx),
    );
    if let Some(p) = cfg.sum_parallelism {
        sink.set_parallelism(p);
    }
    SkewJob { finals }
}

/// Parses a `key,value` line of `sluice produce skew` (decimal integers) back into a record.
pub fn parse_line(line: &str) -> Result<(i64, i64), String> {
    let (k, v) = line
        .trim_end_matches(['\r', '\n'])
        .split_once(',')
        .ok_or_else(|| format!("expected `key,value`, got {line:?}"))?;
    let key = k
        .trim()
        .parse::<i64>()
        .map_err(|e| format!("key {k:?}: {e}"))?;
    let value = v
        .trim()
        .parse::<i64>()
        .map_err(|e| format!("value {v:?}: {e}"))?;
    Ok((key, value))
}

/// A record as `sluice produce skew` writes it: `key,value`.
pub fn format_line(record: (i64, i64)) -> String {
    format!("{},{}", record.0, record.1)
}

/// Keeps the latest sum per key of its subtask; merges into the job's map at end of input.
/// Each key lives on exactly one subtask, so merging never overwrites another subtask's key.
///
/// The latest sums are part of every checkpoint (at the barrier), so a job restored from a
/// savepoint reports every key's final sum, also the keys no record reaches after the restore;
/// a restored subtask keeps the keys Flink's key groups assign to it (any parallelism).
struct FinalSums {
    latest: LatestSums,
    out: Arc<Mutex<BTreeMap<i64, i64>>>,
    operator_id: String,
    /// The task's services: where the latest sums are recorded at a barrier.
    services: sluice_types::ServicesHandle,
}

/// The latest sum per key. The workload's keys are `0..=keys`: those (up to
/// [`DENSE_KEYS_MAX`]) sit in a vector indexed by the key, found without hashing — a
/// profile of the skew job had the sink's hash lookups of the non-hot keys at a tenth of
/// the job's CPU time. Any other key (records from Kafka or a socket may carry any) goes
/// to a map.
struct LatestSums {
    dense: Vec<Option<i64>>,
    other: BTreeMap<i64, i64>,
}

/// Most keys held in [`LatestSums`]'s vector (16 MiB per subtask at most).
const DENSE_KEYS_MAX: u64 = 1 << 20;

impl LatestSums {
    fn new(keys: u64) -> Self {
        LatestSums {
            dense: vec![None; (keys.min(DENSE_KEYS_MAX) + 1) as usize],
            other: BTreeMap::new(),
        }
    }

    #[inline]
    fn set(&mut self, key: i64, sum: i64) {
        match usize::try_from(key)
            .ok()
            .and_then(|i| self.dense.get_mut(i))
        {
            Some(slot) => *slot = Some(sum),
            None => {
                self.other.insert(key, sum);
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.map(|s| (k as i64, s)));
        dense.chain(self.other.iter().map(|(k, s)| (*k, *s)))
    }

    /// Every key's latest sum, leaving none.
    fn take(&mut self) -> Vec<(i64, i64)> {
        let all = self.iter().collect();
        self.dense.fill(None);
        self.other.clear();
        all
    }
}

impl FinalSums {
    fn new(
        out: Arc<Mutex<BTreeMap<i64, i64>>>,
        keys: u64,
        ctx: &sluice_datastream::OperatorContext,
    ) -> Result<Self, sluice_datastream::OperatorError> {
        let mut latest = LatestSums::new(keys);
        if let Some(restored) = sluice_runtime::services::restored_parts(ctx) {
            for (_, bytes) in &restored.parts {
                let sums: Vec<(i64, i64)> = sluice_runtime::state::layout::decode(bytes)?;
                for (k, s) in sums {
                    let mine = sluice_datastream::partition::assign_key_to_subtask(
                        &k,
                        ctx.max_parallelism,
                        ctx.parallelism as u32,
                    ) as usize
                        == ctx.subtask_index;
                    if mine {
                        latest.set(k, s);
                    }
                }
            }
        }
        Ok(FinalSums {
            latest,
            out,
            operator_id: ctx.operator_id.clone(),
            services: ctx.services.clone(),
        })
    }
}

impl sluice_datastream::Collector<(i64, i64)> for FinalSums {
    #[inline]
    fn collect(&mut self, (k, s): (i64, i64)) -> Result<(), sluice_datastream::OperatorError> {
        self.latest.set(k, s);
        Ok(())
    }
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), sluice_datastream::OperatorError> {
        match event {
            // The final sums are the latest per key at the end of input.
            ControlEvent::EndOfInput => {
                let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
                out.extend(self.latest.take());
            }
            // The latest sums are the sink's state: snapshot them as the barrier passes.
            ControlEvent::Barrier(_) => {
                let sums: Vec<(i64, i64)> = self.latest.iter().collect();
                let bytes = sluice_runtime::state::layout::encode(&sums)?;
                if let Some(s) = self.services.get::<sluice_runtime::TaskServices>() {
                    s.record(&self.operator_id, bytes);
                }
            }
            // Nothing buffered, no notion of time.
            ControlEvent::Flush
            | ControlEvent::Watermark(_)
            | ControlEvent::Idleness(_)
            | ControlEvent::CheckpointComplete(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_follows_the_spec() {
        let cfg = SkewConfig::default();
        assert_eq!(cfg.hot_limit(), 838_861); // round(0.8 * 2^20)
        let hot = (0..100_000)
            .filter(|&i| record(i, cfg.hot_limit(), 10_000).0 == 0)
            .count();
        assert!((79_000..81_000).contains(&hot), "hot share {hot}");
        for i in 0..1000 {
            let (k, v) = record(i, cfg.hot_limit(), 10_000);
            assert!((0..=10_000).contains(&k));
            assert!((0..=0xFFFF).contains(&v));
        }
        // The prepared modulus is the plain one, for any number of keys.
        for keys in [1, 2, 3, 7, 10_000, 1 << 40, u64::MAX] {
            let generator = RecordGenerator::new(cfg.hot_limit(), keys);
            for i in (0..2_000).chain(u64::MAX - 100..=u64::MAX) {
                let h = mix(i);
                let key = if (h >> 44) < cfg.hot_limit() {
                    0
                } else {
                    1 + (h % keys) as i64
                };
                assert_eq!(generator.record(i), (key, ((h >> 8) & 0xFFFF) as i64));
            }
        }
        assert_eq!(work(0, 0), 0);
        assert_ne!(work(1, 4), 1);
    }

    #[test]
    fn latest_sums_keep_any_key_in_the_vector_or_beside_it() {
        let mut latest = LatestSums::new(10);
        for (k, s) in [
            (0, 1),
            (10, 2),
            (11, 3),
            (-4, 4),
            (i64::MAX, 5),
            (0, 6),
            (11, 7),
        ] {
            latest.set(k, s);
        }
        let mut got = latest.iter().collect::<Vec<_>>();
        got.sort_unstable();
        assert_eq!(got, vec![(-4, 4), (0, 6), (10, 2), (11, 7), (i64::MAX, 5)]);
        assert_eq!(latest.take().len(), 5);
        assert_eq!(latest.iter().count(), 0);
    }

    #[test]
    fn lines_round_trip_and_bad_ones_say_why() {
        let r = record(7, 838_861, 10_000);
        assert_eq!(parse_line(&format_line(r)), Ok(r));
        assert_eq!(parse_line("3,-4\r\n"), Ok((3, -4)));
        assert!(parse_line("3;4").unwrap_err().contains("key,value"));
        assert!(parse_line("x,4").unwrap_err().contains("key \"x\""));
    }

    #[test]
    fn bad_settings_are_rejected_with_the_flag_name() {
        let bad = SkewConfig {
            hot_key_share: 1.5,
            ..SkewConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("--hot-key-share"));
        let bad = SkewConfig {
            map_parallelism: Some(0),
            ..SkewConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("--map-parallelism"));
    }
}
