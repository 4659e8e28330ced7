//! The skew job split over processes (each with its own `StreamEnv` and `NetEndpoint`, the
//! channels between them over real loopback TCP with the credit-based protocol) gives the same
//! final per-key sums as real Flink 2.3 (the 100k fixture) and as one process.
//!
//! The "processes" here are threads of the test, each building the same job as a separate
//! process would: what crosses between them goes only through their endpoints' sockets.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use sluice_datastream::{NetEndpoint, Placement, StreamEnv};
use sluice_jobs::skew::{build, SkewConfig};
use sluice_runtime::checkpoint::StatsView;

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
    split_run_with(cfg, processes, |_| {})
        .into_iter()
        .map(|(sums, _)| sums)
        .collect()
}

/// [`split_run`] with `setup` applied to every process's environment; also returns each
/// process's checkpoint statistics.
fn split_run_with(
    cfg: &SkewConfig,
    processes: usize,
    setup: fn(&StreamEnv),
) -> Vec<(BTreeMap<i64, i64>, StatsView)> {
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
                setup(&env);
                let job = build(&env, &cfg).expect("job builds");
                let handle = env.launch().expect("launches");
                let monitor = handle.monitor();
                handle.wait().expect("its part runs");
                let stats = monitor.control.checkpoints().expect("a hub").stats();
                (job.final_sums(), stats)
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

/// The leader completed a checkpoint acknowledged by all 4 subtasks of the p=2 job (2 of them
/// in the other process).
fn assert_every_subtask_acked(leader: &StatsView) {
    assert!(leader.completed >= 1, "{leader:?}");
    let last = leader
        .latest_completed
        .as_ref()
        .expect("a completed checkpoint");
    let mut acked: Vec<(usize, usize)> = last.acks.iter().map(|a| (a.vertex, a.subtask)).collect();
    acked.sort_unstable();
    assert_eq!(acked, vec![(0, 0), (0, 1), (1, 0), (1, 1)]);
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
fn checkpoints_of_a_split_job_hold_every_process_s_subtasks_and_change_nothing() {
    let c = SkewConfig {
        records: 3_000_000,
        ..cfg(2)
    };
    let parts = split_run_with(&c, 2, |env| {
        env.enable_checkpointing(Duration::from_millis(10));
    });
    // Process 0 (the leader) completed checkpoints acknowledged by all 4 subtasks, 2 of them
    // in process 1; process 1 (a follower) learnt of completions from it.
    let leader = &parts[0].1;
    assert_every_subtask_acked(leader);
    assert!(
        parts[1].1.completed >= 1,
        "the follower heard of completions"
    );
    assert_eq!(leader.failed, 0);
    let sums = merged(parts.into_iter().map(|(s, _)| s).collect());
    let env = StreamEnv::new();
    let job = build(&env, &c).expect("builds");
    env.execute().expect("runs");
    assert_eq!(sums, job.final_sums());
}

#[test]
fn unaligned_checkpoints_of_a_split_job_complete_with_their_in_flight_records_and_change_nothing() {
    let c = SkewConfig {
        records: 3_000_000,
        ..cfg(2)
    };
    let parts = split_run_with(&c, 2, |env| {
        env.enable_checkpointing(Duration::from_millis(10));
        env.configure_checkpoints(|c| c.unaligned = true);
    });
    // Every subtask of both processes acknowledged (the keyed vertex's with its in-flight
    // records written into the checkpoint: restored in new processes by the CLI's tests).
    let leader = &parts[0].1;
    assert_every_subtask_acked(leader);
    let sums = merged(parts.into_iter().map(|(s, _)| s).collect());
    let env = StreamEnv::new();
    let job = build(&env, &c).expect("builds");
    env.execute().expect("runs");
    assert_eq!(sums, job.final_sums());
}
