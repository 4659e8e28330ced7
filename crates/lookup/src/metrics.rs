//! A lookup's counters: [`LookupStats`] per source (summed over subtasks and attempts, for
//! programs and tests), and per subtask the operator gauges REST and Prometheus publish, under
//! Flink's lookup-cache names.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_runtime::{GaugeKind, OperatorGauge};
use sluice_types::OperatorContext;

use crate::repeat::{RepeatWindow, WINDOW};
use crate::LookupKey;

/// Counters of one lookup source.
#[derive(Debug, Default)]
pub struct LookupStats {
    /// Records answered from the cache.
    pub hits: AtomicU64,
    /// Records that asked the source.
    pub misses: AtomicU64,
    /// Successful loads from the source.
    pub loads: AtomicU64,
    /// Failed attempts (each retry counts).
    pub load_failures: AtomicU64,
    /// Time of successful loads, µs (mean = this / loads).
    pub load_time_us: AtomicU64,
    /// The most requests one subtask had in flight at once.
    pub max_in_flight: AtomicU64,
}

/// A point-in-time copy of [`LookupStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LookupStatsSnapshot {
    /// Records answered from the cache.
    pub hits: u64,
    /// Records the cache did not hold.
    pub misses: u64,
    /// Requests that got an answer.
    pub loads: u64,
    /// Requests that failed (each attempt counts).
    pub load_failures: u64,
    /// Total time of answered requests, in microseconds.
    pub load_time_us: u64,
    /// The most requests one subtask had in flight at once.
    pub max_in_flight: u64,
}

impl LookupStats {
    /// The counters now.
    pub fn snapshot(&self) -> LookupStatsSnapshot {
        LookupStatsSnapshot {
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            loads: self.loads.load(Relaxed),
            load_failures: self.load_failures.load(Relaxed),
            load_time_us: self.load_time_us.load(Relaxed),
            max_in_flight: self.max_in_flight.load(Relaxed),
        }
    }
}

impl LookupStatsSnapshot {
    /// Hits per record looked up (0 when none was).
    pub fn hit_rate(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }

    /// The mean time of an answered request (zero when none was).
    pub fn mean_load_time(&self) -> Duration {
        Duration::from_micros(self.load_time_us.checked_div(self.loads).unwrap_or(0))
    }
}

/// One subtask's figures: the source's [`LookupStats`] and the task's operator gauges.
pub(crate) struct Metrics {
    stats: Arc<LookupStats>,
    hit: Option<Arc<OperatorGauge>>,
    miss: Option<Arc<OperatorGauge>>,
    load: Option<Arc<OperatorGauge>>,
    failures: Option<Arc<OperatorGauge>>,
    latest: Option<Arc<OperatorGauge>>,
    load_time: Option<Arc<OperatorGauge>>,
    cached: Option<Arc<OperatorGauge>>,
    in_flight: Option<Arc<OperatorGauge>>,
    capacity: Option<Arc<OperatorGauge>>,
    repeat_gauge: Option<Arc<OperatorGauge>>,
    repeats: Mutex<RepeatWindow>,
}

impl Metrics {
    pub(crate) fn new(stats: Arc<LookupStats>, ctx: &OperatorContext, capacity: usize) -> Metrics {
        let task = sluice_runtime::services::task_metrics(ctx);
        let g = |name: &str, kind: GaugeKind, help: &str| {
            task.as_ref()
                .map(|t| t.register_gauge(&ctx.operator_name, name, kind, help, 0))
        };
        let m = Metrics {
            stats,
            hit: g(
                "hitCount",
                GaugeKind::Counter,
                "Lookups answered by the cache",
            ),
            miss: g(
                "missCount",
                GaugeKind::Counter,
                "Lookups that asked the source",
            ),
            load: g(
                "loadCount",
                GaugeKind::Counter,
                "Successful loads from the source",
            ),
            failures: g(
                "numLoadFailures",
                GaugeKind::Counter,
                "Failed load attempts (each retry counts)",
            ),
            latest: g(
                "latestLoadTime",
                GaugeKind::Gauge,
                "Time of the latest load, ms",
            ),
            load_time: g(
                "loadTimeUsTotal",
                GaugeKind::Counter,
                "Time of all successful loads, us",
            ),
            cached: g("numCachedRecords", GaugeKind::Gauge, "Keys in the cache"),
            in_flight: g("inFlight", GaugeKind::Gauge, "Lookup requests in flight"),
            capacity: g(
                "capacity",
                GaugeKind::Gauge,
                "Lookup requests allowed in flight (1: sync mode)",
            ),
            repeat_gauge: g(
                "lookupKeyRepeatPerMille",
                GaugeKind::Gauge,
                "Share of the last 1024 lookups whose key occurred earlier among them, per mille",
            ),
            repeats: Mutex::new(RepeatWindow::new(WINDOW)),
        };
        if let Some(c) = &m.capacity {
            c.set(capacity as i64);
        }
        m
    }

    pub(crate) fn hit(&self) {
        self.stats.hits.fetch_add(1, Relaxed);
        if let Some(g) = &self.hit {
            g.add(1);
        }
    }

    pub(crate) fn miss(&self) {
        self.stats.misses.fetch_add(1, Relaxed);
        if let Some(g) = &self.miss {
            g.add(1);
        }
    }

    pub(crate) fn loaded(&self, took: Duration) {
        let us = took.as_micros() as u64;
        self.stats.loads.fetch_add(1, Relaxed);
        self.stats.load_time_us.fetch_add(us, Relaxed);
        if let Some(g) = &self.load {
            g.add(1);
        }
        if let Some(g) = &self.load_time {
            g.add(us as i64);
        }
        if let Some(g) = &self.latest {
            g.set(took.as_millis() as i64);
        }
    }

    pub(crate) fn failed(&self) {
        self.stats.load_failures.fetch_add(1, Relaxed);
        if let Some(g) = &self.failures {
            g.add(1);
        }
    }

    pub(crate) fn in_flight(&self, n: usize) {
        self.stats.max_in_flight.fetch_max(n as u64, Relaxed);
        if let Some(g) = &self.in_flight {
            g.set(n as i64);
        }
    }

    /// Every lookup's key, hit or miss: the repeat window behind `lookupKeyRepeatPerMille`.
    pub(crate) fn looked_up(&self, key: &LookupKey) {
        let mut w = self.repeats.lock().unwrap_or_else(|p| p.into_inner());
        w.observe(key);
        if let Some(g) = &self.repeat_gauge {
            g.set((w.ratio() * 1000.0).round() as i64);
        }
    }

    pub(crate) fn cached(&self, n: usize) {
        if let Some(g) = &self.cached {
            g.set(n as i64);
        }
    }
}
