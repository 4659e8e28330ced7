//! `sluice top` against a live `sluice run` (the embedded REST API), rendered once and captured.

use std::process::Command;
use std::time::Duration;

use crate::common;
use common::{start_live, Job};

/// Starts an effectively unbounded skew job with fast metrics; returns it and its REST URL.
fn start_job() -> (Job, String) {
    start_live(&[
        "skew",
        "--records",
        "100000000000",
        "-p",
        "2",
        "--map-work",
        "64",
    ])
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
