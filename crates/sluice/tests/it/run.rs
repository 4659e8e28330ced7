//! `sluice::run` and `sluice::Running` as a user's program calls them: flags parsed, the REST API
//! up with the job registered (overview, the doctor), checkpoints with an injected failure and a
//! restart, the summary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use sluice::{RunOptions, Running, Say};

pub(crate) fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    let status = buf
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = buf
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn run_restarts_from_a_checkpoint_after_an_injected_failure_with_the_same_sums() {
    let options = RunOptions::try_from_args([
        "my-job",
        "-p",
        "2",
        "--checkpoint-interval",
        "20",
        "--restart",
        "fixed-delay:3:0",
        "--inject-failure",
        "sum:0:2000",
        "--no-rest",
        "--quiet",
    ])
    .unwrap();
    let env = options.stream_env().unwrap();
    env.set_job_name("my-job");
    let n = 20_000u64;
    let out = env
        .generate(n, |i| ((i % 7) as i64, 1i64))
        .key_by(|r: &(i64, i64)| r.0)
        .sum(|r: &mut (i64, i64)| &mut r.1)
        .name("sum")
        .collect();
    let summary = sluice::run(env, &options).unwrap();
    assert_eq!(summary.restarts, 1, "{summary:?}");
    assert!(summary.execution.is_some());
    // Every key's last update is its full count (the restart resumed from a checkpoint).
    let mut last = std::collections::BTreeMap::new();
    for (k, s) in out.handle.take() {
        let e = last.entry(k).or_insert(0);
        *e = (*e).max(s);
    }
    let total: i64 = last.values().sum();
    assert_eq!(total, n as i64, "{last:?}");
}

#[test]
fn running_serves_the_job_and_its_doctor_over_rest() {
    let options = RunOptions::try_from_args([
        "my-job",
        "--rest-port",
        "0",
        "--metrics-interval",
        "0.2",
        "--metrics-window",
        "1",
    ])
    .unwrap();
    let env = options.stream_env().unwrap();
    env.set_job_name("user-job");
    env.generate(u64::MAX / 2, |i| i as i64)
        .map(|v: i64| v.wrapping_mul(3))
        .name("triple")
        .discard();
    let say = Say {
        rest: false,
        checkpoints: false,
    };
    let running = Running::start(&env, &options.rest, say).unwrap();
    let addr = running.rest_addr().expect("REST is on by default");
    let (status, body) = get(addr, "/jobs/overview");
    assert_eq!(status, 200, "{body}");
    let overview: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(overview["jobs"][0]["name"], "user-job", "{overview}");
    let jid = overview["jobs"][0]["jid"].as_str().unwrap().to_string();
    // The doctor answers once the first metrics sample is in.
    let deadline = Instant::now() + Duration::from_secs(60);
    let doctor = loop {
        let (status, body) = get(addr, &format!("/jobs/{jid}/doctor"));
        assert_eq!(status, 200, "{body}");
        let d: serde_json::Value = serde_json::from_str(&body).unwrap();
        if d.get("cause").is_some() || Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(doctor["cause"].is_string(), "{doctor}");
    let (status, _) = get(addr, "/");
    assert_eq!(status, 200, "the dashboard");
    running.cancel();
    let (outcome, finished) = running.wait();
    assert!(outcome.is_err(), "cancelled");
    assert_eq!(finished.restarts, 0);
    assert!(finished.savepoint.is_none());
}
