//! Lines from a TCP server (Flink's `socketTextStream` / `SocketTextStreamFunction`): connect
//! to `host:port`, split what arrives at a delimiter byte (`\n` by default; a `\r` before a
//! `\n` is dropped, as Flink does), emit each line as a `String`. When the server closes the
//! connection the source reconnects after `retry_delay` (Flink's default 500 ms) while retries
//! remain (`max_retries`: Flink's default 0 = end when the server closes; -1 = forever); then it
//! ends, as a bounded source. Runs at parallelism 1.
//!
//! Differences from Flink, on purpose: a failed connection attempt counts as a retry too
//! (Flink fails at the first refused connection), so "unreachable" is an error only after the
//! retries, naming the address; each attempt is bounded by `connect_timeout` (Flink waits
//! forever).
//!
//! **It cannot replay.** A socket is not a log: lines received after the last completed
//! checkpoint and before a failure are gone when the job restores, and the server cannot be
//! asked for them again. A checkpointing job with this source is therefore refused by the
//! DataStream API unless the user accepted that explicitly
//! ([`SocketSourceConfig::accept_loss_on_restore`]); then every restore reports, in the job's
//! checkpoint log and as a warning, how many received lines were lost (counted: the source
//! records its line count in each checkpoint and keeps counting across attempts).

use std::io::{BufRead, BufReader, ErrorKind};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_types::{Collector, CollectorExt, OperatorContext, OperatorError};

use super::{SourceContext, SourceFunction, SOURCE_BATCH};

/// How often a source waiting for data looks at barriers, cancellation and output flushing.
const POLL: Duration = Duration::from_millis(50);

/// Where and how to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketSourceConfig {
    /// The server's host name or address.
    pub host: String,
    /// The server's TCP port.
    pub port: u16,
    /// The line delimiter (Flink: `"\n"`).
    pub delimiter: u8,
    /// Reconnections after the server closed the connection or refused one: 0 (Flink's
    /// default for `socketTextStream(host, port)`) ends the source at the first close; -1
    /// retries forever.
    pub max_retries: i64,
    /// The wait before each reconnection (Flink's `DEFAULT_CONNECTION_RETRY_SLEEP`, 500 ms).
    pub retry_delay: Duration,
    /// The limit on each connection attempt.
    pub connect_timeout: Duration,
    /// Run under periodic checkpoints although a restore loses the lines received after the
    /// restored checkpoint (they are counted and reported). Off: such a job is refused.
    pub accept_loss_on_restore: bool,
}

impl SocketSourceConfig {
    /// Flink's defaults: delimiter `\n`, no retries, 500 ms between retries.
    pub fn new(host: &str, port: u16) -> Self {
        SocketSourceConfig {
            host: host.to_string(),
            port,
            delimiter: b'\n',
            max_retries: 0,
            retry_delay: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(10),
            accept_loss_on_restore: false,
        }
    }

    /// `host:port`, as connected to and shown in messages.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// Turns one received line into a record; an `Err` (the reason) sends the line to the
/// dead-letter output, with the address and line number, and the source goes on.
pub type LineDecoder<T> = Arc<dyn Fn(&str) -> Result<T, String> + Send + Sync>;

/// The socket source (see the module docs): lines as `String`s, or decoded by a
/// [`LineDecoder`].
pub struct SocketTextSource<T = String> {
    config: SocketSourceConfig,
    /// Lines received (emitted or dead-lettered), kept across attempts (the factory shares
    /// it), so a restore can tell how many received lines its checkpoint does not hold; also
    /// the line number dead letters name.
    lines: Arc<AtomicU64>,
    decode: LineDecoder<T>,
}

impl SocketTextSource<String> {
    /// `lines` must outlive attempts (share one per source node).
    pub fn new(config: SocketSourceConfig, lines: Arc<AtomicU64>) -> Self {
        SocketTextSource::with_decoder(config, lines, Arc::new(|s: &str| Ok(s.to_owned())))
    }
}

impl<T> SocketTextSource<T> {
    /// Lines decoded by `decode`; `lines` must outlive attempts (share one per source node).
    pub fn with_decoder(
        config: SocketSourceConfig,
        lines: Arc<AtomicU64>,
        decode: LineDecoder<T>,
    ) -> Self {
        SocketTextSource {
            config,
            lines,
            decode,
        }
    }

    fn connect(&self, ctx: &SourceContext, retries: &mut i64) -> Result<TcpStream, OperatorError> {
        let address = self.config.address();
        loop {
            let attempt = (|| {
                let mut last = None;
                for a in address.to_socket_addrs()? {
                    match TcpStream::connect_timeout(&a, self.config.connect_timeout) {
                        Ok(s) => return Ok(s),
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| {
                    std::io::Error::new(ErrorKind::NotFound, "the host name resolves to no address")
                }))
            })();
            match attempt {
                Ok(s) => return Ok(s),
                Err(e) if self.retry(ctx, retries)? => {
                    tracing::warn!(address = %address, error = %e, "socket source: connection failed; retrying");
                }
                Err(e) => {
                    return Err(OperatorError::failed(format!(
                        "socket source cannot connect to {address} (after {} retries, \
                         {} ms apart): {e}",
                        self.config.max_retries.max(0),
                        self.config.retry_delay.as_millis()
                    )))
                }
            }
        }
    }

    /// Whether to try again (sleeping the delay first, in steps that watch for cancellation).
    fn retry(&self, ctx: &SourceContext, retries: &mut i64) -> Result<bool, OperatorError> {
        if self.config.max_retries >= 0 && *retries >= self.config.max_retries {
            return Ok(false);
        }
        *retries += 1;
        let mut left = self.config.retry_delay;
        while !left.is_zero() {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            let step = left.min(POLL);
            std::thread::sleep(step);
            left -= step;
        }
        Ok(true)
    }

    fn position(&self) -> Result<Vec<u8>, OperatorError> {
        crate::state::layout::encode(&self.lines.load(Ordering::Relaxed))
    }
}

impl<T: Send + 'static> SourceFunction<T> for SocketTextSource<T> {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        let address = self.config.address();
        let delim = self.config.delimiter;
        let mut retries = 0i64;
        let mut n = 0u64;
        loop {
            let stream = self.connect(ctx, &mut retries)?;
            stream.set_read_timeout(Some(POLL)).map_err(|e| {
                OperatorError::io(format!("configuring the socket to {address}"), e)
            })?;
            let mut reader = BufReader::with_capacity(64 * 1024, stream);
            let mut line = Vec::with_capacity(256);
            loop {
                // Partial reads stay in `line`: `read_until` keeps what it read before a timeout.
                match reader.read_until(delim, &mut line) {
                    Ok(0) => break,
                    Ok(_) if line.last() != Some(&delim) => break, // closed mid-line
                    Ok(_) => {
                        line.pop();
                        if delim == b'\n' && line.last() == Some(&b'\r') {
                            line.pop();
                        }
                        // 1-based, counted across connections and attempts.
                        let number = self.lines.fetch_add(1, Ordering::Relaxed) + 1;
                        let decoded = std::str::from_utf8(&line)
                            .map_err(|e| format!("line is not valid UTF-8 ({e})"))
                            .and_then(|s| (self.decode)(s));
                        match decoded {
                            Ok(r) => out.collect(r)?,
                            Err(reason) => {
                                ctx.dead_letter(format!("socket {address} line {number}"), reason)
                            }
                        }
                        line.clear();
                        n += 1;
                        if n == SOURCE_BATCH {
                            ctx.add_emitted(n);
                            n = 0;
                            if ctx.should_stop() {
                                return Err(OperatorError::Cancelled);
                            }
                        }
                        if ctx.barrier_pending() {
                            ctx.checkpoint_if_due(out, || self.position())?;
                        }
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        // Nothing new: ship what waits downstream, inject barriers, watch for
                        // cancellation.
                        ctx.add_emitted(n);
                        n = 0;
                        if ctx.should_stop() {
                            return Err(OperatorError::Cancelled);
                        }
                        ctx.checkpoint_if_due(out, || self.position())?;
                        out.flush()?;
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        tracing::warn!(address = %address, error = %e, "socket source: read failed");
                        break;
                    }
                }
            }
            // The server closed the connection (a partial last line is dropped, as Flink does).
            ctx.add_emitted(n);
            n = 0;
            if !self.retry(ctx, &mut retries)? {
                return Ok(());
            }
            tracing::info!(address = %address, "socket source: connection closed; reconnecting");
        }
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &OperatorContext,
    ) -> Result<(), OperatorError> {
        if !self.config.accept_loss_on_restore {
            return Err(OperatorError::failed(format!(
                "socket source {} cannot replay the lines after a checkpoint; restoring would \
                 lose them (accept that with accept_loss_on_restore)",
                self.config.address()
            )));
        }
        let at_checkpoint: u64 = match parts.first() {
            Some((_, bytes)) => crate::state::layout::decode(bytes)?,
            None => 0,
        };
        let received = self.lines.swap(at_checkpoint, Ordering::Relaxed);
        let lost = received.saturating_sub(at_checkpoint);
        let msg = format!(
            "socket source {}: restored at line {at_checkpoint}; {lost} line(s) received after \
             that checkpoint are lost (a socket cannot replay)",
            self.config.address()
        );
        tracing::warn!("{msg}");
        if let Some(hub) = crate::TaskServices::of(op).and_then(|s| s.hub()) {
            hub.log(msg);
        }
        Ok(())
    }
}
