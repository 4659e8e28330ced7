//! [`ClientError`]: everything the client can fail at, each naming the URL (or file) and, for
//! a refused request, keeping the server's own message.

use std::time::Duration;

/// A request that did not produce a 2xx answer, a URL or TLS setting that cannot be used, or
/// saved answers that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL, the CA file or another client setting is unusable (the message says which).
    #[error("{0}")]
    Config(String),
    /// Name resolution or the TCP connection failed (`reason` says which, with a hint).
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The request's URL.
        url: String,
        /// What failed, with a hint.
        reason: String,
    },
    /// The TLS handshake failed (e.g. an untrusted certificate), with a hint.
    #[error("TLS with {url} failed: {reason}")]
    Tls {
        /// The request's URL.
        url: String,
        /// What failed, with a hint.
        reason: String,
    },
    /// Connected, but the server did not answer within the timeout.
    #[error("no answer from {url} within {}s", after.as_secs_f64())]
    Timeout {
        /// The request's URL.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// Reading or writing failed mid-way.
    #[error("talking to {url}: {err}")]
    Io {
        /// The request's URL.
        url: String,
        /// The I/O error.
        err: std::io::Error,
    },
    /// The answer is not HTTP as expected (or not JSON where JSON was asked for).
    #[error("bad answer from {url}: {what}")]
    Malformed {
        /// The request's URL.
        url: String,
        /// What is wrong with the answer.
        what: String,
    },
    /// A non-2xx status, with the server's own error message when it sent one.
    #[error("{}", status_text(url, *status, reason, message.as_deref()))]
    Status {
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The status' canonical reason phrase (may be empty).
        reason: String,
        /// The server's own message (Flink's `{"errors":[…]}`).
        message: Option<String>,
    },
    /// A savepoint could not be taken (the server's cause, or the wait ran out).
    #[error("{0}")]
    Savepoint(String),
    /// A file of saved REST answers (`--from-dir`, `--save`) cannot be read or written.
    #[error("{0}")]
    Saved(String),
}

fn status_text(url: &str, status: u16, reason: &str, message: Option<&str>) -> String {
    let mut s = format!("{url} answered {status}");
    if !reason.is_empty() {
        s.push_str(&format!(" {reason}"));
    }
    if let Some(m) = message {
        s.push_str(&format!(": {m}"));
    }
    s
}

impl From<ClientError> for sluice_doctor::DoctorError {
    fn from(e: ClientError) -> Self {
        sluice_doctor::DoctorError::Fetch(e.to_string())
    }
}
