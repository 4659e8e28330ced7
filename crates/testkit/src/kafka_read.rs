//! Reads a whole Kafka topic as a `read_committed` consumer would see it, applying the
//! transaction markers itself: the oracle for exactly-once tests.
//!
//! Why not librdkafka's own `isolation.level=read_committed`: a Kafka consumer drops aborted
//! records using the `aborted_transactions` list of the broker's Fetch response, and tansu 0.6
//! always sends that list empty (`tansu-storage/src/service/fetch.rs`), so librdkafka delivers
//! aborted records as if they were committed. tansu does keep the last stable offset (an open
//! transaction holds back `read_committed` fetches) and does write the COMMIT/ABORT control
//! records. So this reader fetches with `read_uncommitted` over the Kafka wire protocol
//! (Metadata v4, Fetch v11, record batches v2, no compression), buffers each producer's
//! transactional records and keeps them at its COMMIT marker, drops them at its ABORT marker,
//! and reports the records of transactions still open at the end as `pending`; committed
//! records past a partition's last stable offset (the first record of its oldest open
//! transaction) are held back as a `read_committed` consumer would be (`behind_open`).
//!
//! Where "the end" is (the tansu high-watermark bug): the high watermark is wrong when a
//! partition's last batch holds more than one record, so it is never used as the end. The
//! reader fetches every partition until a fetch returns nothing new, and repeats that until
//! nothing arrived for `settle` (and, if given, at least `expect` committed records were seen,
//! or the deadline passed).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, MetadataRequest, MetadataResponse, RequestHeader,
    ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;

use crate::TestkitError;

const FETCH_VERSION: i16 = 11;
/// v4: the first with `allow_auto_topic_creation` (older requests let the broker create it).
const METADATA_VERSION: i16 = 4;

/// One record a `read_committed` consumer receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaRecord {
    /// The partition it was read from.
    pub partition: i32,
    /// Its offset in that partition.
    pub offset: i64,
    /// The record's key, if any.
    pub key: Option<Vec<u8>>,
    /// The record's value, if any.
    pub value: Option<Vec<u8>>,
}

/// What [`read_committed`] found.
#[derive(Debug, Clone, Default)]
pub struct TopicContents {
    /// Committed (and non-transactional) records, by partition then offset.
    pub records: Vec<KafkaRecord>,
    /// Records of aborted transactions (dropped, counted).
    pub aborted: usize,
    /// Records of transactions with no marker yet (invisible to `read_committed`).
    pub pending: usize,
    /// Committed records after the first record of a still-open transaction: a
    /// `read_committed` consumer stops at that last stable offset, so it cannot see them yet
    /// (not in `records`).
    pub behind_open: usize,
    /// Commit markers seen (one per committed transaction and partition).
    pub commit_markers: usize,
    /// Abort markers seen.
    pub abort_markers: usize,
    /// How many partitions the topic has.
    pub partitions: i32,
}

/// How long to read: stop once nothing new arrived for `settle` and at least `expect`
/// committed records were seen (`expect` 0: any number), or when `deadline` passed.
#[derive(Debug, Clone, Copy)]
pub struct ReadUntil {
    /// Committed records to wait for (0: any number).
    pub expect: usize,
    /// How long nothing new must arrive before reading stops.
    pub settle: Duration,
    /// The longest the read may take in all.
    pub deadline: Duration,
}

impl Default for ReadUntil {
    fn default() -> Self {
        ReadUntil {
            expect: 0,
            settle: Duration::from_millis(500),
            deadline: Duration::from_secs(60),
        }
    }
}

fn failed(what: &str, detail: impl std::fmt::Display) -> TestkitError {
    TestkitError::Failed {
        what: what.to_string(),
        detail: detail.to_string(),
    }
}

struct Conn {
    stream: TcpStream,
    correlation: i32,
    addr: String,
}

impl Conn {
    fn open(bootstrap: &str) -> Result<Conn, TestkitError> {
        let stream = TcpStream::connect(bootstrap)
            .map_err(|e| failed(&format!("connecting to Kafka at {bootstrap}"), e))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| failed("socket timeout", e))?;
        Ok(Conn {
            stream,
            correlation: 0,
            addr: bootstrap.to_string(),
        })
    }

    fn call<Req, Resp>(
        &mut self,
        key: ApiKey,
        version: i16,
        req: &Req,
    ) -> Result<Resp, TestkitError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable + HeaderVersion,
    {
        self.correlation += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation;
        header.client_id = Some(StrBytes::from_static_str("sluice-testkit-reader"));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, Req::header_version(version))
            .map_err(|e| failed("encoding a request header", e))?;
        req.encode(&mut body, version)
            .map_err(|e| failed("encoding a request", e))?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.put_slice(&body);
        let what = format!("{key:?} request to {}", self.addr);
        self.stream
            .write_all(&frame)
            .map_err(|e| failed(&what, e))?;
        let mut len = [0u8; 4];
        self.stream
            .read_exact(&mut len)
            .map_err(|e| failed(&what, e))?;
        let mut buf = vec![0u8; i32::from_be_bytes(len).max(0) as usize];
        self.stream
            .read_exact(&mut buf)
            .map_err(|e| failed(&what, e))?;
        let mut buf = Bytes::from(buf);
        let rh = ResponseHeader::decode(&mut buf, Resp::header_version(version))
            .map_err(|e| failed(&what, e))?;
        if rh.correlation_id != self.correlation {
            return Err(failed(&what, "correlation id mismatch"));
        }
        Resp::decode(&mut buf, version).map_err(|e| failed(&what, e))
    }
}

/// The number of partitions of `topic` (an error if the broker does not know it).
pub fn partition_count(bootstrap: &str, topic: &str) -> Result<i32, TestkitError> {
    let mut conn = Conn::open(bootstrap)?;
    partitions_of(&mut conn, topic)
}

fn partitions_of(conn: &mut Conn, topic: &str) -> Result<i32, TestkitError> {
    let mut req = MetadataRequest::default();
    let mut t = MetadataRequestTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(topic.to_string())));
    req.topics = Some(vec![t]);
    req.allow_auto_topic_creation = false;
    let resp: MetadataResponse = conn.call(ApiKey::Metadata, METADATA_VERSION, &req)?;
    let t = resp
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.0.as_str()) == Some(topic))
        .ok_or_else(|| failed("metadata", format!("no topic {topic}")))?;
    if t.error_code != 0 || t.partitions.is_empty() {
        return Err(failed(
            "metadata",
            format!("topic {topic}: error code {}", t.error_code),
        ));
    }
    Ok(t.partitions.len() as i32)
}

/// One partition's reading state.
#[derive(Default)]
struct PartitionReader {
    next_offset: i64,
    /// Transactional records by producer id, waiting for their marker.
    open: BTreeMap<i64, Vec<KafkaRecord>>,
}

/// Reads all of `topic` (see the module docs for how the end is found).
pub fn read_committed(
    bootstrap: &str,
    topic: &str,
    until: ReadUntil,
) -> Result<TopicContents, TestkitError> {
    let mut conn = Conn::open(bootstrap)?;
    let partitions = partitions_of(&mut conn, topic)?;
    let mut readers: Vec<PartitionReader> = (0..partitions).map(|_| Default::default()).collect();
    let mut out = TopicContents {
        partitions,
        ..Default::default()
    };
    let start = Instant::now();
    let mut last_new = Instant::now();
    loop {
        let mut progressed = false;
        for (p, r) in readers.iter_mut().enumerate() {
            while fetch_once(&mut conn, topic, p as i32, r, &mut out)? {
                progressed = true;
            }
        }
        if progressed {
            last_new = Instant::now();
        }
        let settled = last_new.elapsed() >= until.settle && out.records.len() >= until.expect;
        if settled || start.elapsed() >= until.deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    out.pending = readers
        .iter()
        .flat_map(|r| r.open.values())
        .map(Vec::len)
        .sum();
    // The last stable offset of each partition: the first offset of its oldest open transaction.
    let lso: Vec<i64> = readers
        .iter()
        .map(|r| {
            r.open
                .values()
                .filter_map(|v| v.first().map(|k| k.offset))
                .min()
                .unwrap_or(i64::MAX)
        })
        .collect();
    let before = out.records.len();
    out.records
        .retain(|r| r.offset < lso.get(r.partition as usize).copied().unwrap_or(i64::MAX));
    out.behind_open = before - out.records.len();
    out.records.sort_by_key(|r| (r.partition, r.offset));
    Ok(out)
}

/// One fetch of partition `p` from its next offset; whether it returned any batch.
fn fetch_once(
    conn: &mut Conn,
    topic: &str,
    p: i32,
    r: &mut PartitionReader,
    out: &mut TopicContents,
) -> Result<bool, TestkitError> {
    let mut part = FetchPartition::default();
    part.partition = p;
    part.fetch_offset = r.next_offset;
    part.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions = vec![part];
    let mut req = FetchRequest::default();
    req.replica_id = (-1).into();
    // tansu answers nothing at all to max_wait 0; 10 ms / 1 byte returns what is there.
    req.max_wait_ms = 10;
    req.min_bytes = 1;
    req.max_bytes = 4 << 20;
    req.isolation_level = 0;
    req.topics = vec![t];
    let resp: FetchResponse = conn.call(ApiKey::Fetch, FETCH_VERSION, &req)?;
    let Some(data) = resp
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|d| d.partition_index == p)
    else {
        return Ok(false);
    };
    if data.error_code != 0 {
        return Err(failed(
            &format!("fetching {topic}/{p} at {}", r.next_offset),
            format!("error code {}", data.error_code),
        ));
    }
    let Some(mut bytes) = data.records.clone() else {
        return Ok(false);
    };
    let before = r.next_offset;
    while bytes.has_remaining() {
        let set = match RecordBatchDecoder::decode(&mut bytes) {
            Ok(s) => s,
            // A fetch may end in a partial batch (cut at the size limit): fetch again from it.
            // (but a batch that never decodes is an error, e.g. compressed: no codecs here).
            Err(e) if r.next_offset == before => {
                return Err(failed(
                    &format!("decoding {topic}/{p} at offset {before}"),
                    format!("{e} (the reader has no compression codecs)"),
                ))
            }
            Err(_) => break,
        };
        for rec in set.records {
            if rec.offset < r.next_offset {
                continue;
            }
            r.next_offset = rec.offset + 1;
            if rec.control {
                // Control record key: version (i16), type (i16): 0 = ABORT, 1 = COMMIT.
                let kind = rec
                    .key
                    .as_ref()
                    .filter(|k| k.len() >= 4)
                    .map(|k| i16::from_be_bytes([k[2], k[3]]));
                let records = r.open.remove(&rec.producer_id).unwrap_or_default();
                match kind {
                    Some(1) => {
                        out.commit_markers += 1;
                        out.records.extend(records);
                    }
                    _ => {
                        out.abort_markers += 1;
                        out.aborted += records.len();
                    }
                }
                continue;
            }
            let record = KafkaRecord {
                partition: p,
                offset: rec.offset,
                key: rec.key.map(|k| k.to_vec()),
                value: rec.value.map(|v| v.to_vec()),
            };
            if rec.transactional {
                r.open.entry(rec.producer_id).or_default().push(record);
            } else {
                out.records.push(record);
            }
        }
    }
    Ok(r.next_offset > before)
}
