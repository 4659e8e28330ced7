//! A minimal HTTP/1.1 client for Flink-compatible REST APIs, over `std::net::TcpStream`.
//!
//! Only what `sluice top` needs: plain `http://host:port[/prefix]` URLs (no TLS), `GET`, one request
//! per connection (`Connection: close`), response bodies framed by `Content-Length`, by chunked
//! transfer encoding or by the end of the stream, a timeout on connect and on every read/write, and
//! errors that name the URL (and, for a non-2xx answer, the message in Flink's `{"errors":[…]}`).

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Largest response body accepted (a safety net against a runaway server).
const MAX_BODY: usize = 64 << 20;
/// Longest status, header, chunk-size or trailer line accepted.
const MAX_LINE: usize = 16 << 10;
/// Most header lines accepted in one response.
const MAX_HEADERS: usize = 256;

/// Where a REST API lives: `http://host:port` plus an optional path prefix (a reverse proxy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host as written, IPv6 literals with their brackets (used for `Host:` and messages).
    host: String,
    port: u16,
    /// Path prefix without a trailing `/`; empty for the root.
    prefix: String,
}

impl Endpoint {
    /// Parses `http://host[:port][/prefix]`; the port defaults to 80. Other schemes are refused.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let url = url.trim();
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => {
                return Err(format!(
                    "unsupported URL `{url}`: scheme `{scheme}` is not supported, only plain \
                     http://host:port (no TLS)"
                ))
            }
            None => {
                return Err(format!(
                    "invalid URL `{url}`: expected http://host:port, e.g. http://127.0.0.1:8081"
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
                "invalid URL `{url}`: user names and passwords are not supported"
            ));
        }
        let (host, port) = if let Some(after) = authority.strip_prefix('[') {
            // IPv6 literal: [::1]:8081
            let (addr, tail) = after
                .split_once(']')
                .ok_or_else(|| format!("invalid URL `{url}`: unclosed `[` in the host"))?;
            let port = match tail {
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
            None => 80,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("invalid URL `{url}`: bad port `{p}`"))?,
        };
        Ok(Endpoint {
            host,
            port,
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// The base URL, normalised: `http://host:port[/prefix]`.
    pub fn base_url(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.prefix)
    }

    /// The full URL of a request path (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// `GET path`; succeeds only with a 2xx answer.
    pub fn get(&self, path: &str, timeout: Duration) -> Result<Response, HttpError> {
        self.request("GET", path, None, timeout)
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

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        timeout: Duration,
    ) -> Result<Response, HttpError> {
        let url = self.url(path);
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<_> = (host, self.port)
            .to_socket_addrs()
            .map_err(|e| HttpError::Unreachable {
                url: url.clone(),
                reason: format!("cannot resolve host `{}` ({e})", self.host),
            })?
            .collect();
        let mut last_err = None;
        let mut stream = None;
        for addr in &addrs {
            match TcpStream::connect_timeout(addr, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last_err = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| HttpError::Unreachable {
            url: url.clone(),
            reason: match last_err {
                Some(e) => connect_reason(&e, timeout),
                None => format!("host `{}` has no address", self.host),
            },
        })?;
        let io_err = |e: io::Error| {
            if is_timeout(&e) {
                HttpError::Timeout {
                    url: url.clone(),
                    after: timeout,
                }
            } else {
                HttpError::Io {
                    url: url.clone(),
                    err: e,
                }
            }
        };
        stream.set_read_timeout(Some(timeout)).map_err(io_err)?;
        stream.set_write_timeout(Some(timeout)).map_err(io_err)?;
        let body = body.unwrap_or("");
        let request = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: sluice/{}\r\n\
             Accept: application/json\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.prefix,
            self.host,
            self.port,
            env!("CARGO_PKG_VERSION"),
            body.len()
        );
        (&stream).write_all(request.as_bytes()).map_err(io_err)?;
        let mut reader = BufReader::new(&stream);
        let response = read_response(&mut reader).map_err(|e| match e {
            ReadError::Io(e) => io_err(e),
            ReadError::Malformed(what) => HttpError::Malformed {
                url: url.clone(),
                what,
            },
        })?;
        if !(200..300).contains(&response.status) {
            return Err(HttpError::Status {
                url,
                status: response.status,
                reason: response.reason.clone(),
                message: error_message(&response.body),
            });
        }
        Ok(response)
    }

    /// `GET path` and parse the body as JSON.
    pub fn get_json(&self, path: &str, timeout: Duration) -> Result<serde_json::Value, HttpError> {
        let response = self.get(path, timeout)?;
        serde_json::from_slice(&response.body).map_err(|e| HttpError::Malformed {
            url: self.url(path),
            what: format!(
                "the body is not JSON ({e}): {}",
                snippet(&String::from_utf8_lossy(&response.body), 80)
            ),
        })
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

fn connect_reason(e: &io::Error, timeout: Duration) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => format!("connection refused {NOTHING_THERE}"),
        _ if is_timeout(e) => format!("no connection within {} {NOTHING_THERE}", secs(timeout)),
        _ => e.to_string(),
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
    /// Connected, but the server did not answer within the timeout.
    Timeout { url: String, after: Duration },
    /// Reading or writing failed mid-way.
    Io { url: String, err: io::Error },
    /// The answer is not HTTP/1.x as expected (or not JSON where JSON was asked for).
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

/// A parsed response (header names as sent, values trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Why a response could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    Malformed(String),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ReadError::Malformed("the connection closed in the middle of the response".into())
        } else {
            ReadError::Io(e)
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::Malformed(m) => write!(f, "{m}"),
        }
    }
}

fn malformed<T>(what: impl Into<String>) -> Result<T, ReadError> {
    Err(ReadError::Malformed(what.into()))
}

/// One CRLF- (or LF-) terminated line without its terminator; `None` at a clean end of stream.
fn read_line<R: BufRead>(r: &mut R) -> Result<Option<String>, ReadError> {
    let mut buf = Vec::new();
    let n = r.take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        return if buf.len() > MAX_LINE {
            malformed("a header line is too long")
        } else {
            malformed("the connection closed in the middle of a header line")
        };
    }
    buf.pop();
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// Reads one HTTP/1.x response (skipping interim 1xx answers) from `r`.
pub fn read_response<R: BufRead>(r: &mut R) -> Result<Response, ReadError> {
    loop {
        let Some(status_line) = read_line(r)? else {
            return malformed("the server closed the connection without answering");
        };
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or("");
        let code = parts.next().unwrap_or("");
        let reason = parts.next().unwrap_or("").trim().to_string();
        if !version.starts_with("HTTP/1.") {
            return malformed(format!(
                "not an HTTP/1.x status line: `{}`",
                snippet(&status_line, 60)
            ));
        }
        let status = match code.parse::<u16>() {
            Ok(s) if (100..1000).contains(&s) => s,
            _ => return malformed(format!("bad status code `{code}`")),
        };
        let mut headers = Vec::new();
        loop {
            let Some(line) = read_line(r)? else {
                return malformed("the connection closed in the middle of the headers");
            };
            if line.is_empty() {
                break;
            }
            if headers.len() == MAX_HEADERS {
                return malformed("too many headers");
            }
            let Some((name, value)) = line.split_once(':') else {
                return malformed(format!("bad header line `{}`", snippet(&line, 60)));
            };
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        if (100..200).contains(&status) {
            continue; // 100 Continue and friends: the real answer follows
        }
        let mut response = Response {
            status,
            reason,
            headers,
            body: Vec::new(),
        };
        response.body = read_body(r, &response)?;
        return Ok(response);
    }
}

fn read_body<R: BufRead>(r: &mut R, resp: &Response) -> Result<Vec<u8>, ReadError> {
    if resp.status == 204 || resp.status == 304 {
        return Ok(Vec::new());
    }
    let chunked = resp
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .next_back()
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"));
    if chunked {
        return read_chunked(r);
    }
    let mut length: Option<usize> = None;
    for (_, v) in resp
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
    {
        let n = match v.parse::<usize>() {
            Ok(n) => n,
            Err(_) => return malformed(format!("bad Content-Length `{v}`")),
        };
        if length.is_some_and(|l| l != n) {
            return malformed("conflicting Content-Length headers");
        }
        length = Some(n);
    }
    match length {
        Some(n) if n > MAX_BODY => malformed(format!("the body is too large ({n} bytes)")),
        Some(n) => {
            let mut body = vec![0; n];
            read_exact(r, &mut body)?;
            Ok(body)
        }
        None => {
            // No framing: the body runs to the end of the connection (we asked for close).
            let mut body = Vec::new();
            r.take(MAX_BODY as u64 + 1).read_to_end(&mut body)?;
            if body.len() > MAX_BODY {
                return malformed("the body is too large");
            }
            Ok(body)
        }
    }
}

fn read_exact<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<(), ReadError> {
    let mut done = 0;
    while done < buf.len() {
        match r.read(&mut buf[done..]) {
            Ok(0) => {
                return malformed(format!(
                    "the connection closed after {done} of {} body bytes",
                    buf.len()
                ))
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn read_chunked<R: BufRead>(r: &mut R) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let Some(line) = read_line(r)? else {
            return malformed("the connection closed before the last chunk");
        };
        let size_text = line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            return malformed(format!("bad chunk size `{}`", snippet(&line, 40)));
        };
        if size == 0 {
            // Trailers until an empty line; a server that just closes is forgiven.
            while let Some(trailer) = read_line(r)? {
                if trailer.is_empty() {
                    break;
                }
            }
            return Ok(body);
        }
        if body.len().saturating_add(size) > MAX_BODY {
            return malformed("the body is too large");
        }
        let start = body.len();
        body.resize(start + size, 0);
        read_exact(r, &mut body[start..])?;
        match read_line(r)? {
            Some(l) if l.is_empty() => {}
            _ => return malformed("a chunk is not followed by CRLF"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn parse(raw: &[u8]) -> Result<Response, ReadError> {
        let mut r = raw;
        read_response(&mut r)
    }

    #[test]
    fn content_length_body() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=UTF-8\r\n\
                    content-length: 11\r\n\r\n{\"jobs\":[]}trailing garbage";
        let r = parse(raw).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.reason, "OK");
        assert_eq!(r.body, b"{\"jobs\":[]}");
        assert_eq!(
            r.headers[0],
            (
                "Content-Type".into(),
                "application/json; charset=UTF-8".into()
            )
        );
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                    4\r\n{\"a\"\r\nA;name=value\r\n:[1,2,3,4]\r\n1\r\n}\r\n0\r\nX-Trailer: 1\r\n\r\n";
        let r = parse(raw).unwrap();
        assert_eq!(r.body, b"{\"a\":[1,2,3,4]}");
    }

    #[test]
    fn chunked_wins_over_content_length_and_accepts_uppercase_hex() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n\
                    1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n";
        assert_eq!(parse(raw).unwrap().body, b"abcdefghijklmnopqrstuvwxyz");
    }

    #[test]
    fn body_to_end_of_stream_and_bare_lf_lines() {
        let raw = b"HTTP/1.0 404 Not Found\nServer: x\n\n{\"errors\":[\"Not found.\"]}";
        let r = parse(raw).unwrap();
        assert_eq!(r.status, 404);
        assert_eq!(r.body, b"{\"errors\":[\"Not found.\"]}");
    }

    #[test]
    fn interim_100_continue_is_skipped() {
        let raw =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
        let r = parse(raw).unwrap();
        assert_eq!(r.status, 204);
        assert!(r.body.is_empty());
    }

    #[test]
    fn truncated_and_malformed_responses_are_errors() {
        let cases: [&[u8]; 7] = [
            b"",
            b"SSH-2.0-OpenSSH_9.6\r\n",
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ];
        for raw in cases {
            match parse(raw) {
                Err(ReadError::Malformed(_)) => {}
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
            }
        }
    }

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
        let err = Endpoint::parse("https://flink:8081").unwrap_err();
        assert!(err.contains("https") && err.contains("http://"), "{err}");
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
    fn flink_error_messages() {
        let body = br#"{"errors":["Job could not be found.","<Exception on server side:\norg.apache...>"]}"#;
        assert_eq!(
            error_message(body).unwrap(),
            "Job could not be found.; <Exception on server side:…"
        );
        assert_eq!(error_message(b"plain text\nmore").unwrap(), "plain text…");
        assert_eq!(error_message(b""), None);
    }

    /// A server that answers one connection with `answer`.
    fn serve_once(answer: &'static [u8]) -> Endpoint {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            while read_line(&mut r).unwrap().is_some_and(|l| !l.is_empty()) {}
            s.write_all(answer).unwrap();
        });
        Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap()
    }

    #[test]
    fn non_2xx_shows_flinks_error_message() {
        let ep = serve_once(
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
    }

    #[test]
    fn non_json_body_is_reported() {
        let ep = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<html>hi</html>");
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
        let err = ep.get("/x", Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, HttpError::Timeout { .. }), "{err}");
        drop(l);
    }
}
