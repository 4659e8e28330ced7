//! Safe by default: what a web page (cross-origin requests, DNS rebinding) and a network peer
//! can no longer do, each with the message the client gets; savepoints only under the configured
//! directory, and every savepoint request taken or refused, none lost.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{env, eventually, get_json, raw, send_json, Reply, Served};
use sluice_datastream::StreamEnv;
use sluice_rest::{serve_with, JobRegistry, RestConfig, RestError};

/// A job that runs until cancelled, slowly enough for savepoints to queue.
fn slow_job() -> StreamEnv {
    let env = env(1);
    env.generate(u64::MAX, |i| (i % 5) as i64)
        .name("gen")
        .map(|x: i64| {
            std::thread::sleep(Duration::from_micros(50));
            x
        })
        .name("slow")
        .key_by(|k: &i64| *k)
        .reduce(|a, b| a + b)
        .name("sum")
        .discard();
    env
}

fn send(addr: SocketAddr, head: &str, body: &str) -> Reply {
    let req = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    raw(addr, req.as_bytes()).expect("an answer")
}

fn error_of(r: &Reply) -> String {
    r.json()["errors"][0].as_str().unwrap_or("").to_string()
}

fn state(s: &Served) -> String {
    get_json(s.addr, &format!("/jobs/{}", s.jid))["state"]
        .as_str()
        .unwrap()
        .to_string()
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-sec-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_web_page_cannot_stop_a_job_or_write_files() {
    let root = temp("browser-root");
    let s = Served::start_with(&slow_job(), |c| c.savepoint_dir = root.clone());
    let (addr, jid) = (s.addr, s.jid.clone());
    let target = temp("browser-target");
    let body = format!("{{\"targetDirectory\": \"{}\"}}", target.display());

    // What a form or fetch() with mode no-cors sends: text/plain needs no preflight.
    let r = send(
        addr,
        &format!(
            "POST /jobs/{jid}/stop HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\n\
             Content-Type: text/plain;charset=UTF-8\r\n"
        ),
        &body,
    );
    assert_eq!(r.status, 415, "{}", r.body);
    assert!(
        error_of(&r).contains("requires 'Content-Type: application/json' (got 'text/plain"),
        "{}",
        r.body
    );
    assert_eq!(r.header("Access-Control-Allow-Origin"), None);

    // JSON from another origin is refused too (a browser sends it only after a preflight,
    // which is never granted: OPTIONS is 405 without CORS headers).
    let r = send(
        addr,
        &format!(
            "POST /jobs/{jid}/stop HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\n\
             Content-Type: application/json\r\n"
        ),
        &body,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        error_of(&r).starts_with("Cross-origin request from 'http://evil.example' refused"),
        "{}",
        r.body
    );
    let r = send(
        addr,
        &format!(
            "OPTIONS /jobs/{jid}/stop HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\n\
             Access-Control-Request-Method: POST\r\n"
        ),
        "",
    );
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(r.header("Access-Control-Allow-Origin"), None);

    // Cancel (PATCH) likewise.
    let r = send(
        addr,
        &format!("PATCH /jobs/{jid} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\n"),
        "",
    );
    assert_eq!(r.status, 415, "{}", r.body);
    assert!(
        error_of(&r).starts_with("PATCH /jobs/:jobid requires"),
        "{}",
        r.body
    );

    assert_eq!(state(&s), "RUNNING");
    assert!(!target.exists(), "no directory may be created");

    // Read-only answers stay readable by other web tools, as Flink's are.
    let r = send(
        addr,
        &format!("GET /overview HTTP/1.1\r\nHost: {addr}\r\n"),
        "",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Access-Control-Allow-Origin"), Some("*"));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_foreign_host_is_refused() {
    let s = Served::start_with(&slow_job(), |c| {
        c.allowed_hosts = vec!["flink.internal".into(), "proxy.example:443".into()]
    });
    let addr = s.addr;
    let port = addr.port();
    let get_with_host = |host: &str| {
        send(
            addr,
            &format!("GET /overview HTTP/1.1\r\nHost: {host}\r\n"),
            "",
        )
    };
    // A DNS-rebinding page: its own name, resolved to 127.0.0.1.
    let r = get_with_host(&format!("rebind.evil.example:{port}"));
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        error_of(&r),
        format!(
            "Host 'rebind.evil.example:{port}' is not allowed: this server answers to {addr} (and \
             localhost on a loopback address); allow other names with --rest-allowed-host \
             (protection against DNS rebinding)."
        )
    );
    assert_eq!(get_with_host("proxy.example:80").status, 403);
    // An absolute target's authority counts as the host.
    let r = send(
        addr,
        &format!("GET http://rebind.evil.example:{port}/overview HTTP/1.1\r\nHost: {addr}\r\n"),
        "",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    for ok in [
        addr.to_string(),
        format!("localhost:{port}"),
        "flink.internal:8081".into(),
        "proxy.example:443".into(),
    ] {
        assert_eq!(get_with_host(&ok).status, 200, "{ok}");
    }
}

#[test]
fn savepoints_outside_the_directory_are_refused() {
    let root = temp("sp-root");
    let s = Served::start_with(&slow_job(), |c| c.savepoint_dir = root.clone());
    let (addr, jid) = (s.addr, s.jid.clone());
    let outside = temp("sp-outside");
    let root_s = root.display().to_string();
    for (dir, why) in [
        (
            outside.display().to_string(),
            "is outside the savepoint directory",
        ),
        (format!("{root_s}/../escape"), "contains '..'"),
        ("relative/dir".to_string(), "is not an absolute path"),
    ] {
        let body = format!("{{\"target-directory\": \"{dir}\"}}");
        let r = send_json(addr, "POST", &format!("/jobs/{jid}/savepoints"), &body);
        assert_eq!(r.status, 400, "{dir}: {}", r.body);
        assert_eq!(
            error_of(&r),
            format!(
                "Savepoint target '{dir}' {why}: savepoints may only be written under {root_s} \
                 (state.savepoints.dir; sluice run --savepoint-dir to change it)."
            )
        );
    }
    assert!(!outside.exists() && !root.join("..").join("escape").exists());
    assert!(!std::path::Path::new("relative").exists());
    // Without a directory the savepoint goes under the root.
    let r = send_json(addr, "POST", &format!("/jobs/{jid}/savepoints"), "{}");
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.json()["request-id"].as_str().unwrap().to_string();
    let done = eventually("savepoint completed", || {
        let st = get_json(addr, &format!("/jobs/{jid}/savepoints/{id}"));
        (st["status"]["id"] == "COMPLETED").then_some(st)
    });
    let loc = done["operation"]["location"].as_str().unwrap();
    assert!(
        loc.starts_with(&format!("file:{root_s}/savepoint-")),
        "{done}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn back_to_back_savepoint_requests_are_all_taken_or_refused() {
    let root = temp("sp-queue");
    let s = Served::start_with(&slow_job(), |c| c.savepoint_dir = root.clone());
    let (addr, jid) = (s.addr, s.jid.clone());
    let path = format!("/jobs/{jid}/savepoints");
    let replies: Vec<Reply> = (0..5)
        .map(|i| {
            let dir = root.join(format!("r{i}"));
            let body = format!("{{\"target-directory\": \"{}\"}}", dir.display());
            send_json(addr, "POST", &path, &body)
        })
        .collect();
    let mut locations = Vec::new();
    for (i, r) in replies.iter().enumerate() {
        match r.status {
            202 => {
                let id = r.json()["request-id"].as_str().unwrap().to_string();
                let done = eventually(&format!("savepoint {i} completed"), || {
                    let st = get_json(addr, &format!("{path}/{id}"));
                    (st["status"]["id"] == "COMPLETED").then_some(st)
                });
                let loc = done["operation"]["location"]
                    .as_str()
                    .unwrap_or_else(|| panic!("savepoint {i} failed: {done}"));
                let dir = root.join(format!("r{i}")).display().to_string();
                assert!(loc.starts_with(&format!("file:{dir}/")), "{i}: {loc}");
                locations.push(loc.to_string());
            }
            409 => assert!(error_of(r).contains("refused"), "{}", r.body),
            other => panic!("request {i}: {other} {}", r.body),
        }
    }
    assert_eq!(
        locations.len(),
        5,
        "5 requests fit the queue: {locations:?}"
    );

    // After a stop is queued nothing more can be: 409, with the reason.
    let stop = send_json(addr, "POST", &format!("/jobs/{jid}/stop"), "{}");
    assert_eq!(stop.status, 202, "{}", stop.body);
    let r = send_json(addr, "POST", &path, "{}");
    if r.status != 409 {
        // Only if the stop completed first, the job is no longer running.
        assert!(error_of(&r).contains("not running"), "{}", r.body);
    } else {
        assert_eq!(
            error_of(&r),
            format!(
                "Savepoint of job {jid} refused: a stop-with-savepoint is already requested: the \
                 job stops after it, so no further savepoint can be taken."
            )
        );
    }
    eventually("job stopped", || (state(&s) != "RUNNING").then_some(()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_token_guards_mutating_routes_and_network_binds() {
    let root = temp("token");
    let s = Served::start_with(&slow_job(), |c| {
        c.token = Some("s3cret".into());
        c.savepoint_dir = root.clone();
    });
    let (addr, jid) = (s.addr, s.jid.clone());
    let patch = |auth: &str| {
        send(
            addr,
            &format!(
                "PATCH /jobs/{jid} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{auth}"
            ),
            "",
        )
    };
    let r = patch("");
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(
        error_of(&r),
        "PATCH /jobs/:jobid requires the server's token: send 'Authorization: Bearer <token>' \
         (sluice: --token or SLUICE_REST_TOKEN)."
    );
    assert_eq!(
        r.header("WWW-Authenticate"),
        Some("Bearer realm=\"sluice\"")
    );
    let r = patch("Authorization: Bearer guess\r\n");
    assert_eq!(r.status, 401);
    assert_eq!(error_of(&r), "PATCH /jobs/:jobid: wrong bearer token.");
    // Reading needs no token.
    assert_eq!(get_json(addr, "/overview")["jobs-running"], 1);
    assert_eq!(state(&s), "RUNNING");
    let r = patch("Authorization: Bearer s3cret\r\n");
    assert_eq!(r.status, 202, "{}", r.body);
    eventually("job cancelled", || (state(&s) == "CANCELED").then_some(()));

    // All interfaces without a token: refused, with the reason.
    let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let registry = std::sync::Arc::new(JobRegistry::new());
    let err = serve_with(RestConfig::new(any), registry.clone()).unwrap_err();
    assert!(matches!(err, RestError::Insecure(_)), "{err}");
    assert!(
        err.to_string().starts_with(
            "refusing to serve the REST API on 0.0.0.0:0 without a token: on a non-loopback \
             address anyone who can reach it could cancel or stop jobs"
        ),
        "{err}"
    );
    let mut with_token = RestConfig::new(any);
    with_token.token = Some("t".into());
    serve_with(with_token, registry)
        .expect("a token allows it")
        .shutdown();
    let _ = std::fs::remove_dir_all(&root);
}
