//! The doctor's one call: [`examine`] samples a job through a [`Probe`] (over a window, one
//! snapshot a second), reads the extras (hot keys, the slot cap), diagnoses, profiles the
//! bottleneck when asked and diagnoses again with its flame graphs, and reads the checkpoint
//! statistics for advice. `sluice doctor`, the REST server's `GET /jobs/:jid/doctor` and the
//! autopilot all diagnose through it.
//!
//! The decisions stay pure: every fetch and every wait goes through the probe, so the I/O is
//! the caller's ([`RestProbe`] over a [`RestSource`] of Flink REST answers, [`ViewProbe`] over a
//! view the caller built itself).

mod rest;
mod view;

use std::time::{Duration, Instant};

pub use rest::{fetch_flame_graph, FlameType, RestProbe, RestSource, FLAME_GRAPH_WAIT};
pub use view::ViewProbe;

use crate::{
    average, checkpoint_advice, diagnose_window, CheckpointStats, Diagnosis, DoctorError, HotKey,
    JobView, Snapshot, VertexProfile, VertexView,
};

/// The job a probe found: its id, name and vertices (no samples yet).
#[derive(Clone, Debug, Default)]
pub struct ProbedJob {
    /// The job's id.
    pub id: String,
    /// The job's name.
    pub name: String,
    /// The vertices, with their graph facts and no subtask samples.
    pub vertices: Vec<VertexView>,
}

/// Where the doctor's figures come from. Every method may do I/O; [`examine`] does none itself.
pub trait Probe {
    /// Where the figures come from, for the report's header and error messages.
    fn describe(&self) -> String;
    /// Whether repeated reads can change (a live server), so sampling over a window makes sense.
    fn is_live(&self) -> bool;
    /// Whether a sample is already the server's moving average: then it is diagnosed as it is,
    /// with no series to read stalls from.
    fn averaged(&self) -> bool {
        false
    }
    /// The job `wanted` (default: the probe's choice) with its vertices.
    fn job(&self, wanted: Option<&str>) -> Result<ProbedJob, DoctorError>;
    /// One snapshot: `[vertex][subtask]` samples.
    fn sample(&self, jid: &str, vertices: &[VertexView]) -> Result<Snapshot, DoctorError>;
    /// A vertex's hot keys; `None` when the source does not report them.
    fn hot_keys(&self, jid: &str, vertex: &VertexView) -> Result<Option<Vec<HotKey>>, DoctorError>;
    /// The cores (or slots) a fix may use; `None` when there is no cap.
    fn available_cores(&self) -> Option<usize>;
    /// The flame graphs of `subtasks` of a vertex, merged (all when `subtasks` is empty);
    /// `Ok(None)` when the source holds none, `Err` says why there are none.
    fn profile(
        &self,
        jid: &str,
        vertex: &VertexView,
        subtasks: &[usize],
    ) -> Result<Option<VertexProfile>, DoctorError>;
    /// Checkpoint statistics and configuration, when the source has them.
    fn checkpoint_stats(&self, jid: &str) -> Option<CheckpointStats>;
    /// Waits `d` between two samples.
    fn pause(&self, d: Duration);
}

/// How [`examine`] samples.
#[derive(Clone, Debug, PartialEq)]
pub struct ExamineOptions {
    /// Seconds to sample over (one sample per second); ignored for a source that is not live.
    pub window: f64,
    /// Read the bottleneck's flame graphs and diagnose again with them.
    pub flame_graphs: bool,
}

/// A diagnosis with what it was made from.
#[derive(Clone, Debug)]
pub struct Examination {
    /// The job's name.
    pub job_name: String,
    /// The job's id.
    pub job_id: String,
    /// Where the figures came from ([`Probe::describe`]).
    pub source: String,
    /// Snapshots taken.
    pub samples: usize,
    /// The window actually sampled over (0 for a source that is not live).
    pub window: f64,
    /// The job with each subtask's samples averaged over the window.
    pub job: JobView,
    /// The doctor's verdict.
    pub diagnosis: Diagnosis,
    /// Advice on the checkpoint mode when the source reports checkpoint statistics.
    pub checkpoint_advice: Option<String>,
}

/// Samples the job `wanted` through `probe` and diagnoses it (see the module's documentation).
pub fn examine(
    probe: &dyn Probe,
    wanted: Option<&str>,
    opts: &ExamineOptions,
) -> Result<Examination, DoctorError> {
    if !(opts.window.is_finite() && (0.0..=3600.0).contains(&opts.window)) {
        return Err(DoctorError::Window);
    }
    let window = if probe.is_live() { opts.window } else { 0.0 };
    let probed = probe.job(wanted)?;
    let jid = probed.id;
    let mut vertices = probed.vertices;
    let started = Instant::now();
    let span = Duration::from_secs_f64(window);
    let mut samples = Vec::new();
    let mut k = 0u64;
    loop {
        samples.push(probe.sample(&jid, &vertices)?);
        k += 1;
        let next = Duration::from_secs(k);
        if next > span {
            break;
        }
        probe.pause(next.saturating_sub(started.elapsed()));
    }
    let mut extra_unknown = None;
    for v in &mut vertices {
        v.hot_keys = probe.hot_keys(&jid, v)?;
        if v.hot_keys.is_none() {
            extra_unknown = Some("hot keys: not reported by this server".to_string());
        }
    }
    // A server's moving averages are one view: diagnosed in place, with no series.
    let series: Vec<Snapshot> = if probe.averaged() {
        if let Some(first) = samples.first() {
            for (v, subs) in vertices.iter_mut().zip(first) {
                v.subtasks = subs.clone();
            }
        }
        Vec::new()
    } else {
        samples.clone()
    };
    let mut job = JobView {
        vertices,
        available_cores: probe.available_cores(),
    };
    let mut d = diagnose_window(&job, &series);
    let mut flame_note = None;
    if let (Some(b), true) = (d.bottleneck.clone(), opts.flame_graphs) {
        match probe.profile(&jid, &job.vertices[b.vertex], &b.subtasks) {
            Ok(Some(p)) => {
                job.vertices[b.vertex].profile = Some(p);
                d = diagnose_window(&job, &series);
            }
            Ok(None) => {}
            Err(e) => flame_note = Some(format!("flame graphs: {e}")),
        }
    }
    if let Some(n) = flame_note {
        d.undetermined.push(n);
    }
    if let Some(u) = extra_unknown {
        if !d.undetermined.iter().any(|x| x.starts_with("hot keys")) {
            d.undetermined.push(u);
        }
    }
    let mut averaged = job;
    for (v, subs) in averaged.vertices.iter_mut().zip(average(&series)) {
        v.subtasks = subs;
    }
    let checkpoint_advice = probe
        .checkpoint_stats(&jid)
        .and_then(|c| checkpoint_advice(&c, &averaged));
    Ok(Examination {
        job_name: probed.name,
        job_id: jid,
        source: probe.describe(),
        samples: samples.len(),
        window,
        job: averaged,
        diagnosis: d,
        checkpoint_advice,
    })
}
