//! `sluice profile` against Flink 2.3's own answers: a small HTTP server replays the captured
//! REST answers of the skew job (`tests/fixtures/flink/flink-rest/skew/`), the flame graph first
//! `{"endTimestamp":-3}` and then the tree, as Flink does; the command waits out the sampling
//! and writes folded stacks and an SVG.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const SKEW: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-rest/skew"
);

fn file(name: &str) -> String {
    std::fs::read_to_string(format!("{SKEW}/{name}")).unwrap()
}

/// Serves the capture on a free port; returns its URL and how many flame graph requests came.
fn flink_replay() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let flame_calls = Arc::new(AtomicUsize::new(0));
    let calls = flame_calls.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // Drain the head.
            let mut h = String::new();
            while reader.read_line(&mut h).is_ok() && h != "\r\n" && !h.is_empty() {
                h.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, body) = if path == "/jobs/overview" {
                (200, file("jobs-overview.json"))
            } else if path == "/jobs/3ae16f48a563821c4f57820703ba6b0f" {
                (200, file("job.json"))
            } else if path.starts_with(
                "/jobs/3ae16f48a563821c4f57820703ba6b0f/vertices/90bea66de1c231edf33913ecd54406c1/flamegraph",
            ) {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                let f = if n == 0 { "call1" } else { "call2" };
                (200, file(&format!("v1-sum-per-key-counting-sink-writer-flamegraph-{f}.json")))
            } else {
                (404, r#"{"errors":["Not found."]}"#.to_string())
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, flame_calls)
}

#[test]
fn profile_waits_out_flinks_sampling_and_writes_folded_stacks_and_svg() {
    let (url, calls) = flink_replay();
    let dir = std::env::temp_dir().join(format!("sluice-profile-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (folded, svg) = (dir.join("sum.folded"), dir.join("sum.svg"));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "profile",
            "--url",
            &url,
            "--vertex",
            "sum-per-key",
            "--seconds",
            "20",
        ])
        .arg("--folded")
        .arg(&folded)
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        calls.load(Ordering::SeqCst) >= 2,
        "the -3 answer was asked again"
    );
    let f = std::fs::read_to_string(&folded).unwrap();
    assert!(
        f.lines()
            .any(|l| l.ends_with("bench.Common$SumReduce.reduce:190;bench.Common.work:153 91")),
        "{f}"
    );
    let total: u64 = f
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 200);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.contains("<svg") && s.contains("bench.Common.work"),
        "{}",
        &s[..s.len().min(300)]
    );
    assert!(err.contains("200 samples"), "{err}");

    // A vertex that is not there is named among the job's vertices.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["profile", "--url", &url, "--vertex", "nope", "--folded"])
        .arg(dir.join("x"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no vertex named like `nope`") && err.contains("Source: generator -> map"),
        "{err}"
    );
    // An output is required.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["profile", "--url", &url, "--vertex", "sum"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
