//! Flink's SQL Gateway REST API against a real server over real HTTP: a client session as a tool
//! written for Flink's gateway drives it — open a session, SET, CREATE TABLE, an INSERT that
//! submits a job (listed under `/jobs`), a bounded query fetched page by page to EOS and checked
//! against the input file, refused statements with their line and column, and a closed session
//! whose handle is gone.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice::sql_gateway::{serve, PAGE_ROWS};
use sluice::RunOptions;

struct Client {
    agent: ureq::Agent,
    base: String,
}

impl Client {
    fn send(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let result = match (method, body) {
            ("GET", _) => self.agent.get(&url).call(),
            ("DELETE", _) => self
                .agent
                .delete(&url)
                .header("Content-Type", "application/json")
                .call(),
            (_, body) => self
                .agent
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body.unwrap_or(json!({})).to_string()),
        };
        let mut response = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path} answered no JSON ({e}): {text}"));
        (status, value)
    }

    fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.send(method, path, body);
        assert_eq!(status, 200, "{method} {path}: {v}");
        v
    }

    /// Submits `sql` in `session`; the operation handle.
    fn statement(&self, session: &str, sql: &str) -> String {
        let v = self.ok(
            "POST",
            &format!("/v2/sessions/{session}/statements"),
            Some(json!({ "statement": sql })),
        );
        v["operationHandle"].as_str().unwrap().to_string()
    }

    /// Every page of an operation, following `nextResultUri` until EOS.
    fn pages(&self, session: &str, op: &str) -> Vec<Value> {
        let mut uri = format!("/v2/sessions/{session}/operations/{op}/result/0?rowFormat=JSON");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut pages = Vec::new();
        loop {
            assert!(Instant::now() < deadline, "no EOS after 60 s: {pages:?}");
            let page = self.ok("GET", &uri, None);
            let kind = page["resultType"].as_str().unwrap().to_string();
            assert!(
                ["NOT_READY", "PAYLOAD", "EOS"].contains(&kind.as_str()),
                "{page}"
            );
            let next = page["nextResultUri"].as_str().map(str::to_string);
            pages.push(page);
            match (kind.as_str(), next) {
                ("EOS", None) => return pages,
                ("EOS", Some(n)) => panic!("EOS with a next page {n}"),
                (_, Some(n)) => uri = n,
                (_, None) => panic!("{kind} without a next page"),
            }
        }
    }
}

/// The rows of pages' `data`.
fn rows(pages: &[Value]) -> Vec<Value> {
    pages
        .iter()
        .filter_map(|p| p["results"]["data"].as_array())
        .flatten()
        .cloned()
        .collect()
}

#[test]
fn a_flink_gateway_client_session() {
    let dir = std::env::temp_dir().join(format!("sluice-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("orders.csv");
    let n = 2 * PAGE_ROWS + 500;
    let text: String = (0..n)
        .map(|i| format!("{i},item-{},{}.5\n", i % 7, (i * 37) % 100))
        .collect();
    std::fs::write(&input, &text).unwrap();
    // The expectation, from the file alone: ids and names of rows whose amount is over 50.
    let mut expected: Vec<(i64, String)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let amount: f64 = f[2].parse().unwrap();
            (amount > 50.0).then(|| (f[0].parse().unwrap(), f[1].to_string()))
        })
        .collect();
    expected.sort();
    assert!(expected.len() > PAGE_ROWS, "the query must span pages");

    let opts = RunOptions::try_from_args(["sluice", "--rest-port", "0"]).unwrap();
    let server = serve(opts.env.clone(), &opts.rest).unwrap();
    let client = Client {
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into(),
        base: format!("http://{}", server.local_addr()),
    };

    let info = client.ok("GET", "/v1/info", None);
    assert!(info["productName"].is_string() && info["version"].is_string());
    let versions = client.ok("GET", "/v1/api_versions", None);
    assert_eq!(versions["versions"], json!(["V1", "V2", "V3"]));

    // A session opened with properties; SET changes it.
    let opened = client.ok(
        "POST",
        "/v2/sessions",
        Some(json!({"sessionName": "it", "properties": {"parallelism.default": "2"}})),
    );
    let s = opened["sessionHandle"].as_str().unwrap().to_string();
    let config = client.ok("GET", &format!("/v2/sessions/{s}"), None);
    assert_eq!(config["properties"]["parallelism.default"], "2");
    let set = client.statement(&s, "SET 'parallelism.default' = '1'");
    let set_pages = client.pages(&s, &set);
    assert_eq!(set_pages[0]["resultKind"], "SUCCESS");
    assert_eq!(
        rows(&set_pages),
        vec![json!({"kind": "INSERT", "fields": ["OK"]})]
    );
    let config = client.ok("GET", &format!("/v2/sessions/{s}"), None);
    assert_eq!(config["properties"]["parallelism.default"], "1");
    client.ok("POST", &format!("/v2/sessions/{s}/heartbeat"), None);

    let create = format!(
        "CREATE TABLE orders (id BIGINT, name STRING, amount DOUBLE) WITH \
         ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv')",
        input.display()
    );
    client.pages(&s, &client.statement(&s, &create));
    client.pages(
        &s,
        &client.statement(
            &s,
            "CREATE TABLE sink (id BIGINT, name STRING) WITH ('connector' = 'blackhole')",
        ),
    );
    let tables = client.pages(&s, &client.statement(&s, "SHOW TABLES"));
    let names: Vec<Value> = rows(&tables)
        .iter()
        .map(|r| r["fields"][0].clone())
        .collect();
    assert_eq!(names, vec![json!("orders"), json!("sink")]);

    // INSERT: one row, the submitted job's id, which Flink's REST paths know.
    let insert = client.statement(&s, "INSERT INTO sink SELECT id, name FROM orders");
    let pages = client.pages(&s, &insert);
    let first = &pages[0];
    assert_eq!(first["resultType"], "PAYLOAD");
    assert_eq!(first["isQueryResult"], false);
    assert_eq!(first["resultKind"], "SUCCESS_WITH_CONTENT");
    assert_eq!(first["results"]["columns"][0]["name"], "job id");
    let jid = first["jobID"].as_str().unwrap().to_string();
    assert_eq!(rows(&pages)[0]["fields"], json!([jid]));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = client.ok("GET", &format!("/jobs/{jid}"), None);
        if job["state"] == "FINISHED" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the INSERT job did not finish: {job}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = client.ok(
        "GET",
        &format!("/v2/sessions/{s}/operations/{insert}/status"),
        None,
    );
    assert_eq!(status["status"], "FINISHED");

    // A bounded query, fetched page by page to EOS.
    let query = client.statement(&s, "SELECT id, name FROM orders WHERE amount > 50");
    let pages = client.pages(&s, &query);
    assert!(pages.len() >= 3, "{} pages", pages.len());
    let columns = &pages[0]["results"]["columns"];
    assert_eq!(columns[0]["name"], "id");
    assert_eq!(columns[0]["logicalType"]["type"], "BIGINT");
    assert_eq!(columns[1]["logicalType"]["type"], "VARCHAR");
    for p in &pages {
        assert_eq!(p["isQueryResult"], true);
        assert!(p["results"]["data"].as_array().unwrap().len() <= PAGE_ROWS);
    }
    let mut got: Vec<(i64, String)> = rows(&pages)
        .iter()
        .map(|r| {
            assert_eq!(r["kind"], "INSERT");
            let f = r["fields"].as_array().unwrap();
            (f[0].as_i64().unwrap(), f[1].as_str().unwrap().to_string())
        })
        .collect();
    got.sort();
    assert_eq!(got.len(), expected.len());
    assert_eq!(got, expected);
    // The newest page may be fetched again; an older one may not.
    let again = client.ok(
        "GET",
        &format!(
            "/v2/sessions/{s}/operations/{query}/result/{}?rowFormat=JSON",
            pages.len() - 1
        ),
        None,
    );
    assert_eq!(again["resultType"], "EOS");
    let (old, _) = client.send(
        "GET",
        &format!("/v2/sessions/{s}/operations/{query}/result/0?rowFormat=JSON"),
        None,
    );
    assert_eq!(old, 400);

    // Refused statements: 4xx with Flink's error body, naming line and column.
    let mut refusals = BTreeMap::new();
    for bad in [
        "SELECT nope FROM orders",
        "SELECT id FROM orders\nWHERE amount >",
        "INSERT INTO missing SELECT id FROM orders",
    ] {
        let (status, body) = client.send(
            "POST",
            &format!("/v2/sessions/{s}/statements"),
            Some(json!({ "statement": bad })),
        );
        assert!((400..500).contains(&status), "{bad}: {status} {body}");
        let message = body["errors"][0].as_str().unwrap().to_string();
        assert!(message.contains("line "), "{bad}: {message}");
        assert!(message.contains("column "), "{bad}: {message}");
        refusals.insert(bad, message);
    }
    assert!(
        refusals["SELECT nope FROM orders"].contains("line 1, column 8"),
        "{refusals:?}"
    );
    assert!(
        refusals["SELECT id FROM orders\nWHERE amount >"].contains("line 2"),
        "{refusals:?}"
    );

    // Closing the session: its handle and operations are gone.
    let closed = client.ok("DELETE", &format!("/v2/sessions/{s}"), None);
    assert_eq!(closed["status"], "CLOSED");
    let (status, body) = client.send("GET", &format!("/v2/sessions/{s}"), None);
    assert_eq!(status, 404, "{body}");
    assert!(body["errors"][0].is_string());
    let (status, _) = client.send(
        "GET",
        &format!("/v2/sessions/{s}/operations/{query}/status"),
        None,
    );
    assert_eq!(status, 404);

    // The document lists the gateway's paths.
    let doc = client.ok("GET", "/openapi.json", None);
    assert!(doc["paths"]["/{version}/sessions/{session_handle}/statements"].is_object());
    server.shutdown();
    std::fs::remove_dir_all(&dir).ok();
}
