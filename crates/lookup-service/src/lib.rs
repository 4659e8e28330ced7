//! A small HTTP JSON service that lookup-join tests, the `blocking` scenario and the lookup
//! benchmark call: `GET /lookup/{key}` answers the row of an integer key in `0..keys` as JSON
//! (`{"key":K,"name":"item-K","score":S}`, a pure function of the key), `404` for any other key.
//! `GET /stats` answers the request counters, `GET /health` `ok`.
//!
//! Main types: [`ServiceOptions`] (latency [`Latency`]: fixed, uniform or exponential; failure
//! rates: HTTP 500s, dropped connections, stalls past a client's timeout; the first `n` requests
//! of every key failing), [`Service`] (a running server on its own thread, in process), and
//! [`Stats`]. The binary `sluice-lookup-service` serves the same on a port, for humans
//! (`scripts/lookup-service.sh`) and for tests (`sluice_testkit::LookupService`, a child process
//! stopped by PID).
//!
//! Hyper on a current-thread tokio runtime: a request's latency is a timer, not a thread, so
//! thousands of requests can wait at once and a benchmark measures the client, not the server.

#![warn(missing_docs)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use sluice_types::duration::parse_duration;
use tokio::sync::watch;

/// Why the service could not start or an option is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A flag is unknown, lacks a value, or its value is out of range.
    #[error("invalid option {option}: {reason}")]
    Option {
        /// The flag (`--latency`).
        option: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The listening socket could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
    /// The server's runtime or thread could not start.
    #[error("starting the service: {0}")]
    Io(#[from] std::io::Error),
}

/// A duration in Flink's syntax, its error as text. Unlike Flink, the unit is required: a
/// latency of `10` reads as 10 ms to Flink but is more likely a slip here, and these flags have
/// always refused it.
fn duration(s: &str) -> Result<Duration, String> {
    if s.trim_end().ends_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("'{s}': a duration needs a unit (us, ms, s)"));
    }
    parse_duration(s).map_err(|e| e.to_string())
}

/// How long the service takes to answer a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Latency {
    /// Always this long.
    Fixed(Duration),
    /// Uniform between the two bounds.
    Uniform(Duration, Duration),
    /// Exponentially distributed with this mean.
    Exponential(Duration),
}

impl Latency {
    /// `10ms` (fixed), `uniform:5ms..15ms`, `exp:10ms`; durations in Flink's syntax
    /// (`sluice_types::duration`), e.g. `250us`, `1.5s`.
    pub fn parse(s: &str) -> Result<Latency, String> {
        if let Some(r) = s.strip_prefix("uniform:") {
            let (a, b) = r
                .split_once("..")
                .ok_or_else(|| format!("'{s}': expected uniform:MIN..MAX"))?;
            let (a, b) = (duration(a)?, duration(b)?);
            if a > b {
                return Err(format!("'{s}': MIN is above MAX"));
            }
            Ok(Latency::Uniform(a, b))
        } else if let Some(m) = s.strip_prefix("exp:") {
            Ok(Latency::Exponential(duration(m)?))
        } else {
            Ok(Latency::Fixed(duration(s)?))
        }
    }

    /// The latency for a uniform draw `u` in `[0, 1)`.
    fn sample(&self, u: f64) -> Duration {
        match *self {
            Latency::Fixed(d) => d,
            Latency::Uniform(a, b) => a + (b - a).mul_f64(u),
            Latency::Exponential(m) => m.mul_f64(-(1.0 - u).ln()),
        }
    }

    /// The flag form [`Latency::parse`] reads.
    pub fn to_flag(&self) -> String {
        let us = |d: Duration| format!("{}us", d.as_micros());
        match *self {
            Latency::Fixed(d) => us(d),
            Latency::Uniform(a, b) => format!("uniform:{}..{}", us(a), us(b)),
            Latency::Exponential(m) => format!("exp:{}", us(m)),
        }
    }
}

/// What the service does.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceOptions {
    /// Keys `0..keys` exist; others answer 404.
    pub keys: u64,
    /// How long each answer takes.
    pub latency: Latency,
    /// Share of requests answered `500` (after the latency).
    pub error_rate: f64,
    /// Share of requests whose connection is closed without an answer (after the latency).
    pub drop_rate: f64,
    /// Share of requests answered only after [`stall`](Self::stall) (past a client's timeout).
    pub stall_rate: f64,
    /// How long a stalled request waits before its answer.
    pub stall: Duration,
    /// The first this many requests of every key answer `500`: a retry test's deterministic
    /// failures.
    pub fail_first: u32,
    /// Seed of the draws (latency, failures).
    pub seed: u64,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            keys: 1_000_000,
            latency: Latency::Fixed(Duration::ZERO),
            error_rate: 0.0,
            drop_rate: 0.0,
            stall_rate: 0.0,
            stall: Duration::from_secs(5),
            fail_first: 0,
            seed: 1,
        }
    }
}

impl ServiceOptions {
    /// Refuses a failure share outside `[0, 1]`, or shares adding up to more than 1, naming the flag.
    pub fn validate(&self) -> Result<(), ServiceError> {
        for (name, r) in [
            ("--error-rate", self.error_rate),
            ("--drop-rate", self.drop_rate),
            ("--stall-rate", self.stall_rate),
        ] {
            if !(0.0..=1.0).contains(&r) {
                return Err(ServiceError::Option {
                    option: name.into(),
                    reason: format!("{r} is not a share between 0 and 1"),
                });
            }
        }
        if self.error_rate + self.drop_rate + self.stall_rate > 1.0 {
            return Err(ServiceError::Option {
                option: "--error-rate/--drop-rate/--stall-rate".into(),
                reason: "the shares add up to more than 1".into(),
            });
        }
        Ok(())
    }

    /// The binary's flags for these options.
    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("--keys={}", self.keys),
            format!("--latency={}", self.latency.to_flag()),
            format!("--error-rate={}", self.error_rate),
            format!("--drop-rate={}", self.drop_rate),
            format!("--stall-rate={}", self.stall_rate),
            format!("--stall={}us", self.stall.as_micros()),
            format!("--fail-first={}", self.fail_first),
            format!("--seed={}", self.seed),
        ]
    }

    /// Reads the binary's flags (`--name=value` or `--name value`); `--port` is returned apart.
    pub fn from_args(args: &[String]) -> Result<(ServiceOptions, u16), ServiceError> {
        let mut o = ServiceOptions::default();
        let mut port = 0u16;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (name, value) = match a.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => {
                    let v = it.next().ok_or_else(|| ServiceError::Option {
                        option: a.clone(),
                        reason: "needs a value".into(),
                    })?;
                    (a.clone(), v.clone())
                }
            };
            let bad = |reason: String| ServiceError::Option {
                option: name.clone(),
                reason,
            };
            let num = |v: &str| {
                v.parse::<f64>()
                    .map_err(|_| bad(format!("'{v}' is not a number")))
            };
            match name.as_str() {
                "--port" => port = value.parse().map_err(|_| bad(format!("'{value}' is not a port")))?,
                "--keys" => o.keys = value.parse().map_err(|_| bad(format!("'{value}' is not a count")))?,
                "--latency" => o.latency = Latency::parse(&value).map_err(bad)?,
                "--error-rate" => o.error_rate = num(&value)?,
                "--drop-rate" => o.drop_rate = num(&value)?,
                "--stall-rate" => o.stall_rate = num(&value)?,
                "--stall" => o.stall = duration(&value).map_err(bad)?,
                "--fail-first" => o.fail_first = value.parse().map_err(|_| bad(format!("'{value}' is not a count")))?,
                "--seed" => o.seed = value.parse().map_err(|_| bad(format!("'{value}' is not a seed")))?,
                _ => {
                    return Err(ServiceError::Option {
                        option: name.clone(),
                        reason: "unknown flag (--port, --keys, --latency, --error-rate, --drop-rate, --stall-rate, --stall, --fail-first, --seed)".into(),
                    })
                }
            }
        }
        o.validate()?;
        Ok((o, port))
    }
}

/// The row of `key`: what `GET /lookup/{key}` answers.
pub fn row(key: u64) -> serde_json::Value {
    serde_json::json!({
        "key": key,
        "name": format!("item-{key}"),
        "score": key.wrapping_mul(2_654_435_761) % 1000,
    })
}

/// Request counters (all since start).
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests received, of any path.
    pub requests: AtomicU64,
    /// Rows answered (`200`).
    pub ok: AtomicU64,
    /// Keys outside `0..keys` (`404`).
    pub not_found: AtomicU64,
    /// Injected failures answered `500`.
    pub errors: AtomicU64,
    /// Connections closed without an answer.
    pub dropped: AtomicU64,
    /// Requests held past a client's timeout.
    pub stalled: AtomicU64,
    /// Requests being answered now, and the most at once.
    pub in_flight: AtomicU64,
    /// The most requests in flight at once.
    pub max_in_flight: AtomicU64,
}

impl Stats {
    /// The counters as `GET /stats` answers them.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "requests": self.requests.load(Relaxed),
            "ok": self.ok.load(Relaxed),
            "not_found": self.not_found.load(Relaxed),
            "errors": self.errors.load(Relaxed),
            "dropped": self.dropped.load(Relaxed),
            "stalled": self.stalled.load(Relaxed),
            "in_flight": self.in_flight.load(Relaxed),
            "max_in_flight": self.max_in_flight.load(Relaxed),
        })
    }
}

struct State {
    opts: ServiceOptions,
    stats: Stats,
    draws: AtomicU64,
    /// Requests so far per key, for `fail_first`.
    per_key: Mutex<HashMap<u64, u32>>,
}

impl State {
    /// The next uniform draw in `[0, 1)` (splitmix64 over a counter: reproducible per seed).
    fn draw(&self) -> f64 {
        let n = self.draws.fetch_add(1, Relaxed);
        let mut z = self
            .opts
            .seed
            .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A running service: its address and counters; stopped when dropped.
pub struct Service {
    addr: SocketAddr,
    state: Arc<State>,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("addr", &self.addr).finish()
    }
}

/// Why an answer is not an answer: hyper closes the connection when a service returns an error.
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

impl Service {
    /// Serves on `addr` (port 0: a free port) from a thread of its own.
    pub fn start(addr: SocketAddr, opts: ServiceOptions) -> Result<Service, ServiceError> {
        opts.validate()?;
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|source| ServiceError::Bind { addr, source })?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let state = Arc::new(State {
            opts,
            stats: Stats::default(),
            draws: AtomicU64::new(0),
            per_key: Mutex::new(HashMap::new()),
        });
        let (stop, stopped) = watch::channel(false);
        let s2 = state.clone();
        let thread = std::thread::Builder::new()
            .name("lookup-service".into())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, s2, stopped));
                runtime.shutdown_timeout(Duration::from_millis(100));
            })?;
        Ok(Service {
            addr: local,
            state,
            stop,
            thread: Some(thread),
        })
    }

    /// The address the service listens on (its port chosen by the system when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The live request counters.
    pub fn stats(&self) -> &Stats {
        &self.state.stats
    }

    /// Serves until the process is stopped (the binary's main loop).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let (stream, _) = tokio::select! {
            _ = stopped.changed() => return,
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(_) => continue,
            },
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc = hyper::service::service_fn(move |req| answer(state.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, svc)
                .await;
        });
    }
}

type Body = Full<Bytes>;

fn json(status: StatusCode, v: &serde_json::Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(v.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Decrements the in-flight count however the request ends (answered, dropped, cancelled).
struct InFlight<'a>(&'a Stats);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

async fn answer(
    state: Arc<State>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Body>, Dropped> {
    let path = req.uri().path().to_string();
    match path.as_str() {
        "/health" => return Ok(json(StatusCode::OK, &serde_json::json!("ok"))),
        "/stats" => return Ok(json(StatusCode::OK, &state.stats.to_json())),
        _ => {}
    }
    let Some(key) = path.strip_prefix("/lookup/") else {
        return Ok(json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": format!("no route {path}; GET /lookup/{{key}}, /stats, /health")}),
        ));
    };
    let stats = &state.stats;
    stats.requests.fetch_add(1, Relaxed);
    let now = stats.in_flight.fetch_add(1, Relaxed) + 1;
    stats.max_in_flight.fetch_max(now, Relaxed);
    let _guard = InFlight(stats);
    let o = &state.opts;
    tokio::time::sleep(o.latency.sample(state.draw())).await;
    let key: Option<u64> = key.parse().ok();
    let earlier = key.map_or(0, |k| {
        let mut m = state.per_key.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(k).or_insert(0);
        *n += 1;
        *n - 1
    });
    let u = state.draw();
    if earlier < o.fail_first || u < o.error_rate {
        stats.errors.fetch_add(1, Relaxed);
        return Ok(json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({"error": "injected failure"}),
        ));
    }
    if u < o.error_rate + o.drop_rate {
        stats.dropped.fetch_add(1, Relaxed);
        return Err(Dropped);
    }
    if u < o.error_rate + o.drop_rate + o.stall_rate {
        stats.stalled.fetch_add(1, Relaxed);
        tokio::time::sleep(o.stall).await;
    }
    match key {
        Some(k) if k < o.keys => {
            stats.ok.fetch_add(1, Relaxed);
            Ok(json(StatusCode::OK, &row(k)))
        }
        _ => {
            stats.not_found.fetch_add(1, Relaxed);
            Ok(json(
                StatusCode::NOT_FOUND,
                &serde_json::json!({"error": "no such key"}),
            ))
        }
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_flags_round_trip() {
        for s in ["10ms", "uniform:5ms..15ms", "exp:250us"] {
            let l = Latency::parse(s).unwrap();
            assert_eq!(Latency::parse(&l.to_flag()).unwrap(), l);
        }
        assert!(Latency::parse("uniform:5ms").is_err());
        assert!(Latency::parse("10").is_err());
        assert_eq!(
            Latency::Uniform(Duration::from_millis(2), Duration::from_millis(4)).sample(0.5),
            Duration::from_millis(3)
        );
    }

    #[test]
    fn options_round_trip_through_flags() {
        let o = ServiceOptions {
            keys: 10,
            latency: Latency::Exponential(Duration::from_millis(3)),
            error_rate: 0.1,
            drop_rate: 0.2,
            stall_rate: 0.05,
            stall: Duration::from_secs(2),
            fail_first: 2,
            seed: 9,
        };
        let (back, port) = ServiceOptions::from_args(&o.to_args()).unwrap();
        assert_eq!((back, port), (o, 0));
        assert!(ServiceOptions::from_args(&["--error-rate=2".into()]).is_err());
        assert!(ServiceOptions::from_args(&["--bogus=1".into()]).is_err());
    }
}
