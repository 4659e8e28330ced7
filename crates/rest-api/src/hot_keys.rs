//! Sluice's `/jobs/:jobid/vertices/:vertexid/hot-keys` (Flink answers 404).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient::{self, Scalar};

/// `GET /jobs/:jobid/vertices/:vertexid/hot-keys`: the vertex's heaviest keys, hottest first.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct HotKeys {
    /// The vertex id.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    /// Records the vertex has read (the shares' denominator).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub records: Option<u64>,
    /// The vertex's heaviest keys.
    #[serde(rename = "hot-keys", default, deserialize_with = "lenient::list")]
    pub hot_keys: Vec<HotKey>,
}

/// One key of [`HotKeys`].
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct HotKey {
    /// The key as sent (a string; other scalars are shown as JSON).
    #[serde(default)]
    #[schema(value_type = String)]
    #[schema(nullable = false)]
    pub key: Option<Scalar>,
    /// Its estimated record count.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub count: Option<u64>,
    /// The estimate's maximum overcount.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub error: Option<u64>,
    /// Its share of the vertex's records, 0..1.
    #[serde(
        rename = "share-of-vertex",
        default,
        deserialize_with = "lenient::number"
    )]
    #[schema(nullable = false)]
    pub share_of_vertex: Option<f64>,
    /// The subtask that reads the key.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schema(nullable = false)]
    pub subtask: Option<u64>,
    /// Its share of that subtask's records, 0..1.
    #[serde(
        rename = "share-of-subtask",
        default,
        deserialize_with = "lenient::number"
    )]
    #[schema(nullable = false)]
    pub share_of_subtask: Option<f64>,
}
