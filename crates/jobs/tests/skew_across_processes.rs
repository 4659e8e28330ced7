//! The skew job split over processes (each with its own `StreamEnv` and `NetEndpoint`, the
//! channels between them over real loopback TCP with the credit-based protocol) gives the same
//! final per-key sums as real Flink 2.3 (the 100k fixture) and as one process.
//!
//! The "processes" here are threads of the test, each building the same job as a separate
//! process would: what crosses between them goes only through their endpoints' sockets.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use sluice_graph::{NetEndpoint, Placement, StreamEnv};
use sluice_jobs::skew::{build, SkewConfig};

fn flink_fixture() -> BTreeMap<i64, i64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/flink/flink-skew-final-100k.csv"
    );
    let text = std::fs::read_to_string(path).expect("fixture present");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, s) = l.trim().split_once(',').expect("key,sum");
            (k.parse().expect("key"), s.parse().expect("sum"))
        })
        .collect()
}

/// Runs `cfg` split over `processes` and merges their sinks' final sums (each key's sum is
/// in exactly one process: the one its sum subtask runs on).
fn split_run(cfg: &SkewConfig, processes: usize) -> Vec<BTreeMap<i64, i64>> {
    let listeners: Vec<TcpListener> = (0..processes)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let addrs: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr().expect("addr"))
        .collect();
    let runs: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let (addrs, cfg) = (addrs.clone(), cfg.clone());
            std::thread::spawn(move || {
                let endpoint =
                    NetEndpoint::start(i, &addrs, l, Duration::from_secs(60)).expect("connects");
                let env = StreamEnv::new();
                env.set_placement(Placement {
                    process: i,
                    processes,
                    endpoint,
                });
                let job = build(&env, &cfg).expect("job builds");
                env.execute().expect("its part runs");
                job.final_sums()
            })
        })
        .collect();
    runs.into_iter()
        .map(|t| t.join().expect("process thread"))
        .collect()
}

fn merged(parts: Vec<BTreeMap<i64, i64>>) -> BTreeMap<i64, i64> {
    let mut all = BTreeMap::new();
    for part in parts {
        for (k, s) in part {
            assert!(
                all.insert(k, s).is_none(),
                "key {k} summed in two processes"
            );
        }
    }
    all
}

fn cfg(parallelism: usize) -> SkewConfig {
    SkewConfig {
        records: 100_000,
        parallelism,
        ..SkewConfig::default()
    }
}

#[test]
fn two_processes_at_parallelism_2_sum_as_flink_and_one_process() {
    let parts = split_run(&cfg(2), 2);
    // One slot per process: each process sums the keys of its one sum subtask.
    assert!(
        parts.iter().all(|p| !p.is_empty()),
        "both processes sum keys"
    );
    let sums = merged(parts);
    assert_eq!(sums, flink_fixture());
    let env = StreamEnv::new();
    let job = build(&env, &cfg(2)).expect("builds");
    env.execute().expect("runs");
    assert_eq!(sums, job.final_sums());
}

#[test]
fn two_processes_with_two_slots_each_and_a_rebalance_sum_as_flink() {
    // Parallelism 4 (2 slots per process), the map at 3 behind a REBALANCE: pointwise and
    // all-to-all channels, local and remote, in one job.
    let c = SkewConfig {
        map_parallelism: Some(3),
        rebalance_before_map: true,
        ..cfg(4)
    };
    assert_eq!(merged(split_run(&c, 2)), flink_fixture());
}

#[test]
fn a_job_split_over_processes_refuses_checkpoints_before_it_starts() {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let endpoint = NetEndpoint::start(0, &[addr], l, Duration::from_secs(5)).expect("starts");
    let env = StreamEnv::new();
    env.set_placement(Placement {
        process: 0,
        processes: 1,
        endpoint,
    });
    env.enable_checkpointing(Duration::from_millis(100));
    build(&env, &cfg(2)).expect("builds");
    let err = env.execute().expect_err("refused").to_string();
    assert!(err.contains("not supported yet"), "{err}");
}
