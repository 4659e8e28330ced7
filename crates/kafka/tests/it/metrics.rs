//! The source's FLIP-33 metrics on the Flink-compatible REST API and on Prometheus.

use crate::common;

use std::time::{Duration, Instant};

use sluice_datastream::StreamEnv;
use sluice_kafka::source::{KafkaSource, Lines};
use sluice_rest::{dispatch, JobRegistry};

fn get(reg: &JobRegistry, path: &str, query: &[(&str, &str)]) -> String {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let q: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let r = dispatch(reg, std::path::Path::new("/tmp"), "GET", &segments, &q, b"");
    assert_eq!(
        r.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    String::from_utf8(r.body).unwrap()
}

#[test]
fn source_metrics_appear_on_rest_and_prometheus_with_flink_names() {
    let b = common::broker();
    common::topic(&b, "m", 2);
    for p in 0..2 {
        let v: Vec<String> = (0..250).map(|i| format!("{p}-{i}")).collect();
        common::produce(&b, "m", p, &v);
    }
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let src = KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["m"])
        .build(Lines)
        .unwrap();
    let _out = src.add_to(&env, "m").map(|l: String| l.len()).discard();
    let h = env.launch().unwrap();
    let m = h.monitor();
    let reg = JobRegistry::new();
    reg.register(m.clone());
    let jid = m.job_id.to_string();
    let vid = m.graph.vertices[0].id.to_string();
    let path = format!("jobs/{jid}/vertices/{vid}/metrics");
    // "m".hashCode() = 109, * 31 = 3379, % 2 = 1: partition 0 on subtask 1, partition 1 on 0.
    let wanted = "1.Source__m.numRecordsIn,1.Source__m.pendingRecords,1.Source__m.KafkaSourceReader.topic.m.partition.0.currentOffset,0.Source__m.sourceIdleTime";
    let deadline = Instant::now() + Duration::from_secs(60);
    let body = loop {
        let body = get(&reg, &path, &[("get", wanted)]);
        if body.contains(r#"{"id":"1.Source__m.numRecordsIn","value":"250"}"#)
            || Instant::now() > deadline
        {
            break body;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        body.contains(r#"{"id":"1.Source__m.numRecordsIn","value":"250"}"#),
        "{body}"
    );
    assert!(
        body.contains(r#"{"id":"1.Source__m.pendingRecords","value":"0"}"#),
        "{body}"
    );
    assert!(
        body.contains(r#"{"id":"1.Source__m.KafkaSourceReader.topic.m.partition.0.currentOffset","value":"249"}"#),
        "{body}"
    );
    assert!(body.contains("0.Source__m.sourceIdleTime"), "{body}");
    // The metric list names them too.
    let list = get(&reg, &path, &[]);
    for n in [
        "pendingRecords",
        "currentFetchEventTimeLag",
        "currentEmitEventTimeLag",
        "sourceIdleTime",
        "numBytesIn",
    ] {
        assert!(
            list.contains(&format!("\"0.Source__m.{n}\"")),
            "{n}: {list}"
        );
    }
    let prom = get(&reg, "metrics", &[]);
    assert!(
        prom.contains("# TYPE sluice_operator_pending_records gauge"),
        "{prom}"
    );
    assert!(
        prom.lines().any(|l| l
            .starts_with("sluice_operator_kafka_source_reader_topic_partition_current_offset{")
            && l.contains(r#"topic="m""#)
            && l.contains(r#"partition="0""#)
            && l.ends_with(" 249")),
        "{prom}"
    );
    let series: Vec<&str> = prom
        .lines()
        .filter(|l| {
            l.starts_with("sluice_operator_num_records_in_total{")
                && l.contains(r#"operator="Source: m""#)
        })
        .collect();
    assert_eq!(
        series.len(),
        2,
        "one numRecordsIn series per source subtask: {series:?}"
    );
    assert!(series.iter().all(|l| l.ends_with(" 250")), "{series:?}");
    h.cancel();
    let _ = h.wait();
}

#[test]
fn a_throttled_source_reports_growing_then_draining_lag() {
    let b = common::broker();
    common::topic(&b, "slow", 1);
    let v: Vec<String> = (0..8_000).map(|i| i.to_string()).collect();
    common::produce(&b, "slow", 0, &v);
    let env = StreamEnv::new();
    env.set_parallelism(1);
    KafkaSource::builder()
        .bootstrap_servers(b.bootstrap())
        .topics(["slow"])
        .build(Lines)
        .unwrap()
        .add_to(&env, "slow")
        .map(|l: String| {
            std::thread::sleep(Duration::from_micros(500));
            l
        })
        .discard();
    let h = env.launch().unwrap();
    let m = h.monitor();
    let lag = || {
        m.subtasks[0][0]
            .gauges()
            .iter()
            .find(|g| g.name == "pendingRecords")
            .map(|g| g.get())
    };
    // While the map holds the source back (~4 s) the lag is reported (> 0; from the broker's
    // high watermark in librdkafka's statistics, every second), then drains to 0.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut max_seen = 0;
    while Instant::now() < deadline {
        let l = lag().unwrap_or(-1);
        max_seen = max_seen.max(l);
        if max_seen > 0 && l == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    h.cancel();
    let _ = h.wait();
    assert!(
        max_seen > 100,
        "lag reported while throttled: max {max_seen}"
    );
    assert_eq!(lag(), Some(0), "lag drained once everything was read");
}
