//! Unbounded aggregation keeps exactly-once through failures and rescaling: its changelog,
//! written by the exactly-once file sink, leaves the same table as a failure-free run when
//! the keyed step fails twice and restores its latest checkpoint (one phase: the accumulators
//! are keyed state; two phases: the local step's bundles are sent before each barrier), and
//! when a savepoint taken at parallelism 2 is restored at parallelism 3.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use sluice_datastream::{FaultSpec, RestartStrategy, StreamEnv};
use sluice_sql::{Change, DataType, Row, Value};
use sluice_table::group_agg::{group_aggregate, GroupAggCall, GroupAggSpec};
use sluice_table::group_agg_two_phase::{two_phase_group_aggregate, Bundle};
use sluice_table::OperatorIds;

use crate::rows::agg;
use crate::support::temp_dir;

const RECORDS: u64 = 200_000;

fn spec() -> GroupAggSpec {
    GroupAggSpec {
        keys: vec![0],
        aggs: vec![
            GroupAggCall {
                call: agg("COUNT", &[]),
                args: vec![],
                filter: None,
            },
            GroupAggCall {
                call: agg("SUM", &[DataType::bigint()]),
                args: vec![1],
                filter: None,
            },
            GroupAggCall {
                call: agg("MAX", &[DataType::bigint()]),
                args: vec![1],
                filter: None,
            },
        ],
        update_before: true,
        state_ttl: None,
    }
}

/// key = i % 101, value = i * 7 % 1000; a 3 ms pause every 1,000 rows (0.3 s per source
/// subtask) lets checkpoints (every 10 ms) complete before the faults, which fire well into each
/// keyed subtask's input.
fn job(env: &StreamEnv, p: usize, two_phase: bool, out: &Path) {
    env.set_parallelism(p);
    let rows = env
        .generate(RECORDS, |i| {
            Row(vec![
                Value::Int((i % 101) as i64),
                Value::Int((i * 7 % 1000) as i64),
            ])
        })
        .map(|r: Row| {
            if let Value::Int(v) = r.get(1) {
                if *v == 0 {
                    std::thread::sleep(Duration::from_millis(3));
                }
            }
            r
        });
    let global = OperatorIds::new("GroupAggregate(g)", "global");
    let changes = if two_phase {
        two_phase_group_aggregate(
            &rows,
            &spec(),
            Bundle {
                size: 500,
                latency: Duration::from_millis(50),
            },
            &OperatorIds::new("LocalGroupAggregate(l)", "local"),
            &global,
        )
    } else {
        group_aggregate(&rows, &spec(), &global)
    }
    .unwrap();
    changes.write_text_exactly_once(out, |c: &Change, line: &mut String| {
        line.push_str(&format!("{}{:?}", c.kind, c.row.0))
    });
}

/// The table the changelogs in `dirs` leave, whatever order their files are read in: each
/// row's additions minus its retractions, which must end at 0 or 1.
fn table(dirs: &[&Path]) -> Vec<String> {
    let mut n: BTreeMap<String, i64> = BTreeMap::new();
    for d in dirs {
        for line in sluice_runtime::sinks::committed_lines(d).unwrap() {
            let (kind, row) = line.split_at(2);
            *n.entry(row.to_string()).or_default() += match kind {
                "+I" | "+U" => 1,
                "-U" | "-D" => -1,
                other => panic!("{other}"),
            };
        }
    }
    assert!(n.values().all(|c| *c == 0 || *c == 1), "{n:?}");
    n.into_iter()
        .filter(|(_, c)| *c == 1)
        .map(|(r, _)| r)
        .collect()
}

#[test]
fn group_aggregation_restores_its_checkpoint_after_failures() {
    let dir = temp_dir("group-agg-recovery");
    let expected_dir = dir.join("expected");
    let env = StreamEnv::new();
    job(&env, 2, false, &expected_dir);
    env.execute().unwrap();
    let expected = table(&[&expected_dir]);
    assert_eq!(expected.len(), 101);

    let vertex = "GroupAggregate(g)";
    for two_phase in [false, true] {
        let out = dir.join(format!("faulty-{two_phase}"));
        let env = StreamEnv::new();
        env.enable_checkpointing(Duration::from_millis(10))
            .set_checkpoint_dir(dir.join(format!("chk-{two_phase}")))
            .set_restart_strategy(RestartStrategy::FixedDelay {
                attempts: 3,
                delay: Duration::ZERO,
            })
            .inject_faults(vec![
                FaultSpec {
                    vertex: vertex.into(),
                    subtask: 0,
                    after_records: if two_phase { 3_000 } else { 40_000 },
                },
                FaultSpec {
                    vertex: vertex.into(),
                    subtask: 1,
                    after_records: if two_phase { 4_500 } else { 45_000 },
                },
            ]);
        job(&env, 2, two_phase, &out);
        let handle = env.launch().unwrap();
        let monitor = handle.monitor();
        handle.wait().unwrap();
        let checkpoints = monitor.control.checkpoints().unwrap();
        assert_eq!(checkpoints.attempt(), 2, "both faults fired ({two_phase})");
        assert!(
            checkpoints.stats().restored >= 1,
            "a restart restored a checkpoint ({two_phase}): {:?}",
            checkpoints.stats()
        );
        assert_eq!(table(&[&out]), expected, "two_phase={two_phase}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_savepoint_at_p2_restores_at_p3() {
    let dir = temp_dir("group-agg-rescale");
    let expected_dir = dir.join("expected");
    let env = StreamEnv::new();
    job(&env, 1, false, &expected_dir);
    env.execute().unwrap();
    let expected = table(&[&expected_dir]);

    for two_phase in [false, true] {
        let (first, second) = (
            dir.join(format!("first-{two_phase}")),
            dir.join(format!("second-{two_phase}")),
        );
        let env = StreamEnv::new();
        job(&env, 2, two_phase, &first);
        let h = env.launch().unwrap();
        let m = h.monitor();
        let deadline = Instant::now() + Duration::from_secs(120);
        while m.records_emitted_by_sources() < RECORDS / 10 {
            assert!(!h.is_finished(), "the job ended before the savepoint");
            assert!(Instant::now() < deadline, "the source did not start");
            std::thread::sleep(Duration::from_millis(2));
        }
        let sp = h
            .stop_with_savepoint(dir.join(format!("sp-{two_phase}")))
            .unwrap();
        let env = StreamEnv::new();
        env.restore_from(&sp);
        job(&env, 3, two_phase, &second);
        env.execute().unwrap();
        assert_eq!(table(&[&first, &second]), expected, "two_phase={two_phase}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
