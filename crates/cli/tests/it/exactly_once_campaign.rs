//! Issue 31's campaign: exactly once under SIGKILLs, network partitions and SIGSTOPs of
//! processes on different hosts (network namespaces), see `campaign/mod.rs`.
//!
//! `ci_campaign` (short, in the suite): each job under 3 SIGKILLs, 1 partition and 1 SIGSTOP
//! (job (a)), 2 SIGKILLs and 1 partition (job (b)); needs root and iproute2's `ip` — with
//! `CI=true` it fails naming what is missing, elsewhere it skips loudly.
//!
//! `full_campaign` (ignored; `scripts/campaign.sh` runs it in a release build): the same with
//! the settings from the environment (`SLUICE_CAMPAIGN_RECORDS`, `_KILLS`, `_PARTITIONS`,
//! `_STOPS`, `_JOBS` = `a`, `b` or `ab`, `_SEED`).

use std::time::{Duration, Instant};

use crate::campaign;
use campaign::{require_namespaces, Job, Lab, Rng, Settings};

// One campaign at a time: each runs 3 processes, a broker and a cluster on the machine.
use crate::common::ONE_AT_A_TIME as SERIAL;

fn run_campaign(s: Settings, kafka_faults: Option<(usize, usize, usize)>) {
    let t = Instant::now();
    eprintln!(
        "campaign seed {} (SLUICE_CAMPAIGN_SEED={} replays it): {s:?}",
        s.seed, s.seed
    );
    let lab = Lab::start(s.records, s.postgres);
    let mut rng = Rng::new(s.seed);
    let mut outcomes = Vec::new();
    if s.postgres {
        outcomes.push(campaign::run(&lab, Job::Postgres, &s, &mut rng));
    }
    if s.kafka {
        let mut sk = s.clone();
        if let Some((k, p, st)) = kafka_faults {
            (sk.kills, sk.partitions, sk.stops) = (k, p, st);
        }
        outcomes.push(campaign::run(&lab, Job::Kafka, &sk, &mut rng));
    }
    eprintln!(
        "\n==== campaign seed {}, {} records, {:.1} s in all",
        s.seed,
        s.records,
        t.elapsed().as_secs_f64()
    );
    for o in &outcomes {
        eprint!("{}", o.report());
    }
    for o in &outcomes {
        assert_eq!(
            (o.lost, o.duplicated, o.wrong_final_sums),
            (0, 0, 0),
            "{}: lost, duplicated, wrong final sums (seed {})",
            o.job,
            s.seed
        );
        assert_eq!(o.committed, o.expected, "{} (seed {})", o.job, s.seed);
        assert!(
            o.leftover.is_empty(),
            "{}: {} (seed {})",
            o.job,
            o.leftover,
            s.seed
        );
        assert_eq!(
            o.not_injected, 0,
            "{}: the job finished before every planned fault: make the input larger (seed {})",
            o.job, s.seed
        );
        assert!(
            o.stalls.is_empty(),
            "{}: hangs with no fault: {:?} (seed {})",
            o.job,
            o.stalls,
            s.seed
        );
    }
}

#[test]
fn ci_campaign_kills_partitions_and_stops_across_namespaces_lose_and_duplicate_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !require_namespaces("ci_campaign") {
        return;
    }
    run_campaign(
        Settings {
            seed: Settings::seed_from_env(),
            records: 1_500_000,
            kills: 3,
            partitions: 1,
            stops: 1,
            partition_ms: (2_000, 4_000),
            stop_ms: (3_000, 5_000),
            no_progress: Duration::from_secs(15),
            stall: Duration::from_secs(90),
            checkpoint_interval_ms: 200,
            // Below the stop (3-5 s): the stopped process's peers declare it lost.
            heartbeat_timeout_ms: 2_000,
            deadline: Duration::from_secs(200),
            postgres: true,
            kafka: true,
        },
        Some((2, 1, 0)),
    );
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        })
        .unwrap_or(default)
}

#[test]
#[ignore = "the full campaign: scripts/campaign.sh"]
fn full_campaign() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !require_namespaces("full_campaign") {
        return;
    }
    let jobs = std::env::var("SLUICE_CAMPAIGN_JOBS").unwrap_or_else(|_| "ab".into());
    run_campaign(
        Settings {
            seed: Settings::seed_from_env(),
            records: env_num("SLUICE_CAMPAIGN_RECORDS", 20_000_000),
            kills: env_num("SLUICE_CAMPAIGN_KILLS", 10) as usize,
            partitions: env_num("SLUICE_CAMPAIGN_PARTITIONS", 5) as usize,
            stops: env_num("SLUICE_CAMPAIGN_STOPS", 3) as usize,
            partition_ms: (2_000, 15_000),
            stop_ms: (
                env_num("SLUICE_CAMPAIGN_STOP_MIN_MS", 8_000),
                env_num("SLUICE_CAMPAIGN_STOP_MAX_MS", 15_000),
            ),
            no_progress: Duration::from_secs(env_num("SLUICE_CAMPAIGN_NO_PROGRESS_S", 30)),
            stall: Duration::from_secs(180),
            checkpoint_interval_ms: env_num("SLUICE_CAMPAIGN_CHECKPOINT_MS", 500),
            // Below every stop (8-15 s) and most partitions (2-15 s).
            heartbeat_timeout_ms: env_num("SLUICE_CAMPAIGN_HEARTBEAT_TIMEOUT_MS", 5_000),
            deadline: Duration::from_secs(env_num("SLUICE_CAMPAIGN_DEADLINE_S", 3_600)),
            postgres: jobs.contains('a'),
            kafka: jobs.contains('b'),
        },
        None,
    );
}
