//! The Kafka source: partitions as splits (assigned to subtasks by Flink's owner formula,
//! [`assign`]), offsets in checkpoints, per-partition watermarks, dead letters for records that
//! do not decode, FLIP-33 metrics.
//!
//! ```no_run
//! use sluice_datastream::StreamEnv;
//! use sluice_kafka::source::{KafkaSource, Lines, StartingOffsets};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let env = StreamEnv::new();
//! let lines = KafkaSource::builder()
//!     .bootstrap_servers("127.0.0.1:9092")
//!     .topics(["clicks"])
//!     .group_id("my-job") // offsets are committed here for monitoring; checkpoints hold the truth
//!     .starting_offsets(StartingOffsets::Earliest)
//!     .bounded() // stop at the end offsets seen at start
//!     .build(Lines)?
//!     .add_to(&env, "clicks");
//! let _n = lines.map(|l: String| l.len());
//! # Ok(()) }
//! ```
//!
//! Building the source talks to the cluster (within the connect timeout, 5 s by default): the
//! topics (or the pattern's matches) and their partitions are resolved then, with their start
//! offsets and, bounded, their end offsets, so an unreachable broker, a missing topic or a
//! pattern matching nothing is an error before the job starts, and every subtask and restart
//! agrees on the partitions and offsets. Partitions added later are not discovered.

pub mod assign;
mod commit;
mod deser;
mod idle;
mod metrics;
mod offsets;
mod reader;
mod split;
mod watermarks;

use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::BaseConsumer;
use sluice_datastream::{DataStream, StreamEnv};
use sluice_types::Data;

pub use deser::{Json, KafkaDeserializer, KafkaRecord, Lines, RawBytes};
pub use offsets::{OffsetFallback, PartitionPlan, StartingOffsets, StoppingOffsets};
pub use reader::KafkaSourceReader;
pub use split::SplitPosition;
pub use watermarks::{EventTime, KafkaWatermarks};

use crate::admin::{self, Subscription};
use crate::config::ClientSettings;
use crate::KafkaError;

/// What every subtask of one source shares (resolved once, at build).
pub(crate) struct Shared<T> {
    pub settings: ClientSettings,
    pub group_id: Option<String>,
    pub bounded: bool,
    pub plan: Vec<PartitionPlan>,
    pub deserializer: Box<dyn KafkaDeserializer<T>>,
}

/// A Kafka source, ready to add to a job ([`KafkaSource::add_to`]). Built by
/// [`KafkaSource::builder`].
pub struct KafkaSource<T> {
    shared: Arc<Shared<T>>,
    watermarks: Option<KafkaWatermarks<T>>,
}

impl<T> Clone for KafkaSource<T> {
    fn clone(&self) -> Self {
        KafkaSource {
            shared: self.shared.clone(),
            watermarks: self.watermarks.clone(),
        }
    }
}

/// The URL parameters [`KafkaSource::builder_from_url`] reads (for
/// [`crate::KafkaUrl::check_params`] by a caller that takes a source URL).
pub const SOURCE_URL_PARAMS: &[&str] = &[
    "bounded",
    "group",
    "start",
    "fallback",
    "connect-timeout-ms",
];

impl KafkaSource<()> {
    /// A builder for `kafka://HOST:PORT/TOPIC?…` (`--from`): the URL's brokers and topic, and
    /// the source parameters [`SOURCE_URL_PARAMS`]: `bounded` (flag), `group=ID`,
    /// `start=earliest|latest|committed|MS` (ms since the epoch: a timestamp start; default
    /// earliest), `fallback=earliest|latest|fail` (for `committed`, default earliest),
    /// `connect-timeout-ms=MS`. Other parameters are ignored here (check them with
    /// [`crate::KafkaUrl::check_params`]).
    pub fn builder_from_url(url: &crate::KafkaUrl) -> Result<KafkaSourceBuilder, KafkaError> {
        let bad = |name: &str, v: &str, why: &str| KafkaError::Url {
            url: url.to_string(),
            reason: format!("parameter {name}={v}: {why}"),
        };
        let fallback = match url.param("fallback") {
            None | Some("earliest") => OffsetFallback::Earliest,
            Some("latest") => OffsetFallback::Latest,
            Some("fail") => OffsetFallback::Fail,
            Some(v) => return Err(bad("fallback", v, "expected earliest, latest or fail")),
        };
        let starting = match url.param("start") {
            None | Some("earliest") => StartingOffsets::Earliest,
            Some("latest") => StartingOffsets::Latest,
            Some("committed") => StartingOffsets::Committed { fallback },
            Some(v) => match v.parse::<i64>() {
                Ok(ms) if ms >= 0 => StartingOffsets::Timestamp(ms),
                _ => {
                    return Err(bad(
                        "start",
                        v,
                        "expected earliest, latest, committed or a timestamp in ms",
                    ))
                }
            },
        };
        let mut b = KafkaSource::builder()
            .client_settings(url.client_settings()?)
            .topics([url.topic.clone()])
            .starting_offsets(starting)
            .set_bounded(url.flag("bounded")?);
        if let Some(g) = url.param("group") {
            b = b.group_id(g);
        }
        Ok(b)
    }

    /// A builder for a source; see its methods for the settings.
    pub fn builder() -> KafkaSourceBuilder {
        KafkaSourceBuilder {
            settings: ClientSettings::new(""),
            subscription: None,
            group_id: None,
            starting: StartingOffsets::Earliest,
            stopping: None,
        }
    }
}

impl<T: Data> KafkaSource<T> {
    /// Per-partition watermarks (Flink's split-level watermark generation, see
    /// [`KafkaWatermarks`]). Without them the source emits no watermarks (only idleness for a
    /// subtask without partitions, and the final maximal watermark of a bounded run).
    pub fn with_watermarks(mut self, watermarks: KafkaWatermarks<T>) -> Self {
        self.watermarks = Some(watermarks);
        self
    }

    /// Adds the source to `env` as operator `Source: {name}` (its parallelism is the job's
    /// unless set on the returned stream). With [`KafkaWatermarks::from_record`] the stream
    /// also carries that timestamp function.
    pub fn add_to(&self, env: &StreamEnv, name: &str) -> DataStream<T> {
        let shared = self.shared.clone();
        let wm = self.watermarks.clone();
        let stream = env.add_source(name, move |subtask, parallelism| {
            Ok(KafkaSourceReader::new(
                shared.clone(),
                wm.clone(),
                subtask,
                parallelism,
            ))
        });
        match self.watermarks.as_ref().map(|w| &w.event_time) {
            Some(EventTime::Record(f)) => {
                let f = f.clone();
                stream.with_timestamps(move |r: &T| f(r))
            }
            _ => stream,
        }
    }

    /// The partitions with their resolved start (and bounded end) offsets.
    pub fn partitions(&self) -> &[PartitionPlan] {
        &self.shared.plan
    }

    /// How many partitions the source reads (subtasks beyond this are idle).
    pub fn partition_count(&self) -> usize {
        self.shared.plan.len()
    }

    /// Records between the start and end offsets (bounded mode), else `None`.
    pub fn bounded_records(&self) -> Option<u64> {
        self.shared.bounded.then(|| {
            self.shared
                .plan
                .iter()
                .map(|p| (p.end.unwrap_or(p.start) - p.start).max(0) as u64)
                .sum()
        })
    }
}

/// Configures a [`KafkaSource`]; `build` checks everything and resolves partitions and offsets.
#[derive(Debug, Clone)]
pub struct KafkaSourceBuilder {
    settings: ClientSettings,
    subscription: Option<Subscription>,
    group_id: Option<String>,
    starting: StartingOffsets,
    stopping: Option<StoppingOffsets>,
}

impl KafkaSourceBuilder {
    /// `host:port[,host:port...]`.
    pub fn bootstrap_servers(mut self, servers: impl Into<String>) -> Self {
        self.settings.bootstrap = servers.into();
        self
    }

    /// Read these topics (each must exist).
    pub fn topics<I, S>(mut self, topics: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.subscription = Some(Subscription::Topics(
            topics.into_iter().map(Into::into).collect(),
        ));
        self
    }

    /// Read every topic whose whole name matches `regex` (resolved at build; at least one must
    /// match, else the build fails naming the pattern).
    pub fn topic_pattern(mut self, regex: impl Into<String>) -> Self {
        self.subscription = Some(Subscription::Pattern(regex.into()));
        self
    }

    /// The consumer group: offsets are committed to it when a checkpoint completes, for
    /// monitoring (lag tools) and for [`StartingOffsets::Committed`]; never for recovery.
    pub fn group_id(mut self, group: impl Into<String>) -> Self {
        self.group_id = Some(group.into());
        self
    }

    /// Where partitions without a checkpointed offset start (default earliest).
    pub fn starting_offsets(mut self, starting: StartingOffsets) -> Self {
        self.starting = starting;
        self
    }

    /// Stop at the end offsets seen when the source is built (a backfill, a test): the same
    /// as [`stopping_offsets`](Self::stopping_offsets)`(StoppingOffsets::Latest)`.
    pub fn bounded(mut self) -> Self {
        self.stopping = Some(StoppingOffsets::Latest);
        self
    }

    /// Sets bounded mode (stopping at the end offsets seen at build) on or off.
    pub fn set_bounded(mut self, bounded: bool) -> Self {
        self.stopping = bounded.then_some(StoppingOffsets::Latest);
        self
    }

    /// Bounded: each partition stops at its offset from `stopping`, resolved at build (Flink's
    /// `setBounded(OffsetsInitializer)`).
    pub fn stopping_offsets(mut self, stopping: StoppingOffsets) -> Self {
        self.stopping = Some(stopping);
        self
    }

    /// How long to wait for the brokers at start (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connect_timeout = timeout;
        self
    }

    /// A librdkafka property, passed through (overrides the source's own defaults).
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.properties.push((key.into(), value.into()));
        self
    }

    /// Shared client settings (brokers, timeout, properties), e.g. from a
    /// [`crate::config::KafkaUrl`].
    pub fn client_settings(mut self, settings: ClientSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Checks the configuration, contacts the cluster and resolves partitions and offsets.
    /// The record type is the deserializer's ([`Lines`], [`RawBytes`], [`Json`], or a
    /// closure over [`KafkaRecord`]).
    pub fn build<T, D>(self, deserializer: D) -> Result<KafkaSource<T>, KafkaError>
    where
        D: KafkaDeserializer<T>,
    {
        let KafkaSourceBuilder {
            settings,
            subscription,
            group_id,
            starting,
            stopping,
        } = self;
        let subscription = subscription.ok_or_else(|| {
            KafkaError::Config("no topics: call topics(...) or topic_pattern(...)".into())
        })?;
        if matches!(starting, StartingOffsets::Committed { .. }) && group_id.is_none() {
            return Err(KafkaError::Config(
                "committed starting offsets need a group id".into(),
            ));
        }
        if matches!(stopping, Some(StoppingOffsets::Committed)) && group_id.is_none() {
            return Err(KafkaError::Config(
                "committed stopping offsets need a group id".into(),
            ));
        }
        settings.validate()?;
        let mut defaults: Vec<(&str, &str)> = vec![("enable.auto.commit", "false")];
        if let Some(g) = &group_id {
            defaults.push(("group.id", g.as_str()));
        }
        let consumer: BaseConsumer = settings
            .client_config(&defaults)
            .create()
            .map_err(|e| KafkaError::client("creating a consumer", &settings.bootstrap, e))?;
        let metadata = admin::metadata_of(&consumer, &settings)?;
        let topics = admin::resolve(&metadata, &subscription, &settings.bootstrap)?;
        let plan = offsets::plan_partitions(
            &consumer,
            &settings,
            &topics,
            &starting,
            stopping.as_ref(),
            group_id.is_some(),
        )?;
        let bounded = stopping.is_some();
        Ok(KafkaSource {
            shared: Arc::new(Shared {
                settings,
                group_id,
                bounded,
                plan,
                deserializer: Box::new(deserializer),
            }),
            watermarks: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KafkaUrl;

    #[test]
    fn a_source_url_sets_topic_bounds_group_and_start() {
        let u = KafkaUrl::parse(
            "kafka://h:1/in?bounded&group=g&start=committed&fallback=latest&connect-timeout-ms=900",
        )
        .unwrap();
        u.check_params(SOURCE_URL_PARAMS).unwrap();
        let b = KafkaSource::builder_from_url(&u).unwrap();
        assert_eq!(b.stopping, Some(StoppingOffsets::Latest));
        assert_eq!(b.group_id.as_deref(), Some("g"));
        assert_eq!(
            b.starting,
            StartingOffsets::Committed {
                fallback: OffsetFallback::Latest
            }
        );
        assert_eq!(b.settings.connect_timeout, Duration::from_millis(900));
        assert!(matches!(&b.subscription, Some(Subscription::Topics(t)) if t == &["in"]));
        let t = KafkaSource::builder_from_url(
            &KafkaUrl::parse("kafka://h:1/in?start=1700000000000").unwrap(),
        )
        .unwrap();
        assert_eq!(t.starting, StartingOffsets::Timestamp(1_700_000_000_000));
        for bad in ["start=soon", "fallback=maybe", "bounded=yes"] {
            let u = KafkaUrl::parse(&format!("kafka://h:1/in?{bad}")).unwrap();
            let e = KafkaSource::builder_from_url(&u).err().unwrap().to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }
}
