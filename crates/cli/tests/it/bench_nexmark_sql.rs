//! `sluice bench --nexmark --sql` as a user runs it, at a tiny size: a query with a hand-written
//! twin gets both sides and their ratio, a SQL-only query (q20) runs alone, and the Flink
//! harness's `RESULT` lines given with `--flink-results` are matched by query, events and
//! parallelism (only lines with the harness's defaults). Speed itself is not asserted.

use std::process::Command;

/// The official queries (missing under CI=true fails).
fn queries() -> Option<std::path::PathBuf> {
    sluice_testkit::nexmark_queries(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn sql_beside_hand_written_and_flink() {
    let Some(queries) = queries() else { return };
    let dir = std::env::temp_dir().join(format!("sluice-bench-sql-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("results.txt");
    // Three comparable runs of q1 (medians: 150000 events/s, 15 µs of CPU per event, 1700 MB)
    // and one with checkpoints (skipped).
    std::fs::write(
        &results,
        "RESULT engine=flink-2.3.0 query=q1 events=20000 parallelism=1 job_s=0.2 events_per_s=100000 job_cpu_s=0.4 peak_rss_mb=1600 loadavg_before=\"0.5 0.5 0.5\" extra_args=\"\"\n\
         RESULT engine=flink-2.3.0 query=q1 events=20000 parallelism=1 job_s=0.1 events_per_s=200000 job_cpu_s=0.2 peak_rss_mb=1800 extra_args=\"\"\n\
         RESULT engine=flink-2.3.0 query=q1 events=20000 parallelism=1 job_s=0.13 events_per_s=150000 job_cpu_s=0.3 peak_rss_mb=1700\n\
         RESULT engine=flink-2.3.0 query=q1 events=20000 parallelism=1 job_s=9 events_per_s=2222 job_cpu_s=9 peak_rss_mb=9999 extra_args=\"--checkpoint-ms 100\"\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bench", "--nexmark", "--sql", "--queries"])
        .arg(&queries)
        .args(["--query", "q1,q20", "--events", "20000", "--rate", "10000"])
        .args(["-p", "1", "--runs", "2", "--flink-results"])
        .arg(&results)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{out}\n{err}");
    let row = |q: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(q))
            .unwrap_or_else(|| panic!("no {q} row in:\n{out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // query p events load | SQL ev/s hand ev/s | ratio [min, max] (3 words) | ns/ev × 2 |
    // MiB × 2 | Flink ev/s, SQL/Flink, Flink ns/ev, Flink MiB.
    let q1 = row("q1");
    assert_eq!(q1.len(), 17, "{q1:?}");
    assert_eq!(&q1[1..3], ["1", "20.0k"], "{q1:?}");
    let ratio: f64 = q1[6].parse().unwrap();
    assert!(ratio > 0.0, "{q1:?}");
    for i in [9, 10, 11, 12] {
        assert!(q1[i].parse::<f64>().unwrap() > 0.0, "column {i}: {q1:?}");
    }
    assert_eq!(q1[13], "150.0k", "{q1:?}");
    assert!(q1[14].ends_with('x'), "{q1:?}");
    assert_eq!(&q1[15..], ["15000", "1700"], "{q1:?}");
    // q20 has no twin: its SQL figures alone ("-" for the twin, the ratio and Flink).
    let q20 = row("q20");
    assert_eq!(q20.len(), 15, "{q20:?}");
    assert!(q20[4].ends_with('k') || q20[4].ends_with('M'), "{q20:?}");
    assert_eq!([&q20[5], &q20[6], &q20[11]], ["-", "-", "-"], "{q20:?}");
    assert!(
        out.contains("no Flink run with the same events and parallelism: q20"),
        "{out}"
    );
}

#[test]
fn without_queries_it_says_where_to_get_them() {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bench", "--nexmark", "--sql", "--events", "1000"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--queries DIR") && err.contains("nexmark-flink/src/main/resources/queries"),
        "{err}"
    );
}
