//! The metric answers: `…/metrics` and `…/subtasks/metrics`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient::{self, Scalar};

/// One entry of a metric list without `?get=` (`[{"id"}]`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct MetricId {
    /// The metric's name.
    #[serde(default, deserialize_with = "lenient::text")]
    #[schema(required = true)]
    pub id: String,
}

/// One metric value of `…/metrics?get=` (`[{"id", "value"}]`; Flink sends values as strings).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct MetricValue {
    /// The metric's name.
    #[serde(default, deserialize_with = "lenient::text")]
    #[schema(required = true)]
    pub id: String,
    /// Its value as sent: a string (`"800"`, `"200.0"`, `"NaN"`), a number from other servers.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub value: Option<Scalar>,
}

impl MetricValue {
    /// The value as a finite number (numbers and numeric strings), else `None`.
    pub fn number(&self) -> Option<f64> {
        self.value.as_ref().and_then(Scalar::number)
    }
}

/// One aggregated metric of `…/subtasks/metrics?get=…&agg=…`: the aggregations asked for
/// (numbers; absent ones are `None`).
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct AggregatedMetric {
    /// The metric's name.
    #[serde(default, deserialize_with = "lenient::text")]
    #[schema(required = true)]
    pub id: String,
    /// Smallest value over the subtasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub min: Option<f64>,
    /// Largest value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub max: Option<f64>,
    /// Mean value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub avg: Option<f64>,
    /// Sum over the subtasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub sum: Option<f64>,
    /// Data skew, percent (Flink's `skew`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::number")]
    #[schema(nullable = false)]
    pub skew: Option<f64>,
}
