//! The route table (one source for dispatch and for the OpenAPI document) and the dispatcher.

use crate::api::{self, ApiError, ApiResult, Ctx};
use crate::http::{Response, HTML, PROMETHEUS};
use crate::registry::JobRegistry;
use crate::sql_gateway::Call;

/// What a route runs: one variant per served path (the table below maps paths to them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The handler of `/`.
    Index,
    /// The handler of `/config`.
    Config,
    /// The handler of `/overview`.
    Overview,
    /// The handler of `/jobs`.
    Jobs,
    /// The handler of `/jobs/overview`.
    JobsOverview,
    /// The handler of `/applications/overview`.
    ApplicationsOverview,
    /// The handler of `/applications/:applicationid`.
    Application,
    /// The handler of `/applications/:applicationid/exceptions`.
    ApplicationExceptions,
    /// The handler of `/applications/:applicationid/cancel`.
    ApplicationCancel,
    /// The handler of `/jobs/:jobid`.
    Job,
    /// The handler of `/jobs/:jobid/config`.
    JobConfig,
    /// The handler of `/jobs/:jobid/plan`.
    JobPlan,
    /// The handler of `/jobs/:jobid/vertices/:vertexid`.
    Vertex,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/backpressure`.
    Backpressure,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/subtasktimes`.
    SubtaskTimes,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/taskmanagers`.
    VertexTaskManagers,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/metrics`.
    VertexMetrics,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/subtasks/metrics`.
    SubtasksMetrics,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex`.
    Subtask,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/metrics`.
    SubtaskMetrics,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/watermarks`.
    Watermarks,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/accumulators`.
    Accumulators,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/hot-keys`.
    HotKeys,
    /// The handler of `/jobs/:jobid/vertices/:vertexid/flamegraph`.
    FlameGraph,
    /// The handler of `/taskmanagers/:taskmanagerid/thread-dump`.
    ThreadDump,
    /// The handler of `/jobs/:jobid/savepoints`.
    Savepoints,
    /// The handler of `/jobs/:jobid/savepoints/:triggerid`.
    SavepointStatus,
    /// The handler of `/jobs/:jobid/stop`.
    Stop,
    /// The handler of `/jobs/:jobid/checkpoints`.
    Checkpoints,
    /// The handler of `/jobs/:jobid/checkpoints/config`.
    CheckpointConfig,
    /// The handler of `/jobs/:jobid/checkpoints/details/:checkpointid`.
    CheckpointDetails,
    /// The handler of `/jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid`.
    CheckpointSubtasks,
    /// The handler of `/jobs/:jobid/doctor`.
    Doctor,
    /// The handler of `/jobs/:jobid/explain-analyze`.
    ExplainAnalyze,
    /// The handler of `/jobs/:jobid/autopilot`.
    Autopilot,
    /// The handler of `/jobs/:jobid/doctor/apply`.
    DoctorApply,
    /// The handler of `/jobs/:jobid/resource-requirements`.
    ResourceRequirements,
    /// The handler of `/jobs/:jobid/rescales/config`.
    RescalesConfig,
    /// The handler of `/jobs/:jobid/rescales/history`.
    RescalesHistory,
    /// The handler of `/jobs/:jobid/rescales/overview`.
    RescalesOverview,
    /// The handler of `/jobs/:jobid/rescales/details/:rescaleuuid`.
    RescaleDetails,
    /// The handler of `/taskmanagers`.
    TaskManagers,
    /// The handler of `/metrics`.
    Prometheus,
    /// The handler of `/openapi.json`.
    OpenApi,
    /// Flink's SQL Gateway REST API (`/:version/sessions/…`), one variant per call.
    SqlGateway(crate::sql_gateway::Call),
}

/// A query parameter an endpoint reads.
#[derive(Clone, Copy, Debug)]
pub struct QueryParam {
    /// The parameter's name in the query string.
    pub name: &'static str,
    /// What it means, for the OpenAPI document.
    pub description: &'static str,
    /// The shape of its value.
    pub schema: QuerySchema,
}

/// What a query parameter's value looks like (for the OpenAPI document).
#[derive(Clone, Copy, Debug)]
pub enum QuerySchema {
    /// Comma-separated strings.
    List,
    /// Comma-separated values out of a set.
    EnumList(&'static [&'static str]),
    /// One value out of a set.
    Enum(&'static [&'static str]),
    /// A string matching a regular expression.
    Pattern(&'static str),
}

/// `get`: the metric names a metrics endpoint answers.
pub const GET_PARAM: QueryParam = QueryParam {
    name: "get",
    description:
        "Comma-separated metric names; without it the endpoint lists the available metrics.",
    schema: QuerySchema::List,
};
/// `agg`: the aggregations of an aggregated metrics endpoint.
pub const AGG_PARAM: QueryParam = QueryParam {
    name: "agg",
    description: "Comma-separated aggregations: min, max, avg, sum, skew (default: all).",
    schema: QuerySchema::EnumList(&api::AGGREGATIONS),
};
/// `subtasks`: the subtasks an aggregated metrics endpoint covers.
pub const SUBTASKS_PARAM: QueryParam = QueryParam {
    name: "subtasks",
    description: "Comma-separated subtask indices and ranges, e.g. 0,2-4 (default: all). A range must not be reversed (400); a subtask the vertex does not have is 404.",
    schema: QuerySchema::Pattern(r"^\s*[0-9]+(\s*-\s*[0-9]+)?(\s*,\s*[0-9]+(\s*-\s*[0-9]+)?)*\s*$"),
};
/// `type`: which threads a flame graph shows.
pub const FLAME_TYPE_PARAM: QueryParam = QueryParam {
    name: "type",
    description: "Flame graph type: full (default), on_cpu (threads running) or off_cpu (threads waiting); any case.",
    schema: QuerySchema::Enum(&api::FLAME_GRAPH_TYPES),
};
/// `subtaskindex`: one subtask's flame graph.
pub const SUBTASK_INDEX_PARAM: QueryParam = QueryParam {
    name: "subtaskindex",
    description:
        "Only this subtask's samples (0-based; a subtask the vertex does not have is 404).",
    schema: QuerySchema::Pattern("^[0-9]+$"),
};
/// `mode`: how `PATCH /jobs/:jobid` ends a job.
pub const MODE_PARAM: QueryParam = QueryParam {
    name: "mode",
    description: "Termination mode; only 'cancel' (the default) is supported.",
    schema: QuerySchema::Enum(&["cancel"]),
};

/// `rowFormat`: how a SQL gateway result page writes its rows.
pub const ROW_FORMAT_PARAM: QueryParam = QueryParam {
    name: "rowFormat",
    description: "JSON (required from API version v2 on; PLAIN_TEXT is refused).",
    schema: QuerySchema::Enum(&["JSON"]),
};

/// One method on one path.
#[derive(Clone, Copy, Debug)]
pub struct Operation {
    /// The HTTP method (`GET`, `POST`, …).
    pub method: &'static str,
    /// One line for the OpenAPI document.
    pub summary: &'static str,
    /// The query parameters it reads.
    pub query: &'static [QueryParam],
    /// Changes a job (cancel, stop, savepoints): needs a JSON content type, no foreign origin
    /// and the token when one is configured; never answered with wildcard CORS
    /// (`crate::policy`).
    pub mutating: bool,
}

/// A served path in Flink's notation (`/jobs/:jobid`).
#[derive(Clone, Copy, Debug)]
pub struct Route {
    /// The path, `:name` for a parameter segment.
    pub path: &'static str,
    /// What serves it.
    pub endpoint: Endpoint,
    /// The methods it answers.
    pub operations: &'static [Operation],
}

const fn get(summary: &'static str) -> Operation {
    Operation {
        method: "GET",
        summary,
        query: &[],
        mutating: false,
    }
}

/// Matched by a `matchit` router: literal segments win over parameters whatever the order.
#[rustfmt::skip]
pub static ROUTES: &[Route] = &[
    Route { path: "/", endpoint: Endpoint::Index,
        operations: &[get("The web dashboard (one HTML page with its script and styles inline).")] },
    Route { path: "/config", endpoint: Endpoint::Config,
        operations: &[get("Web UI configuration: refresh interval, versions, features.")] },
    Route { path: "/overview", endpoint: Endpoint::Overview,
        operations: &[get("Cluster overview: task managers, slots, job counts by state.")] },
    Route { path: "/jobs", endpoint: Endpoint::Jobs,
        operations: &[get("Ids and states of all jobs.")] },
    Route { path: "/jobs/overview", endpoint: Endpoint::JobsOverview,
        operations: &[get("One summary per job: times, state, task counts.")] },
    Route { path: "/applications/overview", endpoint: Endpoint::ApplicationsOverview,
        operations: &[get("Flink 2.3's applications, one per job (SingleJobApplication(<job name>), the job's id): times, status, job counts by status.")] },
    Route { path: "/applications/:applicationid", endpoint: Endpoint::Application,
        operations: &[get("One application: status, times, per-state timestamps, and its job as /jobs/overview lists it.")] },
    Route { path: "/applications/:applicationid/exceptions", endpoint: Endpoint::ApplicationExceptions,
        operations: &[get("The application's failures (Flink 2.3's exception history): the failure that ended its job, if it failed.")] },
    Route { path: "/applications/:applicationid/cancel", endpoint: Endpoint::ApplicationCancel,
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "Cancels the application's job (202 with an empty object), as PATCH /jobs/:jobid does. Needs Content-Type: application/json (and the token when the server has one)." }] },
    Route { path: "/jobs/:jobid", endpoint: Endpoint::Job,
        operations: &[
            get("Job details: state, timestamps, vertices with IO metrics, plan."),
            Operation { method: "PATCH", summary: "Cancels the job (202 with an empty object). Needs Content-Type: application/json (and the token when the server has one).", query: &[MODE_PARAM], mutating: true },
        ] },
    Route { path: "/jobs/:jobid/config", endpoint: Endpoint::JobConfig,
        operations: &[get("The job's execution configuration.")] },
    Route { path: "/jobs/:jobid/plan", endpoint: Endpoint::JobPlan,
        operations: &[get("The job graph (chained vertices) as Flink's JSON plan.")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid", endpoint: Endpoint::Vertex,
        operations: &[get("Vertex details: every subtask with its IO metrics, plus aggregates.")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/backpressure", endpoint: Endpoint::Backpressure,
        operations: &[get("Backpressure level and busy/idle/backpressured ratios per subtask.")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/subtasktimes", endpoint: Endpoint::SubtaskTimes,
        operations: &[get("State transition timestamps per subtask.")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/taskmanagers", endpoint: Endpoint::VertexTaskManagers,
        operations: &[get("The vertex's subtasks grouped by task manager (one, in-process).")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/metrics", endpoint: Endpoint::VertexMetrics,
        operations: &[Operation { method: "GET", query: &[GET_PARAM], mutating: false,
            summary: "Metric ids '<subtask>.<name>' of the vertex, or their values (strings) with ?get=." }] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/subtasks/metrics", endpoint: Endpoint::SubtasksMetrics,
        operations: &[Operation { method: "GET", query: &[GET_PARAM, AGG_PARAM, SUBTASKS_PARAM], mutating: false,
            summary: "Subtask metric names, or with ?get= their min/max/avg/sum/skew over subtasks (numbers)." }] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex", endpoint: Endpoint::Subtask,
        operations: &[get("One subtask: state, times, IO metrics.")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/metrics", endpoint: Endpoint::SubtaskMetrics,
        operations: &[Operation { method: "GET", query: &[GET_PARAM], mutating: false,
            summary: "Metric names of one subtask, or their values (strings) with ?get=." }] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/watermarks", endpoint: Endpoint::Watermarks,
        operations: &[get("Input watermark per subtask (`<i>.currentInputWatermark`, ms as a string; -9223372036854775808 before the first).")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/accumulators", endpoint: Endpoint::Accumulators,
        operations: &[get("User accumulators of the vertex (none).")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/hot-keys", endpoint: Endpoint::HotKeys,
        operations: &[get("Sluice extension: the vertex's hottest keys (a Space-Saving sketch per keyed subtask, sampled), with their share of the subtask's and the vertex's records. Empty for non-keyed vertices.")] },
    Route { path: "/jobs/:jobid/vertices/:vertexid/flamegraph", endpoint: Endpoint::FlameGraph,
        operations: &[Operation { method: "GET", query: &[FLAME_TYPE_PARAM, SUBTASK_INDEX_PARAM], mutating: false,
            summary: "The vertex's flame graph (Flink's shape): the first request starts sampling (100 looks per subtask thread, 50 ms apart) and answers {\"endTimestamp\":-3}; later ones the latest graph {endTimestamp, data: {name, value, children}} from 'root', resampled when older than 60 s; -1 when no subtask runs. On-CPU frames are symbolised native stacks under '[task] <vertex>'; off-CPU frames say what the thread waits in ([wait] input/credit, [blocked] in operator code, [syscall], [kernel])." }] },
    Route { path: "/jobs/:jobid/savepoints", endpoint: Endpoint::Savepoints,
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "Triggers a savepoint: body {\"target-directory\": DIR, \"cancel-job\": bool}; 202 {\"request-id\"}. The savepoint goes to a new savepoint-<job>-<id> directory inside DIR, which must lie under the server's savepoint directory (state.savepoints.dir; the default when DIR is omitted). Requests are queued; 409 when the queue is full or the job is being stopped." }] },
    Route { path: "/jobs/:jobid/savepoints/:triggerid", endpoint: Endpoint::SavepointStatus,
        operations: &[get("Status of a savepoint request: IN_PROGRESS, or COMPLETED with operation.location or operation.failure-cause.")] },
    Route { path: "/jobs/:jobid/stop", endpoint: Endpoint::Stop,
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "Stop-with-savepoint: body {\"targetDirectory\": DIR, \"drain\": false}; 202 {\"request-id\"}, then the job stops once the savepoint completed. DIR as for savepoints." }] },
    Route { path: "/jobs/:jobid/checkpoints", endpoint: Endpoint::Checkpoints,
        operations: &[get("Checkpoint statistics: counts, summary, latest completed/savepoint/failed/restored, history (404 when the job does not checkpoint).")] },
    Route { path: "/jobs/:jobid/checkpoints/config", endpoint: Endpoint::CheckpointConfig,
        operations: &[get("The job's checkpoint configuration (Flink's keys).")] },
    Route { path: "/jobs/:jobid/checkpoints/details/:checkpointid", endpoint: Endpoint::CheckpointDetails,
        operations: &[get("One checkpoint's statistics with a summary per vertex.")] },
    Route { path: "/jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid", endpoint: Endpoint::CheckpointSubtasks,
        operations: &[get("One checkpoint at one vertex: per-subtask sync duration, alignment, start delay, size.")] },
    Route { path: "/jobs/:jobid/doctor", endpoint: Endpoint::Doctor,
        operations: &[get("Sluice extension: the doctor run on the job's latest metrics: the bottleneck vertex and operator, the cause (e.g. key-skew, under-provisioned), evidence, the proposed fix and its plan change against the live graph. {\"status\":\"no-metrics-yet\"} before the first metrics sample.")] },
    Route { path: "/jobs/:jobid/explain-analyze", endpoint: Endpoint::ExplainAnalyze,
        operations: &[get("Sluice extension: EXPLAIN ANALYZE of a SQL job: its optimized physical plan (as EXPLAIN prints it), each node with the live figures of the operator it became (busy/backpressured/idle ms per second, records in and out, state size in the latest checkpoint, hot keys) and the plan's text with the figures appended per line. 404 for a job not planned from SQL.")] },
    Route { path: "/jobs/:jobid/autopilot", endpoint: Endpoint::Autopilot,
        operations: &[
            get("Sluice extension: the autopilot's decision log, oldest first ({\"decisions\": [...], \"dropped\": n}): per decision its time, the doctor's cause and verdict, the plan change, evidence, the figures before and after (bottleneck rate, job throughput, parallelism), the relative gains and the outcome (applied, kept, rolled-back, skipped, failed, advised) with its reason. Empty until an autopilot reports."),
            Operation { method: "PUT", query: &[], mutating: true,
                summary: "Sluice extension: the autopilot reports one decision (upsert by its positive integer id; outcome one of applied, kept, rolled-back, skipped, failed, advised; change-text a string); 200 {\"id\"}. The last 200 decisions are kept." },
        ] },
    Route { path: "/jobs/:jobid/doctor/apply", endpoint: Endpoint::DoctorApply,
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "Sluice extension: changes the running job's plan — aligned savepoint, stop, rewrite, restore with state migration, sources resume at their positions. Body {} applies the doctor's current proposal (409 when it has none), {\"plan-change\": {\"kind\": \"parallelism|two-phase|async-io|sink-option|lookup-cache\", \"operator\", ...}} that change (the doctor's plan-change object is accepted as it is), {\"rollback\": true} undoes the newest change. 200 once the job runs the new plan: {rescaleUuid, trigger, change, state, pauseMillis, vertices[].parallelism {before, after}, plan {before, after: nodes[] of id, name, parallelism, inputs[] {id, ship_strategy}, options}, changes[]}. 400 for a change the fixer refuses (with the reason), 409 when the job does not run or cannot change its plan live." }] },
    Route { path: "/jobs/:jobid/resource-requirements", endpoint: Endpoint::ResourceRequirements,
        operations: &[
            get("Per vertex id {\"parallelism\": {\"lowerBound\": 1, \"upperBound\": <current parallelism>}} (Flink's adaptive scheduler shape)."),
            Operation { method: "PUT", query: &[], mutating: true,
                summary: "Rescales in place: body as the GET answer; each vertex whose upperBound differs from its parallelism runs at upperBound (a keyed vertex behind HASH, others behind REBALANCE), through an aligned savepoint, stop and restore with state migration. 200 {} once the job runs at the new parallelism; 400 for an unknown vertex or bad bounds (1 <= lowerBound <= upperBound <= max parallelism), 409 when the job cannot rescale live." },
        ] },
    Route { path: "/jobs/:jobid/rescales/config", endpoint: Endpoint::RescalesConfig,
        operations: &[get("Rescale settings (Flink 2.3's keys): history size, cooldown and stabilization timeouts (0: Sluice rescales when asked).")] },
    Route { path: "/jobs/:jobid/rescales/history", endpoint: Endpoint::RescalesHistory,
        operations: &[get("Every plan change of the job, newest first, as Flink 2.3's JobRescaleDetails (vertices left empty as in Flink's history) with Sluice's record under 'sluice' (change, pauseMillis, plan diff).")] },
    Route { path: "/jobs/:jobid/rescales/overview", endpoint: Endpoint::RescalesOverview,
        operations: &[get("Rescale counts by terminal state and the latest completed/failed/ignored rescale (Flink 2.3's shape).")] },
    Route { path: "/jobs/:jobid/rescales/details/:rescaleuuid", endpoint: Endpoint::RescaleDetails,
        operations: &[get("One plan change with its vertices' pre/post-rescale parallelism (Flink 2.3's JobRescaleDetails) and Sluice's record under 'sluice'.")] },
    Route { path: "/taskmanagers", endpoint: Endpoint::TaskManagers,
        operations: &[get("The task managers: one, this process.")] },
    Route { path: "/taskmanagers/:taskmanagerid/thread-dump", endpoint: Endpoint::ThreadDump,
        operations: &[get("Every thread of the process (Flink's threadInfos[] of threadName and stringifiedThreadInfo): task threads named '<vertex> (<i>/<p>)#<attempt>' with a Java-like state (RUNNABLE, WAITING, TIMED_WAITING) and their frames, leaf first: a running thread's native stack (sampled for 200 ms), a waiting thread's wait, system call and kernel function.")] },
    Route { path: "/metrics", endpoint: Endpoint::Prometheus,
        operations: &[get("All task and operator metrics in Prometheus text format 0.0.4.")] },
    Route { path: "/openapi.json", endpoint: Endpoint::OpenApi,
        operations: &[get("This API as an OpenAPI 3.0 document.")] },
    // Flink's SQL Gateway REST API (flink-sql-gateway's `SqlGatewayRestEndpoint`), served when
    // a gateway is installed (`sluice sql-gateway`).
    Route { path: "/:version/info", endpoint: Endpoint::SqlGateway(Call::Info),
        operations: &[get("SQL gateway: the product name and version ({productName, version}).")] },
    Route { path: "/:version/api_versions", endpoint: Endpoint::SqlGateway(Call::ApiVersions),
        operations: &[get("SQL gateway: the API versions served ({versions: [V1, V2, V3]}).")] },
    Route { path: "/:version/sessions", endpoint: Endpoint::SqlGateway(Call::OpenSession),
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "SQL gateway: opens a session. Body {sessionName?, properties?: {key: value}} (properties as SET would set them); 200 {sessionHandle}." }] },
    Route { path: "/:version/sessions/:session_handle", endpoint: Endpoint::SqlGateway(Call::SessionConfig),
        operations: &[
            get("SQL gateway: the session's settings ({properties})."),
            Operation { method: "DELETE", query: &[], mutating: true,
                summary: "SQL gateway: closes the session, its operations and their jobs; 200 {status: CLOSED}. The handle is unknown (404) after." },
        ] },
    Route { path: "/:version/sessions/:session_handle/heartbeat", endpoint: Endpoint::SqlGateway(Call::Heartbeat),
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "SQL gateway: keeps the session alive; 200 {}." }] },
    Route { path: "/:version/sessions/:session_handle/statements", endpoint: Endpoint::SqlGateway(Call::Execute),
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "SQL gateway: runs one statement. Body {statement, executionTimeout?, executionConfig?}; 200 {operationHandle}. SET/RESET/CREATE/DROP/SHOW/DESCRIBE/EXPLAIN act on the session; INSERT submits a job (its result is the job id); a query runs a job whose rows are fetched page by page. A statement refused by the planner is 400 with its line and column." }] },
    Route { path: "/:version/sessions/:session_handle/operations/:operation_handle/status", endpoint: Endpoint::SqlGateway(Call::Status),
        operations: &[get("SQL gateway: the operation's status ({status}: RUNNING, FINISHED, CANCELED, CLOSED, ERROR).")] },
    Route { path: "/:version/sessions/:session_handle/operations/:operation_handle/cancel", endpoint: Endpoint::SqlGateway(Call::Cancel),
        operations: &[Operation { method: "POST", query: &[], mutating: true,
            summary: "SQL gateway: cancels the operation and its job; 200 {status}." }] },
    Route { path: "/:version/sessions/:session_handle/operations/:operation_handle/close", endpoint: Endpoint::SqlGateway(Call::CloseOperation),
        operations: &[Operation { method: "DELETE", query: &[], mutating: true,
            summary: "SQL gateway: closes the operation (cancels its job, drops its rows); 200 {status: CLOSED}." }] },
    Route { path: "/:version/sessions/:session_handle/operations/:operation_handle/result/:token", endpoint: Endpoint::SqlGateway(Call::Fetch),
        operations: &[Operation { method: "GET", query: &[ROW_FORMAT_PARAM], mutating: false,
            summary: "SQL gateway: result page :token (0 first; the newest page may be fetched again): {resultType: NOT_READY|PAYLOAD|EOS, isQueryResult, jobID, resultKind: SUCCESS|SUCCESS_WITH_CONTENT, results: {columns, rowFormat, data: [{kind, fields}]}, nextResultUri}. rowFormat=JSON is required from v2 on." }] },
];

/// The route table as a `matchit` router (built once): Flink's `:name` parameters become
/// `{name}`, and a literal segment wins over a parameter (`/jobs/overview` over `/jobs/:jobid`),
/// whatever the table's order. The value is the route's index in [`ROUTES`].
fn router() -> Option<&'static matchit::Router<usize>> {
    static ROUTER: std::sync::OnceLock<Result<matchit::Router<usize>, matchit::InsertError>> =
        std::sync::OnceLock::new();
    ROUTER
        .get_or_init(|| {
            let mut router = matchit::Router::new();
            for (i, r) in ROUTES.iter().enumerate() {
                router.insert(matchit_path(r.path), i)?;
            }
            Ok(router)
        })
        .as_ref()
        .ok()
}

/// A route's path in `matchit`'s notation (`/jobs/{jobid}`).
fn matchit_path(flink: &str) -> String {
    flink
        .split('/')
        .map(|s| match s.strip_prefix(':') {
            Some(name) => format!("{{{name}}}"),
            None => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Finds the route of a path (its percent-decoded, non-empty segments) and its parameters (in
/// path order).
pub fn match_route(segments: &[String]) -> Option<(&'static Route, Vec<&str>)> {
    // A decoded segment may hold a `/` (`%2F`): escaped again, it stays one segment, and as no
    // literal segment of the table has a `%`, it can only fill a parameter. Parameters are
    // then taken from the decoded segments, by position.
    let mut path = String::new();
    for s in segments {
        path.push('/');
        path.push_str(&s.replace('%', "%25").replace('/', "%2F"));
    }
    if path.is_empty() {
        path.push('/');
    }
    let found = router()?.at(&path).ok()?;
    let route = ROUTES.get(*found.value)?;
    let params = route
        .path
        .split('/')
        .filter(|s| !s.is_empty())
        .zip(segments)
        .filter(|(p, _)| p.starts_with(':'))
        .map(|(_, s)| s.as_str())
        .collect();
    Some((route, params))
}

/// The route and operation a request targets (`HEAD` finds `GET`); `None` when the path is
/// unknown or the method not allowed (dispatch answers those).
pub fn operation_of(
    segments: &[String],
    method: &str,
) -> Option<(&'static Route, &'static Operation)> {
    let (route, _) = match_route(segments)?;
    let effective = if method == "HEAD" { "GET" } else { method };
    let op = route.operations.iter().find(|o| o.method == effective)?;
    Some((route, op))
}

/// The dashboard (`dashboard/`): one page, its stylesheet and script inlined, built once.
fn index_html() -> &'static str {
    static PAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        include_str!("dashboard/index.html")
            .replacen("/*STYLE*/", include_str!("dashboard/style.css"), 1)
            .replacen("/*APP_JS*/", include_str!("dashboard/app.js"), 1)
    })
}

/// Answers one request. `method` is upper case as sent; `HEAD` is answered like `GET` (the
/// caller drops the body). Savepoint targets must lie under `savepoint_dir`. The caller
/// applies [`crate::policy`] first.
pub fn dispatch(
    registry: &JobRegistry,
    savepoint_dir: &std::path::Path,
    method: &str,
    segments: &[String],
    query: &[(String, String)],
    body: &[u8],
) -> Response {
    let Some((route, params)) = match_route(segments) else {
        let path = format!("/{}", segments.join("/"));
        return Response::error(404, &format!("Not found: {}", crate::http::shorten(&path)));
    };
    let effective = if method == "HEAD" { "GET" } else { method };
    if !route.operations.iter().any(|o| o.method == effective) {
        let mut allowed: Vec<&str> = route.operations.iter().map(|o| o.method).collect();
        if allowed.contains(&"GET") {
            allowed.push("HEAD");
        }
        let mut r = Response::error(
            405,
            &format!(
                "Method {} not allowed on {} (allowed: {}).",
                crate::http::shorten(method),
                route.path,
                allowed.join(", ")
            ),
        );
        r.headers.push(("Allow", allowed.join(", ")));
        return r;
    }
    let ctx = Ctx {
        registry,
        query,
        now: api::now_ms(),
    };
    let p = |i: usize| params.get(i).copied().unwrap_or("");
    let result: ApiResult = match (route.endpoint, effective) {
        (Endpoint::Index, _) => Ok(Response {
            status: 200,
            content_type: HTML,
            body: index_html().as_bytes().to_vec(),
            headers: Vec::new(),
        }),
        (Endpoint::Config, _) => api::config(),
        (Endpoint::Overview, _) => api::overview(&ctx),
        (Endpoint::Jobs, _) => api::jobs(&ctx),
        (Endpoint::JobsOverview, _) => api::jobs_overview(&ctx),
        (Endpoint::ApplicationsOverview, _) => api::applications_overview(&ctx),
        (Endpoint::Application, _) => api::application_details(&ctx, p(0)),
        (Endpoint::ApplicationExceptions, _) => api::application_exceptions(&ctx, p(0)),
        (Endpoint::ApplicationCancel, _) => api::cancel_application(&ctx, p(0)),
        (Endpoint::Job, "PATCH") => api::cancel_job(&ctx, p(0)),
        (Endpoint::Job, _) => api::job(&ctx, p(0)),
        (Endpoint::JobConfig, _) => api::job_config(&ctx, p(0)),
        (Endpoint::JobPlan, _) => api::job_plan(&ctx, p(0)),
        (Endpoint::Vertex, _) => api::vertex(&ctx, p(0), p(1)),
        (Endpoint::Backpressure, _) => api::backpressure(&ctx, p(0), p(1)),
        (Endpoint::SubtaskTimes, _) => api::subtask_times_ep(&ctx, p(0), p(1)),
        (Endpoint::VertexTaskManagers, _) => api::vertex_taskmanagers(&ctx, p(0), p(1)),
        (Endpoint::VertexMetrics, _) => api::vertex_metrics(&ctx, p(0), p(1)),
        (Endpoint::SubtasksMetrics, _) => api::subtasks_metrics(&ctx, p(0), p(1)),
        (Endpoint::Subtask, _) => api::subtask(&ctx, p(0), p(1), p(2)),
        (Endpoint::SubtaskMetrics, _) => api::subtask_metrics(&ctx, p(0), p(1), p(2)),
        (Endpoint::Watermarks, _) => api::watermarks(&ctx, p(0), p(1)),
        (Endpoint::Accumulators, _) => api::accumulators(&ctx, p(0), p(1)),
        (Endpoint::HotKeys, _) => api::hot_keys(&ctx, p(0), p(1)),
        (Endpoint::FlameGraph, _) => api::flame_graph(&ctx, p(0), p(1)),
        (Endpoint::ThreadDump, _) => api::thread_dump(&ctx, p(0)),
        (Endpoint::Savepoints, _) => {
            crate::checkpoints_api::trigger_savepoint(&ctx, p(0), body, false, savepoint_dir)
        }
        (Endpoint::Stop, _) => {
            crate::checkpoints_api::trigger_savepoint(&ctx, p(0), body, true, savepoint_dir)
        }
        (Endpoint::SavepointStatus, _) => {
            crate::checkpoints_api::savepoint_status(&ctx, p(0), p(1))
        }
        (Endpoint::Checkpoints, _) => crate::checkpoints_api::checkpoints(&ctx, p(0)),
        (Endpoint::CheckpointConfig, _) => crate::checkpoints_api::checkpoint_config(&ctx, p(0)),
        (Endpoint::CheckpointDetails, _) => {
            crate::checkpoints_api::checkpoint_details(&ctx, p(0), p(1))
        }
        (Endpoint::CheckpointSubtasks, _) => {
            crate::checkpoints_api::checkpoint_subtasks(&ctx, p(0), p(1), p(2))
        }
        (Endpoint::Doctor, _) => crate::doctor_api::doctor(&ctx, p(0)),
        (Endpoint::ExplainAnalyze, _) => crate::explain_api::explain_analyze(&ctx, p(0)),
        (Endpoint::Autopilot, "PUT") => crate::autopilot_api::put_decision(&ctx, p(0), body),
        (Endpoint::Autopilot, _) => crate::autopilot_api::autopilot_log(&ctx, p(0)),
        (Endpoint::DoctorApply, _) => crate::rescale_api::doctor_apply(&ctx, p(0), body),
        (Endpoint::ResourceRequirements, "PUT") => {
            crate::rescale_api::put_resource_requirements(&ctx, p(0), body)
        }
        (Endpoint::ResourceRequirements, _) => {
            crate::rescale_api::resource_requirements(&ctx, p(0))
        }
        (Endpoint::RescalesConfig, _) => crate::rescale_api::rescales_config(&ctx, p(0)),
        (Endpoint::RescalesHistory, _) => crate::rescale_api::rescales_history(&ctx, p(0)),
        (Endpoint::RescalesOverview, _) => crate::rescale_api::rescales_overview(&ctx, p(0)),
        (Endpoint::RescaleDetails, _) => crate::rescale_api::rescale_details(&ctx, p(0), p(1)),
        (Endpoint::TaskManagers, _) => api::taskmanagers(&ctx),
        (Endpoint::Prometheus, _) => Ok(Response {
            status: 200,
            content_type: PROMETHEUS,
            body: crate::prometheus::render(registry).into_bytes(),
            headers: Vec::new(),
        }),
        (Endpoint::OpenApi, _) => Ok(Response::json(200, crate::openapi::document().to_compact())),
        (Endpoint::SqlGateway(Call::SessionConfig), "DELETE") => Ok(crate::sql_gateway::handle(
            &ctx,
            Call::CloseSession,
            &params,
            body,
        )),
        (Endpoint::SqlGateway(call), _) => {
            Ok(crate::sql_gateway::handle(&ctx, call, &params, body))
        }
    };
    result.unwrap_or_else(ApiError::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(p: &str) -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    #[test]
    fn literal_routes_win_over_parameters() {
        let s = segs("/jobs/overview");
        assert_eq!(match_route(&s).unwrap().0.endpoint, Endpoint::JobsOverview);
        let s = segs("/jobs/abc");
        let (r, p) = match_route(&s).unwrap();
        assert_eq!((r.endpoint, p), (Endpoint::Job, vec!["abc"]));
        let s = segs("/jobs/a/vertices/b/subtasks/metrics");
        assert_eq!(
            match_route(&s).unwrap().0.endpoint,
            Endpoint::SubtasksMetrics
        );
        let s = segs("/jobs/a/vertices/b/subtasks/3");
        assert_eq!(match_route(&s).unwrap().0.endpoint, Endpoint::Subtask);
        assert!(match_route(&segs("/jobs/a/nope")).is_none());
        assert_eq!(match_route(&segs("/")).unwrap().0.endpoint, Endpoint::Index);
        // A `/` or `%` inside a decoded segment only ever fills a parameter.
        let s = vec!["jobs".to_string(), "a/b".to_string()];
        let (r, p) = match_route(&s).unwrap();
        assert_eq!((r.endpoint, p), (Endpoint::Job, vec!["a/b"]));
        let s = vec!["jobs".to_string(), "%2F".to_string(), "plan".to_string()];
        assert_eq!(match_route(&s).unwrap().1, vec!["%2F"]);
        let s = vec!["jobs".to_string(), "a/overview".to_string()];
        assert_eq!(match_route(&s).unwrap().0.endpoint, Endpoint::Job);
        let s = segs("/applications/overview");
        assert_eq!(
            match_route(&s).unwrap().0.endpoint,
            Endpoint::ApplicationsOverview
        );
        let s = segs("/applications/abc/cancel");
        let (r, p) = match_route(&s).unwrap();
        assert_eq!((r.endpoint, p), (Endpoint::ApplicationCancel, vec!["abc"]));
    }

    #[test]
    fn application_ids_are_checked_like_job_ids() {
        let reg = JobRegistry::new();
        let sp = crate::savepoint_dir::default_savepoint_dir();
        let r = dispatch(&reg, &sp, "GET", &segs("/applications/overview"), &[], &[]);
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, &br#"{"applications":[]}"#[..])
        );
        let unknown = "0123456789abcdef0123456789abcdef";
        for (method, path) in [
            ("GET", format!("/applications/{unknown}")),
            ("GET", format!("/applications/{unknown}/exceptions")),
            ("POST", format!("/applications/{unknown}/cancel")),
        ] {
            let r = dispatch(&reg, &sp, method, &segs(&path), &[], b"{}");
            assert_eq!(r.status, 404, "{method} {path}");
            let body = String::from_utf8_lossy(&r.body);
            assert_eq!(
                body,
                format!(r#"{{"errors":["Application {unknown} not found"]}}"#)
            );
            let bad = path.replace(unknown, "xyz");
            let r = dispatch(&reg, &sp, method, &segs(&bad), &[], b"{}");
            assert_eq!(r.status, 400, "{method} {bad}");
            let body = String::from_utf8_lossy(&r.body);
            assert!(body.contains("path parameter (applicationid)"), "{body}");
        }
        let r = dispatch(&reg, &sp, "GET", &segs("/applications/x/cancel"), &[], &[]);
        assert_eq!(r.status, 405);
        assert_eq!(r.headers, vec![("Allow", "POST".to_string())]);
    }

    #[test]
    fn every_route_is_in_the_router() {
        assert!(router().is_some());
        for (i, r) in ROUTES.iter().enumerate() {
            let concrete: Vec<String> = r
                .path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| s.strip_prefix(':').map_or(s, |_| "x").to_string())
                .collect();
            let (found, params) = match_route(&concrete).unwrap();
            assert_eq!(found.path, ROUTES[i].path);
            assert_eq!(params.len(), r.path.matches(':').count());
        }
    }

    #[test]
    fn errors_are_4xx_with_flinks_body() {
        let reg = JobRegistry::new();
        let sp = crate::savepoint_dir::default_savepoint_dir();
        let r = dispatch(&reg, &sp, "GET", &segs("/nope"), &[], &[]);
        assert_eq!(r.status, 404);
        assert_eq!(r.body, br#"{"errors":["Not found: /nope"]}"#);
        let r = dispatch(&reg, &sp, "GET", &segs("/jobs/xyz"), &[], &[]);
        assert_eq!(r.status, 400);
        let r = dispatch(
            &reg,
            &sp,
            "GET",
            &segs("/jobs/0123456789abcdef0123456789abcdef"),
            &[],
            &[],
        );
        assert_eq!(r.status, 404);
        let r = dispatch(&reg, &sp, "DELETE", &segs("/jobs/overview"), &[], &[]);
        assert_eq!(r.status, 405);
        assert_eq!(r.headers, vec![("Allow", "GET, HEAD".to_string())]);
        let r = dispatch(&reg, &sp, "POST", &segs("/jobs/x"), &[], &[]);
        assert_eq!(r.status, 405);
        assert_eq!(
            dispatch(&reg, &sp, "HEAD", &segs("/overview"), &[], &[]).status,
            200
        );
    }
}
