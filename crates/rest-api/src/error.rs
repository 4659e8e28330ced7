//! Flink's error answer.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lenient;

/// Every 4xx/5xx answer: `{"errors": ["..."]}`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, Default, PartialEq)]
pub struct ErrorBody {
    /// What went wrong, one message per error.
    #[serde(default, deserialize_with = "lenient::list_of_text")]
    pub errors: Vec<String>,
}
