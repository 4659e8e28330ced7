//! `sluice run … --processes N`: the job over N real OS processes of the binary, connected
//! over loopback TCP; the skew job's merged output equals real Flink 2.3's (100k fixture).

use std::process::Command;

use crate::common;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-skew-final-100k.csv"
);

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// `sluice run skew --records 100000 -p 2 --processes 2`, for more flags.
fn skew_over_two_processes() -> Command {
    let mut c = sluice();
    c.args(["run", "skew", "--records", "100000", "-p", "2"])
        .args(["--processes", "2"]);
    c
}

#[test]
fn the_skew_job_over_two_processes_sums_as_flink() {
    let dir = tempfile_dir("two");
    let out = dir.join("sums.csv");
    let o = skew_over_two_processes()
        .args(["--no-rest", "--no-progress", "--output"])
        .arg(&out)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("2 processes started"), "{stderr}");
    // Each process ran its own subtasks and wrote its part, merged and removed by the launcher.
    assert!(
        stderr.contains("process 0 of 2: its final sums"),
        "{stderr}"
    );
    assert!(
        stderr.contains("process 1 of 2: its final sums"),
        "{stderr}"
    );
    let got = std::fs::read_to_string(&out).expect("merged output");
    let want = std::fs::read_to_string(FIXTURE).expect("fixture");
    assert_eq!(got.trim_end(), want.trim_end());
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 1, "only the merged file is left: {left:?}");
}

#[test]
fn a_process_refused_before_its_start_fails_the_run_naming_it_and_is_not_restarted() {
    // A fault injection naming no vertex is refused by every process before it starts: the
    // same on any restart, so the launcher does not restart them.
    let o = sluice()
        .args(["run", "skew", "--records", "100000", "--processes", "2"])
        .args(["--no-rest", "--no-progress", "--checkpoint-interval", "100"])
        .args(["--inject-failure", "no-such-vertex:0:10"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(stderr.contains("no vertex name contains"), "{stderr}");
    assert!(stderr.contains("of 2 failed"), "{stderr}");
    assert!(stderr.contains("is not restarted"), "{stderr}");
    assert!(!stderr.contains("restarting all"), "{stderr}");
}

#[test]
fn a_split_job_with_checkpoints_restarts_every_process_after_a_failure() {
    // An injected failure of the sum subtask in process 1 (after 30 000 records): its process
    // fails, the launcher restarts both from the latest checkpoint (or the start), and the
    // merged sums are still Flink's.
    let dir = std::env::temp_dir().join(format!("sluice-processes-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("sums.csv");
    let o = skew_over_two_processes()
        .args(["--no-rest", "--no-progress", "--checkpoint-interval", "10"])
        .args(["--inject-failure", "sum-per-key:1:30000", "--output"])
        .arg(&out)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // Process 1 failed by itself (its own error line, forwarded), and process 0 with it (its
    // peer lost); when both exit before the launcher looks, it names them in process order.
    assert!(
        stderr.contains("process 1 of 2 failed") || stderr.contains("then process 1 failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[process 1] error: sum-per-key") && stderr.contains("injected failure"),
        "{stderr}"
    );
    assert!(stderr.contains("the job restarted 1 times"), "{stderr}");
    let got = std::fs::read_to_string(&out).expect("merged output");
    let want = std::fs::read_to_string(FIXTURE).expect("fixture");
    assert_eq!(got.trim_end(), want.trim_end());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_split_job_restores_an_unaligned_checkpoint_with_its_in_flight_records() {
    // Unaligned checkpoints every 10 ms: each holds the records in flight between the
    // processes (written into the checkpoint, not kept in a process's memory). Process 1
    // fails after 30 000 records; both restart from the latest checkpoint, in new processes,
    // and the sums are still Flink's: nothing in flight was lost or counted twice. (Before
    // the barrier carried the buffers it overtook at the sender, this lost records.)
    let dir = tempfile_dir("unaligned");
    let out = dir.join("sums.csv");
    let o = sluice()
        .args(["run", "skew", "--records", "100000", "-p", "2"])
        .args(["--processes", "2", "--no-rest", "--no-progress"])
        .args(["--checkpoint-interval", "10", "--unaligned-checkpoints"])
        .args(["--checkpoint-dir"])
        .arg(dir.join("chk"))
        .args(["--inject-failure", "sum-per-key:1:30000", "--output"])
        .arg(&out)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("the job restarted 1 times"), "{stderr}");
    assert!(
        stderr.contains("restarting all 2 processes from") && stderr.contains("/chk-"),
        "restored from a checkpoint, not from the start: {stderr}"
    );
    let got = std::fs::read_to_string(&out).expect("merged output");
    let want = std::fs::read_to_string(FIXTURE).expect("fixture");
    assert_eq!(got.trim_end(), want.trim_end());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_process_flags_are_refused_before_anything_starts() {
    let o = sluice()
        .args(["run", "skew", "--processes", "0"])
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--processes"));
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sluice-processes-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The PIDs of `pid`'s children (Linux `/proc`).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_split_job_refuses_plan_changes_and_its_processes_die_with_the_launcher() {
    let (launcher, url) = common::start_live(&[
        "skew",
        "--records",
        "100000000000",
        "-p",
        "2",
        "--processes",
        "2",
    ]);
    // The REST API is up before the job is registered with it.
    let mut jid = String::new();
    wait_until("the job is listed", 30, || {
        let jobs = common::get(&format!("{url}/jobs"));
        jid = jobs["jobs"][0]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        !jid.is_empty()
    });
    let mut req = common::get(&format!("{url}/jobs/{jid}/resource-requirements"));
    for (_, v) in req.as_object_mut().expect("by vertex").iter_mut() {
        v["parallelism"]["upperBound"] = 3.into();
    }
    let put = Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "30",
            "-X",
            "PUT",
            "-w",
            "\n%{http_code}",
        ])
        .args([
            "-H",
            "Content-Type: application/json",
            "-d",
            &req.to_string(),
        ])
        .arg(format!("{url}/jobs/{jid}/resource-requirements"))
        .output()
        .expect("curl");
    let answer = String::from_utf8_lossy(&put.stdout).to_string();
    assert!(answer.trim_end().ends_with("400"), "{answer}");
    assert!(answer.contains("split over processes"), "{answer}");
    // SIGKILL the launcher (dropping the guard): it cannot stop its processes, which must
    // notice and exit.
    let processes = children_of(launcher.pid());
    assert_eq!(processes.len(), 2, "two processes: {processes:?}");
    drop(launcher);
    wait_until("the processes exit with their launcher", 30, || {
        processes.iter().all(|&p| !alive(p))
    });
}

#[test]
fn sigterm_to_the_launcher_stops_every_process_before_it_exits() {
    let (launcher, url) = common::start_live(&[
        "skew",
        "--records",
        "100000000000",
        "-p",
        "2",
        "--processes",
        "2",
    ]);
    wait_until("the job is listed", 30, || {
        common::get(&format!("{url}/jobs"))["jobs"][0]["id"].is_string()
    });
    let processes = children_of(launcher.pid());
    assert_eq!(processes.len(), 2, "two processes: {processes:?}");
    let status = launcher.terminate();
    assert!(!status.success(), "a stopped run is no success: {status}");
    // Nothing is left once the launcher has exited: no process, no REST port (a script that
    // starts the next job on the same port right after must not reach the old one).
    let left: Vec<u32> = processes.iter().copied().filter(|&p| alive(p)).collect();
    assert!(
        left.is_empty(),
        "processes outlived their launcher: {left:?}"
    );
    let port = url.rsplit(':').next().expect("port");
    assert!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "the REST port {port} still answers"
    );
}

#[test]
fn process_0_shows_every_process_and_the_doctor_finds_the_hot_key_in_process_1() {
    let (launcher, url) = common::start_live(&[
        "skew",
        "--records",
        "100000000000",
        "-p",
        "2",
        "--processes",
        "2",
    ]);
    // `/taskmanagers`: the two processes, each once it reported (process 1's heartbeat is
    // its latest report), in Flink's shape.
    let mut tms = serde_json::Value::Null;
    wait_until("both processes are listed and heard from", 60, || {
        tms = common::get(&format!("{url}/taskmanagers"));
        tms["taskmanagers"].as_array().is_some_and(|a| {
            a.len() == 2
                && a.iter()
                    .all(|t| t["timeSinceLastHeartbeat"].as_i64().unwrap_or(0) > 0)
        })
    });
    let tms = tms["taskmanagers"].as_array().unwrap().clone();
    assert_eq!(children_of(launcher.pid()).len(), 2);
    for (i, t) in tms.iter().enumerate() {
        let path = t["path"].as_str().unwrap();
        assert!(path.ends_with(&format!("/taskmanager_{i}")), "{t}");
        assert!(path.contains(&format!(":{}/", t["dataPort"])), "{t}");
        assert_eq!(t["slotsNumber"], 1, "{t}");
        assert!(t["hardware"]["cpuCores"].as_i64().unwrap() > 0, "{t}");
        assert!(t["hardware"]["physicalMemory"].as_i64().unwrap() > 0, "{t}");
    }
    let tm_id = |i: usize| tms[i]["id"].as_str().unwrap().to_string();
    let endpoint = |i: usize| format!("127.0.0.1:{}", tms[i]["dataPort"]);
    assert_ne!(tm_id(0), tm_id(1));
    assert_eq!(common::get(&format!("{url}/overview"))["taskmanagers"], 2);

    // The sum vertex: subtask 1 runs in process 1, and process 0 shows it counting records.
    let jid = common::get(&format!("{url}/jobs"))["jobs"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = common::get(&format!("{url}/jobs/{jid}"));
    let sum = job["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"].as_str().unwrap().starts_with("sum-per-key"))
        .expect("the sum vertex")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut v = serde_json::Value::Null;
    wait_until("both sum subtasks run and count records", 60, || {
        v = common::get(&format!("{url}/jobs/{jid}/vertices/{sum}"));
        (0..2).all(|i| {
            v["subtasks"][i]["status"] == "RUNNING"
                && v["subtasks"][i]["metrics"]["read-records"]
                    .as_i64()
                    .unwrap_or(0)
                    > 0
        })
    });
    for i in 0..2 {
        assert_eq!(v["subtasks"][i]["taskmanager-id"], tm_id(i).as_str(), "{v}");
        assert_eq!(v["subtasks"][i]["endpoint"], endpoint(i).as_str(), "{v}");
    }
    let by_tm = common::get(&format!("{url}/jobs/{jid}/vertices/{sum}/taskmanagers"));
    let by_tm = by_tm["taskmanagers"].as_array().unwrap();
    assert_eq!(by_tm.len(), 2, "{by_tm:?}");
    assert_eq!(by_tm[1]["taskmanager-id"], tm_id(1).as_str());
    assert!(by_tm[1]["metrics"]["read-records"].as_i64().unwrap() > 0);

    // Flink's local/remote input counters: each sum subtask reads one source subtask in its
    // own process and one across the wire.
    for i in 0..2 {
        let q = format!(
            "{url}/jobs/{jid}/vertices/{sum}/subtasks/{i}/metrics?get=\
             numBytesInLocal,numBytesInRemote,Shuffle.Netty.Input.numBuffersInRemote"
        );
        let mut got = serde_json::Value::Null;
        wait_until("local and remote input counted", 60, || {
            got = common::get(&q);
            got.as_array().is_some_and(|a| {
                a.len() == 3
                    && a.iter().all(|m| {
                        m["value"]
                            .as_str()
                            .and_then(|v| v.parse::<f64>().ok())
                            .is_some_and(|v| v > 0.0)
                    })
            })
        });
    }

    // The doctor, through process 0 alone, finds the hot key in process 1's subtask.
    let d = common::doctor(&url, "key-skew");
    assert_eq!(d["cause"], "key-skew", "{d:#}");
    let subtasks = d["bottleneck"]["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 1, "{d:#}");
    // Key 0's key group belongs to subtask 1: process 1's. Its slowness backpressures the
    // sources across the wire, in process 0 too.
    assert_eq!(subtasks[0], 1, "{d:#}");
    assert!(
        d["evidence"].as_array().unwrap().iter().any(|e| {
            let e = e.as_str().unwrap_or("");
            e.contains("Source: generator") && e.contains("is backpressured")
        }),
        "{d:#}"
    );
    assert_eq!(d["hot-keys"][0]["key"], "0", "{d:#}");

    // Process 1's threads, dumped by process 1 and served by process 0: its sum subtask (2/2)
    // and its source subtask, none of process 0's.
    let dump = common::get(&format!("{url}/taskmanagers/{}/thread-dump", tm_id(1)));
    let names: Vec<&str> = dump["threadInfos"]
        .as_array()
        .unwrap_or_else(|| panic!("{dump}"))
        .iter()
        .filter_map(|t| t["threadName"].as_str())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("sum-per-key") && n.contains("(2/2)")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("(1/2)")), "{names:?}");
    // The sum vertex's flame graph through process 0 has process 1's subtask in it (sampled
    // there): Flink's protocol, "-3" until the first run is done.
    let mut fg = serde_json::Value::Null;
    wait_until(
        "a flame graph of subtask 2/2, sampled in process 1",
        120,
        || {
            fg = common::get(&format!(
                "{url}/jobs/{jid}/vertices/{sum}/flamegraph?subtaskindex=1"
            ));
            fg["data"]["value"].as_i64().unwrap_or(0) > 0
        },
    );
    assert!(fg["endTimestamp"].as_i64().unwrap_or(0) > 0, "{fg}");
    let own = common::get(&format!("{url}/taskmanagers/{}/thread-dump", tm_id(0)));
    assert!(
        own["threadInfos"].as_array().is_some_and(|t| !t.is_empty()),
        "{own}"
    );
}

#[test]
fn the_doctor_names_the_exchanges_serialization_cost_between_processes() {
    // Wide records behind a REBALANCE across 2 processes: encoding and decoding them on the
    // exchange's threads costs far more than making or folding them, so the source is
    // backpressured while its consumer idles.
    let (_launcher, url) =
        common::start_live(&["scenario", "serialization", "-p", "2", "--processes", "2"]);
    let d = common::doctor(&url, "serialization");
    assert_eq!(d["cause"], "serialization", "{d:#}");
    let vertex = d["bottleneck"]["vertex-name"].as_str().unwrap_or_default();
    assert!(
        vertex.contains("generator") || vertex.contains("fold"),
        "the bottleneck is one side of the crossing edge: {d:#}"
    );
    assert!(
        d["evidence"].as_array().unwrap().iter().any(|e| {
            let e = e.as_str().unwrap_or("");
            e.contains("serializationTimeMsPerSecond") && e.contains("`Source: generator`")
        }),
        "{d:#}"
    );
    // Process 0 serves both figures for every subtask, the remote ones included.
    let jid = common::get(&format!("{url}/jobs"))["jobs"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = common::get(&format!("{url}/jobs/{jid}"));
    let id_of = |prefix: &str| {
        job["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"].as_str().unwrap().starts_with(prefix))
            .expect("vertex")["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for (vertex, metric) in [
        (id_of("Source: generator"), "serializationTimeMsPerSecond"),
        (id_of("fold"), "deserializationTimeMsPerSecond"),
    ] {
        for i in 0..2 {
            let got = common::get(&format!(
                "{url}/jobs/{jid}/vertices/{vertex}/subtasks/{i}/metrics?get={metric}"
            ));
            let v: f64 = got[0]["value"].as_str().unwrap().parse().unwrap();
            assert!(v > 0.0, "{metric} of subtask {i}: {got}");
        }
    }
}

#[test]
fn the_rebalance_passthrough_over_two_processes_discards_every_record_once() {
    let o = sluice()
        .args(["run", "passthrough", "--records", "200000", "--rebalance"])
        .args(["-p", "2", "--processes", "2", "--no-rest", "--no-progress"])
        .output()
        .expect("runs");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{all}");
    // Each process reports its own sink subtask: together every record, once.
    let discarded: u64 = all
        .lines()
        .filter_map(|l| l.split("the sink discarded ").nth(1))
        .filter_map(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(discarded, 200_000, "{all}");
}
