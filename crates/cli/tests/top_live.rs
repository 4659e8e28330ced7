//! `sluice top` against a live `sluice run` (the embedded REST API), rendered once and captured.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Job(Child);

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts an effectively unbounded skew job with fast metrics; returns it and its REST URL.
fn start_job() -> (Job, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            "skew",
            "--records",
            "100000000000",
            "-p",
            "2",
            "--map-work",
            "64",
            "--rest-port",
            "0",
            "--metrics-interval",
            "0.2",
            "--metrics-window",
            "1",
            "--no-progress",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sluice runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("REST API: ") {
                let url = rest
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .trim_end_matches('/')
                    .to_string();
                let _ = tx.send(url);
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the job announces its REST URL");
    (Job(child), url)
}

#[test]
fn top_renders_a_running_sluice_job() {
    let (_job, url) = start_job();
    // Let a few metric updates happen so the window has data.
    std::thread::sleep(Duration::from_millis(1500));
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["top", "--url", &url, "--once"])
        .output()
        .unwrap();
    let frame = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{frame}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let _ = std::fs::create_dir_all(&out_dir);
    let _ = std::fs::write(out_dir.join("top-frame-live.txt"), &frame);
    assert!(frame.contains("skew"), "{frame}");
    assert!(frame.contains("Source: generator -> map"), "{frame}");
    assert!(frame.contains("sum-per-key -> Sink: final-sums"), "{frame}");
    assert!(
        frame.contains("(1/2)") && frame.contains("(2/2)"),
        "{frame}"
    );
    assert!(frame.contains("RUNNING"), "{frame}");
    assert!(!frame.contains('\x1b'), "--once prints no escape codes");
}
