//! A window aggregation that fails mid-stream and restores its latest checkpoint publishes,
//! through the exactly-once file sink, exactly what a failure-free run publishes: its open
//! windows' accumulators are in the checkpoint (one phase), and the local step's partials are
//! sent before each barrier (two phases).

use std::path::Path;
use std::time::Duration;

use sluice_datastream::{FaultSpec, RestartStrategy, StreamEnv, WatermarkStrategy};
use sluice_sql::{Row, Value};
use sluice_table::window_agg::WindowAggCall;
use sluice_table::{
    window_aggregate, LateRecords, OperatorIds, RowErrors, WindowAggSpec, WindowKind, WindowTime,
};

use crate::rows::{agg, millis, ts};
use crate::support::temp_dir;

const RECORDS: u64 = 200_000;

fn job(env: &StreamEnv, local: bool, out: &Path) {
    env.set_parallelism(2);
    // key = i % 7, time = i / 10 ms (20 s of event time), value = i.
    let rows = env
        .generate(RECORDS, |i| {
            Row(vec![
                Value::Int((i % 7) as i64),
                ts((i / 10) as i64),
                Value::Int(i as i64),
            ])
        })
        .map(|r: Row| {
            if millis(r.get(1)) % 1_000 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        })
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(0, |r: &Row| millis(r.get(1)))
                .with_interval(Duration::from_millis(5)),
        );
    let spec = WindowAggSpec {
        keys: vec![0],
        kind: WindowKind::Hop {
            slide: 500,
            size: 1_000,
        },
        time: WindowTime::RowTime(1),
        aggs: vec![
            WindowAggCall {
                call: agg("COUNT", &[]),
                args: vec![],
            },
            WindowAggCall {
                call: agg("SUM", &[sluice_sql::DataType::bigint()]),
                args: vec![2],
            },
        ],
        properties: WindowAggSpec::TVF_PROPERTIES.to_vec(),
        local: local.then(|| OperatorIds::new("LocalWindowAggregate(l)", "local")),
        legacy: false,
    };
    let (errors, late) = (RowErrors::new(), LateRecords::new());
    window_aggregate(
        &rows,
        &spec,
        &OperatorIds::new("WindowAggregate(g)", "global"),
        &errors,
        &late,
    )
    .unwrap()
    .write_text_exactly_once(out, |r: &Row, line: &mut String| {
        line.push_str(&format!("{:?}", r.0))
    });
}

fn sorted_output(dir: &Path) -> Vec<String> {
    let mut lines = sluice_runtime::sinks::committed_lines(dir).unwrap();
    lines.sort();
    lines
}

#[test]
fn window_aggregation_restores_its_checkpoint_after_failures() {
    let dir = temp_dir("window-recovery");
    let expected_dir = dir.join("expected");
    let env = StreamEnv::new();
    job(&env, false, &expected_dir);
    env.execute().unwrap();
    let expected = sorted_output(&expected_dir);
    // 7 keys × (40 windows of 1 s every 0.5 s over 20 s, plus the one starting at -0.5 s).
    assert_eq!(expected.len(), 7 * 41);

    // The local step is chained to the source (whose vertex takes no failure): the keyed
    // step fails in both runs, restoring what the partials sent before each barrier put
    // there. With two phases it receives only partials: one per key and 500 ms slice (about
    // 120 to 160 per subtask) plus one per key at each barrier, so its counts are well below
    // that, or the fault would not fire on a fast machine. The source sleeps 10 ms per second of
    // event time so that checkpoints complete (every 10 ms) before the first fault.
    let vertex = "WindowAggregate(g)";
    for local in [false, true] {
        let out = dir.join(format!("faulty-{local}"));
        let env = StreamEnv::new();
        env.enable_checkpointing(Duration::from_millis(10))
            .set_checkpoint_dir(dir.join(format!("chk-{local}")))
            .set_restart_strategy(RestartStrategy::FixedDelay {
                attempts: 3,
                delay: Duration::ZERO,
            })
            .inject_faults(vec![
                FaultSpec {
                    vertex: vertex.into(),
                    subtask: 0,
                    after_records: if local { 40 } else { 20_000 },
                },
                FaultSpec {
                    vertex: vertex.into(),
                    subtask: 1,
                    after_records: if local { 60 } else { 50_000 },
                },
            ]);
        job(&env, local, &out);
        let handle = env.launch().unwrap();
        let monitor = handle.monitor();
        handle.wait().unwrap();
        let checkpoints = monitor.control.checkpoints().unwrap();
        assert_eq!(
            checkpoints.attempt(),
            2,
            "both faults fired (local={local})"
        );
        let stats = checkpoints.stats();
        assert!(
            stats.restored >= 1,
            "a restart restored a checkpoint: {stats:?}"
        );
        assert_eq!(sorted_output(&out), expected, "local={local}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
