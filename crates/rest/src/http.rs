//! The request and response values of the API, and what hyper leaves to us: splitting a
//! request target into percent-decoded path segments and query parameters (decoded by
//! `percent-encoding`, with malformed escapes and non-UTF-8 refused), and the limits the
//! server enforces. Everything here is pure (strings in, values out), tested without sockets.

/// Longest request target accepted (path and query); longer → 414.
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// Longest request head (request line + headers) accepted; longer → 431 (by hyper).
pub const MAX_HEAD: usize = 16 * 1024;
/// Largest request body accepted (only the savepoint endpoints read one); larger → 413.
pub const MAX_BODY: usize = 64 * 1024;

/// Decoded query parameters in order.
pub type Query = Vec<(String, String)>;

/// A response ready to be sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body, sent as is.
    pub body: Vec<u8>,
    /// Extra headers (`Allow` on 405, `WWW-Authenticate` on 401).
    pub headers: Vec<(&'static str, String)>,
}

pub const JSON: &str = "application/json; charset=UTF-8";
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";
pub const HTML: &str = "text/html; charset=utf-8";

impl Response {
    /// A JSON answer with `status`.
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
        let body = sluice_plan::Json::obj()
            .with("errors", vec![sluice_plan::Json::from(message)])
            .to_compact();
        Response::json(status, body)
    }
}

/// Why a request target could not be parsed: the status to answer with and a reason.
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

/// Decodes `%XX` escapes (and `+` as space in queries); the result must be UTF-8. Stricter
/// than `percent-encoding` alone, which passes a malformed escape (`%zz`, a lone `%`) through:
/// that is refused here, as a client that sends one has encoded something wrong.
pub fn percent_decode(s: &str, plus_is_space: bool) -> Result<String, &'static str> {
    let bytes = s.as_bytes();
    for (i, _) in s.match_indices('%') {
        let hex = |k: usize| bytes.get(i + k).is_some_and(u8::is_ascii_hexdigit);
        if !(hex(1) && hex(2)) {
            return Err("invalid percent escape");
        }
    }
    let spaced;
    let s = if plus_is_space && s.contains('+') {
        spaced = s.replace('+', " ");
        spaced.as_str()
    } else {
        s
    };
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|d| d.into_owned())
        .map_err(|_| "not valid UTF-8 after percent-decoding")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_request_target() {
        let (segments, query) = parse_target("/jobs/ab%20c/?get=a,b&agg=min+max&x").unwrap();
        assert_eq!(segments, vec!["jobs", "ab c"]);
        assert_eq!(
            query,
            vec![
                ("get".into(), "a,b".into()),
                ("agg".into(), "min max".into()),
                ("x".into(), "".into())
            ]
        );
        let (segments, _) = parse_target("http://localhost:8081/overview").unwrap();
        assert_eq!(segments, vec!["overview"]);
        let (segments, query) = parse_target("/a%2Fb/%E2%82%AC?k%3D=v%26w+%2B").unwrap();
        assert_eq!(segments, vec!["a/b", "€"]);
        assert_eq!(query, vec![("k=".into(), "v&w +".into())]);
        let (segments, _) = parse_target("//a//b/#frag").unwrap();
        assert_eq!(segments, vec!["a", "b"]);
    }

    #[test]
    fn rejects_malformed_targets_with_400() {
        for target in [
            "a",
            "*",
            "/%zz",
            "/%ff%fe",
            "/?a=%e2%82",
            "/%",
            "/%f",
            "/%c0%af",
            "/a?%",
            "/a?x=%4",
            "/a?x=%%41",
        ] {
            let e = parse_target(target).unwrap_err();
            assert_eq!(e.status, 400, "{target}");
        }
    }

    #[test]
    fn error_bodies_are_flinks() {
        let r = Response::error(404, "Job x not found");
        assert_eq!(r.body, br#"{"errors":["Job x not found"]}"#);
        assert_eq!(r.content_type, JSON);
    }
}
