//! [`Endpoint`]: the HTTP(S) client of Flink-compatible REST APIs, on ureq with rustls: `http://` and `https://host:port[/prefix]` URLs, the system's root
//! certificates (or `--ca-cert`, or none with `--insecure`), a bearer token (`--token`,
//! `SLUICE_REST_TOKEN`), a timeout per request, and errors that name the URL and keep the
//! server's own message (Flink's `{"errors":[…]}`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

use crate::json::{error_message, parse_json, snippet};
use crate::ClientError;

/// Largest response body accepted (a safety net against a runaway server).
const MAX_BODY: u64 = 64 << 20;

/// How to reach a REST API: TLS trust and credentials (flags shared by the client commands).
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[derive(Debug, Clone, Default)]
pub struct ClientArgs {
    /// Trust the CA certificate(s) in this PEM file for https:// URLs (instead of the system's
    /// root certificates).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PEM"))]
    pub ca_cert: Option<PathBuf>,
    /// Do not verify the server's TLS certificate (for testing only: anyone in between can
    /// read and change the traffic).
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "ca_cert"))]
    pub insecure: bool,
    /// Bearer token sent with every request (`Authorization: Bearer …`).
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "SLUICE_REST_TOKEN", hide_env_values = true)
    )]
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
    pub fn parse(url: &str) -> Result<Endpoint, ClientError> {
        Endpoint::with(url, &ClientArgs::default())
    }

    /// Parses `url` and sets up TLS and credentials from `args`.
    pub fn with(url: &str, args: &ClientArgs) -> Result<Endpoint, ClientError> {
        let (scheme, host, port, prefix) = parse_url(url).map_err(ClientError::Config)?;
        let roots = match (&args.ca_cert, args.insecure) {
            (Some(path), _) => {
                RootCerts::Specific(Arc::new(read_ca(path).map_err(ClientError::Config)?))
            }
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
    pub fn get(&self, path: &str, timeout: Duration) -> Result<Response, ClientError> {
        self.request("GET", path, None, timeout)
    }

    /// `GET path` and parse the body as JSON.
    pub fn get_json(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<serde_json::Value, ClientError> {
        let response = self.get(path, timeout)?;
        parse_json(&response.body).map_err(|e| ClientError::Malformed {
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
    ) -> Result<serde_json::Value, ClientError> {
        let r = self.request("POST", path, Some(&body.to_string()), timeout)?;
        serde_json::from_slice(&r.body).map_err(|e| ClientError::Malformed {
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
    ) -> Result<serde_json::Value, ClientError> {
        let r = self.request("PUT", path, Some(&body.to_string()), timeout)?;
        if r.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(serde_json::json!({}));
        }
        serde_json::from_slice(&r.body).map_err(|e| ClientError::Malformed {
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
    ) -> Result<Response, ClientError> {
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
            .map_err(|e| ClientError::Malformed {
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
            return Err(ClientError::Status {
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

fn transport_error(url: &str, e: ureq::Error, timeout: Duration) -> ClientError {
    let url = url.to_string();
    match e {
        ureq::Error::Timeout(_) => ClientError::Timeout {
            url,
            after: timeout,
        },
        ureq::Error::HostNotFound => ClientError::Unreachable {
            url,
            reason: "cannot resolve the host".into(),
        },
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            ClientError::Unreachable {
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
            ClientError::Timeout {
                url,
                after: timeout,
            }
        }
        ureq::Error::ConnectionFailed => ClientError::Unreachable {
            url,
            reason: format!("the connection failed {NOTHING_THERE}"),
        },
        ureq::Error::Rustls(e) => ClientError::Tls {
            url,
            reason: tls_reason(&e.to_string()),
        },
        ureq::Error::Tls(e) => ClientError::Tls {
            url,
            reason: tls_reason(e),
        },
        ureq::Error::Io(e) if e.to_string().contains("certificate") => ClientError::Tls {
            url,
            reason: tls_reason(&e.to_string()),
        },
        ureq::Error::Io(err) => ClientError::Io { url, err },
        other => ClientError::Malformed {
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

/// A 2xx answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The body as read (at most 64 MiB).
    pub body: Vec<u8>,
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
        let err = Endpoint::parse("ftp://flink:8081").unwrap_err().to_string();
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
        let err = Endpoint::with("https://x:1", &args)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no certificate") && err.contains("not-pem.txt"),
            "{err}"
        );
        let args = ClientArgs {
            ca_cert: Some(dir.join("missing.pem")),
            ..Default::default()
        };
        let err = Endpoint::with("https://x:1", &args)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot read --ca-cert"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
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
        assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
        drop(l);
    }
}
