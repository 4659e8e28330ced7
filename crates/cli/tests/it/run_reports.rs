//! `sluice run` reports honestly what happened: restarts and injected failures that did not
//! fire are in the summary, a cancel after a savepoint is a cancel (not a stop-with-savepoint),
//! and a resume from a savepoint says that `--records` does not change what is read.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

#[test]
fn a_restart_is_reported_with_its_count() {
    let (ok, _, err) = run(&[
        "run",
        "skew",
        "--records",
        "200000",
        "--no-rest",
        "--no-progress",
        "--checkpoint-interval",
        "20",
        "--restart",
        "fixed-delay:3:10",
        "--inject-failure",
        "sum-per-key:0:5000",
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains("the job restarted 1 time after a failure"),
        "{err}"
    );
    assert!(!err.contains("did not fire"), "{err}");
}

#[test]
fn an_injected_failure_whose_count_is_never_reached_is_reported() {
    let (ok, out, err) = run(&[
        "run",
        "skew",
        "--records",
        "10000",
        "--no-rest",
        "--stats-json",
        "--inject-failure",
        "sum-per-key:1:1000000000",
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains(
            "--inject-failure sum-per-key:1:1000000000 did not fire: subtask 1 of the vertex \
             'sum-per-key' received fewer than 1000000000 records in attempt 1"
        ),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["restarts"], 0, "{out}");
}

/// `sluice run …` with a REST API on a free port; every stderr line is kept.
struct Live {
    child: Child,
    stderr: Arc<Mutex<String>>,
    url: String,
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Live {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("run")
        .args(args)
        .args(["--rest-port", "0", "--no-progress"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = child.stderr.take().unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let keep = stderr.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("REST API: ") {
                let url = rest.split_whitespace().next().unwrap_or("");
                let _ = tx.send(url.trim_end_matches('/').to_string());
            }
            let mut s = keep.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the job announces its REST URL");
    Live { child, stderr, url }
}

/// One plain HTTP/1.1 request; the body of the answer.
fn http(method: &str, url: &str, path: &str) -> String {
    let host = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}

#[test]
fn a_cancel_after_a_savepoint_is_a_cancel_and_a_resume_says_what_it_reads() {
    let dir = std::env::temp_dir().join(format!("sluice-cancel-sp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Expensive records keep the job running until it is cancelled.
    let mut live = start(&[
        "skew",
        "--records",
        "300000",
        "--map-work",
        "2000",
        "-p",
        "2",
        "--savepoint-dir",
        dir.to_str().unwrap(),
    ]);
    let (ok, out, err) = run(&["savepoint", dir.to_str().unwrap(), "--url", &live.url]);
    assert!(ok, "{out}\n{err}");
    let savepoint = out
        .lines()
        .find_map(|l| l.split("file:").nth(1))
        .unwrap_or_else(|| panic!("{out}"))
        .trim()
        .to_string();
    let overview: serde_json::Value =
        serde_json::from_str(&http("GET", &live.url, "/jobs/overview")).unwrap();
    let jid = overview["jobs"][0]["jid"].as_str().unwrap().to_string();
    http("PATCH", &live.url, &format!("/jobs/{jid}?mode=cancel"));
    let started = Instant::now();
    let status = loop {
        if let Some(s) = live.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the cancelled job did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // The reader thread sees end of file once the process is gone; give it a moment to
    // append the last lines.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !live.stderr.lock().unwrap().contains("error:") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let err = live.stderr.lock().unwrap().clone();
    assert!(!status.success(), "a cancelled job exits non-zero:\n{err}");
    assert!(!err.contains("stopped with savepoint"), "{err}");
    assert!(err.contains("cancel"), "{err}");

    // Resuming with a different --records: the sources read the rest of the savepoint's
    // input, and the run says so.
    let (ok, out, err) = run(&[
        "run",
        "skew",
        "--records",
        "5",
        "--map-work",
        "2000",
        "-p",
        "2",
        "--no-rest",
        "--stats-json",
        "--from-savepoint",
        &savepoint,
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("resuming from {savepoint}"))
            && err.contains("--records does not change what they read"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let read = v["records"].as_u64().unwrap();
    // Not capped at 5: what the savepoint had left (all of it if it came before the first record).
    assert!(read > 5 && read <= 300_000, "read {read}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn run_with_log(rust_log: Option<&str>, args: &[&str]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(args).env_remove("RUST_LOG");
    if let Some(l) = rust_log {
        c.env("RUST_LOG", l);
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    err
}

#[test]
fn structured_logs_have_one_line_per_job_event_and_follow_rust_log() {
    let args = [
        "run",
        "skew",
        "--records",
        "200000",
        "--no-rest",
        "--no-progress",
        "--checkpoint-interval",
        "20",
        "--restart",
        "fixed-delay:3:10",
        "--inject-failure",
        "sum-per-key:0:5000",
    ];
    let err = run_with_log(None, &args);
    let count = |what: &str| err.lines().filter(|l| l.contains(what)).count();
    assert_eq!(count("INFO job started job=skew"), 1, "{err}");
    assert_eq!(
        count("INFO job ended job=skew status=\"FINISHED\""),
        1,
        "{err}"
    );
    assert_eq!(
        count("ERROR task failed task=sum-per-key -> Sink: final-sums (1/2)"),
        1,
        "{err}"
    );
    assert_eq!(count("WARN restarting the job"), 1, "{err}");
    assert!(count("INFO checkpoint completed checkpoint=") >= 1, "{err}");
    // RUST_LOG decides: off silences them, the summary stays.
    let quiet = run_with_log(Some("off"), &args);
    assert!(!quiet.contains("job started"), "{quiet}");
    assert!(quiet.contains("the job restarted 1 time"), "{quiet}");
    // Machine output: no info lines by default.
    let stats = run_with_log(
        None,
        &[
            "run",
            "passthrough",
            "--records",
            "1000",
            "--no-rest",
            "--stats-json",
        ],
    );
    assert!(!stats.contains("job started"), "{stats}");
}
