//! The profiler over REST against real jobs: flame graphs (`/jobs/:id/vertices/:vid/flamegraph`)
//! and the thread dump (`/taskmanagers/:tm/thread-dump`), compared in shape with Flink 2.3's
//! captures and in content with what the jobs do.

use crate::common;

use common::{eventually, get, get_json, Served};
use serde_json::Value;
use sluice_jobs::scenarios::{self, ScenarioConfig};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-rest"
);

fn fixture(path: &str) -> Value {
    let p = format!("{FIXTURES}/{path}");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Keys, key order and value types, recursively (arrays: every element against the first of
/// the reference).
fn same_shape(ours: &Value, flink: &Value, at: &str) {
    match (ours, flink) {
        (Value::Object(a), Value::Object(b)) => {
            let ka: Vec<&String> = a.keys().collect();
            let kb: Vec<&String> = b.keys().collect();
            assert_eq!(ka, kb, "keys at {at}");
            for (k, v) in a {
                same_shape(v, &b[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if let Some(first) = b.first() {
                for (i, v) in a.iter().enumerate() {
                    same_shape(v, first, &format!("{at}[{i}]"));
                }
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            assert_eq!(
                a.is_i64() || a.is_u64(),
                b.is_i64() || b.is_u64(),
                "number kind at {at}"
            )
        }
        (a, b) => assert_eq!(
            std::mem::discriminant(a),
            std::mem::discriminant(b),
            "type at {at}: {a} vs {b}"
        ),
    }
}

fn scenario(name: &str, parallelism: usize) -> (Served, scenarios::ScenarioJob) {
    let env = common::env(parallelism);
    let job = scenarios::build(
        &env,
        &ScenarioConfig {
            name: name.into(),
            parallelism,
            ..ScenarioConfig::default()
        },
    )
    .unwrap();
    (Served::start(&env), job)
}

/// Requests a flame graph until it has data (the first answer is `-3`).
fn flame_graph(s: &Served, vertex: &str, query: &str) -> Value {
    let path = format!("/jobs/{}/vertices/{vertex}/flamegraph{query}", s.jid);
    eventually("the flame graph has data", || {
        let g = get_json(s.addr, &path);
        g.get("data").is_some().then_some(g)
    })
}

/// Every root-to-node path of names, with the node's value.
fn paths(n: &Value, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, u64)>) {
    prefix.push(n["name"].as_str().unwrap().to_string());
    out.push((prefix.clone(), n["value"].as_u64().unwrap()));
    for c in n["children"].as_array().unwrap() {
        paths(c, prefix, out);
    }
    prefix.pop();
}

fn all_paths(g: &Value) -> Vec<(Vec<String>, u64)> {
    let mut out = Vec::new();
    paths(&g["data"], &mut Vec::new(), &mut out);
    out
}

fn dump_tree(n: &Value, depth: usize, out: &mut String) {
    out.push_str(&format!(
        "{}{} {}\n",
        " ".repeat(depth),
        n["name"].as_str().unwrap(),
        n["value"]
    ));
    for c in n["children"].as_array().unwrap() {
        dump_tree(c, depth + 1, out);
    }
}

fn tree_text(g: &Value) -> String {
    let mut s = String::new();
    dump_tree(&g["data"], 0, &mut s);
    s
}

/// Whether some path has a frame matching `outer` and, deeper, one matching `inner`.
fn nested(g: &Value, outer: impl Fn(&str) -> bool, inner: impl Fn(&str) -> bool) -> bool {
    all_paths(g).iter().any(|(p, _)| {
        p.iter()
            .position(|f| outer(f))
            .is_some_and(|i| p[i + 1..].iter().any(|f| inner(f)))
    })
}

/// Samples under frames matching `frame` (each sample once), as a share of the root's.
fn share_under(g: &Value, frame: impl Fn(&str) -> bool) -> f64 {
    fn walk(n: &Value, frame: &dyn Fn(&str) -> bool) -> u64 {
        if frame(n["name"].as_str().unwrap()) {
            return n["value"].as_u64().unwrap();
        }
        n["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| walk(c, frame))
            .sum()
    }
    let root = g["data"]["value"].as_u64().unwrap().max(1);
    walk(&g["data"], &frame) as f64 / root as f64
}

#[test]
fn skew_flame_graph_has_flinks_shape_and_the_reduce_function_under_the_sum_operator() {
    let (s, _job) = scenario("skew", 2);
    s.wait_for_metrics();
    let keyed = s.vertex("sum-per-key");
    let path = format!("/jobs/{}/vertices/{keyed}/flamegraph", s.jid);
    // The first call starts sampling: Flink's answer, byte for byte.
    let first = get(s.addr, &format!("{path}?type=on_cpu"));
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(
        first.json(),
        fixture("skew/v1-sum-per-key-counting-sink-writer-flamegraph-call1.json")
    );
    let g = flame_graph(&s, &keyed, "?type=on_cpu");
    same_shape(
        &g,
        &fixture("skew/v1-sum-per-key-counting-sink-writer-flamegraph-call2.json"),
        "",
    );
    assert!(
        g["endTimestamp"].as_i64().unwrap() > 1_700_000_000_000,
        "{g}"
    );
    assert_eq!(g["data"]["name"], "root");
    let text = tree_text(&g);
    assert!(
        nested(
            &g,
            |f| f.contains("KeyedReduceOp") && f.contains("process"),
            // `sum` reduces with a closure built by `field_fold` around its own adder.
            |f| f.contains("KeyedStream<K,T,F>::sum::{{closure}}")
                || f.contains("keyed::field_fold::{{closure}}")
        ),
        "no sum reduce function under the keyed reduce operator:\n{text}"
    );
    // Every type and one subtask share the shape; values add up.
    for q in [
        "?type=full",
        "?type=off_cpu",
        "?type=ON_CPU&subtaskindex=0",
        "",
    ] {
        let g = get_json(s.addr, &format!("{path}{q}"));
        same_shape(
            &g,
            &fixture("profiling-and-rescale/v1-flamegraph-oncpu-subtask0-call1.json"),
            q,
        );
    }
    let full = get_json(s.addr, &format!("{path}?type=full"))["data"]["value"]
        .as_u64()
        .unwrap();
    let off = get_json(s.addr, &format!("{path}?type=off_cpu"))["data"]["value"]
        .as_u64()
        .unwrap();
    assert_eq!(full, g["data"]["value"].as_u64().unwrap() + off);
    let sub0 = get_json(s.addr, &format!("{path}?type=full&subtaskindex=0"))["data"]["value"]
        .as_u64()
        .unwrap();
    assert!(sub0 > 0 && sub0 < full, "{sub0} of {full}");
    // Bad parameters are Flink errors, never 5xx.
    assert_eq!(get(s.addr, &format!("{path}?type=mixed")).status, 400);
    assert_eq!(get(s.addr, &format!("{path}?subtaskindex=7")).status, 404);
    assert_eq!(get(s.addr, &format!("{path}?subtaskindex=x")).status, 400);
}

#[test]
fn blocking_subtasks_wait_for_their_lookup_in_the_thread_dump_and_the_off_cpu_graph() {
    let (s, _job) = scenario("blocking", 2);
    s.wait_for_metrics();
    let tms = get_json(s.addr, "/taskmanagers");
    let tm = tms["taskmanagers"][0]["id"].as_str().unwrap().to_string();
    let dump_path = format!("/taskmanagers/{tm}/thread-dump");
    // The blocking scenario is a sync lookup join over HTTP: the task thread waits in its
    // runtime's epoll for the answer.
    let dump = eventually(
        "both blocking subtasks seen waiting on their socket at once",
        || {
            let d = get_json(s.addr, &dump_path);
            let asleep = d["threadInfos"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| {
                    let name = t["threadName"].as_str().unwrap();
                    let info = t["stringifiedThreadInfo"].as_str().unwrap();
                    name.starts_with("blocking-call") && info.contains("(socket, pipe or file I/O)")
                })
                .count();
            (asleep == 2).then_some(d)
        },
    );
    same_shape(
        &dump,
        &fixture("profiling-and-rescale/taskmanager-thread-dump.json"),
        "",
    );
    let names: Vec<&str> = dump["threadInfos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["threadName"].as_str().unwrap())
        .collect();
    let vertex = s
        .vertex_names
        .iter()
        .find(|n| n.starts_with("blocking-call"))
        .unwrap();
    for i in 1..=2 {
        let want = format!("{vertex} ({i}/2)#0");
        assert!(names.contains(&want.as_str()), "{want} not in {names:?}");
    }
    let info = dump["threadInfos"]
        .as_array()
        .unwrap()
        .iter()
        // One seen waiting (a dump is process-wide: another test's blocking job may be running
        // beside this one, its threads between two requests).
        .find(|t| {
            t["threadName"]
                .as_str()
                .unwrap()
                .starts_with("blocking-call")
                && t["stringifiedThreadInfo"]
                    .as_str()
                    .unwrap()
                    .contains("(socket, pipe or file I/O)")
        })
        .unwrap()["stringifiedThreadInfo"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(info.starts_with(&format!("\"{vertex} (")), "{info}");
    assert!(
        info.contains("\n\tat [blocked] in operator code\n"),
        "{info}"
    );
    assert_eq!(get(s.addr, "/taskmanagers/nope/thread-dump").status, 404);

    let id = s.vertex("blocking-call");
    let g = flame_graph(&s, &id, "?type=off_cpu");
    let io = share_under(&g, |f| f.contains("(socket, pipe or file I/O)"));
    assert!(io > 0.5, "I/O wait share {io}:\n{}", tree_text(&g));

    // The generator waits for credit: its off-CPU samples carry the native stack the thread
    // captured where the wait started, between the task and the logical wait.
    let id = s.vertex("Source:");
    let g = flame_graph(&s, &id, "?type=off_cpu");
    let with_stack = all_paths(&g).into_iter().any(|(p, n)| {
        let wait = p.iter().position(|f| f.starts_with("[wait] output credit"));
        n > 0
            && wait.is_some_and(|w| {
                w > 2
                    && p[2..w].iter().all(|f| !f.starts_with('['))
                    && p[2..w].iter().any(|f| f.contains("sluice_"))
            })
    });
    if std::env::var_os("SHOW_TREE").is_some() {
        eprintln!("{}", tree_text(&g));
    }
    assert!(
        with_stack,
        "no native frames above the credit wait:\n{}",
        tree_text(&g)
    );
}

/// Every record of `contended-lock` holds one process-wide mutex for a moment: with two
/// subtasks, one holds it (asleep) while the other waits for it.
static ONE_LOCK: std::sync::Mutex<u64> = std::sync::Mutex::new(0);

#[test]
fn subtasks_waiting_for_a_contended_mutex_are_blocked_in_the_thread_dump_and_the_off_cpu_graph() {
    let env = common::env(2);
    env.generate(scenarios::UNBOUNDED, |i| i as i64)
        .name("generator")
        .rebalance()
        .map(|v: i64| {
            let mut held = ONE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
            *held += 1;
            std::thread::sleep(std::time::Duration::from_micros(300));
            v
        })
        .name("contended-lock")
        .sink_fn("discard", |_: i64| Ok(()));
    let s = Served::start(&env);
    s.wait_for_metrics();
    let tms = get_json(s.addr, "/taskmanagers");
    let tm = tms["taskmanagers"][0]["id"].as_str().unwrap().to_string();
    let dump_path = format!("/taskmanagers/{tm}/thread-dump");
    let blocked = eventually("a contended-lock subtask seen BLOCKED on the mutex", || {
        let d = get_json(s.addr, &dump_path);
        d["threadInfos"].as_array().unwrap().iter().find_map(|t| {
            let name = t["threadName"].as_str().unwrap();
            let info = t["stringifiedThreadInfo"].as_str().unwrap();
            (name.starts_with("contended-lock") && info.contains(" BLOCKED on mutex@0x"))
                .then(|| info.to_string())
        })
    });
    assert!(
        blocked.contains("\tat [syscall] futex (lock: contended mutex)\n")
            && blocked.contains("\tat [blocked] in operator code\n"),
        "{blocked}"
    );
    // The holder sleeps, so some dumps show it TIMED_WAITING: the two states are told apart.
    let id = s.vertex("contended-lock");
    let g = flame_graph(&s, &id, "?type=off_cpu");
    let lock = share_under(&g, |f| f == "[syscall] futex (lock: contended mutex)");
    let sleep = share_under(&g, |f| f.contains("clock_nanosleep (sleep)"));
    assert!(
        lock > 0.2 && sleep > 0.2,
        "lock {lock}, sleep {sleep}:\n{}",
        tree_text(&g)
    );
}

#[test]
fn state_heavy_on_cpu_graph_names_the_lsm_stores_get() {
    let (s, _job) = scenario("state-heavy", 1);
    s.wait_for_metrics();
    let id = s.vertex("state-heavy");
    let g = flame_graph(&s, &id, "?type=on_cpu");
    let text = tree_text(&g);
    assert!(
        nested(
            &g,
            |f| f.contains("MapState") && f.contains("::get"),
            |f| (f.contains("lsm_tree") || f.contains("fjall")) && f.contains("get")
        ),
        "no LSM get under MapState::get:\n{text}"
    );
}

/// The doctor as it sees a Flink cluster: Flink's metrics only (no CPU time, no state-access or
/// per-operator time), read over REST from the blocking scenario. Without flame graphs it cannot
/// tell waiting from computing; with the busy subtasks' on- and off-CPU graphs it says
/// "blocking calls", from the share of samples spent off CPU waiting for the lookup's socket.
#[test]
fn the_doctor_without_cpu_metrics_finds_blocking_calls_in_the_flame_graphs() {
    use sluice_doctor::{diagnose, flink_rest, FlameTree, JobView, VertexProfile};
    let (s, _job) = scenario("blocking", 2);
    s.wait_for_metrics();
    let job = get_json(s.addr, &format!("/jobs/{}", s.jid));
    let view = || -> JobView {
        let mut vertices = flink_rest::read_graph(&job).unwrap();
        for v in &mut vertices {
            v.subtasks = (0..v.parallelism)
                .map(|n| {
                    let a = get_json(s.addr, &flink_rest::subtask_metrics_path(&s.jid, v, n));
                    let mut sample = flink_rest::subtask_sample(&a, &v.operators);
                    // What Flink does not report.
                    sample.cpu = None;
                    sample.cpu_wait = None;
                    sample.state_access = None;
                    sample.operator_busy.clear();
                    sample
                })
                .collect();
        }
        JobView {
            vertices,
            available_cores: None,
        }
    };
    let blocking = s
        .vertex_names
        .iter()
        .position(|n| n.starts_with("blocking-call"))
        .unwrap();
    // Wait until the metrics show the blocking vertex as the busy one.
    let mut without = eventually("the blocking vertex is the bottleneck", || {
        let j = view();
        let d = diagnose(&j);
        (d.bottleneck.as_ref().map(|b| b.vertex) == Some(blocking)).then_some(j)
    });
    let d = diagnose(&without);
    assert_ne!(d.cause.name(), "blocking-calls", "{d:?}");

    let vid = &s.vertices[blocking];
    let tree =
        |ty: &str| FlameTree::from_answer(&flame_graph(&s, vid, &format!("?type={ty}"))).unwrap();
    without.vertices[blocking].profile = Some(VertexProfile {
        on_cpu: tree("on_cpu"),
        off_cpu: tree("off_cpu"),
    });
    let d = diagnose(&without);
    assert_eq!(d.cause.name(), "blocking-calls", "{d:?}");
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("off CPU inside the operator") && e.contains("socket or file I/O")),
        "{:?}",
        d.evidence
    );
    assert!(
        d.evidence
            .iter()
            .any(|e| e.starts_with("flame graph: ") && e.contains("on-CPU")),
        "{:?}",
        d.evidence
    );
}
