//! The HTTP JSON lookup source: `GET` a URL template with `{key}` replaced by the key
//! (percent-encoded); `200` → the body is the row (JSON), `404` → no row, anything else (and a
//! body that is not JSON) → a failed attempt. HTTP/1.1 over hyper with a connection pool, so an
//! async lookup keeps one connection per request in flight.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::StatusCode;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::{LookupError, LookupKey, Row};

/// An HTTP JSON service by URL template, e.g. `http://127.0.0.1:8080/customers/{key}`.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpLookup {
    template: String,
}

impl HttpLookup {
    /// Refuses a template without `{key}` or not `http://` (TLS is not supported).
    pub fn new(template: &str) -> Result<HttpLookup, LookupError> {
        if !template.starts_with("http://") {
            return Err(LookupError::Source(format!(
                "'{template}': an HTTP lookup URL starts with http:// (https is not supported)"
            )));
        }
        if !template.contains("{key}") {
            return Err(LookupError::Source(format!(
                "'{template}': the URL template needs a {{key}} placeholder"
            )));
        }
        let probe = template.replace("{key}", "0");
        probe
            .parse::<hyper::Uri>()
            .map_err(|e| LookupError::Source(format!("'{template}' is not a valid URL: {e}")))?;
        Ok(HttpLookup {
            template: template.to_string(),
        })
    }

    /// The URL template with its `{key}` placeholder.
    pub fn template(&self) -> &str {
        &self.template
    }

    pub(crate) fn describe(&self) -> String {
        self.template.clone()
    }

    pub(crate) fn client(&self) -> Result<HttpClient, LookupError> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Ok(HttpClient {
            template: self.template.clone(),
            client: Client::builder(TokioExecutor::new()).build(connector),
        })
    }
}

pub(crate) struct HttpClient {
    template: String,
    client: Client<HttpConnector, Empty<Bytes>>,
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl HttpClient {
    pub(crate) async fn get(&self, key: &LookupKey) -> Result<Vec<Row>, LookupError> {
        let url = self.template.replace("{key}", &encode(&key.to_string()));
        let uri: hyper::Uri = url
            .parse()
            .map_err(|e| LookupError::Request(format!("GET {url}: bad URL: {e}")))?;
        let answer = self
            .client
            .get(uri)
            .await
            .map_err(|e| LookupError::Request(format!("GET {url}: {e}")))?;
        let status = answer.status();
        let body = answer
            .into_body()
            .collect()
            .await
            .map_err(|e| LookupError::Request(format!("GET {url}: reading the body: {e}")))?
            .to_bytes();
        match status {
            StatusCode::OK => serde_json::from_slice(&body).map(|v| vec![v]).map_err(|e| {
                LookupError::Request(format!("GET {url}: the answer is not JSON: {e}"))
            }),
            StatusCode::NOT_FOUND => Ok(Vec::new()),
            s => Err(LookupError::Request(format!(
                "GET {url}: HTTP {s}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ))),
        }
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_checked_and_keys_encoded() {
        assert!(HttpLookup::new("http://127.0.0.1:1/x/{key}").is_ok());
        assert!(HttpLookup::new("https://h/{key}").is_err());
        assert!(HttpLookup::new("http://h/x").is_err());
        assert_eq!(encode("a b/ü"), "a%20b%2F%C3%BC");
    }
}
