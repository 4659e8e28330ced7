//! `sluice top` against a fake REST server that answers with the REAL Flink 2.3 responses captured
//! in `tests/fixtures/flink/flink-rest/skew/` (a hot key makes subtask 1 of the keyed vertex the
//! bottleneck and backpressures the source).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const JID: &str = "3ae16f48a563821c4f57820703ba6b0f";
const SOURCE: &str = "Source: generator -> map";
const SINK: &str = "sum-per-key -> counting-sink: Writer";

fn fixtures() -> PathBuf {
    Path::new(ROOT).join("tests/fixtures/flink/flink-rest/skew")
}

#[derive(Default)]
struct State {
    /// Request targets, in order.
    requests: Mutex<Vec<String>>,
    /// Requests that did not say `Connection: close`.
    keep_alive: Mutex<Vec<String>>,
    /// Answer everything with Flink's 500.
    fail: AtomicBool,
}

struct FakeFlink {
    url: String,
    state: Arc<State>,
}

/// Serves the fixture files on 127.0.0.1 for Flink's paths, one thread per connection.
fn fake_flink() -> FakeFlink {
    let dir = fixtures();
    let job: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("job.json")).unwrap()).unwrap();
    assert_eq!(job["jid"], JID);
    let vertex_ids: Vec<String> = job["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let state = Arc::new(State::default());
    let st = state.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let (st, dir, vids) = (st.clone(), dir.clone(), vertex_ids.clone());
            std::thread::spawn(move || serve(conn, &st, &dir, &vids));
        }
    });
    FakeFlink { url, state }
}

fn serve(mut conn: TcpStream, st: &State, dir: &Path, vids: &[String]) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut close = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        close |= h.trim().eq_ignore_ascii_case("connection: close");
    }
    let target = request_line.split(' ').nth(1).unwrap_or("").to_string();
    st.requests.lock().unwrap().push(target.clone());
    if !close {
        st.keep_alive.lock().unwrap().push(target.clone());
    }
    let (status, body, chunked) = if st.fail.load(Ordering::SeqCst) {
        (
            "500 Internal Server Error",
            r#"{"errors":["Internal server error.","<Exception on server side:\njava.lang.RuntimeException\n\tat ...>"]}"#.to_string(),
            false,
        )
    } else {
        match route(&target, dir, vids) {
            // Some answers chunked, some with Content-Length: the client must take both.
            Some((file, chunked)) => ("200 OK", std::fs::read_to_string(file).unwrap(), chunked),
            None => (
                "404 Not Found",
                format!(
                    r#"{{"errors":["Not found: {}"]}}"#,
                    target.split('?').next().unwrap()
                ),
                false,
            ),
        }
    };
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Type: application/json; charset=UTF-8\r\n")
        .into_bytes();
    if chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
        for piece in body.as_bytes().chunks(97) {
            out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        out.extend_from_slice(body.as_bytes());
    }
    let _ = conn.write_all(&out);
}

/// The fixture file for a request target (and whether to send it chunked).
fn route(target: &str, dir: &Path, vids: &[String]) -> Option<(PathBuf, bool)> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let seg: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let vertex_file = |vid: &str, suffix: &str| -> Option<PathBuf> {
        let n = vids.iter().position(|v| v == vid)?;
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let name = p.file_name().unwrap().to_str().unwrap();
                name.starts_with(&format!("v{n}-")) && name.ends_with(suffix)
            })
    };
    let has_get = query.starts_with("get=") || query.contains("&get=");
    match seg.as_slice() {
        ["jobs", "overview"] => Some((dir.join("jobs-overview.json"), false)),
        ["jobs", j] if *j == JID => Some((dir.join("job.json"), true)),
        ["jobs", j, "vertices", v, "subtasks", "metrics"] if *j == JID && has_get => {
            Some((vertex_file(v, "-subtasks-metrics-aggregated.json")?, true))
        }
        ["jobs", j, "vertices", v, "subtasks", n, "metrics"] if *j == JID && has_get => {
            Some((vertex_file(v, &format!("-subtask{n}-metrics.json"))?, false))
        }
        _ => None,
    }
}

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env_remove("COLUMNS")
        .output()
        .expect("sluice runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The lines of a vertex's section: its name line up to the next blank line.
fn section<'a>(frame: &'a str, vertex: &str) -> Vec<&'a str> {
    frame
        .lines()
        .skip_while(|l| *l != vertex)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// The percentage after `label` and its bar on a subtask line: `busy ███░░ 72%` → 72.
fn pct(line: &str, label: &str) -> Option<u32> {
    let mut words = line.split_whitespace();
    words.by_ref().find(|w| *w == label)?;
    words.next()?; // the bar
    words.next()?.strip_suffix('%')?.parse().ok()
}

/// The word after `label` on a line: `in   12.3k/s` → `12.3k/s`.
fn word_after<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let mut words = line.split_whitespace();
    words.by_ref().find(|w| *w == label)?;
    words.next()
}

fn subtask_line<'a>(lines: &[&'a str], label: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line in {lines:#?}"))
}

/// Where humans can look at a frame after the tests.
fn save(name: &str, frame: &str) {
    // CARGO_BIN_EXE_sluice is <target>/<profile>/sluice.
    let target = Path::new(env!("CARGO_BIN_EXE_sluice"))
        .parent()
        .and_then(Path::parent)
        .unwrap();
    std::fs::write(target.join(name), frame).unwrap();
}

#[test]
fn once_renders_flinks_skew_scenario() {
    let flink = fake_flink();
    let o = sluice(&["top", "--url", &flink.url, "--once"]);
    let frame = stdout(&o);
    save("top-frame.txt", &frame);
    assert!(o.status.success(), "{}\n{frame}", stderr(&o));
    assert!(
        !frame.contains('\x1b'),
        "--once prints no escape codes:\n{frame}"
    );
    for line in frame.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line:?}");
    }
    let header = frame.lines().next().unwrap();
    for part in ["RestScenario-skew", JID, "RUNNING", "27s"] {
        assert!(header.contains(part), "{header}");
    }

    // The source is backpressured by the slow keyed vertex: ~800 ms/s on both subtasks → high.
    let src = section(&frame, SOURCE);
    assert!(!src.is_empty(), "{frame}");
    assert!(src[1].contains("parallelism 2"), "{}", src[1]);
    assert!(src[1].contains("backpressure high (max 80%)"), "{}", src[1]);
    for (label, busy, bp, out) in [("(1/2)", 20, 80, "113.9k/s"), ("(2/2)", 22, 79, "113.8k/s")] {
        let l = subtask_line(&src, label);
        assert_eq!(pct(l, "busy"), Some(busy), "{l}");
        assert_eq!(pct(l, "bp"), Some(bp), "{l}");
        assert_eq!(pct(l, "idle"), Some(0), "{l}");
        assert_eq!(word_after(l, "in"), Some("0/s"), "{l}");
        assert_eq!(word_after(l, "out"), Some(out), "{l}");
    }

    // The keyed vertex: subtask 2/2 has the hot key and is busy ~100% (999 ms/s); 1/2 mostly idle.
    let sink = section(&frame, SINK);
    assert!(!sink.is_empty(), "{frame}");
    assert!(sink[1].contains("backpressure ok (max 0%)"), "{}", sink[1]);
    assert!(sink[1].contains("busy max 100%"), "{}", sink[1]);
    let hot = subtask_line(&sink, "(2/2)");
    let cold = subtask_line(&sink, "(1/2)");
    assert_eq!(pct(hot, "busy"), Some(100), "{hot}");
    assert_eq!(pct(hot, "idle"), Some(0), "{hot}");
    assert!(hot.contains("busy ██████████ 100%"), "{hot}");
    assert_eq!(word_after(hot, "in"), Some("204.6k/s"), "{hot}");
    assert_eq!(word_after(cold, "in"), Some("22.8k/s"), "{cold}");
    assert_eq!(pct(cold, "busy"), Some(18), "{cold}");
    assert_eq!(pct(cold, "idle"), Some(82), "{cold}");
    assert_eq!(pct(cold, "bp"), Some(0), "{cold}");

    // The captured aggregate has only the three time metrics: skew and records/s are n/a.
    for stats in [src[1], sink[1]] {
        for part in ["data skew n/a", "in n/a", "out n/a"] {
            assert!(stats.contains(part), "{stats}");
        }
    }
    // Flink has no cpuTimeMsPerSecond, so there is no CPU column.
    assert!(!frame.contains(" cpu "), "{frame}");

    assert!(!frame.contains(" lag "), "{frame}");
    // Only Flink's paths, one request per connection.
    let reqs = flink.state.requests.lock().unwrap().clone();
    let time_and_rates = "busyTimeMsPerSecond,backPressuredTimeMsPerSecond,idleTimeMsPerSecond,\
                          numRecordsInPerSecond,numRecordsOutPerSecond";
    let mut expected = vec!["/jobs/overview".to_string(), format!("/jobs/{JID}")];
    for vid in [
        "cbc357ccb763df2852fee8c4fc7d55f2",
        "90bea66de1c231edf33913ecd54406c1",
    ] {
        expected.push(format!(
            "/jobs/{JID}/vertices/{vid}/subtasks/metrics?get={time_and_rates}&agg=min,max,avg,sum,skew"
        ));
        if vid.starts_with("cbc") {
            // The source vertex: its lag (FLIP-33 pendingRecords; absent here, so no lag shown).
            expected.push(format!(
                "/jobs/{JID}/vertices/{vid}/subtasks/metrics?get=Source__generator.pendingRecords&agg=sum"
            ));
        }
        // The vertex itself: each subtask's TaskManager (`endpoint`).
        expected.push(format!("/jobs/{JID}/vertices/{vid}"));
        for n in 0..2 {
            expected.push(format!(
                "/jobs/{JID}/vertices/{vid}/subtasks/{n}/metrics?get={time_and_rates},cpuTimeMsPerSecond"
            ));
        }
    }
    assert_eq!(reqs, expected);
    assert!(flink.state.keep_alive.lock().unwrap().is_empty());
}

#[test]
fn explicit_job_id_is_used() {
    let flink = fake_flink();
    let o = sluice(&["top", "--url", &flink.url, "--job", JID, "--once"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(SINK));
}

#[test]
fn unknown_job_exits_1() {
    let flink = fake_flink();
    let o = sluice(&[
        "top",
        "--url",
        &flink.url,
        "--job",
        "00000000000000000000000000000000",
        "--once",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("unknown job 00000000000000000000000000000000"),
        "{err}"
    );
    assert!(err.contains(&flink.url), "{err}");
    // It lists the jobs there are, so the user can pick one.
    assert!(err.contains(JID), "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn unreachable_url_exits_1_naming_it() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }; // closed again: nothing listens there now
    let url = format!("http://127.0.0.1:{port}");
    let o = sluice(&["top", "--url", &url, "--once"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&url), "{err}");
    assert!(err.contains("connection refused"), "{err}");
    assert!(err.contains("REST server"), "{err}");
}

#[test]
fn other_schemes_are_refused() {
    let o = sluice(&["top", "--url", "ftp://127.0.0.1:8081", "--once"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("only http:// and https://"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn server_errors_show_flinks_message() {
    let flink = fake_flink();
    flink.state.fail.store(true, Ordering::SeqCst);
    let o = sluice(&["top", "--url", &flink.url, "--once"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}/jobs/overview answered 500", flink.url)),
        "{err}"
    );
    assert!(err.contains("Internal server error."), "{err}");
}

/// Without `--once` it redraws in place (cursor home, clear) until killed, and a failed refresh
/// keeps the last frame with the error underneath.
#[test]
fn live_mode_redraws_in_place() {
    let flink = fake_flink();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["top", "--url", &flink.url, "--interval", "0.1"])
        .env_remove("COLUMNS")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut failing = false;
    let text = loop {
        if let Ok(bytes) = rx.recv_timeout(Duration::from_millis(50)) {
            seen.extend_from_slice(&bytes);
        }
        let text = String::from_utf8_lossy(&seen).into_owned();
        if !failing && text.matches("\x1b[H").count() >= 2 {
            flink.state.fail.store(true, Ordering::SeqCst);
            failing = true;
        }
        // A whole frame with the error (frames end with "clear to end of screen").
        if failing
            && text
                .rsplit_once("refresh failed, retrying")
                .is_some_and(|(_, rest)| rest.contains("\x1b[J"))
        {
            break text;
        }
        assert!(Instant::now() < deadline, "no live frames:\n{text}");
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(text.starts_with("\x1b[2J\x1b[H"), "{text:?}");
    assert!(
        text.contains("\x1b[K\n") && text.contains("\x1b[J"),
        "{text:?}"
    );
    assert!(text.contains("Ctrl-C to quit"), "{text}");
    let last = text.rsplit("\x1b[H").next().unwrap();
    assert!(last.contains(SINK), "the last frame is kept: {last}");
    assert!(last.contains("answered 500"), "{last}");
}
