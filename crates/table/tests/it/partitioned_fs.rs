//! A `PARTITIONED BY` filesystem table written through SQL at parallelism 1 and 2 with
//! checkpoints: the directory tree is Flink's (`dt=…/hm=12%3A00/`, the partition columns only
//! in the directory names, `_SUCCESS` in every partition once the bounded job ended, no
//! in-progress file left), the files' rows with their directories' values equal DuckDB's
//! answer over the input, and a `PARTITIONED BY` source reads them back. Options Sluice does
//! not build are refused naming them.

use std::process::Command;
use std::time::Duration;

use sluice_datastream::StreamEnv;
use sluice_table::connectors::SinkConnector;
use sluice_table::{QueryOutput, SqlScript};

use crate::support::{create, duckdb, temp_dir};

/// `n` rows over about 7 minutes of 2015-07-15 from 12:00, names with a comma now and then.
fn input(dir: &std::path::Path, n: u64) -> std::path::PathBuf {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut text = String::new();
    for i in 0..n {
        let ms = 1_436_961_600_000u64 + i * 419_000 / n.max(1) * 1000 / 1000 + (i % 7) * 13;
        let secs = ms / 1000;
        let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
        let name = if i % 11 == 0 {
            "\"a, b\"".to_string()
        } else {
            format!("n{}", i % 5)
        };
        text.push_str(&format!(
            "{i},{name},2015-07-15 {h:02}:{m:02}:{s:02}.{:03}\n",
            ms % 1000
        ));
    }
    std::fs::write(input.join("part-0.csv"), text).unwrap();
    input
}

fn script(input: &std::path::Path, out: &std::path::Path) -> String {
    format!(
        "CREATE TABLE src (id BIGINT, name STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) \
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE out (id BIGINT, name STRING, ts TIMESTAMP(3), dt STRING, hm STRING) \
           PARTITIONED BY (dt, hm) WITH ('connector' = 'filesystem', 'path' = 'file://{}', \
           'format' = 'csv', 'sink.partition-commit.trigger' = 'partition-time', \
           'sink.partition-commit.delay' = '1 min', \
           'sink.partition-commit.policy.kind' = 'success-file', \
           'partition.time-extractor.timestamp-pattern' = '$dt $hm:00', \
           'sink.rolling-policy.rollover-interval' = '1min', \
           'sink.rolling-policy.check-interval' = '1min', \
           'sink.rolling-policy.file-size' = '2kb');\n\
         INSERT INTO out SELECT id, name, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), \
           DATE_FORMAT(ts, 'HH:mm') FROM src;\n",
        input.display(),
        out.display()
    )
}

/// Every file under `root`, relative, sorted.
fn tree(root: &std::path::Path) -> Vec<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().is_dir() {
                walk(root, &e.path(), out);
            } else {
                out.push(e.path().strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// `id|name|dt|hm` of each row of the published files, from the lines and the directories.
fn written(root: &std::path::Path) -> Vec<String> {
    let mut rows = Vec::new();
    for f in tree(root) {
        let (dir, file) = f.rsplit_once('/').unwrap();
        if !file.starts_with("part-") {
            continue;
        }
        let (dt, hm) = dir.split_once('/').unwrap();
        let dt = dt.strip_prefix("dt=").unwrap();
        let hm = hm.strip_prefix("hm=").unwrap().replace("%3A", ":");
        for line in std::fs::read_to_string(root.join(&f)).unwrap().lines() {
            // id, name (maybe quoted), ts: three fields, the partition columns not in the file.
            let (id, rest) = line.split_once(',').unwrap();
            let (name, ts) = rest.rsplit_once(',').unwrap();
            // Flink's csv writer quotes a timestamp (it holds a space).
            assert!(ts.trim_matches('"').starts_with("2015-07-15 "), "{line}");
            let name = name.trim_matches('"');
            rows.push(format!("{id}|{name}|{dt}|{hm}"));
        }
    }
    rows.sort();
    rows
}

fn duckdb_rows(py: &std::path::Path, input: &std::path::Path) -> Vec<String> {
    let script = format!(
        "import duckdb\n\
         con = duckdb.connect()\n\
         rows = con.execute(\"SELECT id, name, strftime(ts, '%Y-%m-%d'), strftime(ts, '%H:%M') \
           FROM read_csv('{}/part-0.csv', header=false, quote='\\\"', \
           columns={{'id': 'BIGINT', 'name': 'VARCHAR', 'ts': 'TIMESTAMP'}})\").fetchall()\n\
         for r in rows:\n\
         \x20   print('|'.join(str(x) for x in r))\n",
        input.display()
    );
    let out = Command::new(py).arg("-c").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

fn run(text: &str, env: &StreamEnv, lines: Option<&std::sync::Arc<std::sync::Mutex<Vec<String>>>>) {
    let script = SqlScript::prepare(text, &Default::default()).unwrap();
    for job in script.jobs() {
        let output = match lines {
            Some(l) => QueryOutput::Lines(l.clone()),
            None => QueryOutput::Stdout,
        };
        let j = job.build(env, output).unwrap();
        env.execute().unwrap();
        assert_eq!(j.errors.count(), 0, "{:?}", j.errors.first());
    }
}

#[test]
fn a_partitioned_write_at_p1_and_p2_is_flinks_tree_and_equals_duckdb() {
    let Some(py) = duckdb() else { return };
    let dir = temp_dir("partitioned-fs");
    let input = input(&dir, 3000);
    let want = duckdb_rows(&py, &input);
    assert_eq!(want.len(), 3000);
    for p in [1, 2] {
        let out = dir.join(format!("out-p{p}"));
        let env = StreamEnv::new();
        env.set_parallelism(p);
        env.enable_checkpointing(Duration::from_millis(10))
            .set_checkpoint_dir(dir.join(format!("chk-{p}")));
        run(&script(&input, &out), &env, None);
        let files = tree(&out);
        // 12:00 … 12:06, the colon escaped as Flink escapes it; hidden in-progress files gone.
        let partitions: std::collections::BTreeSet<&str> = files
            .iter()
            .map(|f| f.rsplit_once('/').unwrap().0)
            .collect();
        let expected: Vec<String> = (0..7)
            .map(|m| format!("dt=2015-07-15/hm=12%3A0{m}"))
            .collect();
        assert_eq!(
            partitions.into_iter().collect::<Vec<_>>(),
            expected,
            "p={p}"
        );
        for part in &expected {
            assert!(
                files.contains(&format!("{part}/_SUCCESS")),
                "{part} committed at p={p}"
            );
        }
        assert!(
            files.iter().all(|f| !f.contains(".inprogress")),
            "{files:?}"
        );
        // The 2 kb file size rolled files: more than one per partition and subtask.
        let parts = files.iter().filter(|f| f.contains("/part-")).count();
        assert!(parts > 7 * p, "{parts} files at p={p}");
        assert_eq!(written(&out), want, "p={p}");

        // Read back through a PARTITIONED BY source: the partition columns from the path.
        let back = format!(
            "CREATE TABLE back (id BIGINT, name STRING, ts TIMESTAMP(3), dt STRING, hm STRING) \
               PARTITIONED BY (dt, hm) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             SELECT id, name, dt, hm FROM back;\n",
            out.display()
        );
        let lines = std::sync::Arc::default();
        let env = StreamEnv::new();
        env.set_parallelism(p);
        run(&back, &env, Some(&lines));
        let mut read: Vec<String> = lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| {
                let l = l.split_once("> ").map_or(l.as_str(), |(_, r)| r);
                let inner = l.strip_prefix("+I[").unwrap().strip_suffix(']').unwrap();
                let f: Vec<&str> = inner.split(", ").collect();
                let n = f.len();
                format!(
                    "{}|{}|{}|{}",
                    f[0],
                    f[1..n - 2].join(", "),
                    f[n - 2],
                    f[n - 1]
                )
            })
            .collect();
        read.sort();
        assert_eq!(read, want, "read back at p={p}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn refusal(options: &str, partitioned: bool) -> String {
    let by = if partitioned {
        "PARTITIONED BY (dt)"
    } else {
        ""
    };
    let sql = format!(
        "CREATE TABLE t (id BIGINT, dt STRING) {by} WITH ('connector' = 'filesystem', \
         'path' = '/tmp/x', 'format' = 'csv'{options})"
    );
    match SinkConnector::for_table(&create(&sql)) {
        Ok(_) => panic!("accepted: {options}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn options_sluice_does_not_build_are_refused_naming_them() {
    let cases = [
        (", 'sink.partition-commit.policy.kind' = 'metastore'", true, "no metastore"),
        (", 'sink.partition-commit.policy.kind' = 'custom'", true, "'custom' is not supported"),
        (", 'sink.partition-commit.policy.class' = 'a.B'", true, "sink.partition-commit.policy.class"),
        (", 'sink.partition-commit.trigger' = 'soon', 'sink.partition-commit.policy.kind' = 'success-file'", true, "sink.partition-commit.trigger"),
        (", 'sink.partition-commit.delay' = '1 min'", true, "without 'sink.partition-commit.policy.kind'"),
        (", 'sink.rolling-policy.file-size' = '1MB'", false, "without PARTITIONED BY"),
        (", 'sink.rolling-policy.file-size' = 'big'", true, "sink.rolling-policy.file-size"),
        (", 'auto-compaction' = 'true'", true, "auto-compaction"),
        (", 'sink.shuffle-by-partition.enable' = 'true'", true, "sink.shuffle-by-partition.enable"),
        (", 'source.monitor-interval' = '1 s'", true, "source.monitor-interval"),
        (", 'partition.time-extractor.kind' = 'custom'", true, "partition.time-extractor.kind"),
        (", 'sink.partition-commit.watermark-time-zone' = 'Asia/Shanghai', 'sink.partition-commit.policy.kind' = 'success-file'", true, "only UTC"),
        (", 'sink.partition-commit.sucess-file.name' = 'x'", true, "sink.partition-commit.sucess-file.name"),
    ];
    for (options, partitioned, says) in cases {
        let e = refusal(options, partitioned);
        assert!(e.contains(says), "{options}: {e}");
    }
}
