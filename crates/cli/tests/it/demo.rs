//! `sluice demo` (not on a terminal): the key lines, exit 0.

use std::process::Command;

#[test]
fn demo_finds_the_hot_key_and_proves_the_fix() {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !out.contains('\x1b'),
        "no escape codes off a terminal: {out}"
    );
    assert!(
        out.contains("REST API (Flink-compatible): http://127.0.0.1:"),
        "{out}"
    );
    assert!(out.contains("sum-per-key -> Sink: final-sums"), "{out}");
    assert!(out.contains("Hot key: 0 carries"), "{out}");
    assert!(out.contains("Verdict: key skew at `sum-per-key"), "{out}");
    assert!(out.contains("+ [9] pre-aggregate (salted)"), "{out}");
    assert!(out.contains("output: identical"), "{out}");
    assert!(
        out.contains("The fixed job's output is identical to the original's."),
        "{out}"
    );
}
