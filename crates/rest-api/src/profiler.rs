//! The profiling answers: a vertex's `/flamegraph` and a task manager's `/thread-dump`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;

/// `GET /jobs/:jobid/vertices/:vertexid/flamegraph` (Flink's `VertexFlameGraph`). Before the
/// first samples only `endTimestamp` is sent: `-3` (waiting for samples) or `-1` (the job ended).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct FlameGraph {
    /// When the samples were taken, ms since the epoch; `-3` or `-1` without samples.
    #[serde(rename = "endTimestamp", default, deserialize_with = "lenient::int")]
    #[schema(required = true, nullable = false)]
    pub end_timestamp: Option<i64>,
    /// The sampled stacks' tree, rooted at `root`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub data: Option<FlameGraphNode>,
}

/// One frame of a [`FlameGraph`]: its samples and the frames it called.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct FlameGraphNode {
    /// The frame (a function or a thread state).
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// Samples in this frame or below it.
    #[serde(default, deserialize_with = "lenient::int")]
    #[schema(nullable = false)]
    pub value: Option<i64>,
    /// The frames it called.
    #[serde(default, deserialize_with = "lenient::list")]
    #[schema(no_recursion)]
    pub children: Vec<FlameGraphNode>,
}

/// `GET /taskmanagers/:taskmanagerid/thread-dump` (Flink's `ThreadDumpInfo`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ThreadDump {
    /// Every thread of the process.
    #[serde(rename = "threadInfos", default, deserialize_with = "lenient::list")]
    pub thread_infos: Vec<ThreadInfo>,
}

/// One thread of a [`ThreadDump`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ThreadInfo {
    /// The thread's name.
    #[serde(rename = "threadName", default, deserialize_with = "lenient::text")]
    pub thread_name: String,
    /// Its state and stack as text, like Java's `ThreadInfo.toString()`.
    #[serde(
        rename = "stringifiedThreadInfo",
        default,
        deserialize_with = "lenient::text"
    )]
    pub stringified_thread_info: String,
}
