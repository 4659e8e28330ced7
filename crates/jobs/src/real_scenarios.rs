//! The doctor scenarios that are about real systems, run on them (`sluice run scenario NAME
//! --from kafka://… | --to postgres://…`):
//!
//! | scenario | the job | what the doctor should say |
//! |---|---|---|
//! | `slow-sink --to postgres://…?table=T` | running sums per key upserted one row per write (`sink.buffer-flush.max-rows` = 1) | sink limit, fix: batch the writes |
//! | `source-ceiling --from kafka://…` | a Kafka source whose decoding is expensive → REBALANCE → count | source ceiling; at parallelism ≥ partitions: add partitions, idle subtasks named |
//! | `input-limited --from kafka://…` | a Kafka source on a topic that has little to read → cheap map → count | no bottleneck: lag about 0, the input is the limit |

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use sluice_datastream::StreamEnv;

use crate::connectors::{records_from, write_to, FromUrl, Result, SinkHandle, ToUrl};
use crate::skew::mix;

/// Keys of `slow-sink`'s table (as the generated scenario's).
const SLOW_SINK_KEYS: u64 = 1024;
/// Decoding work per record of `source-ceiling` on Kafka (multiply/xor-shift rounds, ~20 µs).
const EXPENSIVE_DECODE: u32 = 20_000;

/// A scenario on real systems: what reached its sink.
pub struct RealScenario {
    /// The scenario's name.
    pub name: String,
    /// Records that reached the counting sink.
    pub sunk: Arc<AtomicU64>,
    /// The real sink (`--to`), when the scenario has one.
    pub sink: Option<SinkHandle>,
}

/// Builds scenario `name` with its real source or sink; `records` counts generated input.
pub fn build(
    env: &StreamEnv,
    name: &str,
    records: u64,
    parallelism: usize,
    from: Option<&FromUrl>,
    bounded: bool,
    to: Option<&ToUrl>,
) -> Result<RealScenario> {
    env.set_parallelism(parallelism);
    env.set_job_name(name);
    let sunk: Arc<AtomicU64> = Arc::default();
    let count = {
        let s = sunk.clone();
        move |_: (i64, i64)| -> std::result::Result<(), sluice_datastream::OperatorError> {
            s.fetch_add(1, Relaxed);
            Ok(())
        }
    };
    let sink = match (name, from, to) {
        ("slow-sink", None, Some(to @ ToUrl::Postgres { .. })) => {
            let sums = env
                .generate(records, |i| {
                    let h = mix(i);
                    ((h % SLOW_SINK_KEYS) as i64, (h >> 48) as i64)
                })
                .name("generator")
                .key_by(|r: &(i64, i64)| r.0)
                .sum(|r: &mut (i64, i64)| &mut r.1)
                .name("sum-per-key");
            // One row per write: the slow sink the doctor should batch.
            let h = write_to(
                &sums,
                to,
                "slow-sink",
                &[
                    ("sink.buffer-flush.max-rows", "1"),
                    ("sink.buffer-flush.interval", "1s"),
                ],
            )?;
            Some(h)
        }
        ("source-ceiling", Some(from), None) => {
            records_from(env, from, bounded, EXPENSIVE_DECODE)?
                .rebalance()
                .sink_fn("count", count);
            None
        }
        ("input-limited", Some(from), None) => {
            records_from(env, from, bounded, 0)?
                .map(|(k, v): (i64, i64)| (k, v & 0xFFFF))
                .name("map")
                .sink_fn("count", count);
            None
        }
        (other, _, _) => {
            return Err(format!(
                "scenario `{other}` with these endpoints: on real systems the scenarios are \
             slow-sink --to postgres://…?table=T, source-ceiling --from kafka://…, \
             input-limited --from kafka://…"
            ))
        }
    };
    Ok(RealScenario {
        name: name.to_string(),
        sunk,
        sink,
    })
}
