//! Correctness oracle: the skew job, its fixed variant (more map parallelism behind REBALANCE) and
//! its two-phase salted variant must all give exactly what DuckDB's `GROUP BY` computes over the
//! same input, written to CSV. DuckDB (the Python package, installed by `scripts/test.sh`) was
//! chosen over the Rust crate because the crate compiles DuckDB's C++ (tens of minutes on 2 cores)
//! while the wheel installs in seconds.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_datastream::StreamEnv;
use sluice_jobs::skew::{build, record, SkewConfig};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The Python with DuckDB: `SLUICE_PYTHON` (set by scripts/test.sh) or the venv it creates.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("SLUICE_PYTHON") {
        return p.into();
    }
    PathBuf::from(format!("{ROOT}/target/venv-oracle/bin/python"))
}

fn write_input(cfg: &SkewConfig, path: &Path) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(w, "key,value").unwrap();
    for i in 0..cfg.records {
        let (k, v) = record(i, cfg.hot_limit(), cfg.keys);
        writeln!(w, "{k},{v}").unwrap();
    }
}

fn duckdb_sums(input: &Path, map_work: u32) -> BTreeMap<i64, i64> {
    let py = python();
    let out = Command::new(&py)
        .arg(format!("{ROOT}/tests/oracle/skew_oracle.py"))
        .arg(input)
        .arg(map_work.to_string())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}); run scripts/test.sh, which installs DuckDB into target/venv-oracle",
                py.display()
            )
        });
    assert!(
        out.status.success(),
        "DuckDB oracle failed (run scripts/test.sh to install it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let (k, s) = l.split_once(',').unwrap();
            (k.parse().unwrap(), s.parse().unwrap())
        })
        .collect()
}

fn sluice_sums(cfg: &SkewConfig) -> BTreeMap<i64, i64> {
    let env = StreamEnv::new();
    let job = build(&env, cfg).unwrap();
    env.execute().unwrap();
    job.final_sums()
}

#[test]
fn skew_fixed_two_phase_and_adaptive_agree_with_duckdb() {
    let dir = std::env::temp_dir().join(format!("sluice-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for share in [0.0, 0.8, 1.0] {
        let base = SkewConfig {
            records: 20_000,
            hot_key_share: share,
            keys: 500,
            ..SkewConfig::default()
        };
        let input = dir.join(format!("input-{share}.csv"));
        write_input(&base, &input);
        let oracle = duckdb_sums(&input, base.map_work);
        assert!(!oracle.is_empty());
        for p in [1, 2, 3] {
            let cfg = SkewConfig {
                parallelism: p,
                ..base.clone()
            };
            let variants = [
                ("as built", cfg.clone()),
                (
                    "fixed: map parallelism + REBALANCE",
                    SkewConfig {
                        map_parallelism: Some(p + 2),
                        rebalance_before_map: true,
                        ..cfg.clone()
                    },
                ),
                (
                    "two-phase",
                    SkewConfig {
                        two_phase: Some(8),
                        ..cfg.clone()
                    },
                ),
                (
                    "two-phase, adaptive",
                    SkewConfig {
                        two_phase: Some(8),
                        adaptive: true,
                        ..cfg.clone()
                    },
                ),
            ];
            for (name, v) in variants {
                assert_eq!(sluice_sums(&v), oracle, "{name}, hot share {share}, p {p}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
