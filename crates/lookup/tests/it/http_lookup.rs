//! Lookup joins against the real HTTP test service (`sluice-lookup-service`, a child process):
//! sync and async give the same output (ordered: identical per subtask; unordered: the same
//! multiset), the cache answers repeated keys, failures are retried and the last one fails the
//! job, cache metrics reach REST and Prometheus under Flink's names.

use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_datastream::StreamEnv;
use sluice_lookup::{LookupCache, LookupExt, LookupOptions, LookupSource, Row};
use sluice_testkit::{Latency, LookupService, ServiceOptions};

/// `(record, key, name from the row or "-")`.
type Out = (u64, i64, String);

fn join(i: &u64, row: Option<&Row>) -> Option<Out> {
    let name = row
        .and_then(|r| r.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("-")
        .to_string();
    Some((*i, key_of(*i), name))
}

/// Keys 0..700 over the records; the service holds 0..500, so 500.. have no row.
fn key_of(i: u64) -> i64 {
    ((i * 7919) % 700) as i64
}

fn service(o: ServiceOptions) -> LookupService {
    LookupService::start(&o).unwrap()
}

/// Runs `records` through a lookup with `options` at parallelism 2; output per subtask.
fn run(
    svc: &LookupService,
    records: u64,
    options: &LookupOptions,
) -> (Vec<Vec<Out>>, LookupSource) {
    let source = LookupSource::http(&svc.template()).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(2);
    let out = env
        .generate(records, |i| i)
        .lookup_with(&source, |i: &u64| key_of(*i), join, options)
        .collect();
    env.execute().unwrap();
    (out.handle.take_by_subtask(), source)
}

fn expected(records: u64) -> Vec<Out> {
    (0..records)
        .map(|i| {
            let k = key_of(i);
            let name = if k < 500 {
                format!("item-{k}")
            } else {
                "-".into()
            };
            (i, k, name)
        })
        .collect()
}

fn sorted(mut v: Vec<Out>) -> Vec<Out> {
    v.sort();
    v
}

#[test]
fn sync_and_async_give_the_same_output() {
    let svc = service(ServiceOptions {
        keys: 500,
        latency: Latency::Uniform(Duration::from_micros(500), Duration::from_millis(3)),
        ..ServiceOptions::default()
    });
    let n = 600;
    let (sync, _) = run(&svc, n, &LookupOptions::sync());
    assert_eq!(sorted(sync.concat()), expected(n));
    // Each subtask's output is in its input order.
    for s in &sync {
        assert!(s.windows(2).all(|w| w[0].0 < w[1].0));
    }
    let (ordered, src) = run(&svc, n, &LookupOptions::ordered(16));
    assert_eq!(
        ordered, sync,
        "ordered async: identical output, subtask by subtask"
    );
    assert!(
        src.stats().snapshot().max_in_flight > 1,
        "requests overlapped"
    );
    let (unordered, src) = run(&svc, n, &LookupOptions::unordered(16));
    assert_eq!(
        sorted(unordered.concat()),
        expected(n),
        "unordered: the same multiset"
    );
    assert!(src.stats().snapshot().max_in_flight <= 16, "capacity bound");
    // Random latencies reorder completions: some subtask's output left input order.
    assert!(
        unordered
            .iter()
            .any(|s| s.windows(2).any(|w| w[0].0 > w[1].0)),
        "unordered output kept input order throughout"
    );
}

#[test]
fn the_partial_cache_answers_repeated_keys() {
    let svc = service(ServiceOptions {
        keys: 500,
        ..ServiceOptions::default()
    });
    let n = 3000;
    for options in [
        LookupOptions::sync(),
        LookupOptions::ordered(8),
        LookupOptions::unordered(8),
    ] {
        let options = options.cache(LookupCache::partial(1000, Duration::from_secs(600)));
        let (out, src) = run(&svc, n, &options);
        assert_eq!(sorted(out.concat()), expected(n), "{options:?}");
        let s = src.stats().snapshot();
        assert_eq!(s.hits + s.misses, n);
        // 700 distinct keys, each missed at most once per subtask (async: at most `capacity`
        // times while its first load is in flight).
        assert!(s.misses <= 2 * 700 + 2 * 8 * 700 / 100, "{s:?}");
        assert!(s.hits >= n - 2 * 700 - 2 * 8 * 700 / 100, "{s:?}");
        assert_eq!(s.loads, s.misses, "every miss loaded once");
    }
    // Without a cache every record asks.
    let (_, src) = run(&svc, 300, &LookupOptions::sync());
    let s = src.stats().snapshot();
    assert_eq!((s.hits, s.misses, s.loads), (0, 300, 300));
}

#[test]
fn failed_attempts_are_retried_and_the_last_one_fails_the_job() {
    // Every key's first two requests answer 500.
    let svc = service(ServiceOptions {
        keys: 500,
        fail_first: 2,
        ..ServiceOptions::default()
    });
    let n = 200;
    let retrying = LookupOptions::unordered(8)
        .max_retries(2)
        .retry_delay(Duration::from_millis(1))
        .cache(LookupCache::partial(1000, Duration::ZERO));
    let (out, src) = run(&svc, n, &retrying);
    assert_eq!(sorted(out.concat()), expected(n));
    let s = src.stats().snapshot();
    assert_eq!(s.load_failures, 2 * s.loads, "{s:?}");

    // One retry is not enough for a fresh key: the job fails at the first one.
    let source = LookupSource::http(&svc.template()).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(1);
    env.generate(50, |i| 100_000 + i)
        .lookup_with(
            &source,
            |i: &u64| *i as i64,
            join,
            &LookupOptions::sync()
                .max_retries(1)
                .retry_delay(Duration::from_millis(1)),
        )
        .discard();
    let e = env
        .execute()
        .err()
        .map(|e| e.to_string())
        .expect("the job fails");
    assert!(e.contains("failed after 2 attempt(s)"), "{e}");
    assert!(e.contains("HTTP 500"), "{e}");
    assert!(e.contains("/lookup/100000"), "{e}");
}

#[test]
fn dropped_connections_and_stalls_are_retried_within_the_timeout() {
    let svc = service(ServiceOptions {
        keys: 500,
        drop_rate: 0.2,
        stall_rate: 0.1,
        stall: Duration::from_secs(30),
        seed: 7,
        ..ServiceOptions::default()
    });
    let n = 300;
    let options = LookupOptions::ordered(16)
        .max_retries(20)
        .timeout(Duration::from_millis(300))
        .retry_delay(Duration::from_millis(1));
    let (out, src) = run(&svc, n, &options);
    assert_eq!(sorted(out.concat()), expected(n));
    let s = src.stats().snapshot();
    assert!(s.load_failures > 0, "{s:?}");
    let stats: Value = serde_json::from_str(&svc.stats().unwrap()).unwrap();
    assert!(stats["dropped"].as_u64().unwrap() > 0, "{stats}");
    assert!(stats["stalled"].as_u64().unwrap() > 0, "{stats}");

    // With no retries a stall past the timeout fails the job, naming the timeout.
    let svc = service(ServiceOptions {
        stall_rate: 1.0,
        stall: Duration::from_secs(30),
        ..ServiceOptions::default()
    });
    let source = LookupSource::http(&svc.template()).unwrap();
    let env = StreamEnv::new();
    env.generate(5, |i| i)
        .lookup_with(
            &source,
            |i: &u64| *i as i64,
            join,
            &LookupOptions::unordered(4)
                .max_retries(0)
                .timeout(Duration::from_millis(200)),
        )
        .discard();
    let t0 = Instant::now();
    let e = env
        .execute()
        .err()
        .map(|e| e.to_string())
        .expect("the job fails");
    assert!(e.contains("no answer within 200ms"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_bad_source_or_option_is_refused_with_its_name() {
    assert!(LookupSource::http("http://127.0.0.1:1/x")
        .unwrap_err()
        .to_string()
        .contains("{key}"));
    // An unreachable service: every attempt fails, the job names the URL.
    let env = StreamEnv::new();
    let src = LookupSource::http("http://127.0.0.1:1/lookup/{key}").unwrap();
    env.generate(1, |i| i)
        .lookup_with(
            &src,
            |i: &u64| *i as i64,
            join,
            &LookupOptions::sync()
                .max_retries(1)
                .retry_delay(Duration::from_millis(1)),
        )
        .discard();
    let e = env.execute().err().unwrap().to_string();
    assert!(e.contains("127.0.0.1:1/lookup/0"), "{e}");
    // A plan option with a bad value fails the deployment, naming the option.
    let env = StreamEnv::new();
    env.generate(1, |i| i)
        .lookup(&src, |i: &u64| *i as i64, join)
        .option("lookup.async.capacity", "lots")
        .discard();
    let e = env.execute().err().unwrap().to_string();
    assert!(e.contains("lookup.async.capacity = 'lots'"), "{e}");
}

fn rest_get(reg: &sluice_rest::JobRegistry, path: &str, query: &[(&str, &str)]) -> String {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let q: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let r = sluice_rest::dispatch(reg, std::path::Path::new("/tmp"), "GET", &segments, &q, b"");
    // 404 until the operator registered its gauges (it opens after deployment).
    assert!(r.status == 200 || r.status == 404, "{path}: {}", r.status);
    String::from_utf8(r.body).unwrap()
}

#[test]
fn cache_metrics_reach_rest_and_prometheus_with_flinks_names() {
    let svc = service(ServiceOptions {
        keys: 500,
        ..ServiceOptions::default()
    });
    let source = LookupSource::http(&svc.template()).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(1);
    env.generate(400, |i| i)
        .lookup_with(
            &source,
            |i: &u64| (*i % 100) as i64,
            join,
            // Sync: the counts are exact (async may load a key again while its first load is
            // still in flight, as Flink's async lookup does).
            &LookupOptions::sync().cache(LookupCache::partial(1000, Duration::ZERO)),
        )
        .discard();
    let h = env.launch().unwrap();
    let m = h.monitor();
    let reg = sluice_rest::JobRegistry::new();
    reg.register(m.clone());
    let jid = m.job_id.to_string();
    let vid = m.graph.vertices[0].id.to_string();
    let path = format!("jobs/{jid}/vertices/{vid}/metrics");
    let names = "0.Lookup_Join.hitCount,0.Lookup_Join.missCount,0.Lookup_Join.loadCount,0.Lookup_Join.numCachedRecords,0.Lookup_Join.capacity,0.Lookup_Join.lookupKeyRepeatPerMille";
    let deadline = Instant::now() + Duration::from_secs(60);
    let body = loop {
        let body = rest_get(&reg, &path, &[("get", names)]);
        if body.contains(r#"{"id":"0.Lookup_Join.hitCount","value":"300"}"#)
            || Instant::now() > deadline
        {
            break body;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for want in [
        r#"{"id":"0.Lookup_Join.hitCount","value":"300"}"#,
        r#"{"id":"0.Lookup_Join.missCount","value":"100"}"#,
        r#"{"id":"0.Lookup_Join.loadCount","value":"100"}"#,
        r#"{"id":"0.Lookup_Join.numCachedRecords","value":"100"}"#,
        r#"{"id":"0.Lookup_Join.capacity","value":"1"}"#,
        // 400 lookups of 100 keys, all within the 1024-lookup window: 1 − 100/400.
        r#"{"id":"0.Lookup_Join.lookupKeyRepeatPerMille","value":"750"}"#,
    ] {
        assert!(body.contains(want), "{want}: {body}");
    }
    let prom = rest_get(&reg, "metrics", &[]);
    assert!(
        prom.lines()
            .any(|l| l.starts_with("sluice_operator_hit_count") && l.ends_with(" 300")),
        "{prom}"
    );
    h.wait().unwrap();
}
