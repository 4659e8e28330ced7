//! The HTTP(S) client of `sluice top`, `doctor` and `savepoint` for Flink-compatible REST APIs,
//! on ureq with rustls: `http://` and `https://host:port[/prefix]` URLs, the system's root
//! certificates (or `--ca-cert`, or none with `--insecure`), a bearer token (`--token`,
//! `SLUICE_REST_TOKEN`), a timeout per request, and errors that name the URL and keep the
//! server's own message (Flink's `{"errors":[…]}`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// Largest response body accepted (a safety net against a runaway server).
const MAX_BODY: u64 = 64 << 20;

/// How to reach a REST API: TLS trust and credentials (flags shared by the client commands).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClientArgs {
    /// Trust the CA certificate(s) in this PEM file for https:// URLs (instead of the system's
    /// root certificates).
    #[arg(long, value_name = "PEM")]
    pub ca_cert: Option<PathBuf>,
    /// Do not verify the server's TLS certificate (for testing only: anyone in between can
    /// read and change the traffic).
    #[arg(long, conflicts_with = "ca_cert")]
    pub insecure: bool,
    /// Bearer token sent with every request (`Authorization: Bearer …`).
    #[arg(long, env = "SLUICE_REST_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
}

/// Where a REST API lives, and how to talk to it.
#[derive(Clone)]
pub struct Endpoint {
    scheme: Scheme,
    /// Host as written, IPv6 literals with their brackets (used in URLs and messages).
    host: String,
    port: u16,
    /// Path prefix without a trailing `/`; empty for the root.
    prefix: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.base_url())
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

impl PartialEq for Endpoint {
    fn eq(&self, other: &Endpoint) -> bool {
        self.base_url() == other.base_url()
    }
}

impl Endpoint {
    /// Parses `http(s)://host[:port][/prefix]` (the port defaults to 80 / 443) with the default
    /// client settings: the system's roots, no token.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        Endpoint::with(url, &ClientArgs::default())
    }

    /// Parses `url` and sets up TLS and credentials from `args`.
    pub fn with(url: &str, args: &ClientArgs) -> Result<Endpoint, String> {
        let (scheme, host, port, prefix) = parse_url(url)?;
        let roots = match (&args.ca_cert, args.insecure) {
            (Some(path), _) => RootCerts::Specific(Arc::new(read_ca(path)?)),
            (None, _) => system_roots(),
        };
        let tls = TlsConfig::builder()
            .root_certs(roots)
            .disable_verification(args.insecure)
            .build();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let loopback = bare.eq_ignore_ascii_case("localhost")
            || bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls)
            .max_redirects(0)
            .user_agent(format!("sluice/{}", env!("CARGO_PKG_VERSION")));
        if loopback {
            // A proxy from the environment is for the outside world, not for this machine.
            config = config.proxy(None);
        }
        Ok(Endpoint {
            scheme,
            host,
            port,
            prefix,
            token: args.token.clone().filter(|t| !t.is_empty()),
            agent: config.build().into(),
        })
    }

    /// The base URL, normalised: `http(s)://host:port[/prefix]`.
    pub fn base_url(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        format!("{scheme}://{}:{}{}", self.host, self.port, self.prefix)
    }

    /// The full URL of a request path (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// `GET path`; succeeds only with a 2xx answer.
    pub fn get(&self, path: &str, timeout: Duration) -> Result<Response, HttpError> {
        self.request("GET", path, None, timeout)
    }

    /// `GET path` and parse the body as JSON.
    pub fn get_json(&self, path: &str, timeout: Duration) -> Result<serde_json::Value, HttpError> {
        let response = self.get(path, timeout)?;
        parse_json(&response.body).map_err(|e| HttpError::Malformed {
            url: self.url(path),
            what: format!(
                "the body is not JSON ({e}): {}",
                snippet(&String::from_utf8_lossy(&response.body), 80)
            ),
        })
    }

    /// `POST path` with a JSON body, parsed JSON answer; succeeds only with a 2xx answer.
    pub fn post_json(
        &self,
        path: &str,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Result<serde_json::Value, HttpError> {
        let r = self.request("POST", path, Some(&body.to_string()), timeout)?;
        serde_json::from_slice(&r.body).map_err(|e| HttpError::Malformed {
            url: self.url(path),
            what: format!("the answer is not JSON ({e})"),
        })
    }

    /// `PUT path` with a JSON body, parsed JSON answer (an empty body is `{}`); succeeds only
    /// with a 2xx answer.
    pub fn put_json(
        &self,
        path: &str,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Result<serde_json::Value, HttpError> {
        let r = self.request("PUT", path, Some(&body.to_string()), timeout)?;
        if r.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(serde_json::json!({}));
        }
        serde_json::from_slice(&r.body).map_err(|e| HttpError::Malformed {
            url: self.url(path),
            what: format!("the answer is not JSON ({e})"),
        })
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        timeout: Duration,
    ) -> Result<Response, HttpError> {
        let url = self.url(path);
        // One request per connection: a server may close an idle kept-alive connection just as
        // it is reused (a race no retry-free client can win), and a few connections a second
        // cost nothing measurable for a monitoring client.
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Accept", "application/json")
            .header("Connection", "close");
        if body.is_some() {
            req = req.header("Content-Type", "application/json");
        }
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let req = req
            .body(body.unwrap_or("").to_string())
            .map_err(|e| HttpError::Malformed {
                url: url.clone(),
                what: format!("cannot build the request: {e}"),
            })?;
        let req = self
            .agent
            .configure_request(req)
            .timeout_global(Some(timeout))
            .build();
        let mut response = self
            .agent
            .run(req)
            .map_err(|e| transport_error(&url, e, timeout))?;
        let status = response.status();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| transport_error(&url, e, timeout))?;
        if !status.is_success() {
            return Err(HttpError::Status {
                url,
                status: status.as_u16(),
                reason: status.canonical_reason().unwrap_or("").to_string(),
                message: error_message(&body),
            });
        }
        Ok(Response {
            status: status.as_u16(),
            body,
        })
    }
}

/// `http(s)://host[:port][/prefix]` → scheme, host, port, prefix; errors say what is wrong.
fn parse_url(url: &str) -> Result<(Scheme, String, u16, String), String> {
    let url = url.trim();
    let (scheme, rest) = match url.split_once("://") {
        Some((s, rest)) if s.eq_ignore_ascii_case("http") => (Scheme::Http, rest),
        Some((s, rest)) if s.eq_ignore_ascii_case("https") => (Scheme::Https, rest),
        Some((s, _)) => {
            return Err(format!(
                "unsupported URL `{url}`: scheme `{s}` is not supported, only http:// and https://"
            ))
        }
        None => {
            return Err(format!(
                "invalid URL `{url}`: expected http(s)://host:port, e.g. http://127.0.0.1:8081"
            ))
        }
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if path.contains(['?', '#']) {
        return Err(format!(
            "invalid URL `{url}`: give the REST API's base URL, without a query or fragment"
        ));
    }
    if authority.contains('@') {
        return Err(format!(
            "invalid URL `{url}`: user names and passwords are not supported (use --token)"
        ));
    }
    let (host, port) = if let Some(after) = authority.strip_prefix('[') {
        // IPv6 literal: [::1]:8081
        let (addr, tail) = after
            .split_once(']')
            .ok_or_else(|| format!("invalid URL `{url}`: unclosed `[` in the host"))?;
        let port =
            match tail {
                "" => None,
                t => Some(t.strip_prefix(':').ok_or_else(|| {
                    format!("invalid URL `{url}`: unexpected `{t}` after the host")
                })?),
            };
        (format!("[{addr}]"), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(format!("invalid URL `{url}`: no host"));
    }
    let port = match port {
        None if scheme == Scheme::Https => 443,
        None => 80,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("invalid URL `{url}`: bad port `{p}`"))?,
    };
    Ok((scheme, host, port, path.trim_end_matches('/').to_string()))
}

/// The certificates of a PEM file (`--ca-cert`).
fn read_ca(path: &std::path::Path) -> Result<Vec<Certificate<'static>>, String> {
    let pem = std::fs::read(path)
        .map_err(|e| format!("cannot read --ca-cert {}: {e}", path.display()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(format!("--ca-cert {}: not PEM ({e})", path.display())),
        }
    }
    if certs.is_empty() {
        return Err(format!(
            "--ca-cert {}: no certificate in it (expected PEM `-----BEGIN CERTIFICATE-----`)",
            path.display()
        ));
    }
    Ok(certs)
}

/// The operating system's root certificates; Mozilla's (built in) if none can be loaded.
fn system_roots() -> RootCerts {
    let found = rustls_native_certs::load_native_certs();
    let certs: Vec<Certificate<'static>> = found
        .certs
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    if certs.is_empty() {
        RootCerts::WebPki
    } else {
        RootCerts::Specific(Arc::new(certs))
    }
}

fn transport_error(url: &str, e: ureq::Error, timeout: Duration) -> HttpError {
    let url = url.to_string();
    match e {
        ureq::Error::Timeout(_) => HttpError::Timeout {
            url,
            after: timeout,
        },
        ureq::Error::HostNotFound => HttpError::Unreachable {
            url,
            reason: "cannot resolve the host".into(),
        },
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            HttpError::Unreachable {
                url,
                reason: format!("connection refused {NOTHING_THERE}"),
            }
        }
        ureq::Error::Io(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            HttpError::Timeout {
                url,
                after: timeout,
            }
        }
        ureq::Error::ConnectionFailed => HttpError::Unreachable {
            url,
            reason: format!("the connection failed {NOTHING_THERE}"),
        },
        ureq::Error::Rustls(e) => HttpError::Tls {
            url,
            reason: tls_reason(&e.to_string()),
        },
        ureq::Error::Tls(e) => HttpError::Tls {
            url,
            reason: tls_reason(e),
        },
        ureq::Error::Io(e) if e.to_string().contains("certificate") => HttpError::Tls {
            url,
            reason: tls_reason(&e.to_string()),
        },
        ureq::Error::Io(err) => HttpError::Io { url, err },
        other => HttpError::Malformed {
            url,
            what: other.to_string(),
        },
    }
}

fn tls_reason(e: &str) -> String {
    if e.contains("certificate") || e.contains("UnknownIssuer") {
        format!(
            "{e} (trust the server's CA with --ca-cert PEM, or skip verification with --insecure \
             for testing)"
        )
    } else {
        e.to_string()
    }
}

const NOTHING_THERE: &str = "(is a job running with its REST server?)";

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

fn snippet(s: &str, max: usize) -> String {
    let s = s.trim();
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > max || line.len() < s.len() {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// The message of an error body: Flink's `{"errors":["…", …]}` (first line of each, since Flink
/// appends server-side stack traces), otherwise the first line of the body as text.
pub fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        if let Some(errors) = v.get("errors").and_then(|e| e.as_array()) {
            let parts: Vec<String> = errors
                .iter()
                .filter_map(|e| e.as_str())
                .map(|e| snippet(e, 200))
                .filter(|e| !e.is_empty())
                .collect();
            if !parts.is_empty() {
                return Some(parts.join("; "));
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let s = snippet(&text, 200);
    (!s.is_empty()).then_some(s)
}

/// A request that did not produce a 2xx answer.
#[derive(Debug)]
pub enum HttpError {
    /// Name resolution or the TCP connection failed (`reason` says which, with a hint).
    Unreachable { url: String, reason: String },
    /// The TLS handshake failed (e.g. an untrusted certificate), with a hint.
    Tls { url: String, reason: String },
    /// Connected, but the server did not answer within the timeout.
    Timeout { url: String, after: Duration },
    /// Reading or writing failed mid-way.
    Io { url: String, err: std::io::Error },
    /// The answer is not HTTP as expected (or not JSON where JSON was asked for).
    Malformed { url: String, what: String },
    /// A non-2xx status, with the server's own error message when it sent one.
    Status {
        url: String,
        status: u16,
        reason: String,
        message: Option<String>,
    },
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Unreachable { url, reason } => write!(f, "cannot reach {url}: {reason}"),
            HttpError::Tls { url, reason } => write!(f, "TLS with {url} failed: {reason}"),
            HttpError::Timeout { url, after } => {
                write!(f, "no answer from {url} within {}", secs(*after))
            }
            HttpError::Io { url, err } => write!(f, "talking to {url}: {err}"),
            HttpError::Malformed { url, what } => write!(f, "bad answer from {url}: {what}"),
            HttpError::Status {
                url,
                status,
                reason,
                message,
            } => {
                write!(f, "{url} answered {status}")?;
                if !reason.is_empty() {
                    write!(f, " {reason}")?;
                }
                if let Some(m) = message {
                    write!(f, ": {m}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for HttpError {}

/// A 2xx answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Deepest JSON nesting [`parse_json`] reads: a flame graph of Flink's default stack depth
/// (100 frames) nests about 200 levels, beyond serde_json's default limit of 128.
pub const MAX_JSON_DEPTH: usize = 1024;

/// Parses JSON nested up to [`MAX_JSON_DEPTH`] levels (checked first with a scan of the bytes,
/// so a hostile body cannot exhaust the stack).
pub fn parse_json(body: &[u8]) -> Result<serde_json::Value, String> {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if max > MAX_JSON_DEPTH {
        return Err(format!(
            "nested {max} levels deep (at most {MAX_JSON_DEPTH} are read)"
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    de.disable_recursion_limit();
    let v = serde::Deserialize::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    #[test]
    fn url_parsing() {
        let e = Endpoint::parse("http://127.0.0.1:8081").unwrap();
        assert_eq!(
            e.url("/jobs/overview"),
            "http://127.0.0.1:8081/jobs/overview"
        );
        let e = Endpoint::parse("HTTP://flink.example:9000/proxy/flink/").unwrap();
        assert_eq!(e.url("/jobs"), "http://flink.example:9000/proxy/flink/jobs");
        let e = Endpoint::parse("http://localhost").unwrap();
        assert_eq!(e.base_url(), "http://localhost:80");
        let e = Endpoint::parse("http://[::1]:8081/").unwrap();
        assert_eq!(e.base_url(), "http://[::1]:8081");
        let e = Endpoint::parse("https://flink.example").unwrap();
        assert_eq!(e.base_url(), "https://flink.example:443");
        let err = Endpoint::parse("ftp://flink:8081").unwrap_err();
        assert!(err.contains("ftp") && err.contains("https://"), "{err}");
        for bad in [
            "127.0.0.1:8081",
            "http://",
            "http://:8081",
            "http://host:0",
            "http://host:99999",
            "http://host:80x",
            "http://u:p@host:1",
            "http://host:1/jobs?x=1",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bad_ca_file_is_named() {
        let dir = std::env::temp_dir().join(format!("sluice-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("not-pem.txt");
        std::fs::write(&f, "hello").unwrap();
        let args = ClientArgs {
            ca_cert: Some(f.clone()),
            ..Default::default()
        };
        let err = Endpoint::with("https://x:1", &args).unwrap_err();
        assert!(
            err.contains("no certificate") && err.contains("not-pem.txt"),
            "{err}"
        );
        let args = ClientArgs {
            ca_cert: Some(dir.join("missing.pem")),
            ..Default::default()
        };
        let err = Endpoint::with("https://x:1", &args).unwrap_err();
        assert!(err.starts_with("cannot read --ca-cert"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn flink_error_messages() {
        let body = br#"{"errors":["Job could not be found.","<Exception on server side:\norg.apache...>"]}"#;
        assert_eq!(
            error_message(body).unwrap(),
            "Job could not be found.; <Exception on server side:…"
        );
        assert_eq!(error_message(b"plain text\nmore").unwrap(), "plain text…");
        assert_eq!(error_message(b""), None);
    }

    /// A server that answers one connection with `answer` and hands back the request head.
    fn serve_once(answer: &'static [u8]) -> (Endpoint, std::thread::JoinHandle<Vec<String>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                head.push(line.trim().to_string());
            }
            s.write_all(answer).unwrap();
            head
        });
        let args = ClientArgs {
            token: Some("t0k".into()),
            ..Default::default()
        };
        (
            Endpoint::with(&format!("http://127.0.0.1:{port}"), &args).unwrap(),
            h,
        )
    }

    #[test]
    fn non_2xx_shows_flinks_error_message_and_the_token_is_sent() {
        let (ep, head) = serve_once(
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 38\r\n\r\n\
              {\"errors\":[\"Job could not be found.\"]}",
        );
        let err = ep
            .get_json("/jobs/abc", Duration::from_secs(5))
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(&ep.url("/jobs/abc")), "{msg}");
        assert!(
            msg.contains("404 Not Found: Job could not be found."),
            "{msg}"
        );
        let head = head.join().unwrap().join("\n").to_ascii_lowercase();
        assert!(head.contains("authorization: bearer t0k"), "{head}");
    }

    #[test]
    fn non_json_body_is_reported() {
        let (ep, _) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<html>hi</html>");
        let msg = ep
            .get_json("/x", Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("not JSON") && msg.contains("<html>"), "{msg}");
    }

    #[test]
    fn refused_connection_names_the_url() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let msg = ep
            .get("/jobs/overview", Duration::from_secs(2))
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(&format!(
                "cannot reach http://127.0.0.1:{port}/jobs/overview: connection refused \
                 (is a job running with its REST server?)"
            )),
            "{msg}"
        );
    }

    #[test]
    fn silent_server_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let ep = Endpoint::parse(&format!("http://{}", l.local_addr().unwrap())).unwrap();
        let err = ep.get("/x", Duration::from_millis(300)).unwrap_err();
        assert!(matches!(err, HttpError::Timeout { .. }), "{err}");
        drop(l);
    }
}
