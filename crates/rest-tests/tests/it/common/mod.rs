//! Helpers of the REST integration tests: a tiny HTTP client over `std::net`, jobs with short
//! metric windows, and polling with a hang guard.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_datastream::{EnvConfig, JobHandle, StreamEnv};
use sluice_rest::{serve_with, JobRegistry, RestConfig, RestServer};
use sluice_runtime::telemetry::MetricsConfig;

/// Upper bound for waiting on a condition that depends on a running job. Only a hang guard.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub fn env(parallelism: usize) -> StreamEnv {
    StreamEnv::with_config(EnvConfig {
        parallelism,
        metrics: MetricsConfig {
            update_interval: Duration::from_millis(200),
            window_slots: 5,
        },
        ..EnvConfig::default()
    })
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends raw bytes, half-closes, reads the whole answer. `None` if the server closed without
/// answering.
pub fn raw(addr: SocketAddr, bytes: &[u8]) -> Option<Reply> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // The server may answer (e.g. 414) and close before it has read everything we send.
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    if buf.is_empty() {
        return None;
    }
    Some(parse_reply(&buf))
}

pub fn parse_reply(buf: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(buf).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {text:?}"));
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(
        parts.next(),
        Some("HTTP/1.1"),
        "status line {status_line:?}"
    );
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').expect("header line");
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let reply = Reply {
        status,
        headers,
        body: body.to_string(),
    };
    if let Some(len) = reply.header("Content-Length") {
        let len: usize = len.parse().expect("content length");
        // HEAD answers announce the GET body's length but carry none.
        assert!(
            reply.body.len() == len || reply.body.is_empty(),
            "content-length {len} but body of {} bytes",
            reply.body.len()
        );
    }
    reply
}

pub fn request(addr: SocketAddr, method: &str, path: &str) -> Reply {
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n");
    raw(addr, req.as_bytes()).unwrap_or_else(|| panic!("{method} {path}: no answer"))
}

/// A request with a JSON body.
pub fn send_json(addr: SocketAddr, method: &str, path: &str, body: &str) -> Reply {
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw(addr, req.as_bytes()).unwrap_or_else(|| panic!("{method} {path}: no answer"))
}

pub fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path)
}

/// GET that must answer 200 with JSON.
pub fn get_json(addr: SocketAddr, path: &str) -> serde_json::Value {
    let r = get(addr, path);
    assert_eq!(r.status, 200, "GET {path}: {}", r.body);
    assert!(
        r.header("Content-Type")
            .is_some_and(|c| c.starts_with("application/json")),
        "GET {path}: content type {:?}",
        r.header("Content-Type")
    );
    r.json()
}

/// Polls `f` until it returns `Some`, failing after [`PATIENCE`].
pub fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{what}: not reached within {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A launched job registered with a server on a free loopback port.
pub struct Served {
    pub handle: Option<JobHandle>,
    pub registry: Arc<JobRegistry>,
    pub server: Option<RestServer>,
    pub addr: SocketAddr,
    pub jid: String,
    /// Vertex ids in job-graph order.
    pub vertices: Vec<String>,
    pub vertex_names: Vec<String>,
}

impl Served {
    pub fn start(env: &StreamEnv) -> Served {
        Served::start_with(env, |_| {})
    }

    /// Like [`Served::start`], with the server's configuration adjusted by `configure`.
    pub fn start_with(env: &StreamEnv, configure: impl FnOnce(&mut RestConfig)) -> Served {
        let handle = env.launch().expect("launch");
        let m = handle.monitor();
        let registry = Arc::new(JobRegistry::new());
        registry.register(m.clone());
        let mut config = RestConfig::new("127.0.0.1:0".parse().unwrap());
        configure(&mut config);
        let server = serve_with(config, registry.clone()).expect("serve");
        let addr = server.local_addr();
        Served {
            jid: m.job_id.to_string(),
            vertices: m.graph.vertices.iter().map(|v| v.id.to_string()).collect(),
            vertex_names: m.graph.vertices.iter().map(|v| v.name.clone()).collect(),
            handle: Some(handle),
            registry,
            server: Some(server),
            addr,
        }
    }

    pub fn vertex(&self, name_prefix: &str) -> String {
        let i = self
            .vertex_names
            .iter()
            .position(|n| n.starts_with(name_prefix))
            .unwrap_or_else(|| panic!("no vertex {name_prefix} in {:?}", self.vertex_names));
        self.vertices[i].clone()
    }

    /// Waits until the job has at least one metrics sample.
    pub fn wait_for_metrics(&self) {
        let m = self.handle.as_ref().unwrap().monitor();
        eventually("first metrics sample", || m.last_sample_ms());
    }

    /// Waits until the job has ended.
    pub fn wait_for_end(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.wait();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.cancel();
            let _ = h.wait();
        }
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}
