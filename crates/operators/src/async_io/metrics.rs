//! The async wait operator's metrics, operator-scope gauges on REST (`<operator>.<name>`) and
//! Prometheus. Flink has no standard set for async I/O; these are Sluice's:
//!
//! | name | kind | what |
//! |---|---|---|
//! | `asyncInFlight` | gauge | requests issued and not yet completed (≤ capacity) |
//! | `asyncQueueSize` | gauge | elements held: in-flight and completed-but-not-emitted records, watermarks (≤ capacity) |
//! | `asyncCapacity` | gauge | the capacity in force (plan option `async.capacity`) |
//! | `asyncRequests` | counter | requests completed (successfully, by error, or by timeout) |
//! | `asyncTimeouts` | counter | requests that timed out |
//! | `asyncRetries` | counter | retries started |
//! | `asyncRestored` | counter | elements re-issued from a restored checkpoint |
//! | `asyncLatencyUs_p50`, `_p95`, `_p99`, `_max` | gauge | request latency in µs (issue to completion, retries included) over the last 1,024 completed requests |
//!
//! Percentiles are recomputed on the operator's tick (every buffer timeout) and every 4,096
//! completions, never per record.

use std::sync::Arc;

use sluice_metrics::TaskMetrics;
use sluice_metrics::{GaugeKind, OperatorGauge};

/// Latencies kept for the percentiles.
pub const LATENCY_WINDOW: usize = 1024;
const PUBLISH_EVERY: u32 = 4096;

pub(crate) struct AsyncMetrics {
    pub in_flight: Option<Arc<OperatorGauge>>,
    pub queue_size: Option<Arc<OperatorGauge>>,
    pub requests: Option<Arc<OperatorGauge>>,
    pub timeouts: Option<Arc<OperatorGauge>>,
    pub retries: Option<Arc<OperatorGauge>>,
    pub restored: Option<Arc<OperatorGauge>>,
    percentiles: Option<[Arc<OperatorGauge>; 4]>,
    window: Vec<u32>,
    next: usize,
    since_publish: u32,
}

impl AsyncMetrics {
    pub(crate) fn new(task: Option<&TaskMetrics>, operator: &str, capacity: usize) -> Self {
        let g = |name: &str, kind: GaugeKind, help: &str| {
            task.map(|t| t.register_gauge(operator, name, kind, help, 0))
        };
        if let Some(c) = g(
            "asyncCapacity",
            GaugeKind::Gauge,
            "Capacity of the async wait operator (in-flight elements)",
        ) {
            c.set(capacity as i64);
        }
        let percentiles = task.map(|t| {
            [
                ("asyncLatencyUs_p50", "Async request latency, median, µs"),
                (
                    "asyncLatencyUs_p95",
                    "Async request latency, 95th percentile, µs",
                ),
                (
                    "asyncLatencyUs_p99",
                    "Async request latency, 99th percentile, µs",
                ),
                (
                    "asyncLatencyUs_max",
                    "Async request latency, maximum of the window, µs",
                ),
            ]
            .map(|(n, h)| t.register_gauge(operator, n, GaugeKind::Gauge, h, 0))
        });
        AsyncMetrics {
            in_flight: g(
                "asyncInFlight",
                GaugeKind::Gauge,
                "Async requests issued and not yet completed",
            ),
            queue_size: g(
                "asyncQueueSize",
                GaugeKind::Gauge,
                "Elements held by the async wait operator",
            ),
            requests: g(
                "asyncRequests",
                GaugeKind::Counter,
                "Async requests completed",
            ),
            timeouts: g(
                "asyncTimeouts",
                GaugeKind::Counter,
                "Async requests timed out",
            ),
            retries: g(
                "asyncRetries",
                GaugeKind::Counter,
                "Async request retries started",
            ),
            restored: g(
                "asyncRestored",
                GaugeKind::Counter,
                "Elements re-issued from a restored checkpoint",
            ),
            percentiles,
            window: Vec::with_capacity(LATENCY_WINDOW),
            next: 0,
            since_publish: 0,
        }
    }

    /// One request completed after `latency_us`.
    pub(crate) fn completed(&mut self, latency_us: u64, timed_out: bool) {
        let v = latency_us.min(u32::MAX as u64) as u32;
        if self.window.len() < LATENCY_WINDOW {
            self.window.push(v);
        } else {
            self.window[self.next] = v;
        }
        self.next = (self.next + 1) % LATENCY_WINDOW;
        if let Some(r) = &self.requests {
            r.add(1);
        }
        if timed_out {
            if let Some(t) = &self.timeouts {
                t.add(1);
            }
        }
        self.since_publish += 1;
        if self.since_publish >= PUBLISH_EVERY {
            self.publish();
        }
    }

    pub(crate) fn set_sizes(&self, in_flight: usize, queued: usize) {
        if let Some(g) = &self.in_flight {
            g.set(in_flight as i64);
        }
        if let Some(g) = &self.queue_size {
            g.set(queued as i64);
        }
    }

    /// Recomputes the latency percentiles from the window.
    pub(crate) fn publish(&mut self) {
        self.since_publish = 0;
        let Some(gauges) = &self.percentiles else {
            return;
        };
        if self.window.is_empty() {
            return;
        }
        let [p50, p95, p99, max] = percentiles(&self.window);
        for (g, v) in gauges.iter().zip([p50, p95, p99, max]) {
            g.set(v as i64);
        }
    }
}

/// p50, p95, p99 and max of `values` (nearest rank).
pub fn percentiles(values: &[u32]) -> [u32; 4] {
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = |p: f64| {
        let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[i - 1]
    };
    [rank(0.50), rank(0.95), rank(0.99), v[v.len() - 1]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentiles(&v), [50, 95, 99, 100]);
        assert_eq!(percentiles(&[7]), [7, 7, 7, 7]);
    }
}
