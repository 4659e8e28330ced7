//! The layout of saved REST answers (`sluice doctor --from-dir`/`--save`, the captures under
//! `tests/fixtures/flink/flink-rest/`): which file holds the answer to which path.

use std::collections::HashMap;

use serde_json::Value;

/// A vertex's file-name stem: `v<position>-<name slug>` (`v1-sum-per-key-counting-sink-writer`).
pub fn vertex_stem(position: usize, name: &str) -> String {
    format!("v{position}-{}", slug(name))
}

/// `name` in lower-case letters, digits and single `-`.
fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-').to_string()
}

/// Vertex id → file stem, from `/jobs/:id` (positions in its `vertices` list).
pub fn stems_of(job: &Value) -> HashMap<String, String> {
    job["vertices"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            Some((
                v["id"].as_str()?.to_string(),
                vertex_stem(i, v["name"].as_str().unwrap_or("")),
            ))
        })
        .collect()
}

/// The file holding the answer to `path` in the saved layout; `None` for paths it has no file for.
pub fn file_for(path: &str, stems: &HashMap<String, String>) -> Option<String> {
    let route = path.split('?').next().unwrap_or(path);
    let seg: Vec<&str> = route.trim_matches('/').split('/').collect();
    let stem = |vid: &str| stems.get(vid).cloned();
    Some(match seg.as_slice() {
        ["jobs", "overview"] => "jobs-overview.json".to_string(),
        ["jobs", _] => "job.json".to_string(),
        ["jobs", _, "vertices", vid] => format!("{}.json", stem(vid)?),
        ["jobs", _, "vertices", vid, "subtasks", "metrics"] => {
            format!("{}-subtasks-metrics-aggregated.json", stem(vid)?)
        }
        ["jobs", _, "vertices", vid, "subtasks", n, "metrics"] => {
            n.parse::<usize>().ok()?;
            format!("{}-subtask{n}-metrics.json", stem(vid)?)
        }
        ["jobs", _, "vertices", vid, "hot-keys"] => format!("{}-hot-keys.json", stem(vid)?),
        ["jobs", _, "vertices", vid, "flamegraph"] => {
            // `…-flamegraph-on_cpu.json`, `…-flamegraph-off_cpu-subtask1.json`: one per query.
            let query = path.split_once('?').map_or("", |(_, q)| q);
            let param = |k: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            };
            let ty = param("type").unwrap_or("full");
            if !["full", "on_cpu", "off_cpu"].contains(&ty) {
                return None;
            }
            match param("subtaskindex") {
                Some(n) => {
                    n.parse::<usize>().ok()?;
                    format!("{}-flamegraph-{ty}-subtask{n}.json", stem(vid)?)
                }
                None => format!("{}-flamegraph-{ty}.json", stem(vid)?),
            }
        }
        ["jobs", _, "checkpoints"] => "job-checkpoints.json".to_string(),
        ["jobs", _, "checkpoints", "config"] => "job-checkpoints-config.json".to_string(),
        ["jobs", _, "config"] => "job-config.json".to_string(),
        ["jobs", _, "jobmanager", "config"] => "job-jobmanager-config.json".to_string(),
        ["jobs", _, "exceptions"] => "job-exceptions.json".to_string(),
        ["taskmanagers"] => "taskmanagers.json".to_string(),
        // A TaskManager id may hold `:` and `.` (`127.0.0.1:40123-9f3e2a`): slugged.
        ["taskmanagers", tm, "metrics"] => format!("taskmanager-{}-metrics.json", slug(tm)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/flink/flink-rest/skew/"
    );

    fn fixture(name: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}{name}")).unwrap())
            .unwrap()
    }

    #[test]
    fn file_names_follow_the_capture() {
        assert_eq!(
            vertex_stem(1, "sum-per-key -> counting-sink: Writer"),
            "v1-sum-per-key-counting-sink-writer"
        );
        assert_eq!(
            vertex_stem(0, "Source: generator -> map"),
            "v0-source-generator-map"
        );
        let stems = stems_of(&fixture("job.json"));
        let vid = "90bea66de1c231edf33913ecd54406c1";
        let f = |p: &str| file_for(p, &stems);
        assert_eq!(f("/jobs/overview").as_deref(), Some("jobs-overview.json"));
        assert_eq!(f("/jobs/abc").as_deref(), Some("job.json"));
        assert_eq!(
            f(&format!(
                "/jobs/abc/vertices/{vid}/subtasks/1/metrics?get=a,b"
            ))
            .as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-subtask1-metrics.json")
        );
        assert_eq!(
            f(&format!("/jobs/abc/vertices/{vid}/subtasks/metrics?get=a")).as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-subtasks-metrics-aggregated.json")
        );
        assert_eq!(f("/jobs/abc/vertices/unknown/subtasks/1/metrics"), None);
        assert_eq!(f("/taskmanagers").as_deref(), Some("taskmanagers.json"));
        assert_eq!(
            f("/taskmanagers/127.0.0.1:40123-9f3e2a/metrics?get=a").as_deref(),
            Some("taskmanager-127-0-0-1-40123-9f3e2a-metrics.json")
        );
        assert_eq!(
            f("/jobs/abc/exceptions").as_deref(),
            Some("job-exceptions.json")
        );
        assert_eq!(f("/taskmanagers/x/logs"), None);
        assert_eq!(
            f(&format!(
                "/jobs/abc/vertices/{vid}/flamegraph?type=off_cpu&subtaskindex=1"
            ))
            .as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-flamegraph-off_cpu-subtask1.json")
        );
        assert_eq!(
            f(&format!("/jobs/abc/vertices/{vid}/flamegraph")).as_deref(),
            Some("v1-sum-per-key-counting-sink-writer-flamegraph-full.json")
        );
        assert_eq!(
            f(&format!("/jobs/abc/vertices/{vid}/flamegraph?type=x")),
            None
        );
        // Every file the doctor reads from the capture exists.
        for n in 0..2 {
            let name = f(&format!("/jobs/abc/vertices/{vid}/subtasks/{n}/metrics")).unwrap();
            assert!(std::path::Path::new(FIXTURES).join(name).exists());
        }
    }

    #[test]
    fn the_directory_source_reads_the_capture() {
        let src = crate::DirSource::open(std::path::Path::new(FIXTURES)).unwrap();
        let opts = sluice_doctor::ExamineOptions {
            window: 10.0,
            flame_graphs: false,
        };
        let probe = sluice_doctor::RestProbe::new(&src);
        let r = sluice_doctor::examine(&probe, None, &opts).unwrap();
        assert_eq!(r.samples, 1, "a directory is one snapshot");
        assert_eq!(r.job_name, "RestScenario-skew");
        assert_eq!(r.diagnosis.cause.name(), "key-skew");
    }
}
