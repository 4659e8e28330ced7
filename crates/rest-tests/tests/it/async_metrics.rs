//! The async wait operator's metrics over REST (operator scope, Flink's `?get=` shape) and
//! Prometheus: in-flight count within the capacity, the capacity, latency percentiles, timeouts.

use crate::common;

use std::time::Duration;

use common::{eventually, get, get_json, Served};
use sluice_datastream::async_io::{with_timeout_handler, AsyncError};

type Reply =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<u64>, AsyncError>> + Send>>;

#[test]
fn async_metrics_are_published_under_the_operator_scope_and_prometheus() {
    let env = common::env(1);
    // Every 50th request never answers and times out after 20 ms (the handler emits nothing);
    // the others take 2 ms.
    let f = |x: u64| -> Reply {
        Box::pin(async move {
            if x % 50 == 7 {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
            Ok(vec![x])
        })
    };
    env.generate(u64::MAX / 2, |i| i)
        .rebalance()
        .ordered_wait(
            with_timeout_handler(f, |_: &u64| Ok(vec![])),
            Duration::from_millis(20),
            8,
        )
        .discard();
    let s = Served::start(&env);
    s.wait_for_metrics();
    let jid = &s.jid;
    let v = s.vertex("async wait operator");
    let names = [
        "asyncInFlight",
        "asyncQueueSize",
        "asyncCapacity",
        "asyncRequests",
        "asyncTimeouts",
        "asyncRetries",
        "asyncLatencyUs_p50",
        "asyncLatencyUs_p95",
        "asyncLatencyUs_p99",
        "asyncLatencyUs_max",
    ];
    let query: Vec<String> = names
        .iter()
        .map(|n| format!("async_wait_operator.{n}"))
        .collect();
    let path = format!(
        "/jobs/{jid}/vertices/{v}/subtasks/0/metrics?get={}",
        query.join(",")
    );
    let values = eventually("latency percentiles and timeouts published", || {
        let vals = get_json(s.addr, &path);
        let by: std::collections::BTreeMap<String, i64> = vals
            .as_array()?
            .iter()
            .filter_map(|e| {
                Some((
                    e["id"].as_str()?.to_string(),
                    e["value"].as_str()?.parse().ok()?,
                ))
            })
            .collect();
        let get = |n: &str| by.get(&format!("async_wait_operator.{n}")).copied();
        (get("asyncTimeouts")? > 0 && get("asyncLatencyUs_p99")? > 0).then_some(by)
    });
    assert_eq!(values.len(), names.len(), "{values:?}");
    let val = |n: &str| values[&format!("async_wait_operator.{n}")];
    assert_eq!(val("asyncCapacity"), 8);
    assert!((0..=8).contains(&val("asyncInFlight")), "{values:?}");
    assert!((0..=8).contains(&val("asyncQueueSize")), "{values:?}");
    assert!(val("asyncRequests") >= val("asyncTimeouts"));
    assert_eq!(val("asyncRetries"), 0);
    let (p50, p95, p99, max) = (
        val("asyncLatencyUs_p50"),
        val("asyncLatencyUs_p95"),
        val("asyncLatencyUs_p99"),
        val("asyncLatencyUs_max"),
    );
    assert!(p50 <= p95 && p95 <= p99 && p99 <= max, "{values:?}");
    // A sleep of 2 ms takes at least 2 ms; the timed-out ones at least 20 ms.
    assert!(p50 >= 2_000, "{values:?}");
    assert!(max >= 20_000, "{values:?}");

    let prom = get(s.addr, "/metrics").body;
    for family in [
        "sluice_operator_async_in_flight{",
        "sluice_operator_async_capacity{",
        "sluice_operator_async_latency_us_p99{",
        "sluice_operator_async_timeouts_total{",
        "sluice_operator_async_retries_total{",
    ] {
        assert!(
            prom.lines()
                .any(|l| l.starts_with(family) && l.contains("operator=\"async wait operator\"")),
            "{family} missing from /metrics"
        );
    }
}
