//! `/openapi.json`: an OpenAPI 3.0 document generated from the route table, so every served
//! path is described (parameters, success body, and the 400/404/405 error bodies).

use sluice_plan::Json;

use crate::routes::{Endpoint, Operation, QuerySchema, Route, ROUTES};

fn ty(t: &str) -> Json {
    Json::obj().with("type", t)
}
fn int() -> Json {
    Json::obj().with("type", "integer").with("format", "int64")
}
fn num() -> Json {
    Json::obj().with("type", "number").with("format", "double")
}
fn string() -> Json {
    ty("string")
}
fn boolean() -> Json {
    ty("boolean")
}
fn obj(props: Vec<(&str, Json)>) -> Json {
    let mut p = Json::obj();
    for (k, v) in props {
        p = p.with(k, v);
    }
    Json::obj().with("type", "object").with("properties", p)
}
fn arr(items: Json) -> Json {
    Json::obj().with("type", "array").with("items", items)
}
fn map_of(v: Json) -> Json {
    Json::obj()
        .with("type", "object")
        .with("additionalProperties", v)
}
fn r(name: &str) -> Json {
    Json::obj().with("$ref", format!("#/components/schemas/{name}"))
}
fn any_of(a: Json, b: Json) -> Json {
    Json::obj().with("anyOf", vec![a, b])
}
/// An object with exactly these properties, all required.
fn exact(props: Vec<(&str, Json)>) -> Json {
    let names: Vec<Json> = props.iter().map(|(k, _)| Json::from(*k)).collect();
    obj(props)
        .with("required", names)
        .with("additionalProperties", false)
}

fn components() -> Json {
    let io = obj(vec![
        ("read-bytes", int()),
        ("read-bytes-complete", boolean()),
        ("write-bytes", int()),
        ("write-bytes-complete", boolean()),
        ("read-records", int()),
        ("read-records-complete", boolean()),
        ("write-records", int()),
        ("write-records-complete", boolean()),
        ("accumulated-backpressured-time", int()),
        ("accumulated-idle-time", int()),
        ("accumulated-busy-time", num()),
    ]);
    let stats = obj(["p25", "min", "avg", "median", "max", "sum", "p95", "p75"]
        .into_iter()
        .map(|k| (k, int()))
        .collect());
    let subtask = obj(vec![
        ("subtask", int()),
        ("status", string()),
        ("attempt", int()),
        ("endpoint", string()),
        ("start-time", int()),
        ("end-time", int()),
        ("duration", int()),
        ("metrics", r("IOMetrics")),
        ("taskmanager-id", string()),
        ("status-duration", map_of(int())),
        ("start_time", int()),
    ]);
    let plan = obj(vec![
        ("jid", string()),
        ("name", string()),
        ("type", string()),
        (
            "nodes",
            arr(obj(vec![
                ("id", string()),
                ("operator", string()),
                ("parallelism", int()),
                ("operator_strategy", string()),
                ("description", string()),
                ("optimizer_properties", ty("object")),
                (
                    "inputs",
                    arr(obj(vec![
                        ("id", string()),
                        ("num", int()),
                        ("exchange", string()),
                        ("ship_strategy", string()),
                    ])),
                ),
            ])),
        ),
    ]);
    Json::obj()
        .with("Error", obj(vec![("errors", arr(string()))]))
        .with("IOMetrics", io)
        .with("StatsSummary", stats)
        .with(
            "Aggregated",
            obj(vec![
                ("metrics", map_of(r("StatsSummary"))),
                ("status-duration", map_of(r("StatsSummary"))),
            ]),
        )
        .with("Subtask", subtask)
        .with("Plan", plan)
        .with("Diagnosis", diagnosis())
        .with(
            "FlameGraphNode",
            obj(vec![
                ("name", string()),
                ("value", int()),
                ("children", arr(r("FlameGraphNode"))),
            ]),
        )
        .with("MetricId", exact(vec![("id", string())]))
        .with(
            "MetricValue",
            exact(vec![("id", string()), ("value", string())]),
        )
        .with(
            "AggregatedMetric",
            obj(vec![
                ("id", string()),
                ("min", num()),
                ("max", num()),
                ("avg", num()),
                ("sum", num()),
                ("skew", num()),
            ])
            .with("required", vec![Json::from("id")])
            .with("additionalProperties", false),
        )
}

/// A schema that also admits `null`.
fn nullable(s: Json) -> Json {
    s.with("nullable", true)
}

/// `/jobs/:jobid/doctor`: `sluice_doctor::to_json` plus `plan-change` against the live graph.
fn diagnosis() -> Json {
    let before_after = |t: Json| nullable(obj(vec![("before", nullable(t.clone())), ("after", t)]));
    obj(vec![
        ("verdict", string()),
        (
            "bottleneck",
            nullable(obj(vec![
                ("vertex", int()),
                ("vertex-name", string()),
                ("operator", nullable(string())),
                ("subtasks", arr(int())),
            ])),
        ),
        ("cause", string()),
        (
            "hot-keys",
            arr(obj(vec![("key", string()), ("share", num())])),
        ),
        ("confidence", num()),
        ("evidence", arr(string())),
        (
            "fix",
            nullable(obj(vec![
                ("description", string()),
                ("change", string()),
                (
                    "plan-change",
                    nullable(obj(vec![
                        ("kind", string()),
                        ("operator", string()),
                        ("parallelism", int()),
                        ("ship", string()),
                        ("buckets", int()),
                        ("capacity", int()),
                    ])),
                ),
            ])),
        ),
        ("expected-effect", string()),
        ("undetermined", arr(string())),
        (
            "plan-change",
            nullable(obj(vec![
                (
                    "kind",
                    string().with(
                        "enum",
                        vec![
                            Json::from("parallelism"),
                            Json::from("two-phase"),
                            Json::from("async-io"),
                            Json::from("sink-option"),
                            Json::from("lookup-cache"),
                        ],
                    ),
                ),
                ("operator", string()),
                ("vertex", nullable(string())),
                ("vertex-name", nullable(string())),
                ("parallelism", before_after(int())),
                ("ship-strategy", before_after(string())),
                ("buckets", int()),
                ("adds", arr(string())),
                ("removes", arr(string())),
                ("capacity", int()),
                ("max-rows", int()),
            ])),
        ),
    ])
    .with(
        "required",
        [
            "verdict",
            "bottleneck",
            "cause",
            "hot-keys",
            "confidence",
            "evidence",
            "fix",
            "expected-effect",
            "undetermined",
            "plan-change",
        ]
        .into_iter()
        .map(Json::from)
        .collect::<Vec<_>>(),
    )
}

/// Flink 2.3's `JobRescaleDetails`, with Sluice's record under `sluice`.
fn rescale_details() -> Json {
    obj(vec![
        ("rescaleUuid", string()),
        ("resourceRequirementsUuid", string()),
        ("rescaleAttemptId", int()),
        ("vertices", map_of(ty("object"))),
        ("slots", ty("object")),
        ("schedulerStates", arr(ty("object"))),
        ("startTimestampInMillis", int()),
        ("endTimestampInMillis", int()),
        ("terminalState", string()),
        ("triggerCause", string()),
        ("terminatedReason", string()),
        ("sluice", rescale_record()),
    ])
}

/// `POST /jobs/:jid/doctor/apply`'s answer: one plan change as Sluice records it.
fn rescale_record() -> Json {
    obj(vec![
        ("rescaleUuid", string()),
        ("rescaleAttemptId", int()),
        ("trigger", string()),
        ("change", ty("object")),
        ("rollbackOf", ty("string").with("nullable", true)),
        ("state", string()),
        ("failure", ty("string").with("nullable", true)),
        ("startTimestampInMillis", int()),
        ("endTimestampInMillis", int()),
        ("pauseMillis", ty("number").with("nullable", true)),
        ("sourcesPausedMillis", ty("number").with("nullable", true)),
        ("savepoint", ty("string").with("nullable", true)),
        ("vertices", arr(ty("object"))),
        (
            "plan",
            obj(vec![
                ("before", arr(ty("object"))),
                ("after", arr(ty("object"))),
            ]),
        ),
        ("changes", arr(string())),
    ])
}

fn ok_schema(e: Endpoint, method: &str) -> (&'static str, Json) {
    const JSON: &str = "application/json";
    let s = match (e, method) {
        (Endpoint::Index, _) => return ("text/html", string()),
        (Endpoint::Prometheus, _) => return ("text/plain", string()),
        (Endpoint::OpenApi, _) => ty("object"),
        (Endpoint::Config, _) => obj(vec![
            ("refresh-interval", int()),
            ("timezone-name", string()),
            ("timezone-offset", int()),
            ("flink-version", string()),
            ("flink-revision", string()),
            ("features", map_of(boolean())),
        ]),
        (Endpoint::Overview, _) => obj(vec![
            ("taskmanagers", int()),
            ("slots-total", int()),
            ("slots-available", int()),
            ("jobs-running", int()),
            ("jobs-finished", int()),
            ("jobs-cancelled", int()),
            ("jobs-failed", int()),
            ("flink-version", string()),
            ("flink-commit", string()),
        ]),
        (Endpoint::Jobs, _) => obj(vec![(
            "jobs",
            arr(obj(vec![("id", string()), ("status", string())])),
        )]),
        (Endpoint::JobsOverview, _) => obj(vec![(
            "jobs",
            arr(obj(vec![
                ("jid", string()),
                ("name", string()),
                ("jobType", string()),
                ("schedulerType", string()),
                ("start-time", int()),
                ("end-time", int()),
                ("duration", int()),
                ("state", string()),
                ("last-modification", int()),
                ("tasks", map_of(int())),
                ("pending-operators", int()),
            ])),
        )]),
        (Endpoint::Job, "PATCH") => ty("object"),
        (Endpoint::Job, _) => obj(vec![
            ("jid", string()),
            ("application-id", string()),
            ("name", string()),
            ("isStoppable", boolean()),
            ("state", string()),
            ("job-type", string()),
            ("schedulerType", string()),
            ("start-time", int()),
            ("end-time", int()),
            ("duration", int()),
            ("maxParallelism", int()),
            ("now", int()),
            ("timestamps", map_of(int())),
            (
                "vertices",
                arr(obj(vec![
                    ("id", string()),
                    ("slotSharingGroupId", string()),
                    ("name", string()),
                    ("maxParallelism", int()),
                    ("parallelism", int()),
                    ("status", string()),
                    ("start-time", int()),
                    ("end-time", int()),
                    ("duration", int()),
                    ("tasks", map_of(int())),
                    ("metrics", r("IOMetrics")),
                    (
                        "connector-options",
                        arr(obj(vec![
                            ("operator", string()),
                            ("key", string()),
                            ("value", string()),
                        ])),
                    ),
                ])),
            ),
            ("status-counts", map_of(int())),
            ("plan", r("Plan")),
            ("pending-operators", int()),
        ]),
        (Endpoint::JobConfig, _) => obj(vec![
            ("jid", string()),
            ("name", string()),
            (
                "execution-config",
                obj(vec![
                    ("restart-strategy", string()),
                    ("job-parallelism", int()),
                    ("object-reuse-mode", boolean()),
                    ("user-config", map_of(string())),
                ]),
            ),
        ]),
        (Endpoint::JobPlan, _) => obj(vec![("plan", r("Plan"))]),
        (Endpoint::Vertex, _) => obj(vec![
            ("id", string()),
            ("name", string()),
            ("parallelism", int()),
            ("maxParallelism", int()),
            ("now", int()),
            ("subtasks", arr(r("Subtask"))),
            ("aggregated", r("Aggregated")),
        ]),
        (Endpoint::Backpressure, _) => obj(vec![
            ("status", string()),
            ("backpressureLevel", string()),
            ("end-timestamp", int()),
            (
                "subtasks",
                arr(obj(vec![
                    ("subtask", int()),
                    ("backpressureLevel", string()),
                    ("ratio", num()),
                    ("idleRatio", num()),
                    ("busyRatio", num()),
                    ("backpressure-level", string()),
                ])),
            ),
            ("backpressure-level", string()),
        ]),
        (Endpoint::SubtaskTimes, _) => obj(vec![
            ("id", string()),
            ("name", string()),
            ("now", int()),
            (
                "subtasks",
                arr(obj(vec![
                    ("subtask", int()),
                    ("endpoint", string()),
                    ("duration", int()),
                    ("timestamps", map_of(int())),
                ])),
            ),
        ]),
        (Endpoint::VertexTaskManagers, _) => obj(vec![
            ("id", string()),
            ("name", string()),
            ("now", int()),
            (
                "taskmanagers",
                arr(obj(vec![
                    ("endpoint", string()),
                    ("status", string()),
                    ("start-time", int()),
                    ("end-time", int()),
                    ("duration", int()),
                    ("metrics", r("IOMetrics")),
                    ("status-counts", map_of(int())),
                    ("taskmanager-id", string()),
                    ("aggregated", r("Aggregated")),
                ])),
            ),
        ]),
        (Endpoint::VertexMetrics | Endpoint::SubtaskMetrics, _) => {
            any_of(arr(r("MetricId")), arr(r("MetricValue")))
        }
        (Endpoint::SubtasksMetrics, _) => any_of(arr(r("MetricId")), arr(r("AggregatedMetric"))),
        (Endpoint::Subtask, _) => r("Subtask"),
        (Endpoint::Watermarks, _) => arr(r("MetricValue")),
        (Endpoint::Accumulators, _) => obj(vec![
            ("id", string()),
            ("user-accumulators", arr(ty("object"))),
        ]),
        (Endpoint::HotKeys, _) => obj(vec![
            ("id", string()),
            ("records", ty("integer")),
            (
                "hot-keys",
                arr(obj(vec![
                    ("key", string()),
                    ("count", ty("integer")),
                    ("error", ty("integer")),
                    ("share-of-vertex", num()),
                    ("subtask", ty("integer")),
                    ("share-of-subtask", num()),
                ])),
            ),
        ]),
        (Endpoint::FlameGraph, _) => {
            obj(vec![("endTimestamp", int()), ("data", r("FlameGraphNode"))])
                .with("required", vec![Json::from("endTimestamp")])
        }
        (Endpoint::ThreadDump, _) => obj(vec![(
            "threadInfos",
            arr(obj(vec![
                ("threadName", string()),
                ("stringifiedThreadInfo", string()),
            ])),
        )]),
        (Endpoint::Doctor, _) => any_of(
            exact(vec![(
                "status",
                string().with("enum", vec![Json::from("no-metrics-yet")]),
            )]),
            r("Diagnosis"),
        ),
        (Endpoint::Autopilot, "PUT") => obj(vec![("id", int())]),
        (Endpoint::Autopilot, _) => obj(vec![("decisions", arr(ty("object"))), ("dropped", int())]),
        (Endpoint::DoctorApply, _) => rescale_record(),
        (Endpoint::ResourceRequirements, "PUT") => ty("object"),
        (Endpoint::ResourceRequirements, _) => map_of(obj(vec![(
            "parallelism",
            obj(vec![("lowerBound", int()), ("upperBound", int())]),
        )])),
        (Endpoint::RescalesConfig, _) => obj(vec![
            ("rescaleHistoryMax", int()),
            (
                "schedulerExecutionMode",
                ty("string").with("nullable", true),
            ),
            ("submissionResourceWaitTimeoutInMillis", int()),
            ("submissionResourceStabilizationTimeoutInMillis", int()),
            ("slotIdleTimeoutInMillis", int()),
            ("executingCooldownTimeoutInMillis", int()),
            ("executingResourceStabilizationTimeoutInMillis", int()),
            ("maximumDelayForTriggeringRescaleInMillis", int()),
            ("rescaleOnFailedCheckpointCount", int()),
        ]),
        (Endpoint::RescalesHistory, _) => arr(rescale_details()),
        (Endpoint::RescaleDetails, _) => rescale_details(),
        (Endpoint::RescalesOverview, _) => obj(vec![
            (
                "rescalesCounts",
                obj(vec![
                    ("ignored", int()),
                    ("inProgress", int()),
                    ("completed", int()),
                    ("failed", int()),
                ]),
            ),
            ("latest", ty("object")),
        ]),
        (Endpoint::TaskManagers, _) => obj(vec![("taskmanagers", arr(ty("object")))]),
        (Endpoint::Checkpoints, _) => obj(vec![
            ("counts", ty("object")),
            ("summary", ty("object")),
            ("latest", ty("object")),
            ("history", arr(ty("object"))),
        ]),
        (Endpoint::CheckpointConfig, _) => obj(vec![
            ("mode", string()),
            ("interval", int()),
            ("timeout", int()),
            ("unaligned_checkpoints", ty("boolean")),
        ]),
        (Endpoint::CheckpointDetails | Endpoint::CheckpointSubtasks, _) => ty("object"),
        (Endpoint::Savepoints | Endpoint::Stop, _) => obj(vec![("request-id", string())]),
        (Endpoint::SavepointStatus, _) => obj(vec![("status", ty("object"))]),
    };
    (JSON, s)
}

fn error_response(description: &str) -> Json {
    Json::obj().with("description", description).with(
        "content",
        Json::obj().with("application/json", Json::obj().with("schema", r("Error"))),
    )
}

fn path_param(name: &str) -> Json {
    let (description, schema) = match name {
        "jobid" => (
            "Job id: 32 hexadecimal digits.",
            string().with("pattern", "^[0-9a-fA-F]{32}$"),
        ),
        "taskmanagerid" => (
            "Task manager id (GET /taskmanagers lists the one of this process).",
            string(),
        ),
        "vertexid" => (
            "Job vertex id: 32 hexadecimal digits.",
            string().with("pattern", "^[0-9a-fA-F]{32}$"),
        ),
        _ => (
            "Subtask index (0-based).",
            Json::obj().with("type", "integer").with("minimum", 0i64),
        ),
    };
    Json::obj()
        .with("name", name)
        .with("in", "path")
        .with("required", true)
        .with("description", description)
        .with("schema", schema)
}

fn query_schema(q: QuerySchema) -> Json {
    let strings = |vs: &[&str]| Json::Arr(vs.iter().map(|v| Json::from(*v)).collect());
    match q {
        QuerySchema::List => arr(string()),
        QuerySchema::EnumList(vs) => arr(string().with("enum", strings(vs))),
        QuerySchema::Enum(vs) => string().with("enum", strings(vs)),
        QuerySchema::Pattern(p) => string().with("pattern", p),
    }
}

/// `GET /jobs/:jobid/vertices/:vertexid` → `getJobsJobidVerticesVertexid`; `GET /` → `getIndex`.
fn operation_id(route: &Route, op: &Operation) -> String {
    let method = op.method.to_ascii_lowercase();
    let rest: String = route
        .path
        .split(['/', '.', '-'])
        .filter(|s| !s.is_empty())
        .map(|s| {
            let s = s.trim_start_matches(':');
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    if rest.is_empty() {
        format!("{method}Index")
    } else {
        format!("{method}{rest}")
    }
}

/// Links from a job's details to every vertex-level operation (its first vertex, subtask 0),
/// so clients and fuzzers can follow real ids.
fn vertex_links() -> Json {
    let mut links = Json::obj();
    for r in ROUTES
        .iter()
        .filter(|r| r.path.starts_with("/jobs/:jobid/vertices/:vertexid"))
    {
        for op in r.operations.iter().filter(|o| o.method == "GET") {
            let mut params = Json::obj()
                .with("jobid", "$response.body#/jid")
                .with("vertexid", "$response.body#/vertices/0/id");
            if r.path.contains(":subtaskindex") {
                params = params.with("subtaskindex", 0i64);
            }
            let id = operation_id(r, op);
            links = links.with(
                &id.clone(),
                Json::obj()
                    .with("operationId", id)
                    .with("parameters", params),
            );
        }
    }
    links
}

fn operation(route: &Route, op: &Operation, path_params: &[&str]) -> Json {
    let mut params: Vec<Json> = path_params.iter().map(|p| path_param(p)).collect();
    for q in op.query {
        params.push(
            Json::obj()
                .with("name", q.name)
                .with("in", "query")
                .with("required", false)
                .with("description", q.description)
                .with("schema", query_schema(q.schema))
                .with("style", "form")
                .with("explode", false),
        );
    }
    let (status, what) = if op.method == "PATCH" {
        ("202", "Cancellation accepted")
    } else if route.endpoint == Endpoint::DoctorApply
        || (route.endpoint == Endpoint::ResourceRequirements && op.method == "PUT")
    {
        ("200", "Applied: the job runs the new plan")
    } else if op.method == "POST" {
        ("202", "Request accepted")
    } else {
        ("200", "Success")
    };
    let (ctype, schema) = ok_schema(route.endpoint, op.method);
    let mut ok = Json::obj().with("description", what).with(
        "content",
        Json::obj().with(ctype, Json::obj().with("schema", schema)),
    );
    if route.endpoint == Endpoint::Job && op.method == "GET" {
        ok = ok.with("links", vertex_links());
    }
    let mut responses = Json::obj().with(status, ok);
    let has_params = !path_params.is_empty() || !op.query.is_empty();
    if has_params {
        responses = responses.with(
            "400",
            error_response("Malformed id, subtask index, aggregation or subtask range"),
        );
    }
    if !path_params.is_empty() || op.query.iter().any(|q| q.name == "get") {
        responses = responses.with(
            "404",
            error_response("Unknown job, vertex, subtask or metric"),
        );
    }
    if op.method == "PATCH" || op.method == "POST" || op.method == "PUT" {
        responses = responses.with(
            "409",
            error_response("The job has already ended, or cannot change its plan live"),
        );
    }
    if op.method == "POST" || op.method == "PUT" {
        responses = responses.with(
            "400",
            error_response("Malformed request body, a refused plan change, bad bounds, or a target outside the savepoint directory"),
        );
    }
    if op.mutating {
        responses = responses
            .with(
                "401",
                error_response("The server's bearer token is missing or wrong"),
            )
            .with("403", error_response("A foreign Host or Origin"))
            .with(
                "415",
                error_response("The Content-Type is not application/json"),
            );
    }
    responses = responses.with("405", error_response("Method not allowed on this path"));
    let id = operation_id(route, op);
    let mut operation = Json::obj()
        .with("operationId", id)
        .with("summary", op.summary)
        .with("parameters", params)
        .with("responses", responses);
    if op.method == "PATCH" {
        // No body is read, but a JSON content type is required (see `crate::policy`).
        operation = operation.with(
            "requestBody",
            Json::obj().with("required", false).with(
                "content",
                Json::obj().with("application/json", Json::obj().with("schema", ty("object"))),
            ),
        );
    }
    if op.method == "PUT" && route.endpoint == Endpoint::Autopilot {
        let decision = obj(vec![
            ("id", int().with("minimum", 1i64)),
            (
                "outcome",
                string().with(
                    "enum",
                    crate::autopilot_api::OUTCOMES
                        .iter()
                        .map(|o| Json::from(*o))
                        .collect::<Vec<_>>(),
                ),
            ),
            ("change-text", string()),
        ])
        .with(
            "required",
            vec![
                Json::from("id"),
                Json::from("outcome"),
                Json::from("change-text"),
            ],
        );
        operation = operation.with(
            "requestBody",
            Json::obj().with("required", true).with(
                "content",
                Json::obj().with("application/json", Json::obj().with("schema", decision)),
            ),
        );
    }
    if op.method == "PUT" && route.endpoint == Endpoint::ResourceRequirements {
        operation = operation.with(
            "requestBody",
            Json::obj().with("required", true).with(
                "content",
                Json::obj().with(
                    "application/json",
                    Json::obj().with("schema", ok_schema(route.endpoint, "GET").1),
                ),
            ),
        );
    }
    if op.method == "POST" {
        let props = if route.endpoint == Endpoint::DoctorApply {
            obj(vec![
                ("plan-change", ty("object")),
                ("rollback", ty("boolean")),
            ])
        } else if route.endpoint == Endpoint::Stop {
            obj(vec![
                ("targetDirectory", string()),
                ("drain", ty("boolean")),
            ])
        } else {
            obj(vec![
                ("target-directory", string()),
                ("cancel-job", ty("boolean")),
            ])
        };
        operation = operation.with(
            "requestBody",
            Json::obj()
                .with("required", route.endpoint != Endpoint::DoctorApply)
                .with(
                    "content",
                    Json::obj().with("application/json", Json::obj().with("schema", props)),
                ),
        );
    }
    operation
}

/// `/jobs/:jobid` → `/jobs/{jobid}`.
pub fn openapi_path(flink_path: &str) -> String {
    flink_path
        .split('/')
        .map(|s| match s.strip_prefix(':') {
            Some(p) => format!("{{{p}}}"),
            None => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

pub fn document() -> Json {
    let mut paths = Json::obj();
    for route in ROUTES {
        let params: Vec<&str> = route
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix(':'))
            .collect();
        let mut item = Json::obj();
        for op in route.operations {
            item = item.with(
                &op.method.to_ascii_lowercase(),
                operation(route, op, &params),
            );
        }
        paths = paths.with(&openapi_path(route.path), item);
    }
    Json::obj()
        .with("openapi", "3.0.3")
        .with(
            "info",
            Json::obj()
                .with("title", "Sluice REST API")
                .with(
                    "description",
                    "Flink 2.3-compatible monitoring API of a Sluice process: jobs, vertices, backpressure, metrics; plus Prometheus metrics. Errors are {\"errors\":[\"...\"]}.",
                )
                .with("version", env!("CARGO_PKG_VERSION")),
        )
        .with("paths", paths)
        .with("components", Json::obj().with("schemas", components()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_documented() {
        let doc = document();
        let Some(Json::Obj(paths)) = doc.get("paths") else {
            panic!("paths missing")
        };
        assert_eq!(paths.len(), ROUTES.len());
        assert!(paths
            .iter()
            .any(|(k, _)| k == "/jobs/{jobid}/vertices/{vertexid}"));
        let mut ids: Vec<String> = Vec::new();
        for (_, item) in paths {
            let Json::Obj(ops) = item else { panic!() };
            for (_, op) in ops {
                let Some(Json::Str(id)) = op.get("operationId") else {
                    panic!()
                };
                assert!(!ids.contains(id), "duplicate operationId {id}");
                ids.push(id.clone());
            }
        }
    }
}
