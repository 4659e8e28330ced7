//! The network exchange as the bottleneck: a vertex backpressured by a consumer that is not busy
//! waits on the exchange between them, not on the consumer. On Sluice the records that cross to
//! another process are encoded on the sending process's exchange thread and decoded on the
//! receiving process's connection thread (Flink does both on the task threads, inside busy
//! time), so neither task looks busy; the exchange's `serializationTimeMsPerSecond` (at the
//! producer's subtasks) and `deserializationTimeMsPerSecond` (at the consumer's) name the cost.

use crate::{Bottleneck, Cause, Diagnosis, FixProposal, JobView, BACKPRESSURED_MS, BUSY_MS};

/// Encoding or decoding time from which the exchange's thread is taken to be held up by it, ms
/// per second: that thread also writes or reads the socket, so a third of its time spent on the
/// records' codec is already most of its work.
pub const CODEC_MS: f64 = 300.0;

/// The edge whose encoding or decoding holds a backpressured producer up while its consumer is
/// not busy, as a diagnosis naming the side that costs more.
pub(crate) fn codec_limit(job: &JobView) -> Option<Diagnosis> {
    let mut best: Option<(f64, Diagnosis)> = None;
    for (di, d) in job.vertices.iter().enumerate() {
        let consumer_busy = d
            .subtasks
            .iter()
            .any(|s| s.busy_ms() >= BUSY_MS && s.backpressured_ms() < BACKPRESSURED_MS);
        if consumer_busy {
            continue;
        }
        for &ui in &d.inputs {
            let Some(u) = job.vertices.get(ui) else {
                continue;
            };
            let backpressured = u
                .subtasks
                .iter()
                .any(|s| s.backpressured_ms() >= BACKPRESSURED_MS);
            if !backpressured {
                continue;
            }
            let encode: Vec<f64> = u
                .subtasks
                .iter()
                .map(|s| s.serialization.unwrap_or(0.0))
                .collect();
            let decode: Vec<f64> = d
                .subtasks
                .iter()
                .map(|s| s.deserialization.unwrap_or(0.0))
                .collect();
            let top = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
            let (enc, dec) = (top(&encode), top(&decode));
            if enc.max(dec) < CODEC_MS {
                continue;
            }
            let (vi, side, times, encoding) = if enc >= dec {
                (ui, u, &encode, true)
            } else {
                (di, d, &decode, false)
            };
            let subtasks: Vec<usize> = times
                .iter()
                .enumerate()
                .filter(|(_, &t)| t >= CODEC_MS)
                .map(|(i, _)| i)
                .collect();
            let operator = if encoding {
                side.operators.last()
            } else {
                side.operators.first()
            };
            let evidence = vec![
                format!(
                    "`{}` downstream of it is not busy: the exchange between them holds `{}` \
                     up",
                    d.name, u.name
                ),
                format!(
                    "the network exchange spends up to {:.0} ms/s encoding `{}`'s records for \
                     another process and up to {:.0} ms/s decoding them for `{}` \
                     (serializationTimeMsPerSecond, deserializationTimeMsPerSecond)",
                    enc, u.name, dec, d.name
                ),
            ];
            let diagnosis = Diagnosis {
                bottleneck: Some(Bottleneck {
                    vertex: vi,
                    vertex_name: side.name.clone(),
                    parallelism: side.parallelism.max(side.subtasks.len()),
                    operator: operator.cloned(),
                    operator_share: None,
                    subtasks,
                }),
                cause: Cause::Serialization,
                confidence: 0.7,
                evidence,
                fix: Some(FixProposal {
                    description: format!(
                        "the records crossing from `{}` to `{}` cost more to {} than the work \
                         on them: send fewer or smaller fields (fixed-width primitives cross \
                         raw, other types as postcard), or keep both vertices in one process \
                         (fewer processes, or chained at equal parallelism)",
                        u.name,
                        d.name,
                        if encoding { "encode" } else { "decode" }
                    ),
                    change: format!(
                        "cheaper record encoding between `{}` and `{}`",
                        u.name, d.name
                    ),
                    plan_change: None,
                }),
                expected_effect: "the producer's backpressure falls with the exchange's \
                                  encoding and decoding time"
                    .to_string(),
                undetermined: Vec::new(),
                source_splits: None,
                lag: None,
            };
            let cost = enc.max(dec);
            if best.as_ref().is_none_or(|(c, _)| cost > *c) {
                best = Some((cost, diagnosis));
            }
        }
    }
    best.map(|(_, d)| d)
}
