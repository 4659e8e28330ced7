//! The HTTP/1.1 server: hyper on a current-thread tokio runtime that lives on one `rest-io`
//! thread (the engine never sees tokio); answers are computed on a small pool of blocking
//! `rest-handler` threads, so a slow answer never stalls I/O.
//!
//! Nothing a client does can hold the server: every connection is a cheap task, at most
//! [`MAX_CONNECTIONS`] at once (more are closed on arrival); each request head must arrive
//! within [`REQUEST_DEADLINE`] (also the idle time allowed between keep-alive requests), its body
//! within the same deadline, and a connection lives at most [`CONNECTION_DEADLINE`] and
//! [`KEEP_ALIVE_REQUESTS`] requests, reading, handling and sending included; then it is closed
//! (gracefully, then for good after [`CLOSE_GRACE`]) — except that an answer still being
//! computed then (a plan change waiting for its savepoint) is waited for, and sent.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{watch, Semaphore};

use crate::http::{parse_target, shorten, Response, MAX_BODY, MAX_HEAD, MAX_REQUEST_LINE};
use crate::policy::{Policy, RequestHeaders};
use crate::registry::JobRegistry;
use crate::routes::{dispatch, operation_of};

/// Threads computing answers at once (more requests wait for one).
pub const WORKERS: usize = 4;
/// Open connections at once; a connection beyond is closed on arrival.
pub const MAX_CONNECTIONS: usize = 512;
/// Time for a request's head to arrive (from the connection's start or the previous answer),
/// and again for its body.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Longest life of a connection, keep-alive included: reading, handling and sending.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(30);
/// Requests answered on one connection before it is closed.
pub const KEEP_ALIVE_REQUESTS: usize = 100;
/// How long a connection told to close may finish its answer.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    /// The address could not be bound (in use, not ours).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The settings are refused: a non-loopback address without a token.
    #[error("{0}")]
    Insecure(String),
    /// Another I/O failure while starting (threads, the runtime).
    #[error("cannot start the REST server: {0}")]
    Io(#[from] std::io::Error),
}

/// How a server is set up: where it listens and its security settings (see [`crate::policy`]).
#[derive(Clone, Debug)]
pub struct RestConfig {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Bearer token required by mutating routes; required to bind a non-loopback address.
    pub token: Option<String>,
    /// Host names (`name` or `name:port`) accepted in `Host` besides the bound address.
    pub allowed_hosts: Vec<String>,
    /// Savepoints requested over REST must lie under this directory
    /// (`state.savepoints.dir`); it is also the target when a request names none.
    pub savepoint_dir: PathBuf,
}

impl RestConfig {
    /// Loopback-safe defaults: no token, no extra host names, the default savepoint directory.
    pub fn new(addr: SocketAddr) -> RestConfig {
        RestConfig {
            addr,
            token: None,
            allowed_hosts: Vec::new(),
            savepoint_dir: crate::savepoint_dir::default_savepoint_dir(),
        }
    }
}

/// What every connection task shares.
struct State {
    registry: Arc<JobRegistry>,
    policy: Policy,
    savepoint_dir: PathBuf,
}

/// A running server. Dropping it (or [`shutdown`](Self::shutdown)) stops it and joins its
/// threads.
pub struct RestServer {
    addr: SocketAddr,
    savepoint_dir: PathBuf,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for RestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Starts serving the Flink-compatible REST API for `registry` on `addr` with the defaults of
/// [`RestConfig::new`] (port 0 picks a free port; see [`RestServer::local_addr`]).
pub fn serve(addr: SocketAddr, registry: Arc<JobRegistry>) -> Result<RestServer, RestError> {
    serve_with(RestConfig::new(addr), registry)
}

/// Starts serving with `config`. Refuses a non-loopback address without a token.
pub fn serve_with(config: RestConfig, registry: Arc<JobRegistry>) -> Result<RestServer, RestError> {
    let policy = Policy::new(config.token.clone(), &config.allowed_hosts);
    if let Some(why) = policy.bind_refusal(config.addr) {
        return Err(RestError::Insecure(why));
    }
    let addr = config.addr;
    let savepoint_dir = std::path::absolute(&config.savepoint_dir)?;
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| RestError::Bind { addr, source })?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(WORKERS)
        .thread_name("rest-handler")
        .build()?;
    let listener = {
        let _guard = runtime.enter();
        tokio::net::TcpListener::from_std(listener)?
    };
    let state = Arc::new(State {
        registry,
        policy,
        savepoint_dir: savepoint_dir.clone(),
    });
    let (stop, stopped) = watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("rest-io".into())
        .spawn(move || {
            runtime.block_on(accept_loop(listener, state, stopped));
            // Connections still open after their grace are dropped with the runtime.
            runtime.shutdown_timeout(CLOSE_GRACE);
        })?;
    Ok(RestServer {
        addr: local,
        savepoint_dir,
        stop,
        thread: Some(thread),
    })
}

impl RestServer {
    /// The address the server listens on (with the port actually bound).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where savepoints requested over REST go (absolute).
    pub fn savepoint_dir(&self) -> &std::path::Path {
        &self.savepoint_dir
    }

    /// Stops accepting, closes open connections and joins the server's threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    mut stopped: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = stopped.changed() => break,
            a = listener.accept() => a,
        };
        while tasks.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(_) => {
                // EMFILE and friends: back off briefly rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Over the limit the connection is closed at once: the ones holding slots end by
        // their deadlines, so the server is never blocked for longer than that.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let (state, stopped) = (state.clone(), stopped.clone());
        tasks.spawn(async move {
            connection(stream, state, stopped).await;
            drop(slot);
        });
    }
    drop(listener);
    // Open connections finish their current answer, then close.
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
}

/// Serves one connection until the client closes it or a limit closes it.
async fn connection(
    stream: tokio::net::TcpStream,
    state: Arc<State>,
    mut stopped: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let Ok(local) = stream.local_addr() else {
        return;
    };
    let served = Arc::new(AtomicUsize::new(0));
    // Requests being answered on this connection (body read within its deadline, then the
    // handler): when the connection's lifetime ends, an answer still being computed — a plan
    // change waits for its savepoint — is waited for, not cut; a slow client is not.
    let answering = Arc::new(AtomicUsize::new(0));
    let in_answer = answering.clone();
    let service = service_fn(move |req| {
        let (state, served, answering) = (state.clone(), served.clone(), in_answer.clone());
        async move {
            let n = served.fetch_add(1, Ordering::Relaxed) + 1;
            answering.fetch_add(1, Ordering::AcqRel);
            let mut resp = answer(req, local, &state).await;
            answering.fetch_sub(1, Ordering::AcqRel);
            if n >= KEEP_ALIVE_REQUESTS {
                resp.headers_mut()
                    .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, Infallible>(resp)
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_DEADLINE)
        .max_buf_size(MAX_HEAD)
        .max_headers(100)
        // A client may half-close after its request and still read the answer.
        .half_close(true)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let lifetime = tokio::time::sleep(CONNECTION_DEADLINE);
    tokio::pin!(lifetime);
    let expired = tokio::select! {
        _ = conn.as_mut() => return,
        _ = &mut lifetime => true,
        _ = stopped.changed() => false,
    };
    conn.as_mut().graceful_shutdown();
    loop {
        if tokio::time::timeout(CLOSE_GRACE, conn.as_mut())
            .await
            .is_ok()
        {
            return;
        }
        // Past the grace: closed unless (lifetime over, server running) an answer is still
        // being computed; then its own limits bound the wait.
        if !(expired && answering.load(Ordering::Acquire) > 0 && !*stopped.borrow()) {
            return;
        }
    }
}

fn header(headers: &HeaderMap, name: hyper::header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Answers one request: target limits, the Host check, the mutating-route policy, the body,
/// then the route's handler on a handler thread.
async fn answer(
    req: hyper::Request<Incoming>,
    local: SocketAddr,
    state: &Arc<State>,
) -> hyper::Response<Full<Bytes>> {
    let method = req.method().as_str().to_string();
    let read_only = method == "GET" || method == "HEAD";
    let response = match prepare(req, local, state).await {
        Ok(work) => {
            let state = state.clone();
            tokio::task::spawn_blocking(move || {
                dispatch(
                    &state.registry,
                    &state.savepoint_dir,
                    &work.method,
                    &work.segments,
                    &work.query,
                    &work.body,
                )
            })
            .await
            // A handler panic is a bug: answer 500 rather than drop the connection.
            .unwrap_or_else(|_| Response::error(500, "Internal server error"))
        }
        Err(refusal) => refusal,
    };
    to_hyper(response, read_only)
}

/// A request that passed every check, ready for its handler.
struct Work {
    method: String,
    segments: Vec<String>,
    query: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn prepare(
    req: hyper::Request<Incoming>,
    local: SocketAddr,
    state: &State,
) -> Result<Work, Response> {
    let (parts, body) = req.into_parts();
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    if target.len() > MAX_REQUEST_LINE {
        return Err(Response::error(
            414,
            &format!("Request target longer than {MAX_REQUEST_LINE} bytes"),
        ));
    }
    if parts.uri.path() == "*" || (parts.uri.authority().is_some() && parts.uri.path().is_empty()) {
        return Err(Response::error(400, "Request target must start with '/'"));
    }
    // An absolute target's authority takes the place of Host (RFC 9112 §3.2.2).
    let host = match parts.uri.authority() {
        Some(a) => Some(a.as_str().to_string()),
        None => {
            let mut hosts = parts.headers.get_all(hyper::header::HOST).iter();
            let first = hosts.next();
            if hosts.next().is_some() {
                return Err(Response::error(400, "More than one Host header"));
            }
            match first.map(|h| h.to_str()) {
                None => None,
                Some(Ok(h)) => Some(h.to_string()),
                Some(Err(_)) => return Err(Response::error(400, "Host header is not ASCII")),
            }
        }
    };
    state.policy.check_host(host.as_deref(), local)?;
    let (segments, query) =
        parse_target(target).map_err(|e| Response::error(e.status, &e.reason))?;
    let method = parts.method.as_str().to_string();
    if let Some((route, op)) = operation_of(&segments, &method) {
        if op.mutating {
            let headers = RequestHeaders {
                content_type: header(&parts.headers, hyper::header::CONTENT_TYPE),
                origin: header(&parts.headers, hyper::header::ORIGIN),
                authorization: header(&parts.headers, hyper::header::AUTHORIZATION),
            };
            let what = format!("{} {}", op.method, route.path);
            state.policy.check_mutating(&what, &headers, local)?;
        }
    }
    let too_large = || Response::error(413, &format!("Request body larger than {MAX_BODY} bytes"));
    if let Some(len) = parts.headers.get(hyper::header::CONTENT_LENGTH) {
        let len = len
            .to_str()
            .ok()
            .and_then(|l| l.trim().parse::<u64>().ok())
            .ok_or_else(|| Response::error(400, "Content-Length is not a number"))?;
        if len > MAX_BODY as u64 {
            return Err(too_large());
        }
    }
    let body = match tokio::time::timeout(REQUEST_DEADLINE, Limited::new(body, MAX_BODY).collect())
        .await
    {
        Err(_) => {
            return Err(Response::error(
                408,
                &format!(
                    "Request timeout: the body did not arrive within {} s",
                    REQUEST_DEADLINE.as_secs()
                ),
            ))
        }
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Ok(Err(e)) => {
            return Err(Response::error(
                400,
                &format!("Cannot read the request body: {}", shorten(&e.to_string())),
            ))
        }
        Ok(Ok(collected)) => collected.to_bytes().to_vec(),
    };
    Ok(Work {
        method,
        segments,
        query,
        body,
    })
}

/// Our response as hyper's. Read-only answers allow any origin to read them (Flink's
/// monitoring API does); others never carry CORS headers.
fn to_hyper(r: Response, read_only: bool) -> hyper::Response<Full<Bytes>> {
    let mut out = hyper::Response::new(Full::new(Bytes::from(r.body)));
    *out.status_mut() =
        hyper::StatusCode::from_u16(r.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = out.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static(r.content_type),
    );
    if read_only {
        h.insert(
            hyper::header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
    }
    for (name, value) in r.headers {
        if let (Ok(n), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            h.append(n, v);
        }
    }
    out
}
