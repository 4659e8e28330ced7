//! The `blocking` scenario: a synchronous lookup join against a real HTTP service. The
//! generator's values go RESCALE to `blocking-call` (one upstream channel per lookup subtask, so
//! each subtask's input order, and with it the ordered output, is the same in every run), a
//! [`sluice_lookup`] lookup in sync mode
//! against the lookup test service ([`sluice_lookup_service`], started in process on a free
//! loopback port, [`LOOKUP_LATENCY`] per request), which joins each value with its row's score.
//! The task thread waits for every answer: busy, hardly on the CPU — the doctor's "blocking
//! calls". Its mode is a plan option, so the doctor's fix (async lookup, capacity N) applies to
//! the plan, and the output digests ([`LookupOutput`]) prove ordered async gives identical
//! output per subtask, unordered the same multiset.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_datastream::{Collector, ControlEvent, GraphError, OperatorError, StreamEnv};
use sluice_lookup::{LookupExt, LookupSource, Row};
use sluice_lookup_service::{Latency, Service, ServiceOptions};

use crate::skew::mix;

/// The service's answer time per request.
pub const LOOKUP_LATENCY: Duration = Duration::from_millis(2);
/// Keys the service holds; the values are looked up modulo this (or modulo the scenario's
/// fewer `keys`, so that keys repeat and a cache pays).
pub const LOOKUP_KEYS: u64 = 100_000;

/// A PostgreSQL table the scenario looks up in instead of the HTTP service: rows by the bigint
/// column `key`, joined with their bigint `score` (a key without a row joins score -1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresTable {
    /// `postgres://USER@HOST:PORT/DB` or a libpq connection string.
    pub conn: String,
    /// The table's name.
    pub table: String,
}

/// The column the table is looked up by.
pub const KEY_COLUMN: &str = "key";

/// Per-subtask digests of what reached the sink: in order (identical output) and as a
/// multiset (the same records in any order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LookupDigest {
    /// `(records, order-sensitive hash)` per subtask.
    pub ordered: Vec<(u64, u64)>,
    /// Sum of the records' hashes over all subtasks (order-insensitive), and their count.
    pub multiset: (u64, u64),
}

/// The sink's digests, filled as records arrive.
#[derive(Clone, Default)]
pub struct LookupOutput {
    slots: Arc<Mutex<Vec<(u64, u64)>>>,
    multiset: Arc<Mutex<(u64, u64)>>,
}

impl LookupOutput {
    /// The digests of what reached the sink so far.
    pub fn digest(&self) -> LookupDigest {
        LookupDigest {
            ordered: self.slots.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            multiset: *self.multiset.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }
}

struct DigestSink {
    out: LookupOutput,
    subtask: usize,
    count: u64,
    hash: u64,
    sum: u64,
    sunk: Arc<AtomicU64>,
}

impl DigestSink {
    fn publish(&mut self) {
        if let Some(s) = self
            .out
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(self.subtask)
        {
            *s = (self.count, self.hash);
        }
        let mut m = self.out.multiset.lock().unwrap_or_else(|p| p.into_inner());
        m.0 = m.0.wrapping_add(self.sum);
        m.1 += self.count;
        self.sum = 0;
    }
}

impl Collector<(i64, i64)> for DigestSink {
    fn collect(&mut self, (v, score): (i64, i64)) -> Result<(), OperatorError> {
        let h = mix((v as u64) ^ ((score as u64) << 40));
        self.hash = (self.hash ^ h).wrapping_mul(0x0000_0100_0000_01B3);
        self.sum = self.sum.wrapping_add(h);
        self.count += 1;
        self.sunk.fetch_add(1, Relaxed);
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        if matches!(event, ControlEvent::EndOfInput) {
            self.publish();
        }
        Ok(())
    }
}

/// Adds the scenario; the service lives as long as the job's operators (they hold it).
pub fn build(
    env: &StreamEnv,
    records: u64,
    parallelism: usize,
    keys: u64,
    table: Option<&PostgresTable>,
    sunk: Arc<AtomicU64>,
) -> Result<LookupOutput, GraphError> {
    if keys == 0 || keys > LOOKUP_KEYS {
        return Err(GraphError::invalid_config(format!(
            "blocking: --keys {keys} must be within 1..={LOOKUP_KEYS} (the rows the service holds)"
        )));
    }
    env.set_parallelism(parallelism);
    if let Some(t) = table {
        let source = LookupSource::postgres(&t.conn, &t.table, KEY_COLUMN)
            .map_err(|e| GraphError::invalid_config(e.to_string()))?;
        return Ok(with_lookup(env, records, keys, source, None, sunk));
    }
    let service = Arc::new(
        Service::start(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            ServiceOptions {
                keys: LOOKUP_KEYS,
                latency: Latency::Fixed(LOOKUP_LATENCY),
                ..ServiceOptions::default()
            },
        )
        .map_err(|e| GraphError::invalid_config(format!("starting the lookup service: {e}")))?,
    );
    let source = LookupSource::http(&format!("{}/lookup/{{key}}", service.url()))
        .map_err(|e| GraphError::invalid_config(e.to_string()))?;
    Ok(with_lookup(env, records, keys, source, Some(service), sunk))
}

/// generator → RESCALE → `blocking-call` (the lookup in `source`) → digest sink; `service`
/// (the in-process HTTP service, if that is the source) lives as long as the lookup.
fn with_lookup(
    env: &StreamEnv,
    records: u64,
    keys: u64,
    source: LookupSource,
    service: Option<Arc<Service>>,
    sunk: Arc<AtomicU64>,
) -> LookupOutput {
    let output = LookupOutput::default();
    let o2 = output.clone();
    env.generate(records, |i| (mix(i) >> 1) as i64)
        .name("generator")
        .rescale()
        .lookup(
            &source,
            move |v: &i64| {
                let _keep_alive = &service;
                (*v as u64 % keys) as i64
            },
            |v: &i64, row: Option<&Row>| {
                let score = row.and_then(|r| r.get("score")).and_then(|s| s.as_i64());
                Some((*v, score.unwrap_or(-1)))
            },
        )
        .name("blocking-call")
        .add_sink(
            "digest",
            (),
            move |p| {
                *o2.slots.lock().unwrap_or_else(|e| e.into_inner()) = vec![(0, 0); p];
                *o2.multiset.lock().unwrap_or_else(|e| e.into_inner()) = (0, 0);
                Ok(())
            },
            {
                let output = output.clone();
                move |ctx| {
                    Ok(DigestSink {
                        out: output.clone(),
                        subtask: ctx.subtask_index,
                        count: 0,
                        hash: 0xcbf2_9ce4_8422_2325,
                        sum: 0,
                        sunk: sunk.clone(),
                    })
                }
            },
        );
    output
}
