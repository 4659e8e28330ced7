//! `/metrics`: every job's task and operator metrics in the Prometheus text exposition format
//! 0.0.4. Names are Flink's metric names in snake case under `sluice_task_` / `sluice_operator_`
//! (`busyTimeMsPerSecond` → `sluice_task_busy_time_ms_per_second`); counters end in `_total`.

use std::fmt::Write as _;

use sluice_runtime::telemetry::data_skew_percent;

use crate::api::job_state;
use crate::metrics::{operator_snapshot, operators, JobData, Kind, OPERATOR_METRICS, TASK_METRICS};
use crate::registry::JobRegistry;

/// `busyTimeMsPerSecond` → `busy_time_ms_per_second`; `Shuffle.Netty.Input.Buffers.inPoolUsage`
/// → `shuffle_netty_input_buffers_in_pool_usage`.
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if matches!(prev, Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit()) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
        prev = Some(c);
    }
    out
}

/// The exposed name of a metric.
pub fn family_name(scope: &str, flink_name: &str, kind: Kind) -> String {
    let base = format!("sluice_{scope}_{}", snake_case(flink_name));
    match kind {
        Kind::Counter => format!("{base}_total"),
        Kind::Gauge => base,
    }
}

fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{k}=\"{}\"", escape_label(v));
    }
    s.push('}');
    s
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Renders the whole exposition.
pub fn render(registry: &JobRegistry) -> String {
    let monitors = registry.jobs();
    let jobs: Vec<JobData> = monitors.iter().map(|m| JobData::new(m)).collect();
    let mut out = String::new();

    header(
        &mut out,
        "sluice_job_info",
        "A registered job; the value is always 1, the state is a label",
        "gauge",
    );
    for d in &jobs {
        let m = d.monitor;
        let id = m.job_id.to_string();
        let _ = writeln!(
            out,
            "sluice_job_info{} 1",
            labels(&[
                ("job_id", &id),
                ("job_name", &m.graph.name),
                ("state", job_state(m))
            ])
        );
    }

    for metric in TASK_METRICS {
        let name = family_name("task", metric.name, metric.kind);
        let help = if metric.extra {
            format!("{} (Sluice metric {})", metric.help, metric.name)
        } else {
            format!("{} (Flink metric {})", metric.help, metric.name)
        };
        header(&mut out, &name, &help, metric.kind.as_str());
        for d in &jobs {
            let job_id = d.monitor.job_id.to_string();
            for v in &d.graph().vertices {
                let vertex_id = v.id.to_string();
                for i in 0..d.parallelism(v.index) {
                    let Some(s) = d.subtask(v.index, i) else {
                        continue;
                    };
                    let idx = i.to_string();
                    let _ = writeln!(
                        out,
                        "{name}{} {}",
                        labels(&[
                            ("job_id", &job_id),
                            ("job_name", &d.graph().name),
                            ("vertex_id", &vertex_id),
                            ("vertex_name", &v.name),
                            ("subtask", &idx),
                        ]),
                        (metric.get)(&s).to_prometheus()
                    );
                }
            }
        }
    }

    // Connector gauges (e.g. the Kafka sink's `pendingDeliveries`): one family per name, over
    // the subtasks that registered it.
    let mut connector: Vec<String> = Vec::new();
    for d in &jobs {
        for v in &d.graph().vertices {
            for i in 0..d.parallelism(v.index) {
                if let Some(s) = d.subtask(v.index, i) {
                    for (n, _) in s.live.connector_gauge_values() {
                        if !connector.contains(&n) {
                            connector.push(n);
                        }
                    }
                }
            }
        }
    }
    for gauge in &connector {
        let name = family_name("task", gauge, Kind::Gauge);
        let help = format!("A connector's gauge (Sluice metric {gauge})");
        header(&mut out, &name, &help, Kind::Gauge.as_str());
        for d in &jobs {
            let job_id = d.monitor.job_id.to_string();
            for v in &d.graph().vertices {
                let vertex_id = v.id.to_string();
                for i in 0..d.parallelism(v.index) {
                    let Some(s) = d.subtask(v.index, i) else {
                        continue;
                    };
                    let Some((_, value)) = s
                        .live
                        .connector_gauge_values()
                        .into_iter()
                        .find(|(n, _)| n == gauge)
                    else {
                        continue;
                    };
                    let idx = i.to_string();
                    let _ = writeln!(
                        out,
                        "{name}{} {value}",
                        labels(&[
                            ("job_id", &job_id),
                            ("job_name", &d.graph().name),
                            ("vertex_id", &vertex_id),
                            ("vertex_name", &v.name),
                            ("subtask", &idx),
                        ])
                    );
                }
            }
        }
    }

    for metric in OPERATOR_METRICS {
        let name = family_name("operator", metric.name, metric.kind);
        let help = if metric.extra {
            format!("{} (Sluice metric <operator>.{})", metric.help, metric.name)
        } else {
            format!("{} (Flink metric <operator>.{})", metric.help, metric.name)
        };
        header(&mut out, &name, &help, metric.kind.as_str());
        for d in &jobs {
            let job_id = d.monitor.job_id.to_string();
            for v in &d.graph().vertices {
                let vertex_id = v.id.to_string();
                let ops = operators(d.graph(), v.index);
                for i in 0..d.parallelism(v.index) {
                    let Some(s) = d.subtask(v.index, i) else {
                        continue;
                    };
                    let idx = i.to_string();
                    let gauges = s.live.gauges();
                    for (op, _) in &ops {
                        let snap = operator_snapshot(s.snap, op);
                        // An operator's own gauge of this name (a source's numRecordsIn) wins.
                        let value = match gauges
                            .iter()
                            .find(|g| g.operator == *op && g.name == metric.name)
                        {
                            Some(g) => g.get().to_string(),
                            None => (metric.get)(&snap).to_prometheus(),
                        };
                        let _ = writeln!(
                            out,
                            "{name}{} {}",
                            labels(&[
                                ("job_id", &job_id),
                                ("job_name", &d.graph().name),
                                ("vertex_id", &vertex_id),
                                ("vertex_name", &v.name),
                                ("subtask", &idx),
                                ("operator", op),
                            ]),
                            value
                        );
                    }
                }
            }
        }
    }

    write_operator_gauges(&mut out, &jobs);

    let name = "sluice_vertex_data_skew_percent";
    header(
        &mut out,
        name,
        "Data skew of a vertex: mean absolute deviation of numRecordsInPerSecond over its subtasks / mean, in percent, capped at 100 (Flink's skew aggregate)",
        "gauge",
    );
    for d in &jobs {
        let job_id = d.monitor.job_id.to_string();
        for v in &d.graph().vertices {
            let rates: Vec<f64> = (0..d.parallelism(v.index))
                .filter_map(|i| d.subtask(v.index, i))
                .map(|s| s.snap.records_in_per_second)
                .filter(|r| r.is_finite())
                .collect();
            let _ = writeln!(
                out,
                "{name}{} {}",
                labels(&[
                    ("job_id", &job_id),
                    ("job_name", &d.graph().name),
                    ("vertex_id", &v.id.to_string()),
                    ("vertex_name", &v.name),
                ]),
                data_skew_percent(&rates)
            );
        }
    }
    out
}

/// An operator gauge's family and its key-value labels: Flink's Prometheus reporter turns
/// key-value groups into labels, so `KafkaSourceReader.topic.T.partition.P.currentOffset` is
/// family `…kafka_source_reader_topic_partition_current_offset` with `topic="T"`,
/// `partition="P"`.
fn gauge_family(name: &str) -> (String, Vec<(&'static str, String)>) {
    let parts: Vec<&str> = name.split('.').collect();
    if parts.len() == 6 && parts[1] == "topic" && parts[3] == "partition" {
        let family = format!("{}.topic.partition.{}", parts[0], parts[5]);
        return (
            family,
            vec![
                ("topic", parts[2].to_string()),
                ("partition", parts[4].to_string()),
            ],
        );
    }
    (name.to_string(), Vec::new())
}

/// Operator gauges registered at run time (e.g. a Kafka source's FLIP-33 metrics), one family
/// per name, a sample per subtask.
fn write_operator_gauges(out: &mut String, jobs: &[JobData<'_>]) {
    // family -> (kind, help, samples)
    let mut families: Vec<(String, Kind, String, Vec<String>)> = Vec::new();
    for d in jobs {
        let job_id = d.monitor.job_id.to_string();
        for v in &d.graph().vertices {
            let vertex_id = v.id.to_string();
            for (i, t) in d
                .monitor
                .subtasks
                .get(v.index)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let idx = i.to_string();
                for g in t.gauges() {
                    if OPERATOR_METRICS.iter().any(|m| m.name == g.name) {
                        continue; // written with the catalogue's family
                    }
                    let kind = match g.kind {
                        sluice_runtime::GaugeKind::Counter => Kind::Counter,
                        sluice_runtime::GaugeKind::Gauge => Kind::Gauge,
                    };
                    let (fam, extra) = gauge_family(&g.name);
                    let name = family_name("operator", &fam, kind);
                    let mut pairs: Vec<(&str, &str)> = vec![
                        ("job_id", &job_id),
                        ("job_name", &d.graph().name),
                        ("vertex_id", &vertex_id),
                        ("vertex_name", &v.name),
                        ("subtask", &idx),
                        ("operator", &g.operator),
                    ];
                    for (k, val) in &extra {
                        pairs.push((k, val));
                    }
                    let sample = format!("{name}{} {}", labels(&pairs), g.get());
                    match families.iter_mut().find(|f| f.0 == name) {
                        Some(f) => f.3.push(sample),
                        None => families.push((
                            name,
                            kind,
                            format!("{} (Flink metric <operator>.{fam})", g.help),
                            vec![sample],
                        )),
                    }
                }
            }
        }
    }
    for (name, kind, help, samples) in families {
        header(out, &name, &help, kind.as_str());
        for s in samples {
            let _ = writeln!(out, "{s}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_snake_case() {
        assert_eq!(snake_case("busyTimeMsPerSecond"), "busy_time_ms_per_second");
        assert_eq!(snake_case("isBackPressured"), "is_back_pressured");
        assert_eq!(
            snake_case("Shuffle.Netty.Input.Buffers.inPoolUsage"),
            "shuffle_netty_input_buffers_in_pool_usage"
        );
        assert_eq!(
            family_name("task", "numRecordsIn", Kind::Counter),
            "sluice_task_num_records_in_total"
        );
        assert_eq!(
            family_name("task", "busyTimeMsPerSecond", Kind::Gauge),
            "sluice_task_busy_time_ms_per_second"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(labels(&[("a", "x\"y\\z\nw")]), "{a=\"x\\\"y\\\\z\\nw\"}");
    }
}
