//! [`FlinkActuator`]: an Apache Flink job. Only parallelism can change in place, through
//! Flink's `PUT /jobs/:jid/resource-requirements` under the adaptive scheduler; the new
//! parallelism is verified in Flink's own `/jobs/:jid` (Flink takes 20–30 s). On the default
//! scheduler, or for any fix that is not a parallelism, the change the user must make is
//! advised ([`flink_code_advice`]: Java code shapes for two-phase aggregation and async I/O).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice_client::{ClientError, Endpoint};
use sluice_doctor::{Cause, Diagnosis, PlanChange};
use sluice_rest_api::lenient::Scalar;
use sluice_rest_api::{ClusterOverview, ConfigEntry, JobDetails, JobVertex};

use super::{http, now_ms, read, Actuator, TIMEOUT};
use crate::{AutopilotError, Decision, Policy};

/// The vertices of Flink's `/jobs/:jid` (none when it lists none).
fn vertices(job: &JobDetails) -> impl Iterator<Item = &JobVertex> {
    job.vertices.iter().flatten()
}

/// A JSON integer `>= 0` (as `serde_json`'s `as_u64` reads one; a string or a fraction is not).
fn whole(s: &Scalar) -> Option<u64> {
    match s {
        Scalar::Int(i) => u64::try_from(*i).ok(),
        Scalar::UInt(u) => Some(*u),
        _ => None,
    }
}

/// How long Flink gets to run a vertex at a new parallelism (observed: 20–30 s).
const FLINK_RESCALE_DEADLINE: Duration = Duration::from_secs(150);

/// A Flink cluster's REST API.
pub struct FlinkActuator {
    ep: Endpoint,
    jid: String,
    /// The job's scheduler as Flink names it (`Adaptive`, `Default`, …).
    scheduler: String,
    max_parallelism: Option<usize>,
    slots: Option<usize>,
    /// When the job's 60 s rate meters first cover only its running time (ms since the epoch).
    meters_full_ms: u64,
}

/// Flink's `…PerSecond` rates are meters over 60 s, and its REST metric fetcher caches 10 s:
/// a job (or task) younger than this reports rates too low.
const FLINK_METER_SPAN: Duration = Duration::from_secs(70);

impl FlinkActuator {
    /// Reads the job's scheduler (`/jobs/:jid` `schedulerType`, else the job manager's
    /// `jobmanager.scheduler`), its vertices' max parallelism and the cluster's slots.
    pub fn connect(ep: Endpoint, jid: &str) -> Result<FlinkActuator, AutopilotError> {
        let job: JobDetails = read(
            ep.get_json(&format!("/jobs/{jid}"), TIMEOUT)
                .map_err(|e| AutopilotError::read("reading the job", e))?,
        );
        let mut scheduler = job.scheduler_type.clone().unwrap_or_default();
        if scheduler.is_empty() {
            if let Ok(Value::Array(cfg)) =
                ep.get_json(&format!("/jobs/{jid}/jobmanager/config"), TIMEOUT)
            {
                scheduler = cfg
                    .into_iter()
                    .map(read::<ConfigEntry>)
                    .find(|e| e.key == "jobmanager.scheduler")
                    .and_then(|e| match e.value {
                        Some(Scalar::Str(s)) => Some(s),
                        _ => None,
                    })
                    .unwrap_or_else(|| "Default".to_string());
            }
        }
        let max_parallelism = vertices(&job)
            .filter_map(|v| v.max_parallelism)
            .min()
            .map(|m| m as usize);
        let slots = ep
            .get_json("/overview", TIMEOUT)
            .ok()
            .map(|o| read::<ClusterOverview>(o).slots_total as usize)
            .filter(|&s| s > 0);
        // Whole milliseconds, as Flink sends them; anything else reads as just started.
        let running_for = Duration::from_millis(
            job.duration
                .filter(|d| *d >= 0.0 && d.fract() == 0.0)
                .map_or(0, |d| d as u64),
        );
        let meters_full_ms =
            now_ms() + FLINK_METER_SPAN.saturating_sub(running_for).as_millis() as u64;
        Ok(FlinkActuator {
            ep,
            jid: jid.to_string(),
            scheduler,
            max_parallelism,
            slots,
            meters_full_ms,
        })
    }

    /// Whether the job runs Flink's adaptive scheduler (the only one that rescales in place).
    pub fn adaptive(&self) -> bool {
        self.scheduler.eq_ignore_ascii_case("adaptive")
    }

    /// The vertex id and current parallelism of the vertex named `operator` (or chaining it).
    fn vertex(&self, operator: &str) -> Result<(String, usize), String> {
        let job: JobDetails = read(
            self.ep
                .get_json(&format!("/jobs/{}", self.jid), TIMEOUT)
                .map_err(http)?,
        );
        let found = vertices(&job)
            .find(|v| v.name == operator || v.name.split(" -> ").any(|n| n == operator))
            .and_then(|v| Some((v.id.clone(), whole(v.parallelism.as_ref()?)? as usize)))
            .filter(|(id, _)| !id.is_empty());
        found.ok_or_else(|| format!("no vertex `{operator}` in Flink's /jobs/{}", self.jid))
    }

    /// Sets `operator`'s upper bound to `parallelism` and waits until Flink's `/jobs/:jid`
    /// shows the vertex running at it.
    fn rescale(&self, operator: &str, parallelism: usize) -> Result<Vec<String>, String> {
        let (vid, old) = self.vertex(operator)?;
        let path = format!("/jobs/{}/resource-requirements", self.jid);
        let mut req = self
            .ep
            .get_json(&path, TIMEOUT)
            .map_err(|e| format!("{} ({})", http(e), self.adaptive_needed()))?;
        let entry = req
            .get_mut(&vid)
            .and_then(|v| v.get_mut("parallelism"))
            .ok_or_else(|| format!("{path} lists no vertex {vid}"))?;
        let lower = entry["lowerBound"]
            .as_u64()
            .unwrap_or(1)
            .min(parallelism as u64);
        entry["lowerBound"] = json!(lower);
        entry["upperBound"] = json!(parallelism);
        let put = Instant::now();
        self.ep
            .put_json(&path, &req, TIMEOUT)
            .map_err(|e| match e {
                ClientError::Status { status, .. } if status < 600 => {
                    format!("{} ({})", http(e), self.adaptive_needed())
                }
                e => http(e),
            })?;
        let deadline = put + FLINK_RESCALE_DEADLINE;
        loop {
            let job: JobDetails = read(
                self.ep
                    .get_json(&format!("/jobs/{}", self.jid), TIMEOUT)
                    .map_err(http)?,
            );
            let v = vertices(&job).find(|v| v.id == vid);
            let at = v.and_then(|v| whole(v.parallelism.as_ref()?)).unwrap_or(0) as usize;
            let running =
                v.is_some_and(|v| v.status.as_deref() == Some("RUNNING")) && job.state == "RUNNING";
            if at == parallelism && running {
                return Ok(vec![format!(
                    "Flink's /jobs/{} shows `{operator}` RUNNING at parallelism {parallelism} \
                     (was {old}) {:.1} s after PUT {path}",
                    self.jid,
                    put.elapsed().as_secs_f64()
                )]);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "Flink accepted the new requirements but `{operator}` is at parallelism \
                     {at} after {} s (free slots?)",
                    FLINK_RESCALE_DEADLINE.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn adaptive_needed(&self) -> String {
        format!(
            "in-place rescaling through PUT /jobs/:jid/resource-requirements needs Flink's \
             adaptive scheduler: this job runs the {} scheduler; set `jobmanager.scheduler: \
             adaptive` in the cluster's configuration and resubmit the job (or stop it with a \
             savepoint and resubmit at the new parallelism)",
            if self.scheduler.is_empty() {
                "default"
            } else {
                &self.scheduler
            }
        )
    }
}

impl Actuator for FlinkActuator {
    fn can_apply(&self, change: &PlanChange) -> bool {
        self.adaptive() && matches!(change, PlanChange::Parallelism { .. })
    }
    fn apply(&self, change: &PlanChange) -> Result<Vec<String>, String> {
        match change {
            PlanChange::Parallelism {
                operator,
                parallelism,
                ..
            } => self.rescale(operator, *parallelism),
            other => Err(format!("Flink cannot apply {other:?} to a running job")),
        }
    }
    fn roll_back(
        &self,
        change: &PlanChange,
        to: Option<&PlanChange>,
    ) -> Result<Vec<String>, String> {
        match to {
            Some(PlanChange::Parallelism {
                operator,
                parallelism,
                ..
            }) => self.rescale(operator, *parallelism),
            _ => Err(format!("no way back for {change:?} on Flink")),
        }
    }
    fn record(&self, _: &Decision) -> Result<(), String> {
        Ok(())
    }
    fn advice(&self, d: &Diagnosis, text: &str) -> String {
        let mut s = match flink_code_advice(d) {
            Some(code) => format!("{text}\nIn the job's code:\n{code}"),
            None => text.to_string(),
        };
        let parallelism = d
            .fix
            .as_ref()
            .and_then(|f| f.plan_change.as_ref())
            .is_some_and(|c| matches!(c, PlanChange::Parallelism { .. }));
        if parallelism && !self.adaptive() {
            s.push_str(&format!("\nNot applied: {}.", self.adaptive_needed()));
        }
        s
    }
    /// Only a change to be judged needs true rates: without the adaptive scheduler the fix is
    /// advice and need not wait for the meters.
    fn first_measurement_ms(&self) -> u64 {
        if self.adaptive() {
            self.meters_full_ms
        } else {
            0
        }
    }
    fn not_steady_yet(&self) -> String {
        format!(
            "the job is younger than its engine's {} s rate meters",
            FLINK_METER_SPAN.as_secs()
        )
    }
    fn policy(&self) -> Policy {
        Policy {
            max_parallelism: self.max_parallelism,
            available_slots: self.slots,
            ..Policy::flink()
        }
    }
}

/// The code change a Flink user makes for a fix that is not a parallelism: salting a hot key
/// (two-phase aggregation) or async I/O with a capacity.
pub fn flink_code_advice(d: &Diagnosis) -> Option<String> {
    let change = d.fix.as_ref()?.plan_change.as_ref();
    match (&d.cause, change) {
        (Cause::KeySkew { .. }, _) | (_, Some(PlanChange::TwoPhase { .. })) => {
            let buckets = match change {
                Some(PlanChange::TwoPhase { buckets, .. }) => *buckets,
                _ => 16,
            };
            Some(format!(
                "  // two-phase aggregation: salt the key, pre-aggregate per (key, salt), combine per key\n\
                 \x20 stream\n\
                 \x20   .map(r -> Tuple3.of(r.key, ThreadLocalRandom.current().nextInt({buckets}), r.value))\n\
                 \x20   .returns(Types.TUPLE(Types.STRING, Types.INT, Types.LONG))\n\
                 \x20   .keyBy(t -> t.f0 + \"#\" + t.f1)\n\
                 \x20   .window(TumblingProcessingTimeWindows.of(Duration.ofSeconds(1)))\n\
                 \x20   .reduce((a, b) -> Tuple3.of(a.f0, a.f1, a.f2 + b.f2))   // partial sums\n\
                 \x20   .keyBy(t -> t.f0)\n\
                 \x20   .reduce((a, b) -> Tuple3.of(a.f0, 0, a.f2 + b.f2));     // final sum per key"
            ))
        }
        (_, Some(PlanChange::AsyncCapacity { operator, capacity })) => Some(format!(
            "  // `{operator}`: replace the blocking call with an AsyncFunction\n\
             \x20 AsyncDataStream.unorderedWait(stream, new AsyncLookup(), 5, TimeUnit.SECONDS, {capacity});\n\
             \x20 // use orderedWait(...) instead when the output must keep the input order"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_doctor::{FixProposal, HotKey};

    fn diagnosis(cause: Cause, change: Option<PlanChange>) -> Diagnosis {
        Diagnosis {
            bottleneck: None,
            cause,
            confidence: 0.9,
            evidence: vec![],
            fix: Some(FixProposal {
                description: String::new(),
                change: "the fix".into(),
                plan_change: change,
            }),
            expected_effect: String::new(),
            undetermined: vec![],
            source_splits: None,
            lag: None,
        }
    }

    #[test]
    fn flink_advice_is_java_code() {
        let skew = diagnosis(
            Cause::KeySkew {
                hot_keys: vec![HotKey {
                    key: "0".into(),
                    share: 0.8,
                }],
            },
            Some(PlanChange::TwoPhase {
                operator: "sum".into(),
                buckets: 8,
            }),
        );
        let code = flink_code_advice(&skew).unwrap();
        assert!(
            code.contains("nextInt(8)") && code.contains(".keyBy(t -> t.f0)"),
            "{code}"
        );
        let blocking = diagnosis(
            Cause::BlockingCalls,
            Some(PlanChange::AsyncCapacity {
                operator: "lookup".into(),
                capacity: 24,
            }),
        );
        let code = flink_code_advice(&blocking).unwrap();
        assert!(
            code.contains(
                "AsyncDataStream.unorderedWait(stream, new AsyncLookup(), 5, TimeUnit.SECONDS, 24)"
            ),
            "{code}"
        );
        assert_eq!(
            flink_code_advice(&diagnosis(Cause::UnderProvisioned, None)),
            None
        );
    }
}
