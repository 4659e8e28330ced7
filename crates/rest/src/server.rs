//! The HTTP/1.1 server: one acceptor thread hands connections to a few worker threads; each
//! connection carries one request (`Connection: close`).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http::{check_partial_head, head_end, parse_head, Response};
use crate::registry::JobRegistry;
use crate::routes::dispatch;

/// Worker threads answering requests.
pub const WORKERS: usize = 4;
/// How long a client may take to send its request (head and body).
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the REST server: {0}")]
    Io(#[from] std::io::Error),
}

struct Shared {
    stop: AtomicBool,
    /// Open connections, so shutdown can unblock workers waiting on slow clients.
    open: Mutex<HashMap<u64, TcpStream>>,
    next_id: AtomicU64,
}

/// A running server. Dropping it (or [`shutdown`](Self::shutdown)) stops it and joins its
/// threads.
pub struct RestServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for RestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Starts serving the Flink-compatible REST API for `registry` on `addr` (port 0 picks a free
/// port; see [`RestServer::local_addr`]).
pub fn serve(addr: SocketAddr, registry: Arc<JobRegistry>) -> Result<RestServer, RestError> {
    let listener = TcpListener::bind(addr).map_err(|source| RestError::Bind { addr, source })?;
    let local = listener.local_addr()?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        open: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
    });
    let (tx, rx) = sync_channel::<TcpStream>(64);
    let rx = Arc::new(Mutex::new(rx));
    let mut server = RestServer {
        addr: local,
        shared: shared.clone(),
        acceptor: None,
        workers: Vec::new(),
    };
    for i in 0..WORKERS {
        let (rx, shared, registry) = (rx.clone(), shared.clone(), registry.clone());
        let h = std::thread::Builder::new()
            .name(format!("rest-worker-{i}"))
            .spawn(move || worker(&rx, &shared, &registry))?;
        server.workers.push(h);
    }
    let acc_shared = shared.clone();
    let acceptor = std::thread::Builder::new()
        .name("rest-acceptor".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if acc_shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else {
                    // Transient accept errors (EMFILE, aborted handshakes): back off briefly.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                if tx.send(stream).is_err() {
                    break;
                }
            }
        })?;
    server.acceptor = Some(acceptor);
    Ok(server)
}

impl RestServer {
    /// The address the server listens on (with the port actually bound).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes open connections and joins the server's threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if self.shared.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        // Wake the acceptor with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let woke = TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok();
        for s in self
            .shared
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(a) = self.acceptor.take() {
            if woke {
                let _ = a.join();
            }
            // else: the acceptor stays blocked in accept(); it exits at the next connection.
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl Drop for RestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn worker(rx: &Mutex<Receiver<TcpStream>>, shared: &Shared, registry: &JobRegistry) {
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(stream) = next else { return };
        if shared.stop.load(Ordering::SeqCst) {
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(clone) = stream.try_clone() {
            shared
                .open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, clone);
        }
        handle_connection(stream, registry);
        shared
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// Reads one request, answers it, closes. Never panics on input: a handler panic (a bug) is
/// caught and answered with 500.
fn handle_connection(mut stream: TcpStream, registry: &JobRegistry) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(REQUEST_DEADLINE));
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let head_len = loop {
        if let Some(n) = head_end(&buf) {
            break n;
        }
        if let Err(e) = check_partial_head(&buf) {
            respond(&mut stream, &Response::error(e.status, &e.reason), false);
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            if !buf.is_empty() {
                respond(&mut stream, &Response::error(408, "Request timeout"), false);
            }
            return;
        }
        let _ = stream.set_read_timeout(Some(left));
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if !buf.is_empty() {
                    respond(&mut stream, &Response::error(408, "Request timeout"), false);
                }
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    };
    let head = match parse_head(&buf[..head_len]) {
        Ok(h) => h,
        Err(e) => {
            respond(&mut stream, &Response::error(e.status, &e.reason), false);
            return;
        }
    };
    // Read the body (bounded by MAX_BODY in parse_head); the savepoint endpoints read it.
    let mut body: Vec<u8> = buf[head_len..].to_vec();
    while body.len() < head.content_length {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            respond(&mut stream, &Response::error(408, "Request timeout"), false);
            return;
        }
        let _ = stream.set_read_timeout(Some(left));
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                respond(&mut stream, &Response::error(408, "Request timeout"), false);
                return;
            }
        }
    }
    body.truncate(head.content_length);
    let head_only = head.method == "HEAD";
    let response = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dispatch(registry, &head.method, &head.segments, &head.query, &body)
    }))
    .unwrap_or_else(|_| Response::error(500, "Internal server error"));
    respond(&mut stream, &response, head_only);
}

fn respond(stream: &mut TcpStream, response: &Response, head_only: bool) {
    let _ = stream.write_all(&response.to_bytes(head_only));
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    // Give the client a moment to read before the socket closes (avoids RST on unread input).
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut sink = [0u8; 1024];
    let mut drained = 0usize;
    while drained < 64 * 1024 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}
