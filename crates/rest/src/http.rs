//! HTTP/1.1 request parsing and response writing: the small subset a monitoring API needs.
//! Everything here is pure (bytes in, values out) so it is tested without sockets.

use std::fmt::Write as _;

/// Longest request line accepted (method + target + version); longer → 414.
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// Longest request head (request line + headers) accepted; longer → 431.
pub const MAX_HEAD: usize = 16 * 1024;
/// Largest request body accepted (bodies are read and ignored); larger → 413.
pub const MAX_BODY: usize = 64 * 1024;

/// Decoded query parameters in order.
pub type Query = Vec<(String, String)>;

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    /// Percent-decoded path segments, empty segments dropped (`//a/` = `/a`).
    pub segments: Vec<String>,
    /// Percent-decoded query parameters in order (`+` is a space).
    pub query: Query,
    /// `Content-Length`, 0 when absent.
    pub content_length: usize,
}

/// A response ready to be written.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Extra headers (`Allow` on 405).
    pub headers: Vec<(&'static str, String)>,
}

pub const JSON: &str = "application/json; charset=UTF-8";
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";
pub const HTML: &str = "text/html; charset=utf-8";

impl Response {
    pub fn json(status: u16, body: String) -> Response {
        Response {
            status,
            content_type: JSON,
            body: body.into_bytes(),
            headers: Vec::new(),
        }
    }

    /// Flink's error body: `{"errors":["..."]}`.
    pub fn error(status: u16, message: &str) -> Response {
        let body = sluice_graph::Json::obj()
            .with("errors", vec![sluice_graph::Json::from(message)])
            .to_compact();
        Response::json(status, body)
    }

    /// Serialises status line, headers and (unless `head_only`) the body.
    pub fn to_bytes(&self, head_only: bool) -> Vec<u8> {
        let mut out = String::with_capacity(256);
        let _ = write!(
            out,
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (k, v) in &self.headers {
            let _ = write!(out, "{k}: {v}\r\n");
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if !head_only {
            bytes.extend_from_slice(&self.body);
        }
        bytes
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "Unknown",
    }
}

/// Why a request head could not be parsed: the status to answer with and a reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRequest {
    pub status: u16,
    pub reason: String,
}

fn bad(status: u16, reason: impl Into<String>) -> BadRequest {
    BadRequest {
        status,
        reason: reason.into(),
    }
}

/// Position just past the blank line ending the head (`\r\n\r\n`, or a bare `\n\n`).
pub fn head_end(buf: &[u8]) -> Option<usize> {
    for i in 0..buf.len() {
        if buf[i..].starts_with(b"\r\n\r\n") {
            return Some(i + 4);
        }
        if buf[i..].starts_with(b"\n\n") {
            return Some(i + 2);
        }
    }
    None
}

/// Checks a partial head for limits before the blank line has arrived.
pub fn check_partial_head(buf: &[u8]) -> Result<(), BadRequest> {
    let line_len = buf.iter().position(|&b| b == b'\n').unwrap_or(buf.len());
    if line_len > MAX_REQUEST_LINE {
        return Err(bad(
            414,
            format!("Request line longer than {MAX_REQUEST_LINE} bytes"),
        ));
    }
    if buf.len() > MAX_HEAD {
        return Err(bad(
            431,
            format!("Request head longer than {MAX_HEAD} bytes"),
        ));
    }
    Ok(())
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses a complete request head (request line and headers, up to the blank line).
pub fn parse_head(head: &[u8]) -> Result<RequestHead, BadRequest> {
    check_partial_head(head)?;
    let text =
        std::str::from_utf8(head).map_err(|_| bad(400, "Request head is not valid UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(
            400,
            "Malformed request line: expected 'METHOD target HTTP/1.1'",
        ));
    };
    if method.is_empty() || !method.bytes().all(is_tchar) {
        return Err(bad(400, "Malformed request method"));
    }
    if !(version == "HTTP/1.1" || version == "HTTP/1.0") {
        return Err(bad(
            400,
            "Unsupported HTTP version: only HTTP/1.0 and HTTP/1.1",
        ));
    }
    let mut content_length = 0usize;
    for line in lines {
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(400, "Malformed header line"));
        };
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(bad(400, "Malformed header name"));
        }
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .parse()
                .map_err(|_| bad(400, "Content-Length is not a number"))?;
            if n > MAX_BODY as u64 {
                return Err(bad(
                    413,
                    format!("Request body larger than {MAX_BODY} bytes"),
                ));
            }
            content_length = n as usize;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(bad(
                400,
                "Transfer-Encoding is not supported: send a Content-Length (no endpoint reads a body)",
            ));
        }
    }
    let (segments, query) = parse_target(target)?;
    Ok(RequestHead {
        method: method.to_string(),
        segments,
        query,
        content_length,
    })
}

/// Splits a request target into decoded path segments and query parameters.
pub fn parse_target(target: &str) -> Result<(Vec<String>, Query), BadRequest> {
    // absolute-form (`http://host:port/path`) is allowed by HTTP/1.1.
    let target = if let Some(rest) = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"))
    {
        match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        }
    } else {
        target
    };
    if !target.starts_with('/') {
        return Err(bad(400, "Request target must start with '/'"));
    }
    let target = target.split('#').next().unwrap_or("");
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (target, ""),
    };
    let mut segments = Vec::new();
    for raw in path.split('/').filter(|s| !s.is_empty()) {
        let seg = percent_decode(raw, false)
            .map_err(|e| bad(400, format!("Bad path segment '{}': {e}", shorten(raw))))?;
        segments.push(seg);
    }
    let mut params = Vec::new();
    for pair in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = percent_decode(k, true)
            .map_err(|e| bad(400, format!("Bad query parameter '{}': {e}", shorten(k))))?;
        let v = percent_decode(v, true).map_err(|e| {
            bad(
                400,
                format!("Bad value of query parameter '{}': {e}", shorten(&k)),
            )
        })?;
        params.push((k, v));
    }
    Ok((segments, params))
}

/// Cuts a string for use in an error message.
pub fn shorten(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(MAX).collect();
        out.push('…');
        out
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes (and `+` as space in queries); the result must be UTF-8.
pub fn percent_decode(s: &str, plus_is_space: bool) -> Result<String, &'static str> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let (Some(h), Some(l)) = (
                    bytes.get(i + 1).copied().and_then(hex),
                    bytes.get(i + 2).copied().and_then(hex),
                ) else {
                    return Err("invalid percent escape");
                };
                out.push(h * 16 + l);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "not valid UTF-8 after percent-decoding")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_request_head() {
        let h = parse_head(b"GET /jobs/ab%20c/?get=a,b&agg=min+max&x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n").unwrap();
        assert_eq!(h.method, "GET");
        assert_eq!(h.segments, vec!["jobs", "ab c"]);
        assert_eq!(
            h.query,
            vec![
                ("get".into(), "a,b".into()),
                ("agg".into(), "min max".into()),
                ("x".into(), "".into())
            ]
        );
        assert_eq!(h.content_length, 3);
        let h = parse_head(b"GET http://localhost:8081/overview HTTP/1.0\n\n").unwrap();
        assert_eq!(h.segments, vec!["overview"]);
    }

    #[test]
    fn rejects_malformed_heads_with_4xx() {
        for (head, status) in [
            (&b"GET /a\r\n\r\n"[..], 400),
            (b"GET /a HTTP/2.0\r\n\r\n", 400),
            (b"G(T /a HTTP/1.1\r\n\r\n", 400),
            (b"GET a HTTP/1.1\r\n\r\n", 400),
            (b"GET /%zz HTTP/1.1\r\n\r\n", 400),
            (b"GET /%ff%fe HTTP/1.1\r\n\r\n", 400),
            (b"GET /?a=%e2%82 HTTP/1.1\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
            (b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400),
        ] {
            let e = parse_head(head).unwrap_err();
            assert_eq!(e.status, status, "{}", String::from_utf8_lossy(head));
        }
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_REQUEST_LINE));
        assert_eq!(parse_head(long.as_bytes()).unwrap_err().status, 414);
    }

    #[test]
    fn finds_the_end_of_the_head() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }

    #[test]
    fn error_bodies_are_flinks() {
        let r = Response::error(404, "Job x not found");
        assert_eq!(r.body, br#"{"errors":["Job x not found"]}"#);
        let bytes = String::from_utf8(r.to_bytes(true)).unwrap();
        assert!(bytes.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(bytes.ends_with("\r\n\r\n"));
    }
}
