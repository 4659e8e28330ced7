//! `sluice bench kafka-source` and `sluice bench postgres` on real servers (tansu and a
//! throwaway PostgreSQL cluster from `sluice-testkit`), at tiny sizes: they run, print the
//! figures the benchmarks promise (ratio to the baseline of the same run, CPU-ns per record,
//! peak RSS) and clean up after themselves. Speed itself is not asserted here.

use std::process::Command;

use sluice_testkit::{KafkaBroker, PostgresCluster};

fn ok(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "sluice {args:?}\n{out}");
    out
}

#[test]
fn kafka_source_bench_fills_the_topic_and_compares_with_the_bare_loop() {
    let kafka = KafkaBroker::start().unwrap();
    let url = format!("kafka://{}/bench", kafka.bootstrap());
    let out = ok(&[
        "bench",
        "kafka-source",
        "--url",
        &url,
        "--records",
        "3000",
        "--rounds",
        "1",
    ]);
    assert!(out.contains("appended 3000 records"), "{out}");
    assert!(
        out.contains("records: 3000 on 1 partition(s) of bench"),
        "{out}"
    );
    for needle in [
        "bare rdkafka loop",
        "Sluice KafkaSource",
        "CPU-ns/record",
        "ratio (per core, Sluice / bare)",
        "peak RSS",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
    // A second run reads what is there: nothing appended.
    let out = ok(&[
        "bench",
        "kafka-source",
        "--url",
        &url,
        "--records",
        "3000",
        "--rounds",
        "1",
    ]);
    assert!(!out.contains("appended"), "{out}");
}

#[test]
fn postgres_bench_measures_batches_beside_copy_and_drops_its_tables() {
    let pg = PostgresCluster::start().unwrap();
    let psql = PostgresCluster::bin_dir().unwrap().join("psql");
    let out = ok(&[
        "bench",
        "postgres",
        "--url",
        &pg.url(),
        "--rows",
        "300",
        "--reps",
        "1",
        "--psql",
        psql.to_str().unwrap(),
        "--server-pid",
        &pg.pid().to_string(),
    ]);
    assert!(out.contains("psql \\copy"), "{out}");
    for mode in ["append (COPY)", "upsert (UNNEST)"] {
        for batch in [1, 100, 1000] {
            assert!(
                out.contains(&format!("{mode} batch {batch} ")),
                "{mode} {batch}: {out}"
            );
        }
    }
    assert!(
        out.contains("of \\copy)") && out.contains("ns/row") && out.contains("peak RSS"),
        "{out}"
    );
    let left = pg
        .psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'sluice_bench_%'")
        .unwrap();
    assert_eq!(left.trim(), "0", "the benchmark's tables are dropped");
}
