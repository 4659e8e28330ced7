//! `sluice run skew --from socket://HOST:PORT` against a real `TcpListener` in the test: the
//! skew workload's `key,value` lines with malformed ones mixed in give the generated job's
//! final sums, the malformed lines counted as dead letters naming the address and line; a
//! server that is not there is an error naming the address; a checkpointing run is refused
//! before the job starts unless the URL accepts the loss a restore brings.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sluice_jobs::skew::{format_line, record, work, SkewConfig};

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

fn read_sums(path: &std::path::Path) -> BTreeMap<i64, i64> {
    let text = std::fs::read_to_string(path).unwrap();
    let _ = std::fs::remove_file(path);
    text.lines()
        .skip(1)
        .map(|l| {
            let (k, s) = l.split_once(',').unwrap();
            (k.parse().unwrap(), s.parse().unwrap())
        })
        .collect()
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("sluice-socket-{}-{name}.csv", std::process::id()))
}

/// The generated job's final sums on `records` records (the workload's defaults).
fn generated_sums(records: u64) -> BTreeMap<i64, i64> {
    let path = temp("generated");
    let o = sluice(&[
        "run",
        "skew",
        "--records",
        &records.to_string(),
        "--no-rest",
        "--no-progress",
        "--output",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    read_sums(&path)
}

/// Malformed lines, and the line number (1-based) each is sent as.
const MALFORMED: [(&str, u64); 3] = [("not a record", 1), ("7,seven", 500), ("", 2001)];

#[test]
fn skew_from_a_socket_gives_the_generated_sums_and_counts_malformed_lines() {
    let n = 5_000u64;
    let cfg = SkewConfig::default();
    let (hot, keys) = (cfg.hot_limit(), cfg.keys);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    // One connection: every record as a line, the malformed ones at their line numbers; then
    // close, which ends the source (max-retries 0, Flink's default).
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut out = String::new();
        let mut line = 0u64;
        let mut bad = MALFORMED.iter().peekable();
        for i in 0..n {
            while let Some((text, at)) = bad.peek() {
                if *at != line + 1 {
                    break;
                }
                out.push_str(text);
                out.push('\n');
                line += 1;
                bad.next();
            }
            out.push_str(&format_line(record(i, hot, keys)));
            out.push('\n');
            line += 1;
        }
        s.write_all(out.as_bytes()).unwrap();
    });
    let path = temp("socket");
    let o = sluice(&[
        "run",
        "skew",
        "--from",
        &format!("socket://127.0.0.1:{port}"),
        "--no-rest",
        "--no-progress",
        "--output",
        path.to_str().unwrap(),
    ]);
    server.join().unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(&format!("dead letters: {}", MALFORMED.len())),
        "{out}"
    );
    for (_, at) in MALFORMED {
        assert!(
            out.contains(&format!("socket 127.0.0.1:{port} line {at}:")),
            "line {at} not named: {out}"
        );
    }
    assert_eq!(read_sums(&path), generated_sums(n));
}

#[test]
fn a_server_that_is_not_there_is_an_error_naming_the_address() {
    // A port nobody listens on: bind, read the port, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let o = sluice(&[
        "run",
        "skew",
        "--from",
        &format!("socket://127.0.0.1:{port}?max-retries=2&retry-delay=50ms"),
        "--no-rest",
        "--no-progress",
    ]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains(&format!(
            "cannot connect to 127.0.0.1:{port} (after 2 retries"
        )),
        "{out}"
    );
    // Two retries 50 ms apart, not the connect timeout: a generous bound for a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn checkpoints_are_refused_before_the_job_starts_unless_the_loss_is_accepted() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    let o = sluice(&[
        "run",
        "skew",
        "--from",
        &format!("socket://127.0.0.1:{port}"),
        "--checkpoint-interval",
        "100",
        "--no-rest",
        "--no-progress",
    ]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("a socket cannot replay"), "{out}");
    assert!(out.contains("?accept-loss-on-restore"), "{out}");
    // Refused before the job started: it never connected.
    assert!(l.accept().is_err(), "the refused job connected");

    // Accepted: it runs under checkpoints to the end of the input.
    let server = std::thread::spawn(move || {
        l.set_nonblocking(false).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.write_all(b"1,10\n2,20\n1,5\n").unwrap();
    });
    let path = temp("accepted");
    let o = sluice(&[
        "run",
        "skew",
        "--from",
        &format!("socket://127.0.0.1:{port}?accept-loss-on-restore"),
        "--checkpoint-interval",
        "100",
        "--no-rest",
        "--no-progress",
        "--output",
        path.to_str().unwrap(),
    ]);
    server.join().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // The skew job's map turns each value v into work(v, 4) & 0xFFFFF before summing.
    let m = |v: i64| work(v, SkewConfig::default().map_work) & 0xF_FFFF;
    assert_eq!(
        read_sums(&path),
        BTreeMap::from([(1, m(10) + m(5)), (2, m(20))])
    );
}
