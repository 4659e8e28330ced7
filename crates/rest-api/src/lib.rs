#![warn(missing_docs)]

//! # sluice-rest-api: Flink's REST shapes, defined once
//!
//! The request and response bodies of Flink 2.3's REST API (and Sluice's extensions) as plain
//! serde types, shared by everything that speaks it: the server (`sluice-rest`), the REST
//! client and its readers (`sluice top`, the doctor's `flink_rest` adapter). Field names are
//! Flink's exactly (as captured in `tests/fixtures/flink/flink-rest/`); each type derives
//! `utoipa::ToSchema`, so the OpenAPI schemas are generated from the same definitions.
//!
//! Main types: [`ClusterOverview`], [`JobsOverview`] / [`JobOverview`], Flink 2.3's
//! applications ([`ApplicationsOverview`], [`ApplicationDetails`], [`ApplicationExceptions`]), [`JobDetails`] with
//! its [`Plan`], [`VertexDetails`], [`MetricValue`], [`AggregatedMetric`],
//! [`CheckpointingStatistics`], [`CheckpointConfigInfo`], [`JobExceptions`], [`HotKeys`], [`ErrorBody`],
//! [`DashboardConfig`], [`VertexBackPressure`], [`SubtasksTimes`], [`VertexAccumulators`],
//! [`FlameGraph`], [`ThreadDump`], the savepoint requests and answers
//! ([`SavepointTriggerRequest`], [`StopWithSavepointRequest`], [`TriggerResponse`],
//! [`SavepointStatus`]); Sluice's extensions: the doctor's [`DoctorAnswer`] (a [`Diagnosis`]
//! with its [`PlanChangeDiff`]) and [`DoctorStatus`], the rescale history
//! ([`JobRescaleDetails`], [`RescalesOverview`], [`SluiceRescaleRecord`]) and the autopilot's
//! [`AutopilotLog`] / [`AutopilotDecision`], a SQL job's [`ExplainAnalyze`] (its plan with
//! live figures, and their text rendering); Flink's SQL Gateway shapes ([`OpenSessionRequest`],
//! [`ExecuteStatementRequest`], [`FetchResultsResponse`] with its [`ResultInfo`]); [`lenient::Scalar`] for fields whose JSON type varies between servers
//! and [`OrderedMap`] for objects whose key order Flink fixes.
//!
//! ## Reading is tolerant
//!
//! Readers face real Flink clusters of other versions and broken answers: no type denies
//! unknown fields, every field has a default, and fields are read through [`lenient`] (a
//! metric value may be `"800"` or `800`; an odd list element reads as an empty object), so a
//! reader decides what is missing, not the parser. Fields a server may leave out are `Option`.
//!
//! ## Invariant
//!
//! This crate only describes shapes: it does no I/O, holds no state and depends on nothing but
//! `serde` and `utoipa` — no HTTP, no JSON parser, no Sluice crate — so that the server, the
//! client and the doctor can all depend on it without depending on each other.
//!

mod application;
mod autopilot;
mod checkpoint_details;
mod checkpoints;
mod cluster;
mod doctor;
mod error;
mod exceptions;
mod explain;
mod hot_keys;
mod job;
pub mod lenient;
mod metrics;
mod openapi;
mod ordered_map;
mod profiler;
mod rescale_history;
mod rescales;
mod savepoints;
mod sql_gateway;
mod vertex;

pub use application::{
    ApplicationDetails, ApplicationException, ApplicationExceptionHistory, ApplicationExceptions,
    ApplicationOverview, ApplicationsOverview,
};
pub use autopilot::{
    AutopilotDecision, AutopilotLog, DecisionAccepted, DecisionGain, DecisionMeasurement,
};
pub use checkpoint_details::{
    AlignmentStats, CheckpointStatistics, SubtaskAlignment, SubtaskCheckpointDuration,
    SubtaskCheckpointStatistics, SubtaskCheckpointSummary, SyncAsyncStats,
    TaskCheckpointStatistics, TaskCheckpointStatisticsWithSubtaskDetails,
};
pub use checkpoints::{
    CheckpointConfigInfo, CheckpointCounts, CheckpointSummary, CheckpointingStatistics,
    DurationStats, Externalization, LatestCheckpoints, RestoredCheckpoint,
};
pub use cluster::{
    ClusterOverview, DashboardConfig, DashboardFeatures, HardwareDescription, JobIdWithStatus,
    JobIdsWithStatus, JobOverview, JobsOverview, ResourceProfile, TaskCounts, TaskManagerInfo,
    TaskManagersInfo,
};
pub use doctor::{
    Diagnosis, DiagnosisBottleneck, DiagnosisFix, DiagnosisHotKey, DoctorAnswer, DoctorStatus,
    ParallelismDiff, PlanChangeDiff, PlanChangeSpec, ShipStrategyDiff, SourceLag, SourceSplits,
};
pub use error::ErrorBody;
pub use exceptions::{ExceptionHistory, ExceptionInfo, JobExceptions, RootException};
pub use explain::{
    human_bytes, human_count, ExplainAnalyze, ExplainAnalyzeNode, OperatorFigures, PlanHotKey,
};
pub use hot_keys::{HotKey, HotKeys};
pub use job::{
    ConfigEntry, ConnectorOption, ExecutionConfig, IoMetrics, JobConfig, JobDetails, JobPlan,
    JobVertex, Plan, PlanInput, PlanNode,
};
pub use metrics::{AggregatedMetric, MetricId, MetricValue};
pub use openapi::component_schemas;
pub use ordered_map::OrderedMap;
pub use profiler::{FlameGraph, FlameGraphNode, ThreadDump, ThreadInfo};
pub use rescale_history::{
    JobRescaleDetails, LatestRescales, ParallelismBeforeAfter, PlanBeforeAfter, PlanNodeInput,
    PlanNodeState, RecordedChange, RescalesCounts, RescalesOverview, SluiceRescaleRecord,
    UnmodelledObject, VertexParallelism, VertexParallelismRescaleInfo, VertexRescale,
};
pub use rescales::{
    JobResourceRequirements, ParallelismBounds, RescalesConfig, VertexResourceRequirements,
};
pub use savepoints::{
    FailureCause, QueueStatus, SavepointOperation, SavepointStatus, SavepointTriggerRequest,
    StopWithSavepointRequest, TriggerResponse,
};
pub use sql_gateway::{
    CloseSessionResponse, ColumnInfo, ExecuteStatementRequest, ExecuteStatementResponse,
    FetchResultsResponse, FieldValue, GatewayApiVersions, GatewayInfo, GatewayLogicalType,
    GatewayRowField, OpenSessionRequest, OpenSessionResponse, OperationStatus, ResultInfo,
    RowDataInfo, SessionConfig,
};
pub use vertex::{
    Aggregated, StatsSummary, SubtaskBackPressure, SubtaskDetails, SubtaskTimes, SubtasksTimes,
    UserAccumulator, VertexAccumulators, VertexBackPressure, VertexDetails, VertexTaskManager,
    VertexTaskManagers,
};
