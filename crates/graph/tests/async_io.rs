//! Async I/O (`ordered_wait` / `unordered_wait`) on real jobs: ordering guarantees, the capacity
//! bound counted inside the function itself, backpressure to the upstream, timeouts and retries.

mod common;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use common::{guarded, HANG_GUARD};
use sluice_graph::async_io::AsyncError;
use sluice_graph::StreamEnv;

/// Counts requests in flight inside the function: the current number and the maximum seen.
#[derive(Clone, Default)]
struct Concurrency {
    now: Arc<AtomicI64>,
    max: Arc<AtomicI64>,
    calls: Arc<AtomicU64>,
}

impl Concurrency {
    fn enter(&self) {
        self.calls.fetch_add(1, SeqCst);
        let n = self.now.fetch_add(1, SeqCst) + 1;
        self.max.fetch_max(n, SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, SeqCst);
    }
    fn max(&self) -> i64 {
        self.max.load(SeqCst)
    }
}

/// A service whose latency varies by key (0–3 ms), so completions arrive out of order.
fn doubling(
    c: Concurrency,
) -> impl Fn(
    u64,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<u64>, AsyncError>> + Send>,
> + Clone
       + Send
       + Sync
       + 'static {
    move |x: u64| {
        let c = c.clone();
        Box::pin(async move {
            c.enter();
            tokio::time::sleep(Duration::from_micros((x * 7919) % 4 * 1000)).await;
            c.leave();
            Ok(vec![x * 2])
        })
    }
}

#[test]
fn ordered_wait_emits_in_input_order_within_capacity() {
    let (out, max) = guarded("ordered", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let c = Concurrency::default();
        let sink = env
            .from_iter(0..2000u64)
            .ordered_wait(doubling(c.clone()), Duration::from_secs(5), 8)
            .collect();
        env.execute().expect("job");
        (sink.handle.take(), c.max())
    });
    assert_eq!(out, (0..2000u64).map(|x| x * 2).collect::<Vec<_>>());
    assert!(max <= 8, "{max} requests in flight, capacity 8");
    assert!(max >= 2, "requests never overlapped (max {max})");
}

#[test]
fn unordered_wait_emits_the_same_multiset_reordered() {
    let (out, max) = guarded("unordered", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        let c = Concurrency::default();
        let sink = env
            .from_iter(0..2000u64)
            .unordered_wait(doubling(c.clone()), Duration::from_secs(5), 16)
            .collect();
        env.execute().expect("job");
        (sink.handle.take(), c.max())
    });
    let mut sorted = out.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..2000u64).map(|x| x * 2).collect::<Vec<_>>());
    assert_ne!(out, sorted, "unordered mode kept input order throughout");
    assert!(max <= 16, "{max} requests in flight, capacity 16");
}
