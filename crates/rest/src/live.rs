//! Live plan changes: what a job that can change its plan while it runs offers the REST API.
//!
//! The REST crate knows no DataStream API, so the job's runner (`sluice::live`) implements
//! [`LiveControl`] and registers it with the [`crate::JobRegistry`] beside the job's monitor.
//! `PUT /jobs/:jid/resource-requirements`, `POST /jobs/:jid/doctor/apply` and the
//! `/jobs/:jid/rescales/...` endpoints call it; a job without one answers 409 with the reason
//! (Flink's default scheduler cannot change parallelism without a restart either).

use serde_json::Value;
use sluice_doctor::{PlanChange, ShipStrategy};
use sluice_plan::JobGraph;
use sluice_rest_api::{OrderedMap, PlanNodeInput};
// The record's shapes, for the job runner that builds records (it depends on no shapes crate).
pub use sluice_rest_api::{PlanNodeState, RecordedChange, VertexParallelism};
use sluice_types::Id128;

/// What to change in a running job.
#[derive(Clone, Debug, PartialEq)]
pub enum ApplyRequest {
    /// A doctor plan change (given in the request, or the doctor's current proposal).
    Change(PlanChange),
    /// New parallelism per job vertex (`PUT /jobs/:jid/resource-requirements`: the upper bound).
    Parallelism(Vec<(Id128, usize)>),
    /// Undo the newest change that was not undone yet (the plan before it, restored the same
    /// way: savepoint, stop, restore).
    Rollback,
}

/// Why a change was not applied: the HTTP status (400 refused change, 409 the job's state does
/// not allow it now, 500 the engine failed) and Flink's error message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveError {
    /// The HTTP status to answer with.
    pub status: u16,
    /// Flink-style error message for the `errors` list.
    pub message: String,
}

impl LiveError {
    /// 400: the change itself is refused.
    pub fn refused(message: impl Into<String>) -> LiveError {
        LiveError {
            status: 400,
            message: message.into(),
        }
    }
    /// 409: the job's state does not allow the change now.
    pub fn conflict(message: impl Into<String>) -> LiveError {
        LiveError {
            status: 409,
            message: message.into(),
        }
    }
    /// 500: the engine failed to apply it.
    pub fn internal(message: impl Into<String>) -> LiveError {
        LiveError {
            status: 500,
            message: message.into(),
        }
    }
}

/// How a change ended (Flink's `TerminalState` of a rescale).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RescaleState {
    /// Applied; the job runs the new plan.
    Completed,
    /// Not applied; the job runs its previous plan again. The reason.
    Failed(String),
}

/// One vertex's parallelism in a change (Flink's `VertexParallelismRescaleInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexRescale {
    /// The vertex's id.
    pub id: Id128,
    /// The vertex's name.
    pub name: String,
    /// `None`: the vertex did not exist before (a rewrite added it).
    pub before: Option<usize>,
    /// `None`: the vertex does not exist after (a rewrite removed or re-chained it).
    pub after: Option<usize>,
}

/// One applied (or failed) plan change: the rescale history's entry and `doctor/apply`'s answer.
#[derive(Clone, Debug, PartialEq)]
pub struct RescaleRecord {
    /// Random-looking 32-hex id (Flink: `rescaleUuid`).
    pub uuid: Id128,
    /// Sequence number of the change in this job, from 1 (Flink: `rescaleAttemptId`).
    pub attempt: u64,
    /// What asked: `resource-requirements`, `doctor-apply` or `rollback`.
    pub trigger: &'static str,
    /// The change ([`change_json`]); for a rollback the change it undid (`None` when unknown).
    pub change: Option<RecordedChange>,
    /// The uuid of the change a rollback undid.
    pub rollback_of: Option<Id128>,
    /// When the change started, ms since the epoch.
    pub start_ms: i64,
    /// When it ended, ms since the epoch.
    pub end_ms: i64,
    /// How it ended.
    pub state: RescaleState,
    /// Each vertex's parallelism before and after.
    pub vertices: Vec<VertexRescale>,
    /// Stream nodes before and after ([`plan_nodes`]).
    pub plan_before: Vec<PlanNodeState>,
    /// Stream nodes after the change.
    pub plan_after: Vec<PlanNodeState>,
    /// The plan diff, one line per changed node (`~ [4] heavy-map  parallelism 1 -> 2 ...`).
    pub changes: Vec<String>,
    /// Milliseconds in which nothing was processed: from the last record the old plan's last
    /// vertices (its sinks) took in (counted from the change's request at the earliest) to the
    /// first record the new plan's sources emitted; `None` when none came yet.
    pub pause_ms: Option<f64>,
    /// Milliseconds from the stop request (after its barrier the sources emit nothing) to the
    /// new plan's first source record: how long the input stood still, alignment included.
    pub sources_paused_ms: Option<f64>,
    /// The aligned savepoint the new plan restored from.
    pub savepoint: Option<String>,
}

/// A running job that can change its plan (see the module docs).
pub trait LiveControl: Send + Sync {
    /// Applies `request`: aligned savepoint, stop, rewrite, restore with state migration;
    /// returns once the job runs the new plan (or ran into the error, the old plan restored).
    fn apply(&self, request: ApplyRequest) -> Result<RescaleRecord, LiveError>;
    /// Every change so far, oldest first.
    fn history(&self) -> Vec<RescaleRecord>;
}

/// The stream nodes of a plan (`id`, `name`, `parallelism`, `inputs: [{id, ship_strategy}]`,
/// `options: {key: value}`), in id order (the last value of an option wins, as it takes effect).
pub fn plan_nodes(g: &JobGraph) -> Vec<PlanNodeState> {
    g.nodes
        .iter()
        .map(|(id, n)| {
            let mut options: Vec<(String, String)> = Vec::new();
            for (k, v) in &n.options {
                match options.iter_mut().find(|(key, _)| key == k) {
                    Some(o) => o.1 = v.clone(),
                    None => options.push((k.clone(), v.clone())),
                }
            }
            PlanNodeState {
                id: u64::from(*id),
                name: n.name.clone(),
                parallelism: n.parallelism as u64,
                inputs: n
                    .inputs
                    .iter()
                    .map(|(from, s)| PlanNodeInput {
                        id: u64::from(*from),
                        ship_strategy: s.as_str().to_string(),
                    })
                    .collect(),
                options: OrderedMap(options),
            }
        })
        .collect()
}

/// A plan change as the record holds it: `{"kind", "operator", ...}` with the change's own
/// fields (`parallelism` + `ship-strategy`, `buckets`, `capacity`, `key` + `value`,
/// `max-rows`) — what [`parse_change`] reads back.
pub fn change_json(c: &PlanChange) -> RecordedChange {
    // The doctor's machine form, with the ship strategy under Flink's REST name.
    match c {
        PlanChange::Parallelism {
            operator,
            parallelism,
            ship,
        } => RecordedChange::Parallelism {
            operator: operator.clone(),
            parallelism: *parallelism as u64,
            ship_strategy: ship.as_str().to_string(),
        },
        PlanChange::TwoPhase { operator, buckets } => RecordedChange::TwoPhase {
            operator: operator.clone(),
            buckets: u64::from(*buckets),
        },
        PlanChange::AsyncCapacity { operator, capacity } => RecordedChange::AsyncIo {
            operator: operator.clone(),
            capacity: *capacity as u64,
        },
        PlanChange::SinkOption {
            operator,
            key,
            value,
        } => RecordedChange::SinkOption {
            operator: operator.clone(),
            key: key.clone(),
            value: value.clone(),
        },
        PlanChange::LookupCache { operator, max_rows } => RecordedChange::LookupCache {
            operator: operator.clone(),
            max_rows: *max_rows as u64,
        },
    }
}

/// Reads a plan change: [`change_json`]'s shape, or the `plan-change` object of
/// `GET /jobs/:jid/doctor` as it is (where a changed value is `{"before", "after"}` and the
/// sink option's new value is `after`). The error names the field.
pub fn parse_change(v: &Value) -> Result<PlanChange, String> {
    let o = v
        .as_object()
        .ok_or("the plan change must be a JSON object")?;
    let text = |k: &str| -> Result<String, String> {
        let f = o
            .get(k)
            .ok_or_else(|| format!("the plan change needs '{k}'"))?;
        let f = f.get("after").unwrap_or(f);
        f.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("'{k}' must be a string"))
    };
    let number = |k: &str| -> Result<u64, String> {
        let f = o
            .get(k)
            .ok_or_else(|| format!("the plan change needs '{k}'"))?;
        let f = f.get("after").unwrap_or(f);
        f.as_u64()
            .ok_or_else(|| format!("'{k}' must be a non-negative integer"))
    };
    let operator = text("operator")?;
    let kind = text("kind")?;
    let size = |k: &str| -> Result<usize, String> {
        usize::try_from(number(k)?).map_err(|_| format!("'{k}' is too large"))
    };
    Ok(match kind.as_str() {
        "parallelism" => PlanChange::Parallelism {
            operator,
            parallelism: size("parallelism")?,
            // `sluice doctor --json` names it `ship`: its object is accepted as it is too.
            ship: {
                let ship = match o.contains_key("ship") && !o.contains_key("ship-strategy") {
                    true => text("ship")?,
                    false => text("ship-strategy")?,
                };
                ShipStrategy::parse(&ship).ok_or_else(|| {
                    format!(
                        "unknown ship strategy '{}' (REBALANCE, RESCALE, SHUFFLE or HASH)",
                        crate::http::shorten(&ship)
                    )
                })?
            },
        },
        "two-phase" => PlanChange::TwoPhase {
            operator,
            buckets: u32::try_from(number("buckets")?)
                .map_err(|_| "'buckets' is too large".to_string())?,
        },
        "async-io" => PlanChange::AsyncCapacity {
            operator,
            capacity: size("capacity")?,
        },
        "sink-option" => PlanChange::SinkOption {
            operator,
            key: text("key")?,
            value: match o.get("value") {
                Some(_) => text("value")?,
                None => text("after")?,
            },
        },
        "lookup-cache" => PlanChange::LookupCache {
            operator,
            max_rows: size("max-rows")?,
        },
        other => {
            return Err(format!(
                "unknown plan change kind '{}' (parallelism, two-phase, async-io, sink-option, lookup-cache)",
                crate::http::shorten(other)
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_round_trip_and_the_doctors_shape_is_read() {
        let all = [
            PlanChange::Parallelism {
                operator: "heavy-map".into(),
                parallelism: 2,
                ship: ShipStrategy::Rebalance,
            },
            PlanChange::TwoPhase {
                operator: "sum".into(),
                buckets: 8,
            },
            PlanChange::AsyncCapacity {
                operator: "lookup".into(),
                capacity: 16,
            },
            PlanChange::SinkOption {
                operator: "sink".into(),
                key: "sink.buffer-flush.max-rows".into(),
                value: "500".into(),
            },
            PlanChange::LookupCache {
                operator: "lookup".into(),
                max_rows: 100,
            },
        ];
        for c in &all {
            let v = serde_json::to_value(change_json(c)).unwrap();
            assert_eq!(parse_change(&v).as_ref(), Ok(c));
        }
        let doctor = json!({"kind": "parallelism", "operator": "heavy-map", "vertex": "ab",
            "parallelism": {"before": 1, "after": 2},
            "ship-strategy": {"before": "FORWARD", "after": "REBALANCE"}});
        assert_eq!(parse_change(&doctor), Ok(all[0].clone()));
        // `sluice doctor --json`'s shape (`ship`), as `sluice_doctor::plan_change_json` writes it.
        let cli = sluice_doctor::plan_change_json(&all[0]);
        assert_eq!(parse_change(&cli), Ok(all[0].clone()));
        let doctor = json!({"kind": "sink-option", "operator": "sink",
            "key": "sink.buffer-flush.max-rows", "before": "1", "after": "500"});
        assert_eq!(parse_change(&doctor), Ok(all[3].clone()));
        assert!(parse_change(&json!({"kind": "nope", "operator": "x"}))
            .unwrap_err()
            .contains("unknown plan change kind"));
        assert!(
            parse_change(&json!({"kind": "two-phase", "operator": "x", "buckets": -1}))
                .unwrap_err()
                .contains("buckets")
        );
        assert!(parse_change(&json!([])).is_err());
    }
}
