//! The figures a decision compares: the bottleneck's processing rate and the job's throughput.

use sluice_doctor::{JobView, SubtaskSample, VertexView};
use sluice_rest_api::DecisionMeasurement;

/// Rates over one window, records per second.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The operator (or vertex) measured as the bottleneck.
    pub bottleneck: String,
    /// Its vertex's parallelism during the window.
    pub parallelism: usize,
    /// Records per second the bottleneck's vertex processed (its subtasks' `numRecordsInPerSecond`
    /// summed; a source's records out).
    pub bottleneck_rate: f64,
    /// Records per second the job delivered: its sinks' records in summed (a job without sink
    /// vertices: its sources' records out).
    pub throughput: f64,
    /// Subtasks of the bottleneck's vertex doing a share of its work (a rate of at least a
    /// tenth of the mean): a raised parallelism whose new subtasks get nothing to do (a source
    /// with fewer splits than subtasks) does not raise it.
    pub working_subtasks: usize,
}

impl Measurement {
    /// The measurement for the decision log (kebab-case keys, rates rounded to one decimal).
    pub fn to_shape(&self) -> DecisionMeasurement {
        DecisionMeasurement {
            bottleneck: self.bottleneck.clone(),
            parallelism: self.parallelism as u64,
            bottleneck_rate: round1(self.bottleneck_rate),
            throughput: round1(self.throughput),
            working_subtasks: self.working_subtasks as u64,
        }
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn rate_in(s: &SubtaskSample) -> f64 {
    s.records_in
        .filter(|r| *r > 0.0)
        .or(s.records_out)
        .unwrap_or(0.0)
}

fn rate_out(s: &SubtaskSample) -> f64 {
    s.records_out.unwrap_or(0.0)
}

/// The vertex holding `name`: a vertex of that name, else the one chaining an operator of it.
pub fn vertex_of<'a>(job: &'a JobView, name: &str) -> Option<&'a VertexView> {
    job.vertices.iter().find(|v| v.name == name).or_else(|| {
        job.vertices
            .iter()
            .find(|v| v.operators.iter().any(|o| o == name))
    })
}

/// Measures `job` (averaged over a window) with `bottleneck` as the measured operator; `None`
/// when no vertex holds it.
pub fn measure(job: &JobView, bottleneck: &str) -> Option<Measurement> {
    let v = vertex_of(job, bottleneck)?;
    let rates: Vec<f64> = if v.is_source {
        v.subtasks.iter().map(rate_out).collect()
    } else {
        v.subtasks.iter().map(rate_in).collect()
    };
    let bottleneck_rate: f64 = rates.iter().sum();
    let mean = bottleneck_rate / rates.len().max(1) as f64;
    let working_subtasks = rates
        .iter()
        .filter(|&&r| r > 0.0 && r >= 0.1 * mean)
        .count();
    let sinks: Vec<&VertexView> = job.vertices.iter().filter(|v| v.is_sink).collect();
    let throughput = if sinks.is_empty() {
        job.vertices
            .iter()
            .filter(|v| v.is_source)
            .flat_map(|v| v.subtasks.iter().map(rate_out))
            .sum()
    } else {
        sinks
            .iter()
            .flat_map(|v| v.subtasks.iter().map(rate_in))
            .sum()
    };
    Some(Measurement {
        bottleneck: bottleneck.to_string(),
        parallelism: v.parallelism,
        bottleneck_rate,
        throughput,
        working_subtasks,
    })
}

/// Records per second the job's sources emit: its throughput where the sinks' input is not
/// comparable across a change (a two-phase aggregation sends the sink combined partials).
pub fn source_rate(job: &JobView) -> f64 {
    job.vertices
        .iter()
        .filter(|v| v.is_source)
        .flat_map(|v| v.subtasks.iter().map(rate_out))
        .sum()
}
