//! Flink's SQL Gateway REST API (`/v1`, `/v2`, `/v3`) on this server: sessions, statements,
//! operations and their paged results.
//!
//! The REST crate knows no SQL engine and no DataStream API, so whoever can run SQL (`sluice`'s
//! `sql_gateway`) implements [`SqlGateway`] and installs it in the [`crate::JobRegistry`]; the
//! handlers here only check paths, versions and bodies, call it, and write Flink's shapes
//! (`sluice-rest-api`). A server without a gateway answers the gateway's paths with 404 and
//! the reason.

use sluice_rest_api::{
    CloseSessionResponse, ExecuteStatementRequest, ExecuteStatementResponse, FetchResultsResponse,
    GatewayApiVersions, GatewayInfo, OpenSessionRequest, OpenSessionResponse, OperationStatus,
    SessionConfig,
};

use crate::api::{ApiError, ApiResult, Ctx};
use crate::http::Response;

/// The API versions served, oldest first (Flink's `SqlGatewayRestAPIVersion` names).
pub const VERSIONS: [&str; 3] = ["v1", "v2", "v3"];

/// Why a gateway call failed: the HTTP status (400 a refused statement or body, 404 an
/// unknown session or operation, 409 an operation in the wrong state, 500 a failed job) and
/// the messages of Flink's `errors` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayError {
    /// The HTTP status to answer with.
    pub status: u16,
    /// The `errors` of the answer.
    pub errors: Vec<String>,
}

impl GatewayError {
    /// An error with one message.
    pub fn new(status: u16, message: impl Into<String>) -> GatewayError {
        GatewayError {
            status,
            errors: vec![message.into()],
        }
    }
}

/// What serves SQL for the gateway's endpoints: sessions (a catalog and settings each) and
/// the operations their statements start. Handles are the implementation's (UUIDs).
pub trait SqlGateway: Send + Sync {
    /// Opens a session with `request.properties` set.
    fn open_session(&self, request: OpenSessionRequest) -> Result<String, GatewayError>;
    /// The session's settings.
    fn session_config(&self, session: &str) -> Result<SessionConfig, GatewayError>;
    /// Keeps the session alive.
    fn heartbeat(&self, session: &str) -> Result<(), GatewayError>;
    /// Closes the session and its operations (their jobs are cancelled).
    fn close_session(&self, session: &str) -> Result<(), GatewayError>;
    /// Runs one statement in the session; a refused statement is a 400 naming its place.
    fn execute(
        &self,
        session: &str,
        request: ExecuteStatementRequest,
    ) -> Result<String, GatewayError>;
    /// An operation's status (`RUNNING`, `FINISHED`, `CANCELED`, `CLOSED`, `ERROR`).
    fn status(&self, session: &str, operation: &str) -> Result<String, GatewayError>;
    /// Cancels an operation (its job too); its status after.
    fn cancel(&self, session: &str, operation: &str) -> Result<String, GatewayError>;
    /// Closes an operation and drops its results; its status after.
    fn close_operation(&self, session: &str, operation: &str) -> Result<String, GatewayError>;
    /// The result page `token` (0 first; the newest page may be asked for again). The answer
    /// has no `nextResultUri`: the handler adds it unless the page is `EOS`.
    fn fetch(
        &self,
        session: &str,
        operation: &str,
        token: u64,
    ) -> Result<FetchResultsResponse, GatewayError>;
}

fn answer<T: serde::Serialize>(value: &T) -> ApiResult {
    serde_json::to_string(value)
        .map(|body| Response::json(200, body))
        .map_err(|e| ApiError {
            status: 500,
            message: format!("Could not write the answer: {e}"),
        })
}

/// The errors of a gateway failure as Flink's `{"errors": [...]}`.
fn failed(e: GatewayError) -> Response {
    let body = sluice_rest_api::ErrorBody { errors: e.errors };
    Response::json(
        e.status,
        serde_json::to_string(&body).unwrap_or_else(|_| r#"{"errors":[]}"#.into()),
    )
}

/// The request's version, checked (404 for a version not served).
fn version(v: &str) -> Result<&str, ApiError> {
    VERSIONS.iter().find(|s| **s == v).copied().ok_or_else(|| {
        ApiError::not_found(format!(
            "Not found: /{}/… (the SQL gateway serves {})",
            crate::http::shorten(v),
            VERSIONS.join(", ")
        ))
    })
}

fn gateway(ctx: &Ctx<'_>) -> Result<std::sync::Arc<dyn SqlGateway>, ApiError> {
    ctx.registry.sql_gateway().ok_or_else(|| {
        ApiError::not_found(
            "This server runs no SQL gateway: start one with 'sluice sql-gateway' (Flink's SQL Gateway REST API).",
        )
    })
}

fn body_of<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "Request body is not valid JSON for this request: {e}"
        ))
    })
}

/// Which gateway call a route makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `GET /:version/info`.
    Info,
    /// `GET /:version/api_versions`.
    ApiVersions,
    /// `POST /:version/sessions`.
    OpenSession,
    /// `GET /:version/sessions/:session_handle`.
    SessionConfig,
    /// `DELETE /:version/sessions/:session_handle`.
    CloseSession,
    /// `POST …/heartbeat`.
    Heartbeat,
    /// `POST …/statements`.
    Execute,
    /// `GET …/operations/:operation_handle/status`.
    Status,
    /// `POST …/operations/:operation_handle/cancel`.
    Cancel,
    /// `DELETE …/operations/:operation_handle/close`.
    CloseOperation,
    /// `GET …/operations/:operation_handle/result/:token`.
    Fetch,
}

/// Answers one gateway request; `params` are the path's parameters in order (version first).
pub fn handle(ctx: &Ctx<'_>, call: Call, params: &[&str], body: &[u8]) -> Response {
    run(ctx, call, params, body).unwrap_or_else(|e| match e {
        Failure::Api(e) => e.into_response(),
        Failure::Gateway(e) => failed(e),
    })
}

enum Failure {
    Api(ApiError),
    Gateway(GatewayError),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Failure {
        Failure::Api(e)
    }
}

impl From<GatewayError> for Failure {
    fn from(e: GatewayError) -> Failure {
        Failure::Gateway(e)
    }
}

fn run(ctx: &Ctx<'_>, call: Call, params: &[&str], body: &[u8]) -> Result<Response, Failure> {
    let p = |i: usize| params.get(i).copied().unwrap_or("");
    let v = version(p(0))?;
    let g = || gateway(ctx);
    let (s, op) = (p(1), p(2));
    let status = |status: String| answer(&OperationStatus { status });
    Ok(match call {
        Call::ApiVersions => answer(&GatewayApiVersions {
            versions: VERSIONS.iter().map(|s| s.to_uppercase()).collect(),
        })?,
        Call::Info => answer(&GatewayInfo {
            product_name: "Sluice".into(),
            version: crate::api::FLINK_API_VERSION.into(),
        })?,
        Call::OpenSession => {
            let request: OpenSessionRequest = body_of(body)?;
            answer(&OpenSessionResponse {
                session_handle: g()?.open_session(request)?,
            })?
        }
        Call::SessionConfig => answer(&g()?.session_config(s)?)?,
        Call::CloseSession => {
            g()?.close_session(s)?;
            answer(&CloseSessionResponse {
                status: "CLOSED".into(),
            })?
        }
        Call::Heartbeat => {
            g()?.heartbeat(s)?;
            Response::json(200, "{}".into())
        }
        Call::Execute => {
            let request: ExecuteStatementRequest = body_of(body)?;
            answer(&ExecuteStatementResponse {
                operation_handle: g()?.execute(s, request)?,
            })?
        }
        Call::Status => status(g()?.status(s, op)?)?,
        Call::Cancel => status(g()?.cancel(s, op)?)?,
        Call::CloseOperation => status(g()?.close_operation(s, op)?)?,
        Call::Fetch => {
            let token: u64 = p(3).parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "Bad path parameter (token): '{}' is not a non-negative integer",
                    crate::http::shorten(p(3))
                ))
            })?;
            let format = row_format(ctx, v)?;
            let mut page = g()?.fetch(s, op, token)?;
            if page.result_type != "EOS" {
                let next = if page.result_type == "NOT_READY" {
                    token
                } else {
                    token + 1
                };
                let mut uri = format!("/{v}/sessions/{s}/operations/{op}/result/{next}");
                if let Some(f) = format {
                    uri.push_str(&format!("?rowFormat={f}"));
                }
                page.next_result_uri = Some(uri);
            }
            answer(&page)?
        }
    })
}

/// `?rowFormat=`: `JSON` (required from v2 on, as in Flink); `PLAIN_TEXT` is refused.
fn row_format(ctx: &Ctx<'_>, version: &str) -> Result<Option<&'static str>, ApiError> {
    let given = ctx
        .query
        .iter()
        .find(|(k, _)| k == "rowFormat")
        .map(|(_, v)| v.as_str());
    match given {
        Some(f) if f.eq_ignore_ascii_case("JSON") => Ok(Some("JSON")),
        Some(f) if f.eq_ignore_ascii_case("PLAIN_TEXT") => Err(ApiError::bad_request(
            "rowFormat PLAIN_TEXT is not supported by Sluice's gateway: ask for rowFormat=JSON",
        )),
        Some(f) => Err(ApiError::bad_request(format!(
            "Bad query parameter (rowFormat): '{}' (JSON or PLAIN_TEXT)",
            crate::http::shorten(f)
        ))),
        None if version == "v1" => Ok(None),
        None => Err(ApiError::bad_request(
            "Missing query parameter (rowFormat): JSON (required from API version v2 on)",
        )),
    }
}
