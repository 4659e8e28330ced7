//! The skew job's final per-key sums for 100,000 records must equal real Flink 2.3's
//! (`tests/fixtures/flink/flink-skew-final-100k.csv`), whatever the parallelism and plan shape.

use std::collections::BTreeMap;

use sluice_datastream::StreamEnv;
use sluice_jobs::skew::{build, SkewConfig};

fn flink_fixture() -> BTreeMap<i64, i64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/flink/flink-skew-final-100k.csv"
    );
    let text = std::fs::read_to_string(path).expect("fixture present");
    let mut lines = text.lines();
    assert_eq!(lines.next().map(str::trim), Some("key,sum"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, s) = l.trim().split_once(',').expect("key,sum");
            (k.parse().expect("key"), s.parse().expect("sum"))
        })
        .collect()
}

fn run(cfg: SkewConfig) -> BTreeMap<i64, i64> {
    let env = StreamEnv::new();
    let job = build(&env, &cfg).expect("job builds");
    env.execute().expect("job runs");
    job.final_sums()
}

fn cfg(parallelism: usize) -> SkewConfig {
    SkewConfig {
        records: 100_000,
        parallelism,
        ..SkewConfig::default()
    }
}

#[test]
fn final_sums_equal_flink_at_parallelism_1() {
    assert_eq!(run(cfg(1)), flink_fixture());
}

#[test]
fn final_sums_equal_flink_at_parallelism_2() {
    assert_eq!(run(cfg(2)), flink_fixture());
}

#[test]
fn final_sums_equal_flink_at_parallelism_4() {
    assert_eq!(run(cfg(4)), flink_fixture());
}

#[test]
fn the_fixed_plan_keeps_the_answer() {
    // More map parallelism behind a REBALANCE, and a different sum parallelism: same result.
    let fixed = SkewConfig {
        map_parallelism: Some(4),
        sum_parallelism: Some(3),
        rebalance_before_map: true,
        ..cfg(2)
    };
    assert_eq!(run(fixed), flink_fixture());
}

#[test]
fn csv_output_is_sorted_key_sum() {
    let env = StreamEnv::new();
    let job = build(
        &env,
        &SkewConfig {
            records: 5_000,
            ..cfg(2)
        },
    )
    .unwrap();
    env.execute().unwrap();
    let dir = std::env::temp_dir().join(format!("sluice-skew-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.csv");
    job.write_csv(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("key,sum"));
    let keys: Vec<i64> = lines
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(keys.len(), job.final_sums().len());
    std::fs::remove_dir_all(&dir).unwrap();
}
