//! Flink's SQL Gateway REST API (`/v1`…`/v3`): sessions, statements, operations and their
//! results, with the field names of flink-sql-gateway's message classes (`OpenSessionRequestBody`,
//! `ExecuteStatementRequestBody`, `FetchResultsResponseBody`, `ResultInfo`, `ColumnInfo`,
//! `LogicalTypeJsonSerializer`'s type objects), so that a tool written for Flink's gateway reads
//! Sluice's answers unchanged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `GET /v1/info` (Flink's `GetInfoResponseBody`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct GatewayInfo {
    /// `Apache Flink` on Flink; `Sluice` here.
    #[serde(rename = "productName", default)]
    pub product_name: String,
    /// The version of the SQL dialect served (Flink's version Sluice follows).
    #[serde(default)]
    pub version: String,
}

/// `GET /v1/api_versions` (Flink's `GetApiVersionResponseBody`): `V1`, `V2`, `V3`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct GatewayApiVersions {
    /// The served versions, oldest first.
    #[serde(default)]
    pub versions: Vec<String>,
}

/// `POST /v1/sessions` (Flink's `OpenSessionRequestBody`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct OpenSessionRequest {
    /// A name for the session (shown nowhere; kept for Flink's clients).
    #[serde(
        rename = "sessionName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub session_name: Option<String>,
    /// Settings of the session, as `SET 'key' = 'value'` statements would make them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, String>>,
}

/// The answer of `POST /v1/sessions` (Flink's `OpenSessionResponseBody`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct OpenSessionResponse {
    /// The session's handle (a UUID), the `:session_handle` of the other paths.
    #[serde(rename = "sessionHandle", default)]
    pub session_handle: String,
}

/// `GET /v1/sessions/:session_handle` (Flink's `GetSessionConfigResponseBody`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct SessionConfig {
    /// The session's settings (its `SET`s and the properties it was opened with).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

/// `DELETE /v1/sessions/:session_handle` (Flink's `CloseSessionResponseBody`): `CLOSED`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct CloseSessionResponse {
    /// `CLOSED`.
    #[serde(default)]
    pub status: String,
}

/// `POST /v1/sessions/:session_handle/statements` (Flink's `ExecuteStatementRequestBody`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ExecuteStatementRequest {
    /// One SQL statement.
    #[serde(default)]
    pub statement: String,
    /// Flink's execution timeout in ms (Sluice plans synchronously: accepted, unused).
    #[serde(
        rename = "executionTimeout",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub execution_timeout: Option<i64>,
    /// Settings for this statement only, over the session's.
    #[serde(
        rename = "executionConfig",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub execution_config: Option<BTreeMap<String, String>>,
}

/// The answer of `POST …/statements` (Flink's `ExecuteStatementResponseBody`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ExecuteStatementResponse {
    /// The operation's handle (a UUID).
    #[serde(rename = "operationHandle", default)]
    pub operation_handle: String,
}

/// An operation's status (Flink's `OperationStatusResponseBody`): `RUNNING`, `FINISHED`,
/// `CANCELED`, `CLOSED`, `ERROR`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct OperationStatus {
    /// The status.
    #[serde(default)]
    pub status: String,
}

/// A column's type as Flink's gateway writes a `LogicalType`: `{"type": "INTEGER",
/// "nullable": true}`, with `length`, `precision`, `scale`, `elementType`, `keyType`,
/// `valueType` or `fields` as the type has them.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct GatewayLogicalType {
    /// The type root (`VARCHAR`, `BIGINT`, `TIMESTAMP_WITHOUT_TIME_ZONE`, …).
    #[serde(rename = "type", default)]
    pub type_root: String,
    /// Whether NULL is a value of it (absent for the `NULL` type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nullable: Option<bool>,
    /// `CHAR`, `VARCHAR`, `BINARY`, `VARBINARY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u32>,
    /// `DECIMAL`, `TIME`, `TIMESTAMP…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<u32>,
    /// `DECIMAL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<u32>,
    /// `MAP`'s keys.
    #[serde(rename = "keyType", default, skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion)]
    pub key_type: Option<Box<GatewayLogicalType>>,
    /// `MAP`'s values.
    #[serde(rename = "valueType", default, skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion)]
    pub value_type: Option<Box<GatewayLogicalType>>,
    /// `ARRAY`'s elements.
    #[serde(
        rename = "elementType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(no_recursion)]
    pub element_type: Option<Box<GatewayLogicalType>>,
    /// `ROW`'s fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion)]
    pub fields: Option<Vec<GatewayRowField>>,
    /// Interval types: `DAY_TO_SECOND`, `YEAR_TO_MONTH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
}

/// One field of a `ROW` type.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct GatewayRowField {
    /// The field's name.
    #[serde(default)]
    pub name: String,
    /// Its type.
    #[serde(rename = "fieldType", default)]
    #[schema(no_recursion)]
    pub field_type: GatewayLogicalType,
}

/// One result column (Flink's `ColumnInfo`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ColumnInfo {
    /// The column's name.
    #[serde(default)]
    pub name: String,
    /// Its type.
    #[serde(rename = "logicalType", default)]
    pub logical_type: GatewayLogicalType,
    /// Its comment (always `null` here).
    #[serde(default)]
    pub comment: Option<String>,
}

/// A field's value in `rowFormat` `JSON`: Flink's JSON format with ISO-8601 times.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum FieldValue {
    /// SQL NULL.
    Null,
    /// `BOOLEAN`.
    Bool(bool),
    /// Integer types.
    Int(i64),
    /// `FLOAT`, `DOUBLE`, `DECIMAL`.
    Number(f64),
    /// Character strings, dates, times, timestamps (ISO-8601), bytes (base64).
    Text(String),
    /// `ARRAY`.
    List(Vec<FieldValue>),
    /// `ROW` (by field name) and `MAP`.
    Map(BTreeMap<String, FieldValue>),
}

/// One row of a result (Flink's `RowData` as the gateway writes it).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
pub struct RowDataInfo {
    /// The row kind: `INSERT`, `UPDATE_BEFORE`, `UPDATE_AFTER`, `DELETE`.
    pub kind: String,
    /// The row's values, one per column.
    #[schema(value_type = Vec<Value>)]
    pub fields: Vec<FieldValue>,
}

/// A page of results (Flink's `ResultInfo`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ResultInfo {
    /// The columns.
    #[serde(default)]
    pub columns: Vec<ColumnInfo>,
    /// `JSON` (the only row format served; `PLAIN_TEXT` is refused).
    #[serde(rename = "rowFormat", default)]
    pub row_format: String,
    /// The rows of this page.
    #[serde(default)]
    pub data: Vec<RowDataInfo>,
}

/// `GET …/operations/:operation_handle/result/:token` (Flink's `FetchResultsResponseBody`):
/// `NOT_READY` carries only the next URI; `PAYLOAD` a page and the next URI; `EOS` the last,
/// empty page and no next URI.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct FetchResultsResponse {
    /// `NOT_READY`, `PAYLOAD` or `EOS`.
    #[serde(rename = "resultType", default)]
    pub result_type: String,
    /// Whether the statement was a query (its rows are the query's).
    #[serde(
        rename = "isQueryResult",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub is_query_result: Option<bool>,
    /// The id of the job the statement submitted, if it submitted one.
    #[serde(rename = "jobID", default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// `SUCCESS` (an `OK` row) or `SUCCESS_WITH_CONTENT`.
    #[serde(
        rename = "resultKind",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub result_kind: Option<String>,
    /// The page (absent when `NOT_READY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<ResultInfo>,
    /// The path of the next page (absent after `EOS`).
    #[serde(
        rename = "nextResultUri",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_result_uri: Option<String>,
}
