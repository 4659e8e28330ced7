//! The data of `sluice top`'s frame, read from a Flink-compatible REST API: a plain [`Model`]
//! of the job, its vertices and their subtasks (busy, backpressured, idle, CPU, records/s),
//! [`fetch`] that reads one through a [`RestSource`] (a live server, or saved answers: the tests
//! read Flink's captured ones), and the pure readers it fills the model with. Only Flink's own
//! paths and metric names (docs/src/reference/flink-formats.md#data-skew and #web-ui), so it
//! reads Sluice's REST server and a real Apache Flink cluster alike.

use std::collections::HashMap;

use serde_json::Value;
use sluice_doctor::flink_rest::{pick_job, read_metric_values, shape, shapes};
use sluice_doctor::{DoctorError, RestSource};
use sluice_rest_api::{AggregatedMetric, JobDetails, VertexDetails};

use crate::ClientError;

/// Per-subtask metrics asked for (the doctor adapter's list: Flink's names plus
/// `cpuTimeMsPerSecond`, which a Flink server omits).
pub use sluice_doctor::flink_rest::SUBTASK_METRICS;
/// Metrics aggregated over a vertex's subtasks.
pub const VERTEX_METRICS: &str = "busyTimeMsPerSecond,backPressuredTimeMsPerSecond,\
idleTimeMsPerSecond,numRecordsInPerSecond,numRecordsOutPerSecond";
/// The aggregations asked for per vertex.
pub const AGGREGATIONS: &str = "min,max,avg,sum,skew";

const BUSY: &str = "busyTimeMsPerSecond";
const BACKPRESSURED: &str = "backPressuredTimeMsPerSecond";
const IDLE: &str = "idleTimeMsPerSecond";
const CPU: &str = "cpuTimeMsPerSecond";
const RECORDS_IN: &str = "numRecordsInPerSecond";
const RECORDS_OUT: &str = "numRecordsOutPerSecond";

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

/// One frame's worth of data. `None` means the server did not report the value (or reported NaN).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Model {
    /// The REST API's base URL.
    pub url: String,
    /// The job's header fields.
    pub job: JobSummary,
    /// Its vertices, in the job's order.
    pub vertices: Vec<VertexView>,
    /// A last line (refresh hint, or the error of a failed refresh).
    pub footer: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
/// The job's header: id, name, state and how long it has run.
pub struct JobSummary {
    /// The job id.
    pub id: String,
    /// The job name.
    pub name: String,
    /// Its state (`RUNNING`…).
    pub state: String,
    /// How long it has run, ms.
    pub duration_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
/// One vertex: its aggregates and its subtasks.
pub struct VertexView {
    /// The vertex id.
    pub id: String,
    /// The vertex name (chained operators joined by ` -> `).
    pub name: String,
    /// How many subtasks it runs.
    pub parallelism: usize,
    /// `skew` aggregate of `numRecordsInPerSecond`, in %
    /// (docs/src/reference/flink-formats.md#web-ui).
    pub data_skew: Option<f64>,
    /// `sum` aggregates of `numRecords{In,Out}PerSecond`.
    pub records_in: Option<f64>,
    /// `sum` of `numRecordsOutPerSecond`.
    pub records_out: Option<f64>,
    /// `max` aggregates, used when no subtask reported the metric.
    pub busy_max: Option<f64>,
    /// `max` of `backPressuredTimeMsPerSecond`.
    pub backpressured_max: Option<f64>,
    /// A source's lag: FLIP-33 `pendingRecords` summed over its subtasks (Kafka sources, in
    /// Sluice and Flink alike), `None` when the source does not report it.
    pub pending_records: Option<f64>,
    /// Its subtasks' values, by index.
    pub subtasks: Vec<SubtaskView>,
}

/// Per-subtask values: times in ms per second, rates in records per second.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubtaskView {
    /// The subtask index.
    pub index: usize,
    /// Busy ms per second.
    pub busy: Option<f64>,
    /// Backpressured ms per second.
    pub backpressured: Option<f64>,
    /// Idle ms per second.
    pub idle: Option<f64>,
    /// CPU ms per second (Sluice only).
    pub cpu: Option<f64>,
    /// Records in per second.
    pub records_in: Option<f64>,
    /// Records out per second.
    pub records_out: Option<f64>,
    /// The TaskManager the subtask runs on (Flink's `endpoint`, `host:dataPort`), when known.
    pub endpoint: Option<String>,
}

/// Flink's backpressure levels (docs/src/reference/flink-formats.md#backpressure-levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackpressureLevel {
    /// Backpressured at most 10% of the time.
    Ok,
    /// Up to half of the time.
    Low,
    /// More than half of the time.
    High,
}

impl BackpressureLevel {
    /// From a ratio (backpressured ms per second / 1000): ≤ 0.10 ok, ≤ 0.5 low, else high.
    pub fn of_ratio(ratio: f64) -> BackpressureLevel {
        if ratio <= 0.10 {
            BackpressureLevel::Ok
        } else if ratio <= 0.5 {
            BackpressureLevel::Low
        } else {
            BackpressureLevel::High
        }
    }

    /// Flink's name of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            BackpressureLevel::Ok => "ok",
            BackpressureLevel::Low => "low",
            BackpressureLevel::High => "high",
        }
    }
}

impl VertexView {
    /// Max over subtasks (a subtask without the metric counts as 0, as in Flink's backpressure
    /// handler); the vertex aggregate when no subtask reported it at all.
    fn max_of(
        &self,
        get: impl Fn(&SubtaskView) -> Option<f64>,
        aggregate: Option<f64>,
    ) -> Option<f64> {
        let values: Vec<f64> = self.subtasks.iter().filter_map(&get).collect();
        if values.is_empty() {
            aggregate
        } else {
            Some(values.into_iter().fold(0.0, f64::max))
        }
    }

    /// Highest backpressured time of any subtask, ms/s.
    pub fn max_backpressured(&self) -> Option<f64> {
        self.max_of(|s| s.backpressured, self.backpressured_max)
    }

    /// Highest busy time of any subtask, ms/s.
    pub fn max_busy(&self) -> Option<f64> {
        self.max_of(|s| s.busy, self.busy_max)
    }

    /// Vertex level = level of the max subtask ratio
    /// (docs/src/reference/flink-formats.md#backpressure-levels).
    pub fn backpressure_level(&self) -> Option<BackpressureLevel> {
        self.max_backpressured()
            .map(|ms| BackpressureLevel::of_ratio(ms / 1000.0))
    }
}

// ---------------------------------------------------------------------------------------------
// JSON readers (pure)
// ---------------------------------------------------------------------------------------------

/// The header fields and the vertices (no metrics yet) of `/jobs/:id`.
pub fn read_job(job: &Value) -> Result<(JobSummary, Vec<VertexView>), ClientError> {
    let job: JobDetails = shape(job);
    let vertices = job.vertices.ok_or_else(|| ClientError::Malformed {
        url: "/jobs/:jid".into(),
        what: "the job details have no `vertices` list".into(),
    })?;
    let summary = JobSummary {
        id: job.jid,
        name: job.name,
        state: job.state,
        duration_ms: job.duration.filter(|d| *d >= 0.0),
    };
    let vertices = vertices
        .into_iter()
        .map(|v| VertexView {
            parallelism: v
                .parallelism
                .as_ref()
                .and_then(|p| p.number())
                .filter(|p| *p >= 0.0)
                .map_or(0, |p| p as usize),
            id: v.id,
            name: v.name,
            ..VertexView::default()
        })
        .collect();
    Ok((summary, vertices))
}

/// One aggregated metric: `{"id", "min", "max", "avg", "sum", "skew"}` (absent ones are `None`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Aggregate {
    /// The smallest value.
    pub min: Option<f64>,
    /// The largest value.
    pub max: Option<f64>,
    /// The mean.
    pub avg: Option<f64>,
    /// The sum.
    pub sum: Option<f64>,
    /// Flink's `skew` aggregate, in %.
    pub skew: Option<f64>,
}

/// `/jobs/:id/vertices/:vid/subtasks/metrics?get=…&agg=…` by metric id.
pub fn read_aggregates(v: &Value) -> HashMap<String, Aggregate> {
    let mut out = HashMap::new();
    for m in shapes::<AggregatedMetric>(v) {
        out.insert(
            m.id,
            Aggregate {
                min: m.min,
                max: m.max,
                avg: m.avg,
                sum: m.sum,
                skew: m.skew,
            },
        );
    }
    out
}

/// `…/subtasks/:n/metrics?get=…` by metric id (non-finite values left out).
pub use sluice_doctor::flink_rest::read_metric_values as read_values;

/// Puts a vertex's aggregates into its view.
pub fn apply_aggregates(v: &mut VertexView, agg: &HashMap<String, Aggregate>) {
    let get = |id: &str| agg.get(id).copied().unwrap_or_default();
    v.data_skew = get(RECORDS_IN).skew;
    v.records_in = get(RECORDS_IN).sum;
    v.records_out = get(RECORDS_OUT).sum;
    v.busy_max = get(BUSY).max;
    v.backpressured_max = get(BACKPRESSURED).max;
}

/// A subtask's view from its metric values.
pub fn subtask_view(index: usize, values: &HashMap<String, f64>) -> SubtaskView {
    let get = |id: &str| values.get(id).copied();
    SubtaskView {
        index,
        busy: get(BUSY),
        backpressured: get(BACKPRESSURED),
        idle: get(IDLE),
        cpu: get(CPU),
        records_in: get(RECORDS_IN),
        records_out: get(RECORDS_OUT),
        endpoint: None,
    }
}

/// Each subtask's `endpoint` in a vertex's answer (`/jobs/:jid/vertices/:vid`), by index.
pub fn subtask_endpoints(vertex: &Value) -> Vec<Option<String>> {
    let vertex: VertexDetails = shape(vertex);
    vertex.subtasks.into_iter().map(|s| s.endpoint).collect()
}

/// The metric id of a source vertex's lag (`Source__clicks.pendingRecords`): its first chained
/// operator is the source. `None` for other vertices.
pub fn pending_records_id(vertex_name: &str) -> Option<String> {
    let first = vertex_name.split(" -> ").next()?;
    first.starts_with("Source: ").then(|| {
        format!(
            "{}.pendingRecords",
            sluice_doctor::flink_rest::sanitize_operator_name(first)
        )
    })
}

/// Reads one frame's data through `source`: the job overview (the job is `job`, else the first
/// RUNNING one, else the one started last), the job, and per vertex the aggregated and
/// per-subtask metrics, the source lag and where each subtask runs (those three may be missing:
/// not every server has them).
pub fn fetch(source: &dyn RestSource, job: Option<&str>) -> Result<Model, DoctorError> {
    let base = source.describe();
    let get = |path: &str| {
        source
            .get(path)?
            .ok_or_else(|| DoctorError::Fetch(format!("{base}{path} answered 404 Not Found")))
    };
    let jid = pick_job(&get("/jobs/overview")?, job, &base)?;
    let (summary, mut vertices) = read_job(&get(&format!("/jobs/{jid}"))?)?;
    for v in &mut vertices {
        let vpath = format!("/jobs/{jid}/vertices/{}", v.id);
        let agg = get(&format!(
            "{vpath}/subtasks/metrics?get={VERTEX_METRICS}&agg={AGGREGATIONS}"
        ))?;
        apply_aggregates(v, &read_aggregates(&agg));
        if let Some(id) = pending_records_id(&v.name) {
            // Not every source has it: a refused or empty answer leaves the lag unknown.
            if let Ok(a) = get(&format!("{vpath}/subtasks/metrics?get={id}&agg=sum")) {
                v.pending_records = read_aggregates(&a).get(&id).and_then(|x| x.sum);
            }
        }
        // Where each subtask runs (a job over several TaskManagers: processes of a split
        // Sluice job, or a Flink cluster's); a failed answer leaves it unknown.
        let endpoints = get(&vpath)
            .map(|d| subtask_endpoints(&d))
            .unwrap_or_default();
        for n in 0..v.parallelism {
            let values = get(&format!(
                "{vpath}/subtasks/{n}/metrics?get={SUBTASK_METRICS}"
            ))?;
            let mut view = subtask_view(n, &read_metric_values(&values));
            view.endpoint = endpoints.get(n).cloned().flatten();
            v.subtasks.push(view);
        }
    }
    Ok(Model {
        url: base,
        job: summary,
        vertices,
        footer: None,
    })
}

/// The model [`fetch`] reads from the Flink 2.3 answers captured in
/// `tests/fixtures/flink/flink-rest/skew/` (a skew job: a source and a sum-per-key vertex, two
/// subtasks each), shown as served at Flink's default address: what `sluice top`'s tests render.
#[cfg(any(test, feature = "test-fixtures"))]
pub fn captured_flink_model() -> Result<Model, DoctorError> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/flink/flink-rest/skew"
    );
    let m = fetch(&crate::DirSource::open(std::path::Path::new(dir))?, None)?;
    Ok(Model {
        url: "http://127.0.0.1:8081".into(),
        ..m
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_doctor::flink_rest::number;
    use sluice_doctor::flink_rest::read_metric_values as read_values;

    #[test]
    fn reads_flinks_answers() {
        let m = captured_flink_model().unwrap();
        assert_eq!(m.job.id, "3ae16f48a563821c4f57820703ba6b0f");
        assert_eq!(m.job.name, "RestScenario-skew");
        assert_eq!(m.job.state, "RUNNING");
        assert_eq!(m.job.duration_ms, Some(27767.0));
        let [src, sink] = &m.vertices[..] else {
            panic!("two vertices")
        };
        assert_eq!(
            (src.name.as_str(), src.parallelism),
            ("Source: generator -> map", 2)
        );
        assert_eq!(sink.id, "90bea66de1c231edf33913ecd54406c1");
        // Aggregates: the three time metrics only, numbers not strings.
        assert_eq!(sink.busy_max, Some(999.0));
        assert_eq!(src.backpressured_max, Some(800.0));
        assert_eq!(
            (sink.data_skew, sink.records_in, sink.records_out),
            (None, None, None)
        );
        // Per-subtask values are strings in Flink.
        let hot = &sink.subtasks[1];
        assert_eq!(hot.busy, Some(999.0));
        assert_eq!(hot.idle, Some(1.0));
        assert_eq!(hot.records_in, Some(204619.5));
        assert_eq!(hot.cpu, None);
        assert_eq!(src.backpressure_level(), Some(BackpressureLevel::High));
        assert_eq!(sink.backpressure_level(), Some(BackpressureLevel::Ok));
    }

    #[test]
    fn numbers_from_flink_values() {
        let n = |s: &str| number(&serde_json::from_str(s).unwrap());
        assert_eq!(n(r#""999.0""#), Some(999.0));
        assert_eq!(n(r#"" 12 ""#), Some(12.0));
        assert_eq!(n("69.46"), Some(69.46));
        assert_eq!(n(r#""NaN""#), None);
        assert_eq!(n(r#""Infinity""#), None);
        assert_eq!(n(r#""false""#), None);
        assert_eq!(n("null"), None);
        let values = read_values(
            &serde_json::from_str(
                r#"[{"id":"busyTimeMsPerSecond","value":"NaN"},{"id":"idleTimeMsPerSecond","value":"5"}]"#,
            )
            .unwrap(),
        );
        let s = subtask_view(0, &values);
        assert_eq!((s.busy, s.idle), (None, Some(5.0)));
    }

    #[test]
    fn backpressure_levels_follow_flinks_thresholds() {
        use BackpressureLevel::*;
        for (ratio, level) in [
            (0.0, Ok),
            (0.10, Ok),
            (0.1001, Low),
            (0.5, Low),
            (0.501, High),
            (1.0, High),
        ] {
            assert_eq!(BackpressureLevel::of_ratio(ratio), level, "{ratio}");
        }
        // The vertex level comes from the max subtask; a subtask without the metric counts as 0.
        let v = VertexView {
            subtasks: vec![
                SubtaskView {
                    backpressured: Some(40.0),
                    ..Default::default()
                },
                SubtaskView {
                    backpressured: None,
                    ..Default::default()
                },
                SubtaskView {
                    backpressured: Some(300.0),
                    ..Default::default()
                },
            ],
            backpressured_max: Some(900.0),
            ..Default::default()
        };
        assert_eq!(v.backpressure_level(), Some(Low));
        // No subtask reported it: the aggregate max; nothing at all: unknown.
        let v = VertexView {
            backpressured_max: Some(900.0),
            ..Default::default()
        };
        assert_eq!(v.backpressure_level(), Some(High));
        assert_eq!(VertexView::default().backpressure_level(), None);
    }
}
