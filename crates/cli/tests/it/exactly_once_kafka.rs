//! End to end, exactly once, Kafka to Kafka on a real broker (tansu): `sluice run skew --from
//! kafka://… --bounded --to kafka://…?exactly-once` under 20 injected subtask failures, and with
//! the whole process SIGKILLed 5 times and restarted from its latest on-disk checkpoint
//! (`--from-checkpoint`). The oracle is a failure-free run of the same job on the same input
//! topic into another topic; both outputs are read as a `read_committed` consumer sees them
//! (`sluice_testkit::kafka_read`, which applies the transaction markers itself: tansu sends no
//! aborted-transaction lists) and compared as multisets of `key,running sum` lines (one per
//! input record): lost and duplicated lines are counted and must be 0.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sluice_kafka::sink::{KILL_BEFORE_COMMIT_ENV, KILL_LINE};
use sluice_testkit::kafka_read::{read_committed, ReadUntil};
use sluice_testkit::KafkaBroker;

use crate::restarts;
use restarts::{job_dirs, kill_after_first_checkpoint, new_job_dir, tempdir};

/// Input records of the injected-failures run. Its 20 failures fire after 200 + 50·k records
/// at a keyed-sum subtask within one attempt: even if every attempt kept all it processed, the
/// cold subtask's (about 12 % of the records) ten failures need about 58 000 input records, the
/// hot one's about 7 500, so all 20 fire before the input ends.
const RECORDS: u64 = 80_000;
/// Input records of the SIGKILL run: enough that its 5 killed incarnations end before the
/// input does (with the chains' batching each writes up to 20 000; at 80 000 the 5th reached
/// the end now and then, finished without its 2nd commit and was never killed; 160 000 did
/// too once chains stopped copying their batches, which made the job several times faster).
const KILL_RECORDS: u64 = 480_000;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn produce(kafka: &KafkaBroker, topic: &str, records: u64) {
    let o = sluice()
        .args([
            "produce",
            "skew",
            "--records",
            &records.to_string(),
            "--to",
            &format!("kafka://{}/{topic}?partitions=3", kafka.bootstrap()),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The job; `map_work`: CPU rounds per record (1500: the job lasts a few seconds and takes
/// several checkpoints, room for 5 kills).
fn job_args(
    kafka: &KafkaBroker,
    input: &str,
    output: &str,
    chk: &Path,
    map_work: u32,
) -> Vec<String> {
    let b = kafka.bootstrap();
    [
        "run",
        "skew",
        "--from",
        &format!("kafka://{b}/{input}"),
        "--bounded",
        // One source subtask for the 3 partitions: a source subtask that finished its
        // partitions ends the job's checkpoints (no checkpoints after a task finished), and
        // the hot key makes one partition much longer than the others. The map chained to it
        // (parallelism 1 too), so each key's records reach its running sum in partition order
        // and the `key,sum` lines are the same in every run.
        "--source-parallelism",
        "1",
        "--map-parallelism",
        "1",
        "--map-work",
        &map_work.to_string(),
        "--to",
        &format!("kafka://{b}/{output}?exactly-once&partitions=3"),
        "--checkpoint-interval",
        "100",
        "--checkpoint-dir",
        chk.to_str().unwrap(),
        "--no-rest",
        "--no-progress",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_ok(args: &[String]) -> String {
    let o = sluice().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "sluice {args:?}\n{err}");
    err + &String::from_utf8_lossy(&o.stdout)
}

/// The committed lines of `topic`, sorted, once every input record's update arrived; the
/// read must find no transaction left open.
fn committed_lines(kafka: &KafkaBroker, topic: &str, records: u64) -> Vec<String> {
    let r = read_committed(
        &kafka.bootstrap(),
        topic,
        ReadUntil {
            expect: records as usize,
            settle: Duration::from_millis(500),
            deadline: Duration::from_secs(60),
        },
    )
    .unwrap();
    assert_eq!(
        (r.pending, r.behind_open),
        (0, 0),
        "no open transaction in {topic}"
    );
    eprintln!(
        "{topic}: {} committed records, {} aborted (invisible), {} commit markers",
        r.records.len(),
        r.aborted,
        r.commit_markers
    );
    let mut v: Vec<String> = r
        .records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).to_string())
        .collect();
    v.sort();
    v
}

/// `(lost, duplicated)` lines of `got` against `expected`, with multiplicity.
fn compare(expected: &[String], got: &[String]) -> (usize, usize) {
    let mut count: BTreeMap<&str, i64> = BTreeMap::new();
    for e in expected {
        *count.entry(e).or_default() += 1;
    }
    for g in got {
        *count.entry(g).or_default() -= 1;
    }
    let lost = count
        .values()
        .filter(|&&c| c > 0)
        .map(|&c| c as usize)
        .sum();
    let dup = count
        .values()
        .filter(|&&c| c < 0)
        .map(|&c| (-c) as usize)
        .sum();
    (lost, dup)
}

/// The failure-free run of the job on `input` into `ref`, and its committed output.
fn reference(kafka: &KafkaBroker, input: &str, records: u64, map_work: u32) -> Vec<String> {
    let chk = tempdir(&format!("eok-ref-{input}"));
    run_ok(&job_args(kafka, input, "ref", &chk, map_work));
    let _ = std::fs::remove_dir_all(&chk);
    let lines = committed_lines(kafka, "ref", records);
    assert_eq!(lines.len(), records as usize, "one update per input record");
    lines
}

fn check(expected: &[String], got: &[String], what: &str) {
    let (lost, dup) = compare(expected, got);
    eprintln!(
        "Kafka -> Kafka exactly once, {what}: {} committed lines, failure-free run {}: {lost} lost, {dup} duplicated",
        got.len(),
        expected.len()
    );
    assert_eq!((lost, dup), (0, 0), "lost, duplicated lines ({what})");
}

#[test]
fn kafka_to_kafka_under_20_injected_failures_equals_a_failure_free_run() {
    let kafka = KafkaBroker::start().unwrap();
    produce(&kafka, "eok-in", RECORDS);
    let expected = reference(&kafka, "eok-in", RECORDS, 0);
    let chk = tempdir("eok-inject");
    let mut args = job_args(&kafka, "eok-in", "out", &chk, 0);
    args.extend(["--restart".into(), "fixed-delay:30:0".into()]);
    // One failure per attempt, alternating between the keyed sum's subtasks (the vertex that
    // holds the sums, chained with the Kafka sink).
    for k in 0..20 {
        args.push("--inject-failure".into());
        args.push(format!("sum-per-key:{}:{}", k % 2, 200 + 50 * k));
    }
    let err = run_ok(&args);
    assert!(err.contains("the job restarted 20 times"), "{err}");
    assert!(!err.contains("did not fire"), "{err}");
    check(
        &expected,
        &committed_lines(&kafka, "out", RECORDS),
        "20 injected failures",
    );
    let _ = std::fs::remove_dir_all(&chk);
}

/// What a restore says for each transaction of a dead process it committed by producer id
/// and epoch (the sink's `info` event).
const RECOVERED: &str = "left by an earlier process";

#[test]
fn kafka_to_kafka_with_the_process_sigkilled_5_times_equals_a_failure_free_run() {
    let kafka = KafkaBroker::start().unwrap();
    produce(&kafka, "eok-kill", KILL_RECORDS);
    let expected = reference(&kafka, "eok-kill", KILL_RECORDS, 1500);
    let chk = tempdir("eok-kill");
    let args = job_args(&kafka, "eok-kill", "out", &chk, 1500);
    let mut restore: Option<PathBuf> = None;
    let mut logs = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    for kill in 0..5 {
        let before = job_dirs(&chk);
        let log = chk.join(format!("incarnation-{kill}.log"));
        let mut cmd = sluice();
        cmd.args(&args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .env_remove(KILL_BEFORE_COMMIT_ENV);
        if let Some(r) = &restore {
            cmd.arg("--from-checkpoint").arg(r);
        }
        // Incarnations 0, 2, 4 SIGKILL themselves inside the window the restore closes: just
        // before their 2nd transaction commit, its checkpoint complete and durable on disk.
        // Incarnations 1 and 3 are SIGKILLed from here, soon after their first checkpoint.
        let in_window = kill % 2 == 0;
        if in_window {
            cmd.env(KILL_BEFORE_COMMIT_ENV, "2");
        }
        let mut child = cmd.spawn().unwrap();
        if in_window {
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                assert!(
                    Instant::now() < deadline,
                    "incarnation {kill} did not kill itself"
                );
                std::thread::sleep(Duration::from_millis(20));
            };
            let text = std::fs::read_to_string(&log).unwrap();
            assert!(
                !status.success(),
                "the job finished after {kill} kills: make the input larger\n{text}"
            );
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "incarnation {kill}: {text}");
            assert!(text.contains(KILL_LINE), "incarnation {kill}: {text}");
            restore =
                Some(new_job_dir(&chk, &before).expect("a checkpoint of this incarnation on disk"));
        } else {
            restore = Some(kill_after_first_checkpoint(
                &chk, &before, child, kill, deadline,
            ));
        }
        logs.push(log);
    }
    let mut last = args.clone();
    last.push("--from-checkpoint".into());
    last.push(restore.unwrap().to_string_lossy().to_string());
    let err = run_ok(&last);
    assert!(err.contains("restoring from"), "{err}");
    if let Some(summary) = err.lines().find(|l| l.starts_with("Kafka: ")) {
        eprintln!("the last incarnation: {summary}");
    }
    let recovered = logs
        .iter()
        .map(|l| std::fs::read_to_string(l).unwrap())
        .chain([err.clone()])
        .map(|t| t.matches(RECOVERED).count())
        .sum::<usize>();
    eprintln!(
        "restores committed {recovered} transactions of dead processes by producer id and epoch"
    );
    // Each restore after a kill inside the window finds the killed commit's transaction.
    assert!(recovered >= 3, "{recovered} transactions recovered\n{err}");
    assert!(!err.contains("cannot be committed"), "{err}");
    check(
        &expected,
        &committed_lines(&kafka, "out", KILL_RECORDS),
        "5 SIGKILLs (3 inside the commit window), each restarted from the latest checkpoint on disk",
    );
    let _ = std::fs::remove_dir_all(&chk);
}

/// The ids of the complete checkpoints (`chk-<n>` with a `_metadata`) in job directory `job`.
fn checkpoint_ids(job: &Path) -> Vec<u64> {
    let mut ids: Vec<u64> = std::fs::read_dir(job)
        .map(|r| {
            r.flatten()
                .filter(|e| e.path().join("_metadata").exists())
                .filter_map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .strip_prefix("chk-")
                        .and_then(|n| n.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

/// `sluice run` with its REST API on a free port, stderr into `log`; returns the child and the
/// REST URL it announced.
fn start_with_rest(args: &[String], log: &Path) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader, Write};
    let mut child = sluice()
        .args(args)
        .args(["--rest-port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove(KILL_BEFORE_COMMIT_ENV)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut file = std::fs::File::create(log).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = writeln!(file, "{line}");
            if let Some(rest) = line.strip_prefix("REST API: ") {
                let url = rest.split_whitespace().next().unwrap_or_default();
                let _ = tx.send(url.trim_end_matches('/').to_string());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the job announces its REST URL");
    (child, url)
}

/// Issue 31, defect 2: a savepoint that does not stop the job used to commit the sinks'
/// transactions; a SIGKILL right after it and a restore from the job's latest checkpoint (older
/// than the savepoint) then published the records between the two again (53,236 of 3,000,000
/// in the report). Flink's rule, now Sluice's: such a savepoint commits nothing.
#[test]
fn kafka_to_kafka_a_savepoint_then_a_sigkill_and_a_restore_from_the_checkpoints_equals_a_failure_free_run(
) {
    let kafka = KafkaBroker::start().unwrap();
    produce(&kafka, "eok-sp", KILL_RECORDS);
    let expected = reference(&kafka, "eok-sp", KILL_RECORDS, 1500);
    let mut realized = false;
    // The scenario needs the kill to land before the next checkpoint after the savepoint
    // completes (1 s interval): on a machine so loaded that it did not, the run is repeated on
    // a fresh output topic.
    for round in 0..3 {
        let out = format!("out-sp-{round}");
        let chk = tempdir(&format!("eok-sp-{round}"));
        let sp = chk.join("savepoints");
        std::fs::create_dir_all(&sp).unwrap();
        let mut args: Vec<String> = job_args(&kafka, "eok-sp", &out, &chk, 1500)
            .into_iter()
            .filter(|a| a != "--no-rest")
            .map(|a| if a == "100" { "1000".to_string() } else { a })
            .collect();
        assert!(args.iter().any(|a| a == "1000"), "{args:?}");
        args.extend(["--savepoint-dir".into(), sp.display().to_string()]);
        let (mut child, url) = start_with_rest(&args, &chk.join("first.log"));
        let deadline = Instant::now() + Duration::from_secs(120);
        let job = loop {
            if let Some(d) = new_job_dir(&chk, &[]) {
                break d;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "the job finished before its first checkpoint"
            );
            assert!(Instant::now() < deadline, "no checkpoint appeared");
            std::thread::sleep(Duration::from_millis(20));
        };
        let o = sluice()
            .args(["savepoint", sp.to_str().unwrap(), "--url", &url])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&o.stdout).to_string();
        // SIGKILL right away: no shutdown code runs.
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            o.status.success(),
            "{said}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let path = said
            .lines()
            .find_map(|l| l.split("file:").nth(1))
            .unwrap_or_else(|| panic!("{said}"))
            .trim()
            .to_string();
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(Path::new(&path).join("_metadata")).unwrap(),
        )
        .unwrap();
        let savepoint_id = meta["id"].as_u64().unwrap();
        let latest = checkpoint_ids(&job).last().copied().unwrap_or(0);
        eprintln!("round {round}: savepoint {savepoint_id}, latest checkpoint on disk {latest}");
        if latest > savepoint_id {
            let _ = std::fs::remove_dir_all(&chk);
            continue;
        }
        realized = true;
        let mut restore = args.clone();
        restore.retain(|a| a != "--savepoint-dir" && *a != sp.display().to_string());
        restore.extend([
            "--no-rest".into(),
            "--from-checkpoint".into(),
            job.display().to_string(),
        ]);
        let err = run_ok(&restore);
        assert!(err.contains("restoring from"), "{err}");
        check(
            &expected,
            &committed_lines(&kafka, &out, KILL_RECORDS),
            "a savepoint, a SIGKILL, a restore from the latest checkpoint before the savepoint",
        );
        let _ = std::fs::remove_dir_all(&chk);
        break;
    }
    assert!(
        realized,
        "in 3 rounds a checkpoint always completed between the savepoint and the kill"
    );
}
