//! The shapes against Flink 2.3's captured answers: full types write back what they read
//! (field names and order are Flink's), partial ones read what their readers need, and odd
//! values never fail a read.

use sluice_rest_api::*;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../tests/fixtures/flink/flink-rest/skew/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn full_shapes_write_back_flinks_answers() {
    let raw = fixture("jobs-overview.json");
    let v: JobsOverview = serde_json::from_str(&raw).unwrap();
    assert_eq!(serde_json::to_string(&v).unwrap(), raw.trim());
    let raw = fixture("overview.json");
    let v: ClusterOverview = serde_json::from_str(&raw).unwrap();
    let back: serde_json::Value = serde_json::to_value(&v).unwrap();
    let orig: serde_json::Value = serde_json::from_str(&raw).unwrap();
    for (k, val) in back.as_object().unwrap() {
        assert_eq!(&orig[k], val, "{k}");
    }
}

#[test]
fn partial_shapes_read_flinks_answers() {
    let job: JobDetails = serde_json::from_str(&fixture("job.json")).unwrap();
    let vertices = job.vertices.unwrap();
    assert!(!vertices.is_empty());
    assert!(vertices[0].parallelism.as_ref().unwrap().number().unwrap() >= 1.0);
    assert_eq!(job.plan.nodes.len(), vertices.len());
    let stats: CheckpointingStatistics =
        serde_json::from_str(&fixture("job-checkpoints.json")).unwrap();
    assert!(stats.counts.completed > 0);
    let config: CheckpointConfigInfo =
        serde_json::from_str(&fixture("job-checkpoints-config.json")).unwrap();
    assert!(config.interval.is_some());
    let values: Vec<MetricValue> = serde_json::from_str(&fixture(
        "v0-source-generator-map-subtask0-metrics-all-values.json",
    ))
    .unwrap();
    assert!(values.iter().any(|m| m.number().is_some()));
    let agg: Vec<AggregatedMetric> = serde_json::from_str(&fixture(
        "v0-source-generator-map-subtasks-metrics-aggregated.json",
    ))
    .unwrap();
    assert!(agg.iter().any(|m| m.max.is_some()));
}

#[test]
fn odd_values_read_leniently() {
    let v: JobsOverview = serde_json::from_str(
        r#"{"jobs":[3,{"jid":7,"state":null,"start-time":"12","tasks":[]}],"extra":{"a":[1]}}"#,
    )
    .unwrap();
    let jobs = v.jobs.unwrap();
    assert_eq!(jobs[0], JobOverview::default());
    assert_eq!((jobs[1].jid.as_str(), jobs[1].state.as_str()), ("7", ""));
    assert_eq!(jobs[1].start_time, Some(12));
    let none: JobsOverview = serde_json::from_str(r#"{"jobs":{}}"#).unwrap();
    assert!(none.jobs.is_none());
    let m: MetricValue = serde_json::from_str(r#"{"id":"x","value":"NaN"}"#).unwrap();
    assert_eq!(m.number(), None);
    let m: MetricValue = serde_json::from_str(r#"{"id":"x","value":" 12.5 "}"#).unwrap();
    assert_eq!(m.number(), Some(12.5));
    let e: ErrorBody = serde_json::from_str(r#"{"errors":["a",1]}"#).unwrap();
    assert_eq!(e.errors, ["a", "1"]);
}

#[test]
fn schemas_are_generated_for_every_shape() {
    let names: Vec<String> = component_schemas().into_iter().map(|(n, _)| n).collect();
    for n in [
        "ErrorBody",
        "ClusterOverview",
        "JobsOverview",
        "JobOverview",
        "TaskCounts",
        "ApplicationsOverview",
        "ApplicationOverview",
        "ApplicationDetails",
        "ApplicationExceptions",
        "ApplicationException",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
    let all = serde_json::to_value(
        component_schemas()
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
    )
    .unwrap();
    let overview = &all["ClusterOverview"]["properties"];
    assert_eq!(overview["slots-total"]["type"], "integer");
    assert_eq!(overview["flink-commit"]["type"], "string");
}

fn application_fixture(name: &str) -> String {
    let path = format!(
        "{}/../../tests/fixtures/flink/flink-rest/applications/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Flink 2.3's application answers read into the shapes and write back byte for byte (field
/// names and order are Flink's).
#[test]
fn application_shapes_write_back_flinks_answers() {
    let raw = application_fixture("applications-overview.json");
    let v: ApplicationsOverview = serde_json::from_str(&raw).unwrap();
    assert_eq!(v.applications.len(), 1);
    let app = &v.applications[0];
    assert_eq!(app.name, "SingleJobApplication(sluice-harness skew)");
    assert_eq!(
        (app.status.as_str(), app.jobs.get("RUNNING")),
        ("RUNNING", Some(&1))
    );
    assert_eq!(serde_json::to_string(&v).unwrap(), raw.trim());

    let raw = application_fixture("application.json");
    let v: ApplicationDetails = serde_json::from_str(&raw).unwrap();
    assert_eq!(v.jobs.len(), 1);
    assert_eq!(v.jobs[0].jid, v.id);
    assert_eq!(v.timestamps.get("CREATED"), Some(&1796473441482));
    assert_eq!(serde_json::to_string(&v).unwrap(), raw.trim());

    let raw = application_fixture("application-exceptions.json");
    let v: ApplicationExceptions = serde_json::from_str(&raw).unwrap();
    assert!(v.exception_history.entries.is_empty());
    assert_eq!(serde_json::to_string(&v).unwrap(), raw.trim());

    // An entry as Flink's `ApplicationExceptionInfo` writes it (jobId only when known).
    let entry = r#"{"exceptionHistory":{"entries":[{"exceptionName":"java.lang.RuntimeException","stacktrace":"boom","timestamp":12,"jobId":"a8ccd8a1db97ff68c1ed086d3076adde"},{"exceptionName":"x","stacktrace":"y","timestamp":13}]}}"#;
    let v: ApplicationExceptions = serde_json::from_str(entry).unwrap();
    assert_eq!(v.exception_history.entries[1].job_id, None);
    assert_eq!(serde_json::to_string(&v).unwrap(), entry);
}
