//! The `sluice` binary, run as a user would.

use std::process::{Command, Output};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("sluice runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn run_skew_writes_flinks_final_sums() {
    let dir = tmp("skew");
    let out = dir.join("sums.csv");
    let o = sluice(&[
        "run",
        "skew",
        "--records",
        "100000",
        "-p",
        "2",
        "--rest-port",
        "0",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("100000 records"), "{}", stderr(&o));
    let ours = std::fs::read_to_string(&out).unwrap();
    let flink = std::fs::read_to_string(format!(
        "{ROOT}/tests/fixtures/flink/flink-skew-final-100k.csv"
    ))
    .unwrap();
    assert_eq!(ours, flink.replace("\r\n", "\n"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn plan_takes_the_same_flags_as_run() {
    let o = sluice(&[
        "plan",
        "skew",
        "--map-parallelism",
        "4",
        "--rebalance-before-map",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let golden =
        std::fs::read_to_string(format!("{ROOT}/tests/golden/skew-plan-rebalanced.json")).unwrap();
    assert_eq!(stdout(&o).trim_end(), golden.trim_end());

    let o = sluice(&["plan", "skew", "--format", "text"]);
    assert!(stdout(&o).contains("<- [1] HASH"), "{}", stdout(&o));
    let o = sluice(&["plan", "passthrough", "--rebalance", "--format", "dot"]);
    assert!(
        stdout(&o).contains("[label=\"REBALANCE\"]"),
        "{}",
        stdout(&o)
    );
    let o = sluice(&["plan", "passthrough", "--format", "job-graph"]);
    assert!(
        stdout(&o).starts_with("{\"plan\":{\"jid\":"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn key_group_matches_flinks_vectors() {
    let fixture = std::fs::read_to_string(format!(
        "{ROOT}/tests/fixtures/flink/flink-keygroups-sample.csv"
    ))
    .unwrap();
    let mut checked = 0;
    for line in fixture.lines().skip(1) {
        let f: Vec<&str> = line.trim_end_matches('\r').split(',').collect();
        let (kind, key, p, m, kg, st) = (f[0], f[1], f[2], f[3], f[4], f[5]);
        if kind != "i64" || key.is_empty() {
            continue;
        }
        let o = sluice(&[
            "key-group",
            "--type",
            "i64",
            "-p",
            p,
            "--max-parallelism",
            m,
            "--",
            key,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            stdout(&o),
            format!("key,key_group,subtask\n{key},{kg},{st}\n")
        );
        checked += 1;
        if checked == 12 {
            break;
        }
    }
    assert_eq!(checked, 12);
}

#[test]
fn key_group_reads_stdin_and_reports_bad_keys() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["key-group", "--type", "i64", "-p", "2"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"0\nnot-a-number\n42\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "a bad key makes the exit status 1"
    );
    let out = stdout(&o);
    assert!(out.starts_with("key,key_group,subtask\n0,"), "{out}");
    assert!(
        out.contains("\n42,"),
        "the keys after the bad one are still placed: {out}"
    );
    assert!(stderr(&o).contains("stdin line 2"), "{}", stderr(&o));
}

#[test]
fn bad_configuration_is_rejected_before_start() {
    let o = sluice(&["run", "skew", "--hot-key-share", "2"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--hot-key-share"), "{}", stderr(&o));
    let o = sluice(&["run", "passthrough", "-p", "0"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("parallelism"), "{}", stderr(&o));
    let o = sluice(&[
        "run",
        "skew",
        "--exclusive-credits",
        "0",
        "--floating-credits",
        "0",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("credits"), "{}", stderr(&o));
    let o = sluice(&["run", "nosuchjob"]);
    assert_eq!(o.status.code(), Some(2));
    // A heartbeat timeout too short to tell a busy peer from a lost one.
    let o = sluice(&["run", "skew", "--heartbeat-timeout", "500"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--heartbeat-timeout"), "{}", stderr(&o));
}

#[test]
fn stats_json_reports_the_run() {
    let o = sluice(&[
        "run",
        "passthrough",
        "--records",
        "100000",
        "--rebalance",
        "--no-rest",
        "--stats-json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("\"records\":100000"), "{s}");
    assert!(s.contains("\"peak_rss_kib\":"), "{s}");
}

#[test]
fn a_network_rest_address_needs_a_token() {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            "skew",
            "--records",
            "1000",
            "--rest-address",
            "0.0.0.0",
        ])
        .args(["--rest-port", "0", "--no-progress"])
        .env_remove("SLUICE_REST_TOKEN")
        .output()
        .expect("sluice runs");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(
            "refusing to serve the REST API on 0.0.0.0:0 without a token: on a non-loopback \
             address anyone who can reach it could cancel or stop jobs and write savepoints. Set a \
             token (sluice run --rest-token, or SLUICE_REST_TOKEN) or bind 127.0.0.1"
        ),
        "{}",
        stderr(&o)
    );
}
