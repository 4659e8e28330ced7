//! Issue 31's campaign driver: a job split over 3 `sluice run` processes (`--process-index K
//! --peers A0,A1,A2 --job-id ID`, the mode of `--processes N` and of the Kubernetes
//! StatefulSet), each in a network namespace of its own, Kafka (tansu) and PostgreSQL in a
//! services namespace on the same bridge (`sluice_testkit::Netns`). The driver plays
//! Kubernetes: it starts the 3 processes and, when one dies or the job fails (a lost peer fails
//! the job in every process), stops them all (by PID) and starts all 3 again from the latest
//! completed checkpoint in the shared checkpoint directory (`--from-checkpoint <job dir>`).
//!
//! Faults, drawn from a seed (printed; `SLUICE_CAMPAIGN_SEED` replays one), one at a time, each
//! once the running incarnation completed a checkpoint: SIGKILL of a random process; a
//! partition of one process's namespace (its link to the bridge down for a while, then up; half
//! of them SIGKILL the partitioned process just before the link comes back, as a pod deleted on
//! an unreachable node: its peers hear of it only through the healed link); a
//! SIGSTOP of a process for longer than a failure detector should need, then SIGCONT (or
//! SIGKILL). A fault the processes do not detect themselves is bounded by the driver: no new
//! checkpoint for `no_progress` after the fault healed, and it kills them all and restarts.
//!
//! Oracles share no code with Sluice: the input topic is read back with testkit's own
//! `read_committed` reader; (a) PostgreSQL computes the expected running sums itself (a window
//! `SUM(value) OVER (PARTITION BY key ORDER BY partition, offset)` over the input loaded with
//! `\copy`) and compares them with the sink's appended rows as multisets (`EXCEPT ALL` both
//! ways), and its `SUM(value) GROUP BY key` with each key's final sum; (b) the committed lines
//! of the output topic (testkit's reader, markers applied by itself) are compared as a multiset
//! with the running sums computed here from the input, what a fault-free run writes.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sluice_testkit::kafka_read::{read_committed, ReadUntil};
use sluice_testkit::{KafkaBroker, Netns, PostgresCluster, SERVICES_ADDR};

/// The processes of the job.
pub const PROCESSES: usize = 3;
/// The port each process's exchange listens on, in its own namespace.
const PEER_PORT: u16 = 6121;

/// What a campaign does.
#[derive(Clone, Debug)]
pub struct Settings {
    pub seed: u64,
    pub records: u64,
    /// Faults per job, by kind.
    pub kills: usize,
    pub partitions: usize,
    pub stops: usize,
    /// How long a partition lasts (drawn in this range).
    pub partition_ms: (u64, u64),
    /// How long a process stays stopped (drawn in this range).
    pub stop_ms: (u64, u64),
    /// The driver's bound: no new checkpoint this long after a fault healed, and it restarts.
    pub no_progress: Duration,
    /// No new checkpoint this long with no fault at all: a hang (reported, then restarted).
    pub stall: Duration,
    pub checkpoint_interval_ms: u64,
    /// The processes' `--heartbeat-timeout`: a stopped or partitioned peer silent this long
    /// is lost (the job fails and the driver restarts it), what "time to detect" measures.
    pub heartbeat_timeout_ms: u64,
    /// Whole-campaign deadline per job.
    pub deadline: Duration,
    /// Job (a), Kafka -> PostgreSQL (two-phase commit), and job (b), Kafka -> Kafka
    /// (transactions).
    pub postgres: bool,
    pub kafka: bool,
}

impl Settings {
    /// The seed: `SLUICE_CAMPAIGN_SEED`, else from the clock.
    pub fn seed_from_env() -> u64 {
        match std::env::var("SLUICE_CAMPAIGN_SEED") {
            Ok(s) => s
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("SLUICE_CAMPAIGN_SEED={s:?} is not a number")),
            Err(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 ^ u64::from(std::process::id()))
                .unwrap_or(1),
        }
    }
}

/// splitmix64: the faults' random numbers, reproducible from the seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// In `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    Kill,
    Partition,
    Stop,
}

/// One injected fault and what followed.
#[derive(Clone, Debug)]
pub struct FaultRecord {
    pub kind: FaultKind,
    pub process: usize,
    /// Partition / stop length; 0 for a kill.
    pub held: Duration,
    /// After a stop: SIGKILL instead of SIGCONT.
    pub then_killed: bool,
    /// Fault → the first process exiting by itself (for a kill: another than the victim).
    pub detected: Option<Duration>,
    /// The driver killed all after its no-progress bound.
    pub driver_killed: bool,
    /// Fault → the first checkpoint completed after the fault ended.
    pub recovered: Option<Duration>,
    /// The job was restarted because of it.
    pub restarted: bool,
    /// The latest checkpoint on disk when the fault began.
    pub checkpoint_before: u64,
    pub injected: Instant,
    /// The driver's no-progress bound in force.
    pub no_progress: Duration,
    /// After a SIGKILL at the end of a partition or stop: that kill → the first other process
    /// exiting by itself.
    pub killed_seen: Option<Duration>,
}

/// What a campaign on one job found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub job: String,
    pub faults: Vec<FaultRecord>,
    pub restarts: usize,
    /// Restarts the driver forced with no fault active (a hang).
    pub stalls: Vec<String>,
    pub lost: u64,
    pub duplicated: u64,
    pub committed: u64,
    pub expected: u64,
    /// (a) keys whose final sum differs from PostgreSQL's `SUM(value) GROUP BY key`.
    pub wrong_final_sums: u64,
    pub leftover: String,
    pub elapsed: Duration,
    pub last_checkpoint: u64,
    /// Planned faults left when the job finished (the input was too small for them).
    pub not_injected: usize,
}

impl Outcome {
    pub fn report(&self) -> String {
        let mut s = String::new();
        let count = |k: FaultKind| self.faults.iter().filter(|f| f.kind == k).count();
        let _ = writeln!(
            s,
            "== {}: {} records expected, {} committed: {} lost, {} duplicated{}",
            self.job,
            self.expected,
            self.committed,
            self.lost,
            self.duplicated,
            if self.job.starts_with("(a)") {
                format!(
                    ", {} keys with a wrong final sum vs PostgreSQL's SUM GROUP BY",
                    self.wrong_final_sums
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            s,
            "   faults: {} SIGKILL, {} partitions, {} SIGSTOP ({} planned not injected: the job ended first); {} restarts; {} stalls without a fault; {:.1} s; last checkpoint {}{}",
            count(FaultKind::Kill),
            count(FaultKind::Partition),
            count(FaultKind::Stop),
            self.not_injected,
            self.restarts,
            self.stalls.len(),
            self.elapsed.as_secs_f64(),
            self.last_checkpoint,
            if self.leftover.is_empty() {
                String::new()
            } else {
                format!("; {}", self.leftover)
            }
        );
        for f in &self.faults {
            let _ = writeln!(
                s,
                "   {:?} process {}{}: detect {}, {}recover {}{}",
                f.kind,
                f.process,
                if f.held.is_zero() {
                    String::new()
                } else {
                    format!(
                        " for {:.1} s{}",
                        f.held.as_secs_f64(),
                        if f.then_killed {
                            " then SIGKILL"
                        } else if f.kind == FaultKind::Stop {
                            " then SIGCONT"
                        } else {
                            ""
                        }
                    )
                },
                match f.detected {
                    Some(d) => format!("{:.2} s", d.as_secs_f64()),
                    None if f.driver_killed => format!(
                        "not detected, driver killed all after {:.0} s without a checkpoint",
                        f.no_progress.as_secs_f64()
                    ),
                    None if f.then_killed => format!(
                        "not detected while {} (SIGKILLed at its end, seen by a peer {} later)",
                        if f.kind == FaultKind::Stop {
                            "stopped"
                        } else {
                            "partitioned"
                        },
                        match f.killed_seen {
                            Some(d) => format!("{:.2} s", d.as_secs_f64()),
                            None => "never (driver restarted)".into(),
                        }
                    ),
                    None if f.restarted => "not detected by the processes".into(),
                    None => "not detected, none needed: no process exited, the job went on".into(),
                },
                if f.restarted {
                    "restart, "
                } else {
                    "no restart, "
                },
                match f.recovered {
                    Some(d) => format!("{:.2} s", d.as_secs_f64()),
                    None => "- (no checkpoint after it)".into(),
                },
                format_args!(" (from checkpoint {})", f.checkpoint_before),
            );
        }
        for st in &self.stalls {
            let _ = writeln!(s, "   STALL: {st}");
        }
        s
    }
}

/// The namespaces, servers and input shared by the jobs of a campaign.
pub struct Lab {
    // Dropped in field order: the servers stop before their namespace goes.
    pub kafka: KafkaBroker,
    pub pg: Option<PostgresCluster>,
    pub net: Netns,
    pub dir: PathBuf,
    /// Input records in (partition, offset) order: (partition, offset, key, value).
    pub input: Vec<(i32, i64, i64, i64)>,
}

pub const INPUT: &str = "campaign-in";

fn sluice_bin() -> &'static str {
    env!("CARGO_BIN_EXE_sluice")
}

/// Whether namespaces can be made here. In CI (`CI=true`) the test fails naming what is
/// missing; elsewhere it skips loudly (`sluice_testkit::require`).
pub fn require_namespaces(test: &str) -> bool {
    let made = match Netns::unavailable() {
        None => Ok(()),
        Some(why) => Err(why),
    };
    sluice_testkit::require(&format!("network namespaces (for {test})"), made).is_some()
}

impl Lab {
    /// Namespaces, tansu and (if `postgres`) PostgreSQL in the services namespace, `records`
    /// skew records produced to the input topic (3 partitions) and read back.
    pub fn start(records: u64, postgres: bool) -> Lab {
        let dir = std::env::temp_dir().join(format!("sluice-campaign-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let net = Netns::create(PROCESSES).expect("creating the network namespaces");
        let kafka = KafkaBroker::start_in(net.services(), SERVICES_ADDR).expect("tansu");
        let pg = postgres
            .then(|| PostgresCluster::start_in(net.services(), SERVICES_ADDR).expect("PostgreSQL"));
        let t = Instant::now();
        let o = Netns::command(net.services(), sluice_bin())
            .args([
                "produce",
                "skew",
                "--records",
                &records.to_string(),
                "--to",
                &format!("kafka://{}/{INPUT}?partitions=3", kafka.bootstrap()),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        eprintln!(
            "produced {records} records in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let t = Instant::now();
        let mut input: Vec<(i32, i64, i64, i64)> = read_topic(&net, &kafka, INPUT, records)
            .records
            .iter()
            .map(|r| {
                let line = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default());
                let (k, v) = line.split_once(',').expect("key,value");
                (
                    r.partition,
                    r.offset,
                    k.parse().expect("key"),
                    v.parse().expect("value"),
                )
            })
            .collect();
        input.sort_unstable();
        assert_eq!(input.len() as u64, records, "the input read back");
        eprintln!("read the input back in {:.1} s", t.elapsed().as_secs_f64());
        let lab = Lab {
            kafka,
            pg,
            net,
            dir,
            input,
        };
        if let Some(pg) = &lab.pg {
            let csv = lab.dir.join("raw.csv");
            let mut text = String::with_capacity(lab.input.len() * 24);
            for (p, o, k, v) in &lab.input {
                let _ = writeln!(text, "{p},{o},{k},{v}");
            }
            std::fs::write(&csv, text).unwrap();
            pg.psql("CREATE TABLE raw (part INT, off BIGINT, key BIGINT, value BIGINT)")
                .unwrap();
            pg.psql(&format!("\\copy raw FROM '{}' CSV", csv.display()))
                .unwrap();
            let _ = std::fs::remove_file(&csv);
        }
        lab
    }

    /// The `(key, running sum)` records a fault-free run writes, sorted: per key, in
    /// partition order.
    pub fn expected_sums(&self) -> Vec<(i64, i64)> {
        let mut sums: BTreeMap<i64, i64> = BTreeMap::new();
        let mut out: Vec<(i64, i64)> = self
            .input
            .iter()
            .map(|(_, _, k, v)| {
                let s = sums.entry(*k).or_default();
                *s += v;
                (*k, *s)
            })
            .collect();
        out.sort_unstable();
        out
    }
}

impl Drop for Lab {
    /// The scratch directory goes, unless a failure is being reported (its logs stay).
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("logs kept in {}", self.dir.display());
        }
    }
}

/// `topic` as a read_committed consumer sees it, read from the services namespace.
fn read_topic(
    net: &Netns,
    kafka: &KafkaBroker,
    topic: &str,
    expect: u64,
) -> sluice_testkit::kafka_read::TopicContents {
    let (bootstrap, topic) = (kafka.bootstrap(), topic.to_string());
    let deadline = Duration::from_secs(120 + expect / 20_000);
    Netns::run_in(net.services(), move || {
        read_committed(
            &bootstrap,
            &topic,
            ReadUntil {
                expect: expect as usize,
                settle: Duration::from_millis(1000),
                deadline,
            },
        )
    })
    .unwrap()
    .unwrap()
}

/// The highest complete checkpoint id in `job_dir` (0: none).
fn latest_checkpoint(job_dir: &Path) -> u64 {
    std::fs::read_dir(job_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("_metadata").exists())
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("chk-")
                .and_then(|n| n.parse().ok())
        })
        .max()
        .unwrap_or(0)
}

fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status();
}

/// The running processes of one incarnation; on drop every one still running is SIGCONTed,
/// SIGKILLed and reaped (by PID).
struct Fleet {
    children: Vec<Option<Child>>,
    /// Exit statuses seen: (index, success, when).
    exits: Vec<(usize, bool, Instant, String)>,
}

impl Fleet {
    fn kill_all(&mut self) {
        for c in self.children.iter_mut() {
            if let Some(mut ch) = c.take() {
                signal(ch.id(), "CONT");
                let _ = ch.kill();
                let _ = ch.wait();
            }
        }
    }

    /// Reaps exited processes; records their exits.
    fn poll(&mut self) {
        for (i, c) in self.children.iter_mut().enumerate() {
            if let Some(ch) = c.as_mut() {
                if let Ok(Some(st)) = ch.try_wait() {
                    self.exits
                        .push((i, st.success(), Instant::now(), st.to_string()));
                    *c = None;
                }
            }
        }
    }

    fn running(&self) -> usize {
        self.children.iter().filter(|c| c.is_some()).count()
    }

    fn pid(&self, i: usize) -> Option<u32> {
        self.children[i].as_ref().map(Child::id)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// A partition or stop in force, undone by `Active::end` (also on drop: a panicking driver
/// leaves no link down and no process stopped).
struct Active<'a> {
    net: &'a Netns,
    kind: FaultKind,
    process: usize,
    pid: Option<u32>,
    until: Instant,
    ended: bool,
}

impl Active<'_> {
    fn end(&mut self, kill: bool) {
        if self.ended {
            return;
        }
        self.ended = true;
        match self.kind {
            FaultKind::Partition => {
                // Killed behind the partition (a pod deleted on an unreachable node): its
                // peers hear nothing of it until the link is back.
                if let (true, Some(pid)) = (kill, self.pid) {
                    signal(pid, "KILL");
                }
                self.net.heal(self.process).expect("healing the partition")
            }
            FaultKind::Stop => {
                if let Some(pid) = self.pid {
                    signal(pid, if kill { "KILL" } else { "CONT" });
                }
            }
            FaultKind::Kill => {}
        }
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.end(false);
    }
}

/// Which job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// (a) Kafka → keyed sum → PostgreSQL, appends by two-phase commit.
    Postgres,
    /// (b) Kafka → keyed sum → Kafka, transactions.
    Kafka,
}

/// Runs the campaign on `job` and checks its output with the oracles.
pub fn run(lab: &Lab, job: Job, s: &Settings, rng: &mut Rng) -> Outcome {
    let name = match job {
        Job::Postgres => "(a) Kafka -> keyed sum -> PostgreSQL (append, two-phase commit)",
        Job::Kafka => "(b) Kafka -> keyed sum -> Kafka (transactions)",
    };
    eprintln!("\n== {name}: seed {}", s.seed);
    let tag = match job {
        Job::Postgres => "pg",
        Job::Kafka => "kafka",
    };
    let chk = lab.dir.join(format!("chk-{tag}"));
    let logs = lab.dir.join(format!("logs-{tag}"));
    std::fs::create_dir_all(&chk).unwrap();
    std::fs::create_dir_all(&logs).unwrap();
    let job_id = format!("{:016x}{:016x}", rng.next(), rng.next());
    let job_dir = chk.join(&job_id);
    let to = match job {
        Job::Postgres => format!(
            "{}?table=sums&append",
            lab.pg.as_ref().expect("PostgreSQL").url()
        ),
        Job::Kafka => format!(
            "kafka://{}/campaign-out?exactly-once&partitions=3",
            lab.kafka.bootstrap()
        ),
    };
    let peers = (0..PROCESSES)
        .map(|i| format!("{}:{PEER_PORT}", Netns::host_addr(i)))
        .collect::<Vec<_>>()
        .join(",");
    let base: Vec<String> = [
        "run",
        "skew",
        "--from",
        &format!("kafka://{}/{INPUT}", lab.kafka.bootstrap()),
        "--bounded",
        // One source subtask and its map: each key's records reach its sum in partition
        // order, so the running sums are those of a fault-free run, line for line.
        "--source-parallelism",
        "1",
        "--map-parallelism",
        "1",
        "--map-work",
        "0",
        "-p",
        &PROCESSES.to_string(),
        "--to",
        &to,
        "--checkpoint-interval",
        &s.checkpoint_interval_ms.to_string(),
        "--checkpoint-dir",
        chk.to_str().unwrap(),
        "--no-rest",
        "--no-progress",
        "--job-id",
        &job_id,
        "--heartbeat-timeout",
        &s.heartbeat_timeout_ms.to_string(),
        "--peers",
        &peers,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();

    // The faults, in a drawn order.
    let mut plan: Vec<FaultKind> = std::iter::repeat_n(FaultKind::Kill, s.kills)
        .chain(std::iter::repeat_n(FaultKind::Partition, s.partitions))
        .chain(std::iter::repeat_n(FaultKind::Stop, s.stops))
        .collect();
    for i in (1..plan.len()).rev() {
        let j = rng.range(0, i as u64) as usize;
        plan.swap(i, j);
    }
    plan.reverse();
    eprintln!("fault plan: {plan:?}");

    let start = Instant::now();
    let mut out = Outcome {
        job: name.into(),
        ..Default::default()
    };
    let mut incarnation = 0usize;
    // The latest fault (index into out.faults), when it ended, and in which incarnation.
    let mut fault: Option<(usize, Instant)> = None;
    let mut fault_incarnation = usize::MAX;
    'incarnations: loop {
        assert!(
            start.elapsed() < s.deadline,
            "{name}: campaign deadline ({:?}) passed after {} restarts (seed {})\n{}\n{}",
            s.deadline,
            out.restarts,
            s.seed,
            out.report(),
            tails(&logs)
        );
        // Start all processes, from the latest checkpoint if one completed.
        let restore = latest_checkpoint(&job_dir) > 0;
        let started_at = Instant::now();
        let ck_at_start = latest_checkpoint(&job_dir);
        let mut fleet = Fleet {
            children: Vec::new(),
            exits: Vec::new(),
        };
        for i in 0..PROCESSES {
            let log = logs.join(format!("inc{incarnation:03}-p{i}.log"));
            let mut cmd = Netns::command(lab.net.host(i), sluice_bin());
            cmd.args(&base)
                .args(["--process-index", &i.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap());
            if restore {
                cmd.arg("--from-checkpoint").arg(&job_dir);
            }
            fleet.children.push(Some(cmd.spawn().unwrap()));
        }
        eprintln!(
            "[{:6.1}s] incarnation {incarnation} started{}",
            start.elapsed().as_secs_f64(),
            if restore {
                format!(" from checkpoint {ck_at_start}")
            } else {
                String::new()
            }
        );
        let mut last_ck = ck_at_start;
        let mut last_progress = Instant::now();
        let mut active: Option<Active<'_>> = None;
        let mut next_fault_at: Option<Instant> = None;
        let mut first_failure: Option<Instant> = None;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = Instant::now();
            fleet.poll();
            let ck = latest_checkpoint(&job_dir);
            if ck > last_ck {
                last_ck = ck;
                last_progress = now;
                // The first checkpoint after the fault ended: recovered.
                // (After a kill: by the incarnation started after it; the old one may still
                // complete a checkpoint its victim had acknowledged.)
                if let Some((f, ended)) = fault {
                    let rec = &out.faults[f];
                    if active.is_none()
                        && rec.recovered.is_none()
                        && now >= ended
                        && (rec.kind != FaultKind::Kill || incarnation > fault_incarnation)
                    {
                        out.faults[f].recovered = Some(now - out.faults[f].injected);
                    }
                }
            }
            // Exits of this incarnation.
            let failed: Vec<&(usize, bool, Instant, String)> =
                fleet.exits.iter().filter(|e| !e.1).collect();
            if let Some(first) = failed.first() {
                // Exit status 3: the job was refused before it started (a bad flag, an
                // unreachable server): the same on every restart.
                assert!(
                    !first.3.ends_with("exit status: 3"),
                    "{name}: process {} was refused before the job started (seed {})\n{}",
                    first.0,
                    s.seed,
                    tails(&logs)
                );
                if first_failure.is_none() {
                    first_failure = Some(first.2);
                    eprintln!(
                        "[{:6.1}s] process {} exited: {}",
                        start.elapsed().as_secs_f64(),
                        first.0,
                        first.3
                    );
                }
            }
            if fleet.running() == 0 && failed.is_empty() {
                // Every process finished its part: the job is done.
                drop(active.take());
                out.last_checkpoint = last_ck;
                eprintln!(
                    "[{:6.1}s] incarnation {incarnation}: all {PROCESSES} processes finished",
                    start.elapsed().as_secs_f64()
                );
                break 'incarnations;
            }
            // A process exited by itself after the fault: detected.
            if let Some((f, _)) = fault.filter(|_| fault_incarnation == incarnation) {
                let rec = &mut out.faults[f];
                if rec.detected.is_none() {
                    let victim =
                        (rec.kind == FaultKind::Kill || rec.then_killed).then_some(rec.process);
                    // A stop ended by SIGKILL: the exits after that kill are the kill's, not a
                    // detection of the stop.
                    let until = if rec.then_killed {
                        rec.injected + rec.held
                    } else {
                        now + Duration::from_secs(1)
                    };
                    if let Some(e) = fleet
                        .exits
                        .iter()
                        .find(|e| !e.1 && Some(e.0) != victim && e.2 < until)
                    {
                        rec.detected = Some(e.2.saturating_duration_since(rec.injected));
                    }
                }
                // Killed behind the partition or while stopped: how soon the others saw it.
                if rec.then_killed && rec.detected.is_none() && rec.killed_seen.is_none() {
                    let end = rec.injected + rec.held;
                    if let Some(e) = fleet
                        .exits
                        .iter()
                        .find(|e| !e.1 && e.0 != rec.process && e.2 >= end)
                    {
                        rec.killed_seen = Some(e.2.saturating_duration_since(end));
                    }
                }
            }
            // A partition or stop runs its course, whatever the processes do meanwhile.
            if let Some(a) = active.as_mut() {
                if now >= a.until {
                    let kill = out.faults[fault.unwrap().0].then_killed;
                    a.end(kill);
                    active = None;
                    let f = fault.unwrap().0;
                    fault = Some((f, now));
                    last_progress = now;
                    eprintln!(
                        "[{:6.1}s] {:?} of process {} ended{}",
                        start.elapsed().as_secs_f64(),
                        out.faults[f].kind,
                        out.faults[f].process,
                        if kill { " with SIGKILL" } else { "" }
                    );
                }
                continue;
            }
            // The job failed: stop everything and start all again (after a grace for the
            // others to see the loss themselves).
            if let Some(t) = first_failure {
                if now.duration_since(t) > Duration::from_secs(3) || fleet.running() == 0 {
                    if let Some((f, _)) = fault.filter(|_| fault_incarnation == incarnation) {
                        out.faults[f].restarted = true;
                    }
                    break;
                }
                continue;
            }
            // The driver's bound on a fault not detected (in the incarnation it hit).
            if let Some((f, ended)) = fault.filter(|_| fault_incarnation == incarnation) {
                let rec = &out.faults[f];
                if rec.recovered.is_none()
                    && rec.kind != FaultKind::Kill
                    && now.duration_since(ended.max(last_progress)) > s.no_progress
                {
                    eprintln!(
                        "[{:6.1}s] no checkpoint {:.0} s after the {:?} of process {} ended: the driver kills all",
                        start.elapsed().as_secs_f64(),
                        s.no_progress.as_secs_f64(),
                        rec.kind,
                        rec.process
                    );
                    out.faults[f].driver_killed = true;
                    out.faults[f].restarted = true;
                    break;
                }
            }
            // A stall with no fault in force: a hang.
            if now.duration_since(last_progress) > s.stall {
                let msg = format!(
                    "incarnation {incarnation}: no checkpoint for {:.0} s (latest {last_ck}) and no fault in force; exits so far: {:?} (seed {})",
                    s.stall.as_secs_f64(),
                    fleet.exits,
                    s.seed
                );
                eprintln!("[{:6.1}s] STALL: {msg}", start.elapsed().as_secs_f64());
                out.stalls.push(msg);
                break;
            }
            // The next fault: once this incarnation completed a checkpoint and the previous
            // fault recovered.
            let ready = last_ck > ck_at_start
                && fault.is_none_or(|(f, _)| out.faults[f].recovered.is_some());
            if ready && !plan.is_empty() && fleet.running() == PROCESSES {
                let at = *next_fault_at.get_or_insert_with(|| {
                    now + Duration::from_millis(rng.range(0, 2 * s.checkpoint_interval_ms))
                });
                if now < at {
                    continue;
                }
                next_fault_at = None;
                let kind = plan.pop().unwrap();
                let p = rng.range(0, PROCESSES as u64 - 1) as usize;
                let pid = fleet.pid(p).unwrap();
                let injected = Instant::now();
                let mut rec = FaultRecord {
                    kind,
                    process: p,
                    held: Duration::ZERO,
                    then_killed: false,
                    detected: None,
                    driver_killed: false,
                    recovered: None,
                    restarted: false,
                    checkpoint_before: last_ck,
                    injected,
                    no_progress: s.no_progress,
                    killed_seen: None,
                };
                match kind {
                    FaultKind::Kill => {
                        signal(pid, "KILL");
                    }
                    FaultKind::Partition => {
                        rec.held =
                            Duration::from_millis(rng.range(s.partition_ms.0, s.partition_ms.1));
                        rec.then_killed = rng.range(0, 2) == 0;
                        lab.net.partition(p).expect("partitioning");
                        active = Some(Active {
                            net: &lab.net,
                            kind,
                            process: p,
                            pid: Some(pid),
                            until: injected + rec.held,
                            ended: false,
                        });
                    }
                    FaultKind::Stop => {
                        rec.held = Duration::from_millis(rng.range(s.stop_ms.0, s.stop_ms.1));
                        rec.then_killed = rng.range(0, 3) == 0;
                        signal(pid, "STOP");
                        active = Some(Active {
                            net: &lab.net,
                            kind,
                            process: p,
                            pid: Some(pid),
                            until: injected + rec.held,
                            ended: false,
                        });
                    }
                }
                eprintln!(
                    "[{:6.1}s] fault {}: {:?} process {p}{} (latest checkpoint {last_ck})",
                    start.elapsed().as_secs_f64(),
                    out.faults.len() + 1,
                    kind,
                    if rec.held.is_zero() {
                        String::new()
                    } else {
                        format!(
                            " for {:.1} s{}",
                            rec.held.as_secs_f64(),
                            if rec.then_killed {
                                ", then SIGKILL"
                            } else {
                                ""
                            }
                        )
                    }
                );
                out.faults.push(rec);
                fault = Some((out.faults.len() - 1, injected));
                fault_incarnation = incarnation;
            }
        }
        drop(active.take());
        fleet.kill_all();
        out.restarts += 1;
        incarnation += 1;
        eprintln!(
            "[{:6.1}s] incarnation {} stopped ({:.1} s); restarting all from checkpoint {}",
            start.elapsed().as_secs_f64(),
            incarnation - 1,
            started_at.elapsed().as_secs_f64(),
            latest_checkpoint(&job_dir)
        );
    }
    out.elapsed = start.elapsed();
    out.not_injected = plan.len();
    check(lab, job, &mut out);
    eprintln!("{}", out.report());
    out
}

/// The oracles: lost and duplicated records of the sink's output.
fn check(lab: &Lab, job: Job, out: &mut Outcome) {
    out.expected = lab.input.len() as u64;
    match job {
        Job::Postgres => {
            let pg = lab.pg.as_ref().unwrap();
            let n = |sql: &str| -> u64 { pg.psql(sql).unwrap().trim().parse().unwrap() };
            let expected =
                "SELECT key, sum(value) OVER (PARTITION BY key ORDER BY part, off) AS sum FROM raw";
            out.committed = n("SELECT count(*) FROM sums");
            out.lost = n(&format!(
                "SELECT count(*) FROM (SELECT key, sum FROM ({expected}) e EXCEPT ALL SELECT key, sum FROM sums) l"
            ));
            out.duplicated = n(&format!(
                "SELECT count(*) FROM (SELECT key, sum FROM sums EXCEPT ALL SELECT key, sum FROM ({expected}) e) d"
            ));
            out.wrong_final_sums = n(
                "SELECT count(*) FROM (SELECT key, sum(value) AS s FROM raw GROUP BY key) e \
                 FULL JOIN (SELECT key, max(sum) AS s FROM sums GROUP BY key) t USING (key) \
                 WHERE e.s IS DISTINCT FROM t.s",
            );
            let prepared = n("SELECT count(*) FROM pg_prepared_xacts");
            if prepared > 0 {
                out.leftover = format!("{prepared} prepared transactions left");
            }
        }
        Job::Kafka => {
            let r = read_topic(&lab.net, &lab.kafka, "campaign-out", out.expected);
            if (r.pending, r.behind_open) != (0, 0) {
                out.leftover = format!(
                    "{} records in open transactions, {} behind them",
                    r.pending, r.behind_open
                );
            }
            out.committed = r.records.len() as u64;
            // A line that is not `key,sum` is never expected: it counts as a duplicate.
            let mut got: Vec<(i64, i64)> = r
                .records
                .iter()
                .map(|r| {
                    let line = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default());
                    line.split_once(',')
                        .and_then(|(k, s)| Some((k.parse().ok()?, s.parse().ok()?)))
                        .unwrap_or((i64::MIN, i64::MIN))
                })
                .collect();
            drop(r);
            got.sort_unstable();
            let (lost, dup) = sorted_diff(&lab.expected_sums(), &got);
            out.lost = lost;
            out.duplicated = dup;
        }
    }
}

/// `(lost, duplicated)` of `got` against `expected` as multisets, both sorted.
pub fn sorted_diff<T: Ord>(expected: &[T], got: &[T]) -> (u64, u64) {
    let (mut i, mut j, mut lost, mut dup) = (0, 0, 0u64, 0u64);
    while i < expected.len() && j < got.len() {
        match expected[i].cmp(&got[j]) {
            std::cmp::Ordering::Equal => (i, j) = (i + 1, j + 1),
            std::cmp::Ordering::Less => (i, lost) = (i + 1, lost + 1),
            std::cmp::Ordering::Greater => (j, dup) = (j + 1, dup + 1),
        }
    }
    (
        lost + (expected.len() - i) as u64,
        dup + (got.len() - j) as u64,
    )
}

/// The last lines of every process log, for a failure message.
fn tails(logs: &Path) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(logs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut s = String::new();
    for f in files.iter().rev().take(6).rev() {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let _ = writeln!(s, "--- {}", f.display());
        for l in &lines[lines.len().saturating_sub(15)..] {
            let _ = writeln!(s, "{l}");
        }
    }
    s
}
