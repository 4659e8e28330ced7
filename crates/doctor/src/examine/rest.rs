//! [`RestProbe`]: the doctor's figures from Flink REST answers ([`crate::flink_rest`] reads
//! them), fetched through a [`RestSource`]: a live server, a directory of saved answers, or
//! anything else that answers a `GET path`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_rest_api::TaskManagersInfo;

use super::{Probe, ProbedJob};
use crate::flink_rest::taskmanagers as tm;
use crate::flink_rest::{self, checkpoint_stats, read_graph, read_hot_keys, slot_cap};
use crate::{CheckpointStats, DoctorError, FlameTree, HotKey, Snapshot, VertexProfile, VertexView};

/// A source of REST answers, by Flink REST path (with its query).
pub trait RestSource {
    /// The answer to `GET path`; `Ok(None)` when there is no such resource (404, or no file).
    fn get(&self, path: &str) -> Result<Option<Value>, DoctorError>;
    /// Where the answers come from, for the report's header.
    fn describe(&self) -> String;
    /// Whether repeated reads can change (a live server), so sampling over a window makes sense.
    fn is_live(&self) -> bool;
    /// Waits `d` (between two samples, or for a server's flame graph sampling run): the
    /// source's clock, so the doctor itself never sleeps.
    fn pause(&self, d: Duration);
}

/// The answer to `GET path`, which must be there.
pub fn required(src: &dyn RestSource, path: &str) -> Result<Value, DoctorError> {
    src.get(path)?.ok_or_else(|| DoctorError::NoAnswer {
        server: src.describe(),
        path: path.to_string(),
    })
}

/// Flink's flame graph types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlameType {
    /// On- and off-CPU samples together.
    Full,
    /// Threads running on a CPU.
    OnCpu,
    /// Threads waiting (for input, for credit, in a call).
    OffCpu,
}

impl FlameType {
    /// The name in Flink's `?type=` query.
    pub fn as_str(self) -> &'static str {
        match self {
            FlameType::Full => "full",
            FlameType::OnCpu => "on_cpu",
            FlameType::OffCpu => "off_cpu",
        }
    }
}

/// How long the doctor waits for a server's flame graph sampling run.
pub const FLAME_GRAPH_WAIT: Duration = Duration::from_secs(30);

/// Asks for a vertex's flame graph until it has data (Flink's `-3` means "sampling"), for at
/// most `wait`. Returns the answer's tree and its `endTimestamp`.
pub fn fetch_flame_graph(
    src: &dyn RestSource,
    jid: &str,
    vid: &str,
    ty: FlameType,
    subtask: Option<usize>,
    wait: Duration,
) -> Result<(FlameTree, i64), DoctorError> {
    let mut path = format!("/jobs/{jid}/vertices/{vid}/flamegraph?type={}", ty.as_str());
    if let Some(i) = subtask {
        path.push_str(&format!("&subtaskindex={i}"));
    }
    let started = Instant::now();
    let fail = |m: String| Err(DoctorError::FlameGraph(m));
    loop {
        let Some(answer) = src.get(&path)? else {
            return fail(format!(
                "{} has no flame graph endpoint (404 for {path}); on Flink set \
                 rest.flamegraph.enabled: true",
                src.describe()
            ));
        };
        let end = answer.get("endTimestamp").and_then(Value::as_i64);
        match (end, FlameTree::from_answer(&answer)) {
            (Some(ts), Some(tree)) if ts >= 0 => return Ok((tree, ts)),
            (Some(-1), _) => {
                return fail("the vertex's tasks are not running (endTimestamp -1)".into())
            }
            (Some(-2), _) => {
                return fail(
                    "the server has flame graphs disabled (endTimestamp -2: \
                     rest.flamegraph.enabled)"
                        .into(),
                )
            }
            (Some(-3), _) | (Some(_), None) => {}
            _ => return fail(format!("{path}: not a flame graph answer: {answer}")),
        }
        if started.elapsed() >= wait {
            // The same words whatever the wait, so a saved `-3` answer (`doctor --from-dir`)
            // reads as the live one did.
            return fail(
                "no flame graph: the server was still sampling (`sluice profile --seconds` \
                 waits longer)"
                    .into(),
            );
        }
        src.pause(Duration::from_millis(250));
    }
}

/// The doctor's [`Probe`] over Flink REST answers (Sluice's extras when the server has them:
/// `cpuTimeMsPerSecond`, `<operator>.busyTimeMsPerSecond`, `/hot-keys`).
pub struct RestProbe<'a> {
    src: &'a dyn RestSource,
}

impl<'a> RestProbe<'a> {
    /// A probe reading through `src`.
    pub fn new(src: &'a dyn RestSource) -> RestProbe<'a> {
        RestProbe { src }
    }
}

impl RestProbe<'_> {
    /// On a cluster with TaskManager processes: each subtask's TaskManager and its JVM's figures
    /// (see [`flink_rest::taskmanagers`]). Best effort: a server without these answers (Sluice,
    /// saved answers without them) leaves the samples without hosts.
    fn attach_hosts(&self, jid: &str, vertices: &[VertexView], snap: &mut Snapshot) {
        let get = |path: &str| self.src.get(path).ok().flatten();
        let Some(tms) = get("/taskmanagers") else {
            return;
        };
        let tms: TaskManagersInfo = flink_rest::shape(&tms);
        if tms.taskmanagers.is_empty() {
            return;
        }
        let placements: Vec<Vec<Option<String>>> = vertices
            .iter()
            .map(|v| {
                get(&format!("/jobs/{jid}/vertices/{}", v.id))
                    .map(|d| tm::subtask_placement(&d))
                    .unwrap_or_default()
            })
            .collect();
        let failures = get(&format!("/jobs/{jid}/exceptions"))
            .map(|e| tm::failures_by_taskmanager(&e))
            .unwrap_or_default();
        let alone = tm::alone_tasks(&placements, &tms);
        let mut hosts = HashMap::new();
        for id in placements.iter().flatten().flatten() {
            if hosts.contains_key(id) {
                continue;
            }
            let metrics = get(&tm::taskmanager_metrics_path(id));
            let host = tm::host_sample(
                id,
                tm::taskmanager_info(&tms, id),
                metrics.as_ref(),
                alone.get(id).copied(),
                failures.get(id),
            );
            hosts.insert(id.clone(), host);
        }
        tm::attach_hosts(snap, &placements, &hosts);
    }
}

impl Probe for RestProbe<'_> {
    fn describe(&self) -> String {
        self.src.describe()
    }

    fn is_live(&self) -> bool {
        self.src.is_live()
    }

    fn job(&self, wanted: Option<&str>) -> Result<ProbedJob, DoctorError> {
        let overview = required(self.src, "/jobs/overview")?;
        let id = flink_rest::pick_job(&overview, wanted, &self.src.describe())?;
        let job = required(self.src, &format!("/jobs/{id}"))?;
        Ok(ProbedJob {
            name: job["name"].as_str().unwrap_or("").to_string(),
            vertices: read_graph(&job)?,
            id,
        })
    }

    fn sample(&self, jid: &str, vertices: &[VertexView]) -> Result<Snapshot, DoctorError> {
        let mut snap = Vec::with_capacity(vertices.len());
        for v in vertices {
            let mut subs = Vec::with_capacity(v.parallelism);
            for n in 0..v.parallelism {
                let path = flink_rest::subtask_metrics_path(jid, v, n);
                subs.push(flink_rest::subtask_sample(
                    &required(self.src, &path)?,
                    &v.operators,
                ));
            }
            snap.push(subs);
        }
        self.attach_hosts(jid, vertices, &mut snap);
        Ok(snap)
    }

    fn hot_keys(&self, jid: &str, v: &VertexView) -> Result<Option<Vec<HotKey>>, DoctorError> {
        // Flink's aggregated view, kept for a saving source (the doctor itself reads the
        // subtasks); whether it is there does not matter.
        let _ = self.src.get(&format!(
            "/jobs/{jid}/vertices/{}/subtasks/metrics?get=busyTimeMsPerSecond,\
             backPressuredTimeMsPerSecond,idleTimeMsPerSecond",
            v.id
        ));
        // `/hot-keys` is a Sluice extension: Flink answers 404.
        Ok(self
            .src
            .get(&flink_rest::hot_keys_path(jid, v))?
            .map(|body| read_hot_keys(&body)))
    }

    fn available_cores(&self) -> Option<usize> {
        // On a Flink cluster the slots cap the parallelism a fix may propose; Sluice has no cap.
        self.src
            .get("/overview")
            .ok()
            .flatten()
            .and_then(|o| slot_cap(&o))
    }

    fn profile(
        &self,
        jid: &str,
        v: &VertexView,
        subtasks: &[usize],
    ) -> Result<Option<VertexProfile>, DoctorError> {
        let (src, vid) = (self.src, v.id.as_str());
        // Every subtask at once when all are busy (one request per type); else each busy one.
        let picks: Vec<Option<usize>> = if subtasks.is_empty() || subtasks.len() >= v.parallelism {
            vec![None]
        } else {
            subtasks.iter().map(|&i| Some(i)).collect()
        };
        if !src.is_live() {
            let mut probe = format!("/jobs/{jid}/vertices/{vid}/flamegraph?type=on_cpu");
            if let Some(Some(i)) = picks.first() {
                probe.push_str(&format!("&subtaskindex={i}"));
            }
            if src.get(&probe)?.is_none() {
                return Ok(None);
            }
        }
        // Saved answers are final: asking again would not change them.
        let wait = if src.is_live() {
            FLAME_GRAPH_WAIT
        } else {
            Duration::ZERO
        };
        let mut profile = VertexProfile::default();
        for pick in picks {
            let (on, _) = fetch_flame_graph(src, jid, vid, FlameType::OnCpu, pick, wait)?;
            let (off, _) = fetch_flame_graph(src, jid, vid, FlameType::OffCpu, pick, wait)?;
            profile.on_cpu.merge(&on);
            profile.off_cpu.merge(&off);
        }
        Ok(Some(profile))
    }

    /// Flink's checkpoint statistics and configuration, when the server has them. The job's
    /// own setting decides whether enabling buffer debloating is advice worth giving
    /// (`/jobs/:id/jobmanager/config` on Flink, the `user-config` of `/jobs/:id/config` on
    /// Sluice); unknown counts as off, Flink's default.
    fn checkpoint_stats(&self, jid: &str) -> Option<CheckpointStats> {
        let src = self.src;
        let stats = src.get(&format!("/jobs/{jid}/checkpoints")).ok()??;
        let config = src.get(&format!("/jobs/{jid}/checkpoints/config")).ok()??;
        let job_config = src.get(&format!("/jobs/{jid}/config")).ok().flatten();
        let jm_config = src
            .get(&format!("/jobs/{jid}/jobmanager/config"))
            .ok()
            .flatten();
        Some(CheckpointStats {
            buffer_debloat: flink_rest::buffer_debloat_enabled(
                job_config.as_ref(),
                jm_config.as_ref(),
            )
            .unwrap_or(false),
            ..checkpoint_stats(&stats, &config)
        })
    }

    fn pause(&self, d: Duration) {
        self.src.pause(d);
    }
}
