//! One operation of a gateway session: what a statement gave (an `OK`, text, a job id, or a
//! running query's rows) and the pages it hands out, token by token, as Flink's gateway does:
//! page `n` is made once, asked for again it is the same page; a query's page holds the rows
//! that arrived since the previous one (at most [`PAGE_ROWS`]), and `EOS` comes once its job
//! has ended and every row was handed out.

use std::collections::VecDeque;
use std::sync::Arc;

use sluice_rest::sql_gateway::GatewayError;
use sluice_rest_api::{ColumnInfo, FetchResultsResponse, FieldValue, ResultInfo, RowDataInfo};
use sluice_runtime::{JobHandle, JobMonitor};
use sluice_sql::{DataType, Row, RowKind};

use super::rows::LiveRows;
use super::values;

/// The most rows one page holds (Flink's gateway pages its results too).
pub const PAGE_ROWS: usize = 1000;

/// Where an operation is (Flink's `OperationStatus` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Its query's job runs (rows may still come).
    Running,
    /// Done: its result is complete (an INSERT's job was submitted).
    Finished,
    /// Cancelled by the client.
    Canceled,
    /// Its query's job failed.
    Error,
}

impl Status {
    /// Flink's name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Running => "RUNNING",
            Status::Finished => "FINISHED",
            Status::Canceled => "CANCELED",
            Status::Error => "ERROR",
        }
    }
}

/// A query's job and its rows.
pub struct QueryJob {
    /// The job (taken when it has ended, to read its outcome).
    pub handle: Option<JobHandle>,
    /// Its monitor (the REST API's `/jobs/:jid`).
    pub monitor: Arc<JobMonitor>,
    /// The rows its collect sink received and no page has taken yet.
    pub rows: LiveRows,
    /// The columns' types, to write the values.
    pub types: Vec<DataType>,
}

/// What a statement gave.
pub enum Outcome {
    /// Rows known at once (`OK`, `SHOW`, `EXPLAIN`, an INSERT's job id): one page, then EOS.
    Fixed {
        /// Whether the rows are more than Flink's `OK` (`SUCCESS_WITH_CONTENT`).
        content: bool,
        /// The rows.
        rows: Vec<Vec<FieldValue>>,
        /// The submitted job's id (an INSERT).
        job_id: Option<String>,
    },
    /// A query whose job runs.
    Query(QueryJob),
}

/// One operation.
pub struct Operation {
    /// The result's columns.
    pub columns: Vec<ColumnInfo>,
    /// What the statement gave.
    pub outcome: Outcome,
    /// Cancelled by the client.
    pub canceled: bool,
    /// The job's failure, once known.
    pub failure: Option<String>,
    /// Rows received, not yet in a page.
    pending: VecDeque<Row>,
    /// The token of the next new page.
    next_token: u64,
    /// The newest page (asked for again, it is given again).
    last: Option<FetchResultsResponse>,
}

impl Operation {
    /// An operation over `outcome`.
    pub fn new(columns: Vec<ColumnInfo>, outcome: Outcome) -> Operation {
        Operation {
            columns,
            outcome,
            canceled: false,
            failure: None,
            pending: VecDeque::new(),
            next_token: 0,
            last: None,
        }
    }

    /// The id of the job the statement submitted.
    pub fn job_id(&self) -> Option<String> {
        match &self.outcome {
            Outcome::Fixed { job_id, .. } => job_id.clone(),
            Outcome::Query(q) => Some(q.monitor.job_id.to_string()),
        }
    }

    /// Reads the job's outcome once it has ended.
    fn observe(&mut self) {
        if let Outcome::Query(q) = &mut self.outcome {
            if q.handle.as_ref().is_some_and(JobHandle::is_finished) {
                if let Some(h) = q.handle.take() {
                    if let Err(e) = h.wait() {
                        if !self.canceled {
                            self.failure = Some(e.to_string());
                        }
                    }
                }
            }
        }
    }

    /// The operation's status now.
    pub fn status(&mut self) -> Status {
        self.observe();
        if self.canceled {
            return Status::Canceled;
        }
        if self.failure.is_some() {
            return Status::Error;
        }
        match &self.outcome {
            Outcome::Query(q) if q.handle.is_some() => Status::Running,
            _ => Status::Finished,
        }
    }

    /// Cancels its job (a query's; an INSERT's job lives on, as in Flink).
    pub fn cancel(&mut self) {
        if self.status() != Status::Running {
            return;
        }
        self.canceled = true;
        if let Outcome::Query(q) = &self.outcome {
            q.rows.close();
            if let Some(h) = &q.handle {
                h.cancel();
            }
        }
    }

    /// Page `token`.
    pub fn fetch(&mut self, token: u64) -> Result<FetchResultsResponse, GatewayError> {
        if token + 1 == self.next_token {
            if let Some(page) = &self.last {
                return Ok(page.clone());
            }
        }
        if token != self.next_token {
            return Err(GatewayError::new(
                400,
                format!(
                    "Expecting token to be {} (the next page) or {} (the last page again), but it is {token}",
                    self.next_token,
                    self.next_token.saturating_sub(1)
                ),
            ));
        }
        match self.status() {
            Status::Canceled => {
                return Err(GatewayError::new(
                    409,
                    "Can not fetch results from the CANCELED operation",
                ))
            }
            Status::Error => {
                return Err(GatewayError {
                    status: 500,
                    errors: vec![
                        "Internal server error.".into(),
                        format!(
                            "The query's job failed: {}",
                            self.failure.clone().unwrap_or_default()
                        ),
                    ],
                })
            }
            Status::Running | Status::Finished => {}
        }
        let page = self.page();
        self.next_token += 1;
        self.last = Some(page.clone());
        Ok(page)
    }

    fn page(&mut self) -> FetchResultsResponse {
        let columns = self.columns.clone();
        let job_id = self.job_id();
        let mut page = FetchResultsResponse {
            result_type: "PAYLOAD".into(),
            job_id,
            ..FetchResultsResponse::default()
        };
        let (kind, data) = match &mut self.outcome {
            Outcome::Fixed { content, rows, .. } => {
                page.is_query_result = Some(false);
                let kind = if *content {
                    "SUCCESS_WITH_CONTENT"
                } else {
                    "SUCCESS"
                };
                if self.next_token > 0 {
                    page.result_type = "EOS".into();
                    (kind, Vec::new())
                } else {
                    (kind, std::mem::take(rows).into_iter().map(insert).collect())
                }
            }
            Outcome::Query(q) => {
                page.is_query_result = Some(true);
                // Ended before the take: no row can arrive after it.
                let ended = q.handle.is_none();
                self.pending.extend(q.rows.take());
                if ended && self.pending.is_empty() {
                    page.result_type = "EOS".into();
                }
                let n = self.pending.len().min(PAGE_ROWS);
                let data = self
                    .pending
                    .drain(..n)
                    .map(|r| {
                        insert(
                            r.0.iter()
                                .zip(&q.types)
                                .map(|(v, t)| values::field(v, t))
                                .collect(),
                        )
                    })
                    .collect();
                ("SUCCESS_WITH_CONTENT", data)
            }
        };
        page.result_kind = Some(kind.into());
        page.results = Some(ResultInfo {
            columns,
            row_format: "JSON".into(),
            data,
        });
        page
    }
}

/// An appended row (every result of this version's SQL is append-only).
fn insert(fields: Vec<FieldValue>) -> RowDataInfo {
    RowDataInfo {
        kind: RowKind::Insert.name().into(),
        fields,
    }
}
