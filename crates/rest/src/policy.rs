//! Who may do what, so that no web page and no network peer can steer a job by default:
//!
//! - **Host** (every request): the `Host` header (or an absolute target's authority) must name
//!   the address the connection arrived at, `localhost` on a loopback address, or a configured
//!   name. A DNS-rebinding page (`evil.example` resolving to 127.0.0.1) sends its own name and
//!   is refused with 403. A request without `Host` (HTTP/1.0 tools) is accepted: browsers
//!   always send one.
//! - **Mutating routes** (cancel, stop, savepoints; [`crate::routes::Operation::mutating`]):
//!   `Content-Type: application/json` (415 otherwise: a browser can send that cross-origin
//!   only after a CORS preflight, which is never granted), no `Origin` other than this server
//!   (403), and the bearer token when one is configured (401).
//! - **CORS**: `Access-Control-Allow-Origin: *` only on read-only answers (Flink's monitoring
//!   API is read by other web tools); never on mutating routes.
//! - **Bind**: a non-loopback address without a token is refused before listening.

use std::net::{IpAddr, SocketAddr};

use crate::http::{shorten, Response};

/// The security settings of a server (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// The bearer token mutating routes require; `None`: none required (loopback only).
    token: Option<String>,
    /// Lower-cased `name` or `name:port` entries accepted in `Host` besides the bound address.
    allowed_hosts: Vec<String>,
}

/// A refused request: the answer to send.
pub type Refusal = Response;

impl Policy {
    /// A policy with `token` (an empty one is none) and the extra host names `Host` may carry
    /// besides loopback ones (compared without case or a trailing dot).
    pub fn new(token: Option<String>, allowed_hosts: &[String]) -> Policy {
        Policy {
            token: token.filter(|t| !t.is_empty()),
            allowed_hosts: allowed_hosts
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
        }
    }

    /// Whether mutating routes need a bearer token.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Why serving on `addr` is refused, if it is: a non-loopback address needs a token.
    pub fn bind_refusal(&self, addr: SocketAddr) -> Option<String> {
        if addr.ip().is_loopback() || self.token.is_some() {
            return None;
        }
        Some(format!(
            "refusing to serve the REST API on {addr} without a token: on a non-loopback address \
             anyone who can reach it could cancel or stop jobs and write savepoints. Set a token \
             (sluice run --rest-token, or SLUICE_REST_TOKEN) or bind 127.0.0.1"
        ))
    }

    /// Checks the `Host` of a request that arrived on `local`.
    pub fn check_host(&self, host: Option<&str>, local: SocketAddr) -> Result<(), Refusal> {
        let Some(host) = host else { return Ok(()) };
        if self.host_allowed(host, local) {
            return Ok(());
        }
        Err(Response::error(
            403,
            &format!(
                "Host '{}' is not allowed: this server answers to {} (and localhost on a loopback \
                 address); allow other names with --rest-allowed-host (protection against DNS \
                 rebinding).",
                shorten(host),
                local
            ),
        ))
    }

    fn host_allowed(&self, host: &str, local: SocketAddr) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let Some((name, port)) = split_host(&host) else {
            return false;
        };
        let name = name.trim_end_matches('.');
        // An address literal cannot be rebound: it names the address the client dialled.
        if let Ok(ip) = name.parse::<IpAddr>() {
            return same_ip(ip, local.ip()) || (ip.is_loopback() && local.ip().is_loopback());
        }
        if name == "localhost" && local.ip().is_loopback() {
            return true;
        }
        self.allowed_hosts.iter().any(|a| match split_host(a) {
            Some((n, None)) => n.trim_end_matches('.') == name,
            Some((n, Some(p))) => n.trim_end_matches('.') == name && port == Some(p),
            None => false,
        })
    }

    /// Checks what a mutating route requires (content type, origin, token); `what` names the
    /// operation in messages (`POST /jobs/:jobid/stop`).
    pub fn check_mutating(
        &self,
        what: &str,
        headers: &RequestHeaders<'_>,
        local: SocketAddr,
    ) -> Result<(), Refusal> {
        let media = headers.content_type.map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
        if media.as_deref() != Some("application/json") {
            return Err(Response::error(
                415,
                &format!(
                    "{what} requires 'Content-Type: application/json' (got {}): requests that \
                     change a job must be JSON, which a web page cannot send to another site \
                     without its permission.",
                    match headers.content_type {
                        Some(c) => format!("'{}'", shorten(c)),
                        None => "none".into(),
                    }
                ),
            ));
        }
        if let Some(origin) = headers.origin {
            let host = origin_host(origin);
            if !host.is_some_and(|h| self.host_allowed(h, local)) {
                return Err(Response::error(
                    403,
                    &format!(
                        "Cross-origin request from '{}' refused: {what} may only be sent by \
                         this server's own pages or by non-browser clients.",
                        shorten(origin)
                    ),
                ));
            }
        }
        if let Some(token) = &self.token {
            let given = headers.authorization.and_then(|a| {
                let (scheme, value) = a.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then_some(value.trim())
            });
            let mut refusal = match given {
                None => Response::error(
                    401,
                    &format!(
                        "{what} requires the server's token: send 'Authorization: Bearer <token>' \
                         (sluice: --token or SLUICE_REST_TOKEN)."
                    ),
                ),
                Some(t) if constant_time_eq(t.as_bytes(), token.as_bytes()) => return Ok(()),
                Some(_) => Response::error(401, &format!("{what}: wrong bearer token.")),
            };
            refusal
                .headers
                .push(("WWW-Authenticate", "Bearer realm=\"sluice\"".into()));
            return Err(refusal);
        }
        Ok(())
    }
}

/// The request headers the policy reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestHeaders<'a> {
    /// `Content-Type`.
    pub content_type: Option<&'a str>,
    /// `Origin`.
    pub origin: Option<&'a str>,
    /// `Authorization`.
    pub authorization: Option<&'a str>,
}

/// `name[:port]` or `[v6]:port` → `(name, port)`; `None` when malformed.
fn split_host(host: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = host.strip_prefix('[') {
        let (v6, tail) = rest.split_once(']')?;
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?.parse().ok()?),
        };
        return Some((v6, port));
    }
    match host.rsplit_once(':') {
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
        None => Some((host, None)),
    }
    .filter(|(name, _)| !name.is_empty())
}

/// `scheme://host[:port]` → `host[:port]`; `None` for `null` or anything else.
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        .then_some(rest.trim_end_matches('/'))
}

fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    let canon = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    canon(a) == canon(b)
}

/// Compares without an early exit, so the time taken does not reveal a token's prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> SocketAddr {
        "127.0.0.1:8081".parse().unwrap()
    }

    #[test]
    fn hosts_naming_this_server_pass_others_are_refused() {
        let p = Policy::new(None, &["Flink.Example".into(), "proxy:443".into()]);
        for ok in [
            "127.0.0.1:8081",
            "127.0.0.1",
            "LOCALHOST:8081",
            "localhost.",
            "[::1]:8081",
            "flink.example:9999",
            "proxy:443",
        ] {
            assert!(p.check_host(Some(ok), local()).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example:8081",
            "proxy:80",
            "10.0.0.1:8081",
            "",
            ":8081",
            "a:b",
        ] {
            let r = p.check_host(Some(bad), local()).unwrap_err();
            assert_eq!(r.status, 403, "{bad}");
        }
        let lan: SocketAddr = "10.1.2.3:8081".parse().unwrap();
        assert!(p.check_host(Some("10.1.2.3:8081"), lan).is_ok());
        assert!(p.check_host(Some("localhost:8081"), lan).is_err());
        assert!(p.check_host(None, local()).is_ok());
    }

    #[test]
    fn mutating_requests_need_json_same_origin_and_the_token() {
        let json = RequestHeaders {
            content_type: Some("application/json; charset=utf-8"),
            ..Default::default()
        };
        let open = Policy::new(None, &[]);
        assert!(open.check_mutating("POST /x", &json, local()).is_ok());
        let plain = RequestHeaders {
            content_type: Some("text/plain"),
            ..Default::default()
        };
        let r = open.check_mutating("POST /x", &plain, local()).unwrap_err();
        assert_eq!(r.status, 415);
        let foreign = RequestHeaders {
            origin: Some("https://evil.example"),
            ..json
        };
        assert_eq!(
            open.check_mutating("POST /x", &foreign, local())
                .unwrap_err()
                .status,
            403
        );
        let same = RequestHeaders {
            origin: Some("http://127.0.0.1:8081"),
            ..json
        };
        assert!(open.check_mutating("POST /x", &same, local()).is_ok());

        let locked = Policy::new(Some("s3cret".into()), &[]);
        let r = locked
            .check_mutating("POST /x", &json, local())
            .unwrap_err();
        assert_eq!(r.status, 401);
        assert_eq!(r.headers[0].0, "WWW-Authenticate");
        let wrong = RequestHeaders {
            authorization: Some("Bearer nope"),
            ..json
        };
        assert_eq!(
            locked
                .check_mutating("POST /x", &wrong, local())
                .unwrap_err()
                .status,
            401
        );
        let right = RequestHeaders {
            authorization: Some("bearer s3cret"),
            ..json
        };
        assert!(locked.check_mutating("POST /x", &right, local()).is_ok());
    }

    #[test]
    fn non_loopback_binds_need_a_token() {
        let any: SocketAddr = "0.0.0.0:8081".parse().unwrap();
        let why = Policy::new(None, &[]).bind_refusal(any).unwrap();
        assert!(why.contains("without a token"), "{why}");
        assert!(Policy::new(Some(String::new()), &[])
            .bind_refusal(any)
            .is_some());
        assert!(Policy::new(Some("t".into()), &[])
            .bind_refusal(any)
            .is_none());
        assert!(Policy::new(None, &[]).bind_refusal(local()).is_none());
    }
}
