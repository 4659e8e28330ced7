//! Shared client configuration: the `kafka://` URL the CLI takes (`--from`, `--to`,
//! `sluice produce --to`) and the settings every client of this crate starts from (bootstrap
//! servers, passthrough properties, connect timeout).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use rdkafka::config::ClientConfig;

use crate::KafkaError;

/// How long a client waits for a first broker answer before start-up fails (configurable with
/// [`ClientSettings::connect_timeout`] or the URL parameter `connect-timeout-ms`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?key=value&flag...]`, parsed.
///
/// The path is one topic name (Kafka's rule: 1–249 characters of `[a-zA-Z0-9._-]`). Query
/// parameters are kept as given (no percent-decoding; a parameter without `=` has the value
/// `""`, e.g. `?exactly-once`); what they mean is up to the user of the URL
/// ([`KafkaUrl::param`], [`KafkaUrl::flag`], [`KafkaUrl::parse_param`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaUrl {
    /// `host:port[,host:port...]`, as librdkafka's `bootstrap.servers` takes it.
    pub bootstrap: String,
    /// The topic.
    pub topic: String,
    /// The query parameters, as given.
    pub params: BTreeMap<String, String>,
}

impl KafkaUrl {
    /// Reads `kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?name=value&...]`.
    pub fn parse(url: &str) -> Result<KafkaUrl, KafkaError> {
        let bad = |reason: &str| KafkaError::Url {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let rest = url
            .strip_prefix("kafka://")
            .ok_or_else(|| bad("expected kafka://HOST:PORT/TOPIC"))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (hosts, topic) = rest
            .split_once('/')
            .ok_or_else(|| bad("no topic: expected kafka://HOST:PORT/TOPIC"))?;
        if hosts.is_empty() {
            return Err(bad("no broker address"));
        }
        for h in hosts.split(',') {
            check_host_port(h).map_err(|r| bad(&r))?;
        }
        check_topic(topic).map_err(|r| bad(&r))?;
        let mut params = BTreeMap::new();
        for kv in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|s| !s.is_empty())
        {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            if k.is_empty() {
                return Err(bad(&format!("empty parameter name in '{kv}'")));
            }
            if params.insert(k.to_string(), v.to_string()).is_some() {
                return Err(bad(&format!("parameter '{k}' given twice")));
            }
        }
        Ok(KafkaUrl {
            bootstrap: hosts.to_string(),
            topic: topic.to_string(),
            params,
        })
    }

    /// The value of parameter `name`, if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// Whether flag `name` is set (`?name`, `?name=true`); `?name=false` is off.
    pub fn flag(&self, name: &str) -> Result<bool, KafkaError> {
        match self.param(name) {
            None | Some("false") => Ok(false),
            Some("") | Some("true") => Ok(true),
            Some(v) => Err(self.bad_param(name, v, "expected true or false")),
        }
    }

    /// Parameter `name` parsed as `T`; an unparsable value is an error naming it.
    pub fn parse_param<T: FromStr>(&self, name: &str) -> Result<Option<T>, KafkaError>
    where
        T::Err: std::fmt::Display,
    {
        self.param(name)
            .map(|v| {
                v.parse::<T>()
                    .map_err(|e| self.bad_param(name, v, &e.to_string()))
            })
            .transpose()
    }

    /// Fails naming the first parameter not in `known` (a typo must not be ignored).
    pub fn check_params(&self, known: &[&str]) -> Result<(), KafkaError> {
        match self.params.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(KafkaError::Url {
                url: self.to_string(),
                reason: format!("unknown parameter '{k}' (known: {})", known.join(", ")),
            }),
            None => Ok(()),
        }
    }

    /// Client settings for this URL's brokers (`connect-timeout-ms` read if given).
    pub fn client_settings(&self) -> Result<ClientSettings, KafkaError> {
        let mut s = ClientSettings::new(&self.bootstrap);
        if let Some(ms) = self.parse_param::<u64>("connect-timeout-ms")? {
            s = s.connect_timeout(Duration::from_millis(ms));
        }
        Ok(s)
    }

    fn bad_param(&self, name: &str, value: &str, why: &str) -> KafkaError {
        KafkaError::Url {
            url: self.to_string(),
            reason: format!("parameter {name}={value}: {why}"),
        }
    }
}

impl std::fmt::Display for KafkaUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kafka://{}/{}", self.bootstrap, self.topic)?;
        for (i, (k, v)) in self.params.iter().enumerate() {
            let sep = if i == 0 { '?' } else { '&' };
            if v.is_empty() {
                write!(f, "{sep}{k}")?;
            } else {
                write!(f, "{sep}{k}={v}")?;
            }
        }
        Ok(())
    }
}

impl FromStr for KafkaUrl {
    type Err = KafkaError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KafkaUrl::parse(s)
    }
}

fn check_host_port(h: &str) -> Result<(), String> {
    let (host, port) = h
        .rsplit_once(':')
        .ok_or_else(|| format!("broker '{h}' has no port (HOST:PORT)"))?;
    if host.is_empty() {
        return Err(format!("broker '{h}' has no host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!("broker '{h}': port '{port}' is not 1-65535")),
    }
}

/// Kafka's topic name rule (`Topic.validate`): 1–249 characters of `[a-zA-Z0-9._-]`, not `.`
/// or `..`.
pub fn check_topic(topic: &str) -> Result<(), String> {
    if topic.is_empty() {
        return Err("empty topic name".into());
    }
    if topic.len() > 249 {
        return Err(format!(
            "topic name longer than 249 characters ({})",
            topic.len()
        ));
    }
    if topic == "." || topic == ".." {
        return Err(format!("topic name '{topic}' is not allowed"));
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "topic '{topic}' holds '{c}' (allowed: a-z A-Z 0-9 . _ -)"
        ));
    }
    Ok(())
}

/// What every client of this crate is configured from: the brokers, the connect timeout and
/// extra librdkafka properties (passed through verbatim, after this crate's own, so a user can
/// override any of them).
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `bootstrap.servers`: `host:port[,host:port...]`.
    pub bootstrap: String,
    /// How long to wait for the first metadata answer before failing.
    pub connect_timeout: Duration,
    /// Extra librdkafka properties, applied last.
    pub properties: Vec<(String, String)>,
}

impl ClientSettings {
    /// Settings for these brokers with the default connect timeout.
    pub fn new(bootstrap: impl Into<String>) -> ClientSettings {
        ClientSettings {
            bootstrap: bootstrap.into(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            properties: Vec::new(),
        }
    }

    /// Sets the connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> ClientSettings {
        self.connect_timeout = timeout;
        self
    }

    /// Adds a librdkafka property (it overrides this crate's own setting of the same key).
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((key.into(), value.into()));
        self
    }

    /// A librdkafka configuration: `bootstrap.servers`, then `defaults`, then the user's
    /// properties (which win).
    pub fn client_config(&self, defaults: &[(&str, &str)]) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.bootstrap);
        // librdkafka logs through the `log` crate; errors reach the caller as values instead.
        c.set("log_level", "3");
        for (k, v) in defaults {
            c.set(*k, *v);
        }
        for (k, v) in &self.properties {
            c.set(k, v);
        }
        c
    }

    pub(crate) fn validate(&self) -> Result<(), KafkaError> {
        if self.bootstrap.trim().is_empty() {
            return Err(KafkaError::Config("no bootstrap servers".into()));
        }
        for h in self.bootstrap.split(',') {
            check_host_port(h.trim()).map_err(KafkaError::Config)?;
        }
        if self.connect_timeout.is_zero() {
            return Err(KafkaError::Config("connect timeout must be > 0".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_topic_and_params() {
        let u = KafkaUrl::parse("kafka://127.0.0.1:9092,h2:9093/skew-in?partitions=4&exactly-once")
            .unwrap();
        assert_eq!(u.bootstrap, "127.0.0.1:9092,h2:9093");
        assert_eq!(u.topic, "skew-in");
        assert_eq!(u.parse_param::<u32>("partitions").unwrap(), Some(4));
        assert!(u.flag("exactly-once").unwrap());
        assert!(!u.flag("bounded").unwrap());
        assert_eq!(
            u.to_string(),
            "kafka://127.0.0.1:9092,h2:9093/skew-in?exactly-once&partitions=4"
        );
        assert_eq!(KafkaUrl::parse(&u.to_string()).unwrap(), u);
    }

    #[test]
    fn refuses_bad_urls_saying_why() {
        for (url, why) in [
            ("http://h:1/t", "expected kafka://"),
            ("kafka://h:1", "no topic"),
            ("kafka://h/t", "no port"),
            ("kafka://h:0/t", "not 1-65535"),
            ("kafka://h:99999/t", "not 1-65535"),
            ("kafka://:9092/t", "no host"),
            ("kafka://h:1/", "empty topic"),
            ("kafka://h:1/a b", "holds ' '"),
            ("kafka://h:1/t?a=1&a=2", "given twice"),
            ("kafka://h:1/t?=1", "empty parameter"),
        ] {
            let e = KafkaUrl::parse(url).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(url), "{url}: {e}");
        }
        let u = KafkaUrl::parse("kafka://h:1/t?partitions=x&typo").unwrap();
        let e = u.parse_param::<u32>("partitions").unwrap_err().to_string();
        assert!(e.contains("partitions=x"), "{e}");
        let e = u.check_params(&["partitions"]).unwrap_err().to_string();
        assert!(e.contains("unknown parameter 'typo'"), "{e}");
    }
}
