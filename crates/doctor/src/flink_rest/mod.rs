//! The adapter from Flink-compatible REST answers to the doctor's [`JobView`](crate::JobView): pure
//! functions over already-parsed JSON (`serde_json::Value`s), so a live sampler over HTTP, a
//! directory of saved answers and tests over captured fixtures build the same view. Each answer is
//! read through its shape in `sluice-rest-api` (the one definition the server writes with),
//! leniently: unknown fields are ignored and a field of an unexpected type reads as absent. Uses
//! Flink's paths and metric names, plus Sluice's extras when the server has them
//! (`cpuTimeMsPerSecond`, `cpuWaitTimeMsPerSecond`, `stateAccessTimeMsPerSecond`,
//! `serializationTimeMsPerSecond`, `deserializationTimeMsPerSecond`,
//! `<operator>.busyTimeMsPerSecond`, `/hot-keys`); what a server does not report stays `None`.
//!
//! The answers it reads: `/overview` ([`slot_cap`]), `/jobs/overview` ([`pick_job`]),
//! `/jobs/:id` with its `plan` ([`read_graph`]), `/jobs/:id/vertices/:vid/subtasks/:n/metrics`
//! ([`subtask_metrics_path`], [`subtask_sample`]), `/jobs/:id/vertices/:vid/hot-keys`
//! ([`hot_keys_path`], [`read_hot_keys`]), `/jobs/:id/checkpoints` and its `/config`
//! ([`checkpoint_stats`]); on a cluster with TaskManager processes, `/taskmanagers`, their
//! `/metrics` and `/jobs/:id/exceptions` ([`taskmanagers`]).

use std::collections::HashMap;

use serde_json::Value;
use sluice_rest_api::lenient::{self, Scalar};
use sluice_rest_api::{
    CheckpointConfigInfo, CheckpointingStatistics, ClusterOverview, ConfigEntry, HotKeys,
    JobConfig, JobDetails, JobVertex, JobsOverview, MetricValue,
};

use crate::{CheckpointStats, DoctorError, HotKey, SubtaskSample, VertexView};

/// Flink's subtask metric: ms per second spent processing records.
pub const BUSY: &str = "busyTimeMsPerSecond";
/// Flink's subtask metric: ms per second waiting for an output buffer (backpressure).
pub const BACKPRESSURED: &str = "backPressuredTimeMsPerSecond";
/// Flink's subtask metric: ms per second waiting for input.
pub const IDLE: &str = "idleTimeMsPerSecond";
/// Flink's subtask metric: records received per second.
pub const RECORDS_IN: &str = "numRecordsInPerSecond";
/// Flink's subtask metric: records emitted per second.
pub const RECORDS_OUT: &str = "numRecordsOutPerSecond";
/// Sluice's CPU time of the task thread, ms/s (absent on Flink).
pub const CPU: &str = "cpuTimeMsPerSecond";
/// Sluice's time runnable but waiting for a free CPU, ms/s (absent on Flink).
pub const CPU_WAIT: &str = "cpuWaitTimeMsPerSecond";
/// Sluice's time in keyed-state calls, ms/s (absent on Flink).
pub const STATE_ACCESS: &str = "stateAccessTimeMsPerSecond";
/// Sluice's time the network exchange spent encoding a subtask's buffers for other processes,
/// ms/s (absent on Flink, which serialises on the task thread: inside busy time).
pub const SERIALIZATION: &str = "serializationTimeMsPerSecond";
/// Sluice's time the network exchange spent decoding the buffers a subtask receives, ms/s.
pub const DESERIALIZATION: &str = "deserializationTimeMsPerSecond";
/// FLIP-33 source lag of a subtask: records in its splits not read yet.
pub const PENDING_RECORDS: &str = "pendingRecords";
/// Sluice's number of splits (Kafka partitions) assigned to a source subtask.
pub const ASSIGNED_SPLITS: &str = "assignedSplits";
/// FLIP-33 sink metric: time of the last write to the external system, ms.
pub const SEND_TIME: &str = "currentSendTime";
/// Sluice's lookup-join gauge: how often its keys repeat, per mille (`sluice-lookup`).
pub const KEY_REPEAT: &str = "lookupKeyRepeatPerMille";
/// Sluice's per-operator metric, as `<operator scope>.busyTimeMsPerSecond`.
pub const OPERATOR_BUSY: &str = "busyTimeMsPerSecond";

/// Per-subtask task metrics every view asks for (Flink's names; a server omits those it does
/// not have, which is how `cpuTimeMsPerSecond` shows up for Sluice and not for Flink).
pub const SUBTASK_METRICS: &str = "busyTimeMsPerSecond,backPressuredTimeMsPerSecond,\
idleTimeMsPerSecond,numRecordsInPerSecond,numRecordsOutPerSecond,cpuTimeMsPerSecond";

/// Flink's metric-scope character filter (`MetricQueryService`): space, `.`, `:` and `,`
/// become `_`; operator names are cut to 80 characters first (`TaskMetricGroup`). Operator
/// metrics are named `<this>.<metric>` by Sluice's REST server and by Flink.
pub fn sanitize_operator_name(name: &str) -> String {
    name.chars()
        .take(80)
        .map(|c| match c {
            ' ' | '.' | ':' | ',' => '_',
            c => c,
        })
        .collect()
}

/// A finite number from a JSON number or a numeric string (Flink sends metric values as strings,
/// NaN as `"NaN"`).
pub fn number(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    x.is_finite().then_some(x)
}

/// A field as text: strings as they are, null or absent as empty, anything else as JSON.
pub fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Chooses the job from `/jobs/overview`: `wanted` if given (case-insensitive), else the first
/// RUNNING job, else the one started last. `source` names where the answer came from, for the
/// error messages.
pub fn pick_job(
    overview: &Value,
    wanted: Option<&str>,
    source: &str,
) -> Result<String, DoctorError> {
    let overview: JobsOverview = shape(overview);
    let jobs = overview.jobs.ok_or_else(|| DoctorError::NoJobsList {
        server: source.to_string(),
    })?;
    if let Some(id) = wanted {
        let id = id.trim();
        if let Some(j) = jobs.iter().find(|j| j.jid.eq_ignore_ascii_case(id)) {
            return Ok(j.jid.clone());
        }
        let known = jobs
            .iter()
            .map(|j| format!("{} ({}, {})", j.jid, j.name, j.state))
            .collect();
        return Err(DoctorError::UnknownJob {
            id: id.to_string(),
            server: source.to_string(),
            known,
        });
    }
    if let Some(j) = jobs.iter().find(|j| j.state == "RUNNING") {
        return Ok(j.jid.clone());
    }
    jobs.iter()
        .max_by_key(|j| j.start_time.unwrap_or(i64::MIN))
        .map(|j| j.jid.clone())
        .ok_or_else(|| DoctorError::NoJobs {
            server: source.to_string(),
        })
}

/// An answer read as its shape: an object as `T` (leniently), anything else as `T::default()`.
pub fn shape<'a, T: serde::Deserialize<'a> + Default>(answer: &'a Value) -> T {
    lenient::object(answer).unwrap_or_default()
}

/// A list answer read as its elements' shape (not a list: empty).
pub fn shapes<'a, T: serde::Deserialize<'a> + Default>(answer: &'a Value) -> Vec<T> {
    lenient::list(answer).unwrap_or_default()
}

/// The job's vertices from `/jobs/:id` (and the `plan` inside it): ids, names, parallelism,
/// inputs with their ship strategies, chained operators (the name split at ` -> `), sources
/// (no inputs) and sinks (no consumers). No metrics yet.
pub fn read_graph(job: &Value) -> Result<Vec<VertexView>, DoctorError> {
    read_graph_of(&shape(job))
}

/// [`read_graph`] over the answer's shape.
pub fn read_graph_of(job: &JobDetails) -> Result<Vec<VertexView>, DoctorError> {
    let listed = job.vertices.as_ref().ok_or(DoctorError::NoVertices)?;
    let ids: Vec<&str> = listed.iter().map(|v| v.id.as_str()).collect();
    let mut vertices: Vec<VertexView> = listed
        .iter()
        .map(|v| {
            let parallelism = read_parallelism(v)?;
            let inputs = job
                .plan
                .nodes
                .iter()
                .find(|n| n.id == v.id)
                .map(|n| n.inputs.as_slice())
                .unwrap_or_default();
            let (mut upstream, mut ships) = (Vec::new(), Vec::new());
            for i in inputs {
                if let Some(u) = ids.iter().position(|id| *id == i.id) {
                    upstream.push(u);
                    ships.push(i.ship_strategy.clone());
                }
            }
            Ok(VertexView {
                options: read_options(v),
                is_source: upstream.is_empty(),
                operators: v.name.split(" -> ").map(str::to_string).collect(),
                parallelism,
                id: v.id.clone(),
                name: v.name.clone(),
                inputs: upstream,
                ship_strategies: ships,
                ..VertexView::default()
            })
        })
        .collect::<Result<_, DoctorError>>()?;
    for i in 0..vertices.len() {
        let consumed = vertices.iter().any(|d| d.inputs.contains(&i));
        vertices[i].is_sink = !consumed;
    }
    Ok(vertices)
}

/// Connector options of a vertex (Sluice's `connector-options` on `/jobs/:id` vertices:
/// `[{"operator", "key", "value"}]`; Flink has none).
fn read_options(v: &JobVertex) -> Vec<crate::ConnectorOption> {
    v.connector_options
        .iter()
        .map(|o| crate::ConnectorOption {
            operator: o.operator.clone(),
            key: o.key.clone(),
            value: o.value.clone(),
        })
        .filter(|o| !o.key.is_empty())
        .collect()
}

/// Flink's upper bound on a vertex's parallelism (`UPPER_BOUND_MAX_PARALLELISM`, 2^15): a
/// larger value in an answer is not a real job, and reading one sample per subtask of it would
/// not end.
pub const MAX_PARALLELISM: u64 = 1 << 15;

/// A vertex's `parallelism` (absent: 0, no subtasks to read); refused when it is not a whole
/// number in `0..=`[`MAX_PARALLELISM`].
fn read_parallelism(v: &JobVertex) -> Result<usize, DoctorError> {
    let Some(raw) = &v.parallelism else {
        return Ok(0);
    };
    match raw.number() {
        Some(p) if p >= 0.0 && p <= MAX_PARALLELISM as f64 && p.fract() == 0.0 => Ok(p as usize),
        _ => Err(DoctorError::BadParallelism {
            vertex: v.name.clone(),
            value: raw.to_string(),
        }),
    }
}

/// The metric names to ask a subtask of `vertex` for: the task metrics, Sluice's state-access
/// and CPU-wait time, each chained operator's busy time, and a source's lag and splits or a
/// sink's send time (connector metrics, as `<operator scope>.<metric>`, and unscoped).
pub fn subtask_metric_names(vertex: &VertexView) -> String {
    let mut names =
        format!("{SUBTASK_METRICS},{STATE_ACCESS},{CPU_WAIT},{SERIALIZATION},{DESERIALIZATION}");
    let connector: &[&str] = match (vertex.is_source, vertex.is_sink) {
        (true, _) => &[PENDING_RECORDS, ASSIGNED_SPLITS],
        (false, true) => &[SEND_TIME],
        _ => &[],
    };
    for m in connector {
        names.push_str(&format!(",{m}"));
        let op = if vertex.is_source {
            vertex.operators.first()
        } else {
            vertex.operators.last()
        };
        if let Some(op) = op {
            names.push_str(&format!(",{}.{m}", sanitize_operator_name(op)));
        }
    }
    for op in &vertex.operators {
        names.push_str(&format!(",{}.{OPERATOR_BUSY}", sanitize_operator_name(op)));
    }
    // A sink's own input rate (a chain from a source to a sink has no task-level one).
    if let (true, Some(last)) = (vertex.is_sink, vertex.operators.last()) {
        names.push_str(&format!(",{}.{RECORDS_IN}", sanitize_operator_name(last)));
    }
    // A lookup join (it declares `lookup.async`) reports how often its keys repeat.
    for o in vertex.options.iter().filter(|o| o.key == "lookup.async") {
        names.push_str(&format!(
            ",{}.{KEY_REPEAT}",
            sanitize_operator_name(&o.operator)
        ));
    }
    names
}

/// `/jobs/:jid/vertices/:vid/subtasks/:n/metrics?get=…` for [`subtask_sample`].
pub fn subtask_metrics_path(jid: &str, vertex: &VertexView, n: usize) -> String {
    format!(
        "/jobs/{jid}/vertices/{}/subtasks/{n}/metrics?get={}",
        vertex.id,
        subtask_metric_names(vertex)
    )
}

/// `…/subtasks/:n/metrics?get=…` (`[{"id","value"}]`, values are strings) by metric id; values
/// that are not finite numbers are left out.
pub fn read_metric_values(v: &Value) -> HashMap<String, f64> {
    metric_values_of(&shapes(v))
}

/// [`read_metric_values`] over the answer's shape.
pub fn metric_values_of(values: &[MetricValue]) -> HashMap<String, f64> {
    values
        .iter()
        .filter_map(|m| Some((m.id.clone(), m.number()?)))
        .collect()
}

/// One subtask's sample from its `…/subtasks/:n/metrics` answer; `operators` are the vertex's
/// chained operators, whose busy time is read when the server reports it.
pub fn subtask_sample(answer: &Value, operators: &[String]) -> SubtaskSample {
    sample_of_values(&read_metric_values(answer), operators)
}

/// [`subtask_sample`] over metric values already read.
pub fn sample_of_values(values: &HashMap<String, f64>, operators: &[String]) -> SubtaskSample {
    let get = |id: &str| values.get(id).copied();
    SubtaskSample {
        busy: get(BUSY),
        backpressured: get(BACKPRESSURED),
        idle: get(IDLE),
        records_in: get(RECORDS_IN),
        records_out: get(RECORDS_OUT),
        cpu: get(CPU),
        cpu_wait: get(CPU_WAIT),
        operator_busy: operators
            .iter()
            .filter_map(|op| {
                let id = format!("{}.{OPERATOR_BUSY}", sanitize_operator_name(op));
                Some((op.clone(), get(&id)?))
            })
            .collect(),
        state_access: get(STATE_ACCESS),
        serialization: get(SERIALIZATION),
        deserialization: get(DESERIALIZATION),
        pending_records: connector_metric(values, operators, PENDING_RECORDS),
        assigned_splits: connector_metric(values, operators, ASSIGNED_SPLITS),
        send_time: connector_metric(values, operators, SEND_TIME),
        last_records_in: operators
            .last()
            .and_then(|op| get(&format!("{}.{RECORDS_IN}", sanitize_operator_name(op)))),
        key_repeat: connector_metric(values, operators, KEY_REPEAT).map(|m| m / 1000.0),
        // The TaskManager's figures come from its own answers (`taskmanagers`).
        host: None,
    }
}

/// A connector metric: unscoped, else scoped by one of the chained operators.
fn connector_metric(
    values: &HashMap<String, f64>,
    operators: &[String],
    name: &str,
) -> Option<f64> {
    values.get(name).copied().or_else(|| {
        operators.iter().find_map(|op| {
            values
                .get(&format!("{}.{name}", sanitize_operator_name(op)))
                .copied()
        })
    })
}

/// `/jobs/:jid/vertices/:vid/hot-keys` (a Sluice extension; Flink answers 404).
pub fn hot_keys_path(jid: &str, vertex: &VertexView) -> String {
    format!("/jobs/{jid}/vertices/{}/hot-keys", vertex.id)
}

/// The heavy keys of a `/hot-keys` answer with their share of the vertex's records (keys that
/// are not strings are shown as JSON).
pub fn read_hot_keys(answer: &Value) -> Vec<HotKey> {
    let answer: HotKeys = shape(answer);
    answer
        .hot_keys
        .into_iter()
        .filter_map(|k| {
            let key = match k.key.unwrap_or(Scalar::Null) {
                Scalar::Str(s) => s,
                other => other.to_string(),
            };
            Some(HotKey {
                key,
                share: k.share_of_vertex?,
            })
        })
        .collect()
}

/// Checkpoint statistics from `/jobs/:id/checkpoints` and `/jobs/:id/checkpoints/config`
/// (fields a server leaves out count as 0 / false).
pub fn checkpoint_stats(stats: &Value, config: &Value) -> CheckpointStats {
    let stats: CheckpointingStatistics = shape(stats);
    let config: CheckpointConfigInfo = shape(config);
    let duration = &stats.summary.end_to_end_duration;
    CheckpointStats {
        unaligned: config.unaligned_checkpoints.unwrap_or(false),
        aligned_timeout_ms: config.aligned_checkpoint_timeout.unwrap_or(0),
        interval_ms: config.interval.unwrap_or(0),
        timeout_ms: config.timeout.unwrap_or(0),
        completed: stats.counts.completed,
        failed: stats.counts.failed,
        duration_p90_ms: duration.p90.unwrap_or(0.0),
        duration_max_ms: duration.max.unwrap_or(0.0),
        // Not in the checkpoint answers: the caller sets it from the job's configuration
        // (`buffer_debloat_enabled`).
        buffer_debloat: false,
    }
}

/// Flink's option that turns buffer debloating on.
pub const BUFFER_DEBLOAT_KEY: &str = "taskmanager.network.memory.buffer-debloat.enabled";

/// Whether the job debloats its buffers, from the job's configuration: Flink's
/// `/jobs/:id/jobmanager/config` (a list of `{key, value}`; the cluster's settings the job runs
/// with) when the server has it, else the `user-config` of `/jobs/:id/config` (where Sluice
/// lists it). `None` when neither names the option (Flink's default then applies: off).
pub fn buffer_debloat_enabled(
    job_config: Option<&Value>,
    jm_config: Option<&Value>,
) -> Option<bool> {
    let from_jm = jm_config.and_then(|c| {
        let entries: Vec<ConfigEntry> = shapes(c);
        entries
            .into_iter()
            .find(|e| e.key == BUFFER_DEBLOAT_KEY)?
            .value?
            .boolean()
    });
    from_jm.or_else(|| {
        let config: JobConfig = shape(job_config?);
        config
            .execution_config
            .user_config
            .get(BUFFER_DEBLOAT_KEY)?
            .boolean()
    })
}

/// The parallelism cap a fix may propose, from `/overview`: on a Flink cluster its slots (with
/// slot sharing a vertex can have one subtask per slot). Sluice's embedded cluster
/// (`flink-commit` `sluice-…`) has no fixed slots (a subtask is a thread), so no cap.
pub fn slot_cap(overview: &Value) -> Option<usize> {
    let overview: ClusterOverview = shape(overview);
    if overview.flink_commit.starts_with("sluice-") {
        return None;
    }
    (overview.slots_total > 0).then_some(overview.slots_total as usize)
}

pub mod taskmanagers;

#[cfg(test)]
mod tests;
