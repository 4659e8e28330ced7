//! `GET`/`PUT /jobs/:jobid/autopilot`: the decision log an autopilot reports to, as the dashboard
//! reads it.

use crate::common;

use common::{env, get_json, request, send_json, Served};
use sluice_jobs::skew::{build, SkewConfig};

fn decision(id: u64, outcome: &str) -> String {
    serde_json::json!({
        "id": id,
        "time": 1_796_000_000_000u64,
        "outcome": outcome,
        "change-text": "parallelism of `map` 1 -> 2 behind REBALANCE",
        "before": {"bottleneck": "map", "parallelism": 1, "bottleneck-rate": 1000.0, "throughput": 990.0},
        "after": null,
    })
    .to_string()
}

#[test]
fn decisions_are_stored_upserted_by_id_and_validated() {
    let env = env(1);
    let _job = build(
        &env,
        &SkewConfig {
            records: 1 << 40,
            ..SkewConfig::default()
        },
    )
    .unwrap();
    let s = Served::start(&env);
    let path = format!("/jobs/{}/autopilot", s.jid);
    let empty = get_json(s.addr, &path);
    assert_eq!(empty["decisions"].as_array().unwrap().len(), 0, "{empty}");
    assert_eq!(empty["dropped"], 0);

    let r = send_json(s.addr, "PUT", &path, &decision(1, "applied"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["id"], 1);
    // The same id again replaces it (the outcome settled), a new id appends.
    assert_eq!(
        send_json(s.addr, "PUT", &path, &decision(1, "kept")).status,
        200
    );
    assert_eq!(
        send_json(s.addr, "PUT", &path, &decision(2, "skipped")).status,
        200
    );
    let log = get_json(s.addr, &path);
    let ds = log["decisions"].as_array().unwrap();
    assert_eq!(ds.len(), 2, "{log}");
    assert_eq!(ds[0]["outcome"], "kept");
    assert_eq!(ds[0]["before"]["bottleneck-rate"], 1000.0);
    assert_eq!(ds[1]["outcome"], "skipped");

    // Malformed decisions are refused with the reason, nothing stored.
    for (body, why) in [
        ("not json", "not JSON"),
        ("[1]", "decision object"),
        (r#"{"id":0,"outcome":"kept","change-text":"x"}"#, "`id`"),
        (
            r#"{"id":3,"outcome":"maybe","change-text":"x"}"#,
            "`outcome`",
        ),
        (r#"{"id":3,"outcome":"kept"}"#, "`change-text`"),
    ] {
        let r = send_json(s.addr, "PUT", &path, body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body.contains(why), "{body}: {}", r.body);
    }
    assert_eq!(
        get_json(s.addr, &path)["decisions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Mutating: a PUT without a JSON content type is refused (policy), an unknown job is 404.
    assert_eq!(request(s.addr, "PUT", &path).status, 415);
    let other = "/jobs/00000000000000000000000000000001/autopilot";
    assert_eq!(
        send_json(s.addr, "PUT", other, &decision(1, "kept")).status,
        404
    );
    assert_eq!(request(s.addr, "GET", other).status, 404);
}
