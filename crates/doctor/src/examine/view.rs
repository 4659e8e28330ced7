//! [`ViewProbe`]: a job the caller has already measured (the REST server's moving averages
//! over its own live metrics), examined as one averaged view.

use std::time::Duration;

use super::{Probe, ProbedJob};
use crate::{CheckpointStats, DoctorError, HotKey, JobView, Snapshot, VertexProfile, VertexView};

/// One averaged view of a job: no series, no fetches, no waits; flame graphs only as the view
/// carries them.
pub struct ViewProbe {
    job: ProbedJob,
    view: JobView,
    source: String,
}

impl ViewProbe {
    /// A probe answering from `view` (job `id`, named `name`); `source` names it in reports.
    pub fn new(id: &str, name: &str, view: JobView, source: &str) -> ViewProbe {
        let mut vertices = view.vertices.clone();
        for v in &mut vertices {
            v.subtasks.clear();
        }
        ViewProbe {
            job: ProbedJob {
                id: id.to_string(),
                name: name.to_string(),
                vertices,
            },
            view,
            source: source.to_string(),
        }
    }
}

impl Probe for ViewProbe {
    fn describe(&self) -> String {
        self.source.clone()
    }
    fn is_live(&self) -> bool {
        false
    }
    fn averaged(&self) -> bool {
        true
    }
    fn job(&self, _: Option<&str>) -> Result<ProbedJob, DoctorError> {
        Ok(self.job.clone())
    }
    fn sample(&self, _: &str, _: &[VertexView]) -> Result<Snapshot, DoctorError> {
        Ok(self
            .view
            .vertices
            .iter()
            .map(|v| v.subtasks.clone())
            .collect())
    }
    fn hot_keys(&self, _: &str, vertex: &VertexView) -> Result<Option<Vec<HotKey>>, DoctorError> {
        Ok(vertex.hot_keys.clone())
    }
    fn available_cores(&self) -> Option<usize> {
        self.view.available_cores
    }
    fn profile(
        &self,
        _: &str,
        vertex: &VertexView,
        _: &[usize],
    ) -> Result<Option<VertexProfile>, DoctorError> {
        Ok(vertex.profile.clone())
    }
    fn checkpoint_stats(&self, _: &str) -> Option<CheckpointStats> {
        None
    }
    fn pause(&self, _: Duration) {}
}
