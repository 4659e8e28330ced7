//! Hostile and malformed input never panics the server and never gets a 5xx: a fixed list of
//! nasty requests, then a bounded deterministic fuzz loop, then concurrent clients; the server
//! must still answer normally afterwards.

use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{env, get, get_json, Served};

/// Sends bytes and returns the status of whatever answer arrives (`None`: closed without one,
/// or reset before the answer could be read, which a client sending oversized input may see).
fn status_of(addr: SocketAddr, bytes: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    if buf.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&buf);
    let line = text.lines().next().unwrap_or("");
    // HTTP/1.0 requests are answered in HTTP/1.0.
    assert!(
        line.starts_with("HTTP/1.1 ") || line.starts_with("HTTP/1.0 "),
        "bad status line {line:?}"
    );
    let status: u16 = line[9..12].parse().expect("status code");
    if let Some((_, body)) = text.split_once("\r\n\r\n") {
        if status >= 400 && !body.is_empty() {
            let j: serde_json::Value = serde_json::from_str(body)
                .unwrap_or_else(|e| panic!("error body is not JSON ({e}): {body}"));
            assert!(j["errors"][0].is_string(), "{body}");
        }
    }
    Some(status)
}

fn check(addr: SocketAddr, what: &str, bytes: &[u8]) -> Option<u16> {
    let st = status_of(addr, bytes);
    if let Some(code) = st {
        assert!(
            code < 500,
            "{what}: answered {code} to {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        );
    }
    st
}

fn req(method: &str, target: &str) -> Vec<u8> {
    format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").into_bytes()
}

/// xorshift64*: deterministic choices for the fuzz loop.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick<'a>(&mut self, xs: &'a [String]) -> &'a str {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
}

#[test]
fn malformed_requests_never_panic_or_5xx() {
    let env = env(2);
    env.generate(u64::MAX, |i| (i % 7) as i64)
        .name("gen")
        .key_by(|k: &i64| *k)
        .reduce(|a, _| a)
        .name("keep")
        .discard();
    let s = Served::start(&env);
    s.wait_for_metrics();
    let addr = s.addr;
    let (jid, vid) = (s.jid.clone(), s.vertices[1].clone());

    // A client that sends half a request and waits: it must not stop the others being served.
    let mut stalled = TcpStream::connect(addr).unwrap();
    stalled
        .write_all(b"GET /overview HTTP/1.1\r\nHost:")
        .unwrap();
    let stalled_at = Instant::now();

    let long_seg = "a".repeat(10_000);
    let many_segments = "a/".repeat(3_000);
    let huge_header = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "b".repeat(20_000));
    let many_headers: String = (0..2_000).map(|i| format!("X-{i}: v\r\n")).collect();
    let fixed: Vec<(&str, Vec<u8>, Option<u16>)> = vec![
        ("empty", b"".to_vec(), None),
        ("blank lines", b"\r\n\r\n".to_vec(), None),
        ("no target", b"GET\r\n\r\n".to_vec(), Some(400)),
        ("HTTP/0.9", b"GET /\r\n\r\n".to_vec(), Some(400)),
        ("bad version", b"GET / HTTP/9.9\r\n\r\n".to_vec(), Some(400)),
        ("asterisk", req("GET", "*"), Some(400)),
        ("absolute form", req("GET", "http://127.0.0.1/overview"), Some(200)),
        ("absolute form, foreign authority", req("GET", "http://example/overview"), Some(403)),
        ("long segment", req("GET", &format!("/{long_seg}")), Some(414)),
        ("many segments", req("GET", &format!("/{many_segments}")), Some(404)),
        ("non-UTF-8 bytes", b"GET /\xff\xfe HTTP/1.1\r\n\r\n".to_vec(), Some(400)),
        ("lone percent", req("GET", "/%"), Some(400)),
        ("short percent", req("GET", "/%f"), Some(400)),
        ("bad hex", req("GET", "/%zz"), Some(400)),
        ("non-UTF-8 escape", req("GET", "/%ff"), Some(400)),
        ("overlong UTF-8", req("GET", "/%c0%af"), Some(400)),
        ("NUL escape", req("GET", "/jobs/%00"), Some(400)),
        ("raw NUL", b"GET /jobs/\0 HTTP/1.1\r\n\r\n".to_vec(), Some(400)),
        ("dot dot", req("GET", "/.."), Some(404)),
        ("traversal", req("GET", "/../../etc/passwd"), Some(404)),
        ("encoded traversal", req("GET", "/%2e%2e/%2e%2e/etc/passwd"), Some(404)),
        ("dot dot in jobs", req("GET", "/jobs/../overview"), Some(404)),
        ("encoded slash", req("GET", "/jobs%2Foverview"), Some(404)),
        ("header without colon", b"GET / HTTP/1.1\r\nnocolon\r\n\r\n".to_vec(), Some(400)),
        ("empty header name", b"GET / HTTP/1.1\r\n: v\r\n\r\n".to_vec(), Some(400)),
        ("huge header", huge_header.into_bytes(), Some(431)),
        ("many headers", format!("GET / HTTP/1.1\r\n{many_headers}\r\n").into_bytes(), Some(431)),
        ("huge body", b"PATCH /jobs/x HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 999999999999\r\n\r\n".to_vec(), Some(413)),
        ("huge body, not JSON", b"PATCH /jobs/x HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n".to_vec(), Some(415)),
        ("negative length", b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n".to_vec(), Some(400)),
        ("chunked", b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(), Some(200)),
        ("chunked, no end", b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab".to_vec(), Some(400)),
        ("short body", b"GET / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc".to_vec(), Some(400)),
        ("body", b"GET /overview HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".to_vec(), Some(200)),
        ("pipelined", b"GET /overview HTTP/1.1\r\n\r\nGET /config HTTP/1.1\r\n\r\n".to_vec(), Some(200)),
        ("HTTP/1.0", b"GET /config HTTP/1.0\r\n\r\n".to_vec(), Some(200)),
        ("bare newlines", b"GET /config HTTP/1.1\nHost: 127.0.0.1\n\n".to_vec(), Some(200)),
        ("two hosts", b"GET /config HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec(), Some(400)),
        ("lower-case method", req("get", "/overview"), Some(405)),
        ("odd method", req("FOO", "/overview"), Some(405)),
        ("bad method chars", req("G{T", "/overview"), Some(400)),
        ("CONNECT", req("CONNECT", "/jobs"), Some(405)),
        ("get param only percent", req("GET", &format!("/jobs/{jid}/vertices/{vid}/metrics?get=%")), Some(400)),
        ("empty params", req("GET", &format!("/jobs/{jid}/vertices/{vid}/metrics?&&&=&get=")), Some(200)),
        ("commas only", req("GET", &format!("/jobs/{jid}/vertices/{vid}/subtasks/metrics?get=,,,&agg=,,")), Some(200)),
        ("dash range", req("GET", &format!("/jobs/{jid}/vertices/{vid}/subtasks/metrics?get=numRecordsIn&subtasks=-")), Some(400)),
        ("huge range", req("GET", &format!("/jobs/{jid}/vertices/{vid}/subtasks/metrics?get=numRecordsIn&subtasks=0-99999999999999999999999")), Some(404)),
        ("huge index", req("GET", &format!("/jobs/{jid}/vertices/{vid}/subtasks/99999999999999999999999999")), Some(404)),
        ("long get", req("GET", &format!("/jobs/{jid}/vertices/{vid}/metrics?get={}", "a,".repeat(3_000))), Some(404)),
        ("non-UTF-8 query", req("GET", &format!("/jobs/{jid}/vertices/{vid}/metrics?get=%ff")), Some(400)),
        ("unicode id", req("GET", "/jobs/%F0%9F%99%82%F0%9F%99%82%F0%9F%99%82%F0%9F%99%82%F0%9F%99%82%F0%9F%99%82%F0%9F%99%82%F0%9F%99%82"), Some(400)),
        ("bad mode", format!("PATCH /jobs/{jid}?mode=stop HTTP/1.1\r\nContent-Type: application/json\r\n\r\n").into_bytes(), Some(400)),
    ];
    let mut wrong = Vec::new();
    for (what, bytes, expected) in &fixed {
        let got = check(addr, what, bytes);
        // An oversized request may be reset before its answer is read; anything received
        // must be the expected status.
        let oversized = bytes.len() > 8_000;
        if got != *expected && !(oversized && got.is_none()) {
            wrong.push(format!("{what}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // 100 KiB of path: answered 414 (or reset mid-send), never 5xx.
    check(
        addr,
        "100 KiB path",
        &req("GET", &format!("/{}", "x".repeat(100 * 1024))),
    );
    check(
        addr,
        "binary",
        &(0..=255u8).cycle().take(5_000).collect::<Vec<_>>(),
    );

    // Deterministic fuzz over path pieces, queries and methods.
    let pieces: Vec<String> = [
        "jobs",
        "vertices",
        "subtasks",
        "metrics",
        "overview",
        "backpressure",
        "plan",
        "config",
        "watermarks",
        "accumulators",
        "taskmanagers",
        "subtasktimes",
        "0",
        "1",
        "2",
        "99",
        "-1",
        "%ff",
        "%",
        "..",
        ".",
        "%2e%2e",
        "00000000000000000000000000000000",
        "%2F",
        "%00",
        "%F0%9F%99%82",
        "x%20y",
        "openapi.json",
        "+",
        "a+b",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        jid.clone(),
        vid.clone(),
        s.vertices[0].clone(),
        "z".repeat(300),
    ])
    .collect();
    let queries: Vec<String> = [
        "",
        "?get=busyTimeMsPerSecond",
        "?get=0.busyTimeMsPerSecond,1.numRecordsIn",
        "?get=%",
        "?agg=skew",
        "?agg=bogus",
        "?subtasks=0-1",
        "?subtasks=1-0",
        "?subtasks=%ff",
        "?get=a&get=b",
        "?get=numRecordsIn&agg=min&subtasks=0",
        "?mode=cancel",
        "?=",
        "?&",
        "?get=%E2%82",
        "#frag",
        "?get=numRecordsIn#x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let methods: Vec<String> = [
        "GET", "GET", "GET", "HEAD", "PATCH", "POST", "DELETE", "PUT",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut statuses = std::collections::BTreeMap::new();
    for _ in 0..600 {
        let n = 1 + rng.next() % 7;
        let mut path = String::new();
        for _ in 0..n {
            path.push('/');
            path.push_str(rng.pick(&pieces));
        }
        let q = rng.pick(&queries).to_string();
        let m = rng.pick(&methods).to_string();
        // PATCH on the real job would cancel it early; keep the job running for the rest.
        let m = if m == "PATCH" && path.contains(&jid) {
            "GET".into()
        } else {
            m
        };
        let st = check(addr, "fuzz", &req(&m, &format!("{path}{q}")));
        *statuses.entry(st).or_insert(0) += 1;
    }
    assert!(
        statuses.keys().all(|s| s.is_some()),
        "every fuzz request is answered: {statuses:?}"
    );
    assert!(
        statuses.len() >= 3,
        "the fuzz should reach several outcomes: {statuses:?}"
    );

    // Concurrent clients (bounded): all answered.
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let (jid, vid) = (jid.clone(), vid.clone());
            std::thread::spawn(move || {
                for i in 0..25 {
                    let path = match (t + i) % 4 {
                        0 => "/jobs/overview".to_string(),
                        1 => format!("/jobs/{jid}/vertices/{vid}"),
                        2 => "/metrics".to_string(),
                        _ => format!(
                            "/jobs/{jid}/vertices/{vid}/subtasks/metrics?get=busyTimeMsPerSecond"
                        ),
                    };
                    assert_eq!(get(addr, &path).status, 200, "{path}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("client thread");
    }

    // The stalled client is closed once its time is up (without an answer: its request never
    // arrived); the server still answers normally.
    stalled
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut buf = Vec::new();
    let closed = stalled.read_to_end(&mut buf);
    assert!(
        closed.is_ok() && buf.is_empty(),
        "stalled client: {closed:?}, {:?}",
        String::from_utf8_lossy(&buf)
    );
    let waited = stalled_at.elapsed();
    assert!(
        waited >= sluice_rest::REQUEST_DEADLINE - Duration::from_millis(500),
        "closed after {waited:?}"
    );
    let overview = get_json(addr, "/jobs/overview");
    assert_eq!(overview["jobs"][0]["jid"], jid.as_str());
}
