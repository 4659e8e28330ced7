//! A minimal client of Kafka's transaction coordinator, over a plain TCP connection: it ends a
//! transaction another producer (a process that died) left pre-committed, by that producer's
//! transactional id, producer id and epoch, as Flink's `FlinkKafkaInternalProducer
//! .resumeTransaction` + `commitTransaction` does. librdkafka cannot: its `init_transactions`
//! bumps the epoch and aborts the transaction instead.
//!
//! Three requests of Kafka's wire protocol (framing: a 4-byte big-endian size, then request
//! header v1 = api key, api version, correlation id, nullable client id; responses: size,
//! header v0 = correlation id, body), encoded by the `kafka-protocol` crate, at non-flexible
//! versions only, each negotiated with the broker's `ApiVersions` answer:
//!
//! - `ApiVersions` v0 (key 18): which versions the broker serves.
//! - `FindCoordinator` v1–v2 (key 10; v1 is the first with `key_type`, 1 = transaction): the
//!   broker that coordinates the transactional id.
//! - `EndTxn` v0–v2 (key 26): `committed = true`, sent to that coordinator.
//!
//! What the coordinator's answers mean here ([`EndTxnOutcome`]; error codes from Kafka's
//! `Errors`):
//!
//! - `NONE`: the transaction is committed: now, or already (Kafka answers a retried `EndTxn`
//!   of a transaction it committed with the same producer id and epoch with `NONE`; tansu 0.6
//!   does too, `tests/sink_resume.rs`). So resuming is idempotent.
//! - `NOT_COORDINATOR` (16), `COORDINATOR_NOT_AVAILABLE` (15): find the coordinator again;
//!   `COORDINATOR_LOAD_IN_PROGRESS` (14), `CONCURRENT_TRANSACTIONS` (51, an earlier `EndTxn`
//!   is still writing its markers): retry after a pause; both until the deadline.
//! - `PRODUCER_FENCED` (90), `INVALID_PRODUCER_EPOCH` (47): the transactional id has a newer
//!   epoch: another producer initialised it (which aborts an open transaction) or the
//!   coordinator aborted the transaction on its timeout (`transaction.timeout.ms`) and bumped
//!   the epoch. The transaction is over and this commit cannot reach it.
//! - `INVALID_TXN_STATE` (48): same epoch, but no transaction to commit: it was aborted (or
//!   never held a record).
//! - `INVALID_PRODUCER_ID_MAPPING` (49), `TRANSACTIONAL_ID_NOT_FOUND` (105),
//!   `UNKNOWN_PRODUCER_ID` (59): the coordinator no longer knows the id or it belongs to
//!   another producer id (expired after `transactional.id.expiration.ms`).
//!
//! Any other code, and every transport failure, is a [`KafkaError::Protocol`] naming the
//! request and the broker. tansu 0.6 answers none of the refusals above: it closes the
//! connection instead ("closed the connection without answering"), so there a fenced or
//! unknown transaction is such an error.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, EndTxnRequest, EndTxnResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, ProducerId, RequestHeader, ResponseHeader,
    TransactionalId,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use crate::KafkaError;

/// `FindCoordinator`'s `key_type` for a transactional id (0 is a consumer group).
const KEY_TYPE_TRANSACTION: i8 = 1;
/// The non-flexible versions this client speaks (request header v1, response header v0).
const FIND_COORDINATOR: (i16, i16) = (1, 2);
const END_TXN: (i16, i16) = (0, 2);
/// Pause between retries of a retriable answer.
const BACKOFF: Duration = Duration::from_millis(50);
/// Largest response accepted (the three responses are a few dozen bytes; a broker of another
/// protocol might announce anything).
const MAX_RESPONSE: usize = 1 << 20;

/// A pre-committed transaction, as a checkpoint records it (Flink's `KafkaCommittable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerTxn {
    /// The producer's transactional id.
    pub transactional_id: String,
    /// The producer id the coordinator assigned.
    pub producer_id: i64,
    /// The producer's epoch (a newer epoch fences older producers).
    pub producer_epoch: i16,
}

/// What the coordinator said to `EndTxn(committed = true)` (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndTxnOutcome {
    /// Committed (now or earlier): its records are visible to `read_committed` consumers.
    Committed,
    /// A newer epoch exists: the transaction was aborted (or ended) by someone else.
    Fenced(i16),
    /// No transaction in progress under this producer id and epoch: aborted, or empty.
    NotOngoing,
    /// The coordinator does not know this transactional id / producer id (any more).
    Unknown(i16),
}

impl EndTxnOutcome {
    /// Why the records are not (known to be) committed, for a report.
    pub fn describe(&self) -> String {
        let name = |c: i16| {
            ResponseError::try_from_code(c).map_or_else(|| "NONE".to_string(), |e| format!("{e:?}"))
        };
        match self {
            EndTxnOutcome::Committed => "committed".into(),
            EndTxnOutcome::Fenced(c) => format!(
                "{} (code {c}): a newer producer epoch exists, the transaction was aborted by a \
                 newer producer with its id or by the coordinator's transaction timeout",
                name(*c)
            ),
            EndTxnOutcome::NotOngoing => "InvalidTxnState (code 48): no transaction in progress \
                 under that producer id and epoch (aborted)"
                .into(),
            EndTxnOutcome::Unknown(c) => format!(
                "{} (code {c}): the coordinator does not know the transactional id (expired?)",
                name(*c)
            ),
        }
    }
}

/// `(id, epoch)` from librdkafka's `Acquired PID{Id:<id>,Epoch:<epoch>}[ (previous …)]` (the
/// first `PID{…}` of the line is the new one; librdkafka's `rd_kafka_pid2str` format).
pub fn parse_acquired_pid(line: &str) -> Option<(i64, i16)> {
    let rest = &line[line.find("Acquired PID{Id:")? + "Acquired PID{Id:".len()..];
    let (id, rest) = rest.split_once(",Epoch:")?;
    let (epoch, _) = rest.split_once('}')?;
    Some((id.trim().parse().ok()?, epoch.trim().parse().ok()?))
}

/// Commits `txn` through its transaction coordinator, found via any of `bootstrap`'s brokers
/// (comma-separated `host:port`), retrying retriable answers until `timeout`.
pub fn commit_transaction(
    bootstrap: &str,
    txn: &ProducerTxn,
    timeout: Duration,
) -> Result<EndTxnOutcome, KafkaError> {
    let deadline = Instant::now() + timeout;
    loop {
        let coordinator = find_coordinator(bootstrap, &txn.transactional_id, deadline)?;
        let mut conn = Conn::open(&coordinator, deadline)?;
        let version = conn.negotiate(ApiKey::EndTxn, END_TXN)?;
        loop {
            let mut req = EndTxnRequest::default();
            req.transactional_id =
                TransactionalId(StrBytes::from_string(txn.transactional_id.clone()));
            req.producer_id = ProducerId(txn.producer_id);
            req.producer_epoch = txn.producer_epoch;
            req.committed = true;
            let resp: EndTxnResponse = conn.call(ApiKey::EndTxn, version, &req)?;
            let code = resp.error_code;
            match ResponseError::try_from_code(code) {
                None => return Ok(EndTxnOutcome::Committed),
                Some(ResponseError::ProducerFenced | ResponseError::InvalidProducerEpoch) => {
                    return Ok(EndTxnOutcome::Fenced(code))
                }
                Some(ResponseError::InvalidTxnState) => return Ok(EndTxnOutcome::NotOngoing),
                Some(
                    ResponseError::InvalidProducerIdMapping
                    | ResponseError::TransactionalIdNotFound
                    | ResponseError::UnknownProducerId,
                ) => return Ok(EndTxnOutcome::Unknown(code)),
                Some(ResponseError::CoordinatorLoadInProgress | ResponseError::ConcurrentTransactions)
                    if Instant::now() < deadline =>
                {
                    std::thread::sleep(BACKOFF);
                }
                Some(ResponseError::NotCoordinator | ResponseError::CoordinatorNotAvailable)
                    if Instant::now() < deadline =>
                {
                    std::thread::sleep(BACKOFF);
                    break; // find the coordinator again
                }
                Some(e) => {
                    return Err(KafkaError::Protocol {
                        api: "EndTxn",
                        broker: coordinator,
                        detail: format!(
                            "committing transaction {} (producer id {}, epoch {}): {e:?} (code {code}): {e}",
                            txn.transactional_id, txn.producer_id, txn.producer_epoch
                        ),
                    })
                }
            }
        }
    }
}

/// `host:port` of the coordinator of `transactional_id`, asked of the first bootstrap broker
/// that answers.
fn find_coordinator(
    bootstrap: &str,
    transactional_id: &str,
    deadline: Instant,
) -> Result<String, KafkaError> {
    let mut last = None;
    for broker in bootstrap
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty())
    {
        match find_coordinator_at(broker, transactional_id, deadline) {
            Ok(c) => return Ok(c),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| KafkaError::Protocol {
        api: "FindCoordinator",
        broker: bootstrap.to_string(),
        detail: "no bootstrap server given".into(),
    }))
}

fn find_coordinator_at(
    broker: &str,
    transactional_id: &str,
    deadline: Instant,
) -> Result<String, KafkaError> {
    let mut conn = Conn::open(broker, deadline)?;
    let version = conn.negotiate(ApiKey::FindCoordinator, FIND_COORDINATOR)?;
    loop {
        let mut req = FindCoordinatorRequest::default();
        req.key = StrBytes::from_string(transactional_id.to_string());
        req.key_type = KEY_TYPE_TRANSACTION;
        let resp: FindCoordinatorResponse = conn.call(ApiKey::FindCoordinator, version, &req)?;
        match ResponseError::try_from_code(resp.error_code) {
            None => return Ok(format!("{}:{}", resp.host.as_str(), resp.port)),
            Some(e) if e.is_retriable() && Instant::now() < deadline => std::thread::sleep(BACKOFF),
            Some(e) => {
                return Err(KafkaError::Protocol {
                    api: "FindCoordinator",
                    broker: broker.to_string(),
                    detail: format!(
                        "transactional id {transactional_id}: {e:?} (code {}): {e}",
                        resp.error_code
                    ),
                })
            }
        }
    }
}

/// One connection to one broker, with the versions it serves.
struct Conn {
    stream: TcpStream,
    addr: String,
    correlation: i32,
    versions: ApiVersionsResponse,
}

impl Conn {
    fn open(addr: &str, deadline: Instant) -> Result<Conn, KafkaError> {
        let err = |detail: String| KafkaError::Protocol {
            api: "connect",
            broker: addr.to_string(),
            detail,
        };
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        let sock = addr
            .to_socket_addrs()
            .map_err(|e| err(e.to_string()))?
            .next()
            .ok_or_else(|| err("no address".into()))?;
        let stream = TcpStream::connect_timeout(&sock, left).map_err(|e| err(e.to_string()))?;
        stream
            .set_read_timeout(Some(left))
            .and_then(|()| stream.set_write_timeout(Some(left)))
            .and_then(|()| stream.set_nodelay(true))
            .map_err(|e| err(e.to_string()))?;
        let mut conn = Conn {
            stream,
            addr: addr.to_string(),
            correlation: 0,
            versions: ApiVersionsResponse::default(),
        };
        // v0: every broker serves it, and its response header is v0 at any version.
        conn.versions = conn.call(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default())?;
        if let Some(e) = ResponseError::try_from_code(conn.versions.error_code) {
            return Err(err(format!("ApiVersions: {e:?}: {e}")));
        }
        Ok(conn)
    }

    /// The highest version of `key` in `ours` (inclusive range) that the broker serves.
    fn negotiate(&self, key: ApiKey, ours: (i16, i16)) -> Result<i16, KafkaError> {
        negotiate(&self.versions, key, ours).ok_or_else(|| KafkaError::Protocol {
            api: api_name(key),
            broker: self.addr.clone(),
            detail: format!(
                "the broker serves no version in {}..={} (non-flexible versions); it serves {}",
                ours.0,
                ours.1,
                self.versions
                    .api_keys
                    .iter()
                    .find(|k| k.api_key == key as i16)
                    .map_or("none".into(), |k| format!(
                        "{}..={}",
                        k.min_version, k.max_version
                    ))
            ),
        })
    }

    fn call<Req, Resp>(&mut self, key: ApiKey, version: i16, req: &Req) -> Result<Resp, KafkaError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable + HeaderVersion,
    {
        let err = |detail: String| KafkaError::Protocol {
            api: api_name(key),
            broker: self.addr.clone(),
            detail,
        };
        self.correlation += 1;
        let frame = encode_request(key, version, self.correlation, req).map_err(&err)?;
        self.stream
            .write_all(&frame)
            .map_err(|e| err(format!("sending: {e}")))?;
        let mut len = [0u8; 4];
        self.stream
            .read_exact(&mut len)
            .map_err(|e| match e.kind() {
                // tansu 0.6 answers an EndTxn its storage refuses (e.g. a fenced epoch) so.
                std::io::ErrorKind::UnexpectedEof => {
                    err("the broker closed the connection without answering".into())
                }
                _ => err(format!("reading the response size: {e}")),
            })?;
        let n = i32::from_be_bytes(len);
        if n < 4 || n as usize > MAX_RESPONSE {
            return Err(err(format!("a response of {n} bytes")));
        }
        let mut buf = vec![0u8; n as usize];
        self.stream
            .read_exact(&mut buf)
            .map_err(|e| err(format!("reading the response: {e}")))?;
        decode_response(Bytes::from(buf), version, self.correlation).map_err(err)
    }
}

fn api_name(key: ApiKey) -> &'static str {
    match key {
        ApiKey::ApiVersions => "ApiVersions",
        ApiKey::FindCoordinator => "FindCoordinator",
        ApiKey::EndTxn => "EndTxn",
        _ => "Kafka",
    }
}

/// The highest version of `key` within `ours` that `versions` serves.
fn negotiate(versions: &ApiVersionsResponse, key: ApiKey, ours: (i16, i16)) -> Option<i16> {
    let k = versions.api_keys.iter().find(|k| k.api_key == key as i16)?;
    let (lo, hi) = (k.min_version.max(ours.0), k.max_version.min(ours.1));
    (lo <= hi).then_some(hi)
}

/// Size-prefixed request: header (v1 for the non-flexible versions used here), then body.
fn encode_request<Req: Encodable + HeaderVersion>(
    key: ApiKey,
    version: i16,
    correlation: i32,
    req: &Req,
) -> Result<BytesMut, String> {
    let mut header = RequestHeader::default();
    header.request_api_key = key as i16;
    header.request_api_version = version;
    header.correlation_id = correlation;
    header.client_id = Some(StrBytes::from_static_str("sluice-kafka-sink"));
    let mut body = BytesMut::new();
    header
        .encode(&mut body, Req::header_version(version))
        .map_err(|e| format!("encoding the request header: {e}"))?;
    req.encode(&mut body, version)
        .map_err(|e| format!("encoding the request: {e}"))?;
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);
    Ok(frame)
}

/// A response without its size prefix: header (correlation id checked), then body.
fn decode_response<Resp: Decodable + HeaderVersion>(
    mut buf: Bytes,
    version: i16,
    correlation: i32,
) -> Result<Resp, String> {
    let rh = ResponseHeader::decode(&mut buf, Resp::header_version(version))
        .map_err(|e| format!("decoding the response header: {e}"))?;
    if rh.correlation_id != correlation {
        return Err(format!(
            "correlation id {} answers request {correlation}",
            rh.correlation_id
        ));
    }
    Resp::decode(&mut buf, version).map_err(|e| format!("decoding the response: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    fn versions(keys: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
        let mut v = ApiVersionsResponse::default();
        v.api_keys = keys
            .iter()
            .map(|(k, lo, hi)| {
                let mut a = ApiVersion::default();
                a.api_key = *k as i16;
                a.min_version = *lo;
                a.max_version = *hi;
                a
            })
            .collect();
        v
    }

    #[test]
    fn librdkafka_pid_lines_are_parsed() {
        assert_eq!(
            parse_acquired_pid("Acquired PID{Id:17,Epoch:0}"),
            Some((17, 0))
        );
        assert_eq!(
            parse_acquired_pid(
                "[thrd:main]: Acquired PID{Id:5,Epoch:3} (previous PID{Id:5,Epoch:2})"
            ),
            Some((5, 3))
        );
        assert_eq!(parse_acquired_pid("Acquired PID{Invalid}"), None);
        assert_eq!(
            parse_acquired_pid("Acquired invalid PID{-1,-1}: ignoring"),
            None
        );
        assert_eq!(parse_acquired_pid("Ignoring InitProduceId response"), None);
    }

    #[test]
    fn negotiation_takes_the_highest_common_non_flexible_version() {
        let v = versions(&[(ApiKey::EndTxn, 0, 5), (ApiKey::FindCoordinator, 0, 6)]);
        assert_eq!(negotiate(&v, ApiKey::EndTxn, END_TXN), Some(2));
        assert_eq!(
            negotiate(&v, ApiKey::FindCoordinator, FIND_COORDINATOR),
            Some(2)
        );
        // A broker that dropped the old versions (min above ours), or lacks the API.
        let v = versions(&[(ApiKey::EndTxn, 3, 5)]);
        assert_eq!(negotiate(&v, ApiKey::EndTxn, END_TXN), None);
        assert_eq!(
            negotiate(&v, ApiKey::FindCoordinator, FIND_COORDINATOR),
            None
        );
        let v = versions(&[(ApiKey::FindCoordinator, 0, 1)]);
        assert_eq!(
            negotiate(&v, ApiKey::FindCoordinator, FIND_COORDINATOR),
            Some(1)
        );
    }

    /// The bytes of `EndTxn` v2, as Kafka's protocol guide lays them out: size, header v1
    /// (api key 26, version, correlation id, client id as int16 length + bytes), then
    /// transactional id (int16 length + bytes), producer id (int64), epoch (int16), committed
    /// (int8 bool).
    #[test]
    fn end_txn_v2_is_framed_with_request_header_v1() {
        let mut req = EndTxnRequest::default();
        req.transactional_id = TransactionalId(StrBytes::from_static_str("p-0-7"));
        req.producer_id = ProducerId(0x0102_0304_0506_0708);
        req.producer_epoch = 3;
        req.committed = true;
        let frame = encode_request(ApiKey::EndTxn, 2, 9, &req).unwrap();
        let client = b"sluice-kafka-sink";
        let mut want = Vec::new();
        let body_len = 2 + 2 + 4 + 2 + client.len() + 2 + 5 + 8 + 2 + 1;
        want.extend((body_len as i32).to_be_bytes());
        want.extend(26i16.to_be_bytes());
        want.extend(2i16.to_be_bytes());
        want.extend(9i32.to_be_bytes());
        want.extend((client.len() as i16).to_be_bytes());
        want.extend(client);
        want.extend(5i16.to_be_bytes());
        want.extend(b"p-0-7");
        want.extend(0x0102_0304_0506_0708i64.to_be_bytes());
        want.extend(3i16.to_be_bytes());
        want.push(1);
        assert_eq!(&frame[..], &want[..]);
    }

    /// `FindCoordinator` v1/v2 body: key (int16 length + bytes), key type (int8).
    #[test]
    fn find_coordinator_v1_carries_the_transaction_key_type() {
        let mut req = FindCoordinatorRequest::default();
        req.key = StrBytes::from_static_str("t");
        req.key_type = KEY_TYPE_TRANSACTION;
        let frame = encode_request(ApiKey::FindCoordinator, 1, 1, &req).unwrap();
        assert_eq!(&frame[frame.len() - 4..], &[0, 1, b't', 1]);
    }

    /// `EndTxn` v0–v2 response: header v0 (correlation id), throttle time (int32), error code
    /// (int16); a response to another request is refused.
    #[test]
    fn end_txn_response_is_decoded_and_its_correlation_checked() {
        let mut raw = Vec::new();
        raw.extend(9i32.to_be_bytes());
        raw.extend(0i32.to_be_bytes());
        raw.extend(48i16.to_be_bytes());
        let r: EndTxnResponse = decode_response(Bytes::from(raw.clone()), 2, 9).unwrap();
        assert_eq!(r.error_code, 48);
        let e = decode_response::<EndTxnResponse>(Bytes::from(raw), 2, 10).unwrap_err();
        assert!(e.contains("correlation id 9 answers request 10"), "{e}");
    }
}
