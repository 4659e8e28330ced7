//! Flink 2.3's application endpoints on a running skew job: the answers have the shapes of
//! Flink's captures in `tests/fixtures/flink/flink-rest/applications/` (same keys, order and
//! value types), the job is its own `SingleJobApplication`, and `POST …/cancel` cancels it
//! under the same policy as `PATCH /jobs/:jobid` (JSON content type, the token).

use crate::common;
use crate::flink_structure::assert_same_shape;

use common::{env, eventually, get, get_json, raw, send_json, Reply, Served};
use serde_json::Value;
use sluice_jobs::skew::{build, SkewConfig};

fn fixture(name: &str) -> Value {
    let p = format!(
        "{}/../../tests/fixtures/flink/flink-rest/applications/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn skew_job() -> sluice_datastream::StreamEnv {
    let env = env(2);
    build(
        &env,
        &SkewConfig {
            records: 1 << 40,
            ..SkewConfig::default()
        },
    )
    .unwrap();
    env
}

fn error_of(r: &Reply) -> String {
    r.json()["errors"][0].as_str().unwrap_or("").to_string()
}

fn status(s: &Served) -> String {
    let a = get_json(s.addr, &format!("/applications/{}", s.jid));
    a["status"].as_str().unwrap().to_string()
}

#[test]
fn applications_have_flinks_shapes_and_follow_their_job() {
    let s = Served::start(&skew_job());
    s.wait_for_metrics();
    let jid = s.jid.clone();
    eventually("all subtasks running", || {
        let j = get_json(s.addr, &format!("/jobs/{jid}"));
        (j["status-counts"]["RUNNING"] == 4).then_some(())
    });

    let overview = get_json(s.addr, "/applications/overview");
    assert_same_shape(
        "applications-overview.json",
        &fixture("applications-overview.json"),
        &overview,
    );
    let app = &overview["applications"][0];
    assert_eq!(app["id"], jid.as_str());
    let name = get_json(s.addr, &format!("/jobs/{jid}"))["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(app["name"], format!("SingleJobApplication({name})"));
    assert_eq!(app["status"], "RUNNING");
    assert_eq!(app["jobs"], serde_json::json!({"RUNNING": 1}));

    let details = get_json(s.addr, &format!("/applications/{jid}"));
    assert_same_shape("application.json", &fixture("application.json"), &details);
    assert_eq!(details["status"], "RUNNING");
    assert_eq!(details["timestamps"]["RUNNING"], details["start-time"]);
    // The application's job is the entry /jobs/overview lists (times move on: compare ids).
    let listed = get_json(s.addr, "/jobs/overview");
    assert_eq!(details["jobs"][0]["jid"], listed["jobs"][0]["jid"]);
    assert_eq!(details["jobs"][0]["tasks"], listed["jobs"][0]["tasks"]);
    assert_same_shape(
        "jobs-overview.json",
        &fixture("jobs-overview.json"),
        &serde_json::json!({ "jobs": details["jobs"] }),
    );

    let exceptions = get_json(s.addr, &format!("/applications/{jid}/exceptions"));
    assert_eq!(exceptions, fixture("application-exceptions.json"));

    // Unknown and malformed ids.
    let unknown = "0123456789abcdef0123456789abcdef";
    for path in [
        format!("/applications/{unknown}"),
        format!("/applications/{unknown}/exceptions"),
    ] {
        let r = get(s.addr, &path);
        assert_eq!(r.status, 404, "{path}: {}", r.body);
        assert_eq!(error_of(&r), format!("Application {unknown} not found"));
    }
    let r = get(s.addr, "/applications/not-an-id");
    assert_eq!(r.status, 400);
    assert!(error_of(&r).contains("(applicationid)"), "{}", r.body);

    // Cancel: a request that is not JSON is refused (a web page cannot send one), a JSON one
    // cancels the job, and the application follows it.
    let path = format!("/applications/{jid}/cancel");
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n",
        s.addr
    );
    let r = raw(s.addr, req.as_bytes()).unwrap();
    assert_eq!(r.status, 415, "{}", r.body);
    assert_eq!(status(&s), "RUNNING");
    let r = send_json(
        s.addr,
        "POST",
        &format!("/applications/{unknown}/cancel"),
        "{}",
    );
    assert_eq!(r.status, 404, "{}", r.body);
    let r = send_json(s.addr, "POST", &path, "{}");
    assert_eq!((r.status, r.body.as_str()), (202, "{}"));
    eventually("application canceled", || {
        (status(&s) == "CANCELED").then_some(())
    });
    let overview = get_json(s.addr, "/applications/overview");
    assert_eq!(overview["applications"][0]["status"], "CANCELED");
    assert_eq!(
        overview["applications"][0]["jobs"],
        serde_json::json!({"CANCELED": 1})
    );
    let details = get_json(s.addr, &format!("/applications/{jid}"));
    assert_eq!(details["timestamps"]["CANCELED"], details["end-time"]);
    assert!(details["end-time"].as_i64().unwrap() >= details["start-time"].as_i64().unwrap());
    assert_eq!(
        get_json(s.addr, &format!("/applications/{jid}/exceptions")),
        fixture("application-exceptions.json"),
        "a cancelled job has no failure"
    );
    let r = send_json(s.addr, "POST", &path, "{}");
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(error_of(&r).starts_with("Application cancellation failed"));
}

#[test]
fn cancelling_an_application_needs_the_token() {
    let s = Served::start_with(&skew_job(), |c| c.token = Some("s3cret".into()));
    let path = format!("/applications/{}/cancel", s.jid);
    let post = |auth: &str| {
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n{auth}Content-Length: 2\r\n\r\n{{}}",
            s.addr
        );
        raw(s.addr, req.as_bytes()).unwrap()
    };
    let r = post("");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(error_of(&r)
        .starts_with("POST /applications/:applicationid/cancel requires the server's token"));
    let r = post("Authorization: Bearer guess\r\n");
    assert_eq!(r.status, 401);
    assert_eq!(status(&s), "RUNNING");
    let r = post("Authorization: Bearer s3cret\r\n");
    assert_eq!(r.status, 202, "{}", r.body);
    eventually("application canceled", || {
        (status(&s) == "CANCELED").then_some(())
    });
}

/// A failed job's application is FAILED and its exception history holds the failure.
#[test]
fn a_failed_job_is_a_failed_application_with_its_failure() {
    let env = env(1);
    env.generate(10, |i| i as i64)
        .name("gen")
        .map(|x: i64| {
            if x == 3 {
                panic!("boom at three");
            }
            x
        })
        .name("explodes")
        .discard();
    let mut s = Served::start(&env);
    s.wait_for_end();
    let jid = s.jid.clone();
    eventually("application failed", || {
        (status(&s) == "FAILED").then_some(())
    });
    let overview = get_json(s.addr, "/applications/overview");
    assert_eq!(
        overview["applications"][0]["jobs"],
        serde_json::json!({"FAILED": 1})
    );
    let e = get_json(s.addr, &format!("/applications/{jid}/exceptions"));
    let entries = e["exceptionHistory"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{e}");
    let entry = &entries[0];
    assert!(
        entry["stacktrace"]
            .as_str()
            .unwrap()
            .contains("boom at three"),
        "{entry}"
    );
    assert_eq!(entry["jobId"], jid.as_str());
    let details = get_json(s.addr, &format!("/applications/{jid}"));
    assert_eq!(entry["timestamp"], details["end-time"]);
    assert_eq!(details["timestamps"]["FAILED"], details["end-time"]);
}
