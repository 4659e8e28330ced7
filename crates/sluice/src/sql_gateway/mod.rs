//! # Flink's SQL Gateway, served by Sluice
//!
//! [`SqlGatewayService`] implements `sluice-rest`'s [`SqlGateway`] trait, so the REST server
//! answers Flink's SQL Gateway REST API (`/v1`…`/v3`: sessions, statements, operations, result
//! pages) and a tool written for Flink's gateway drives Sluice. [`serve`] starts a REST server
//! with it (`sluice sql-gateway`), beside Flink's monitoring paths, where the jobs it submits
//! are listed (`/jobs/:jid`).
//!
//! Semantics as Flink's gateway:
//!
//! * a session is a catalog and its settings (`properties` at open are `SET`s); `SET`,
//!   `RESET`, `CREATE`, `DROP` change it; `SHOW TABLES`, bare `SET`, `DESCRIBE` and `EXPLAIN`
//!   read it (one page, then `EOS`);
//! * `INSERT INTO` (or `EXECUTE STATEMENT SET`) submits a job and answers one row, its job id;
//!   the job lives on when its session closes;
//! * a query runs a job whose rows are fetched page by page while it runs (`RUNNING`), `EOS`
//!   once it ended and every row was handed out; cancelling or closing the operation cancels
//!   the job.
//!
//! Sluice plans a statement when it is submitted, so a statement the planner refuses is a
//! `400` naming its line and column at once (Flink's gateway answers the handle and fails the
//! fetch instead). A session unused for [`IDLE_TIMEOUT`] is closed (Flink's
//! `sql-gateway.session.idle-timeout`).

mod operation;
mod rows;
mod values;

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use sluice_rest::sql_gateway::{GatewayError, SqlGateway};
use sluice_rest::JobRegistry;
use sluice_rest_api::{
    ColumnInfo, ExecuteStatementRequest, FetchResultsResponse, FieldValue, OpenSessionRequest,
    SessionConfig,
};
use sluice_runtime::JobHandle;
use sluice_sql::{parse_script, DataType, PlannedStatement, Position, Session, SqlError};
use sluice_table::script::{locate, plan_step};
use sluice_table::{JobKind, PlannedJob, QueryOutput, SqlJob, Step, Translation};

use operation::{Operation, Outcome, QueryJob};
pub use operation::{Status, PAGE_ROWS};
pub use rows::BUFFERED_ROWS;

use crate::rest::{start_rest, RestApi};
use crate::{EnvArgs, RestArgs, SluiceError};

/// A session unused this long is closed (Flink's `sql-gateway.session.idle-timeout` default).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Sessions and their operations; the jobs statements submitted.
pub struct SqlGatewayService {
    sessions: Mutex<HashMap<String, GatewaySession>>,
    /// INSERT jobs (they outlive their session; a dropped handle would cancel its job).
    jobs: Mutex<Vec<JobHandle>>,
    /// Where submitted jobs are listed (`/jobs`); weak: the registry holds this service.
    registry: Weak<JobRegistry>,
    /// The command line's job settings, which a session's `SET`s override per job.
    env: EnvArgs,
}

struct GatewaySession {
    session: Session,
    operations: HashMap<String, Operation>,
    last_used: Instant,
}

/// A refused statement (or body): 400 with the error, its line and column in the message.
fn refused(e: SqlError) -> GatewayError {
    GatewayError::new(400, e.to_string())
}

fn unknown_session(handle: &str) -> GatewayError {
    GatewayError::new(
        404,
        format!(
            "Session '{}' does not exist (closed, expired or never opened)",
            sluice_rest_short(handle)
        ),
    )
}

fn sluice_rest_short(s: &str) -> String {
    s.chars().take(64).collect()
}

/// A fresh random handle in UUID form.
fn new_handle() -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let hi = h.finish();
    h.write_u64(hi);
    let lo = h.finish();
    let x = (u128::from(hi) << 64) | u128::from(lo);
    // Version 4, variant 1, as a random UUID.
    let x = (x & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let s = format!("{x:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &s[..8],
        &s[8..12],
        &s[12..16],
        &s[16..20],
        &s[20..]
    )
}

/// What a statement shows, by its kind.
#[derive(Clone, Copy)]
enum Shown {
    Tables,
    Config,
    Explain,
    Describe,
}

impl SqlGatewayService {
    /// A gateway whose jobs take `env`'s settings and are listed in `registry`.
    pub fn new(env: EnvArgs, registry: &Arc<JobRegistry>) -> SqlGatewayService {
        SqlGatewayService {
            sessions: Mutex::new(HashMap::new()),
            jobs: Mutex::new(Vec::new()),
            registry: Arc::downgrade(registry),
            env,
        }
    }

    /// The sessions, the idle ones closed first.
    fn sessions(&self) -> MutexGuard<'_, HashMap<String, GatewaySession>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let idle: Vec<String> = sessions
            .iter()
            .filter(|(_, s)| s.last_used.elapsed() > IDLE_TIMEOUT)
            .map(|(h, _)| h.clone())
            .collect();
        for h in idle {
            if let Some(s) = sessions.remove(&h) {
                close_all(s.operations);
            }
        }
        sessions
    }

    fn with_session<T>(
        &self,
        handle: &str,
        f: impl FnOnce(&mut GatewaySession) -> Result<T, GatewayError>,
    ) -> Result<T, GatewayError> {
        let mut sessions = self.sessions();
        let s = sessions
            .get_mut(handle)
            .ok_or_else(|| unknown_session(handle))?;
        s.last_used = Instant::now();
        f(s)
    }

    fn with_operation<T>(
        &self,
        session: &str,
        operation: &str,
        f: impl FnOnce(&mut Operation) -> Result<T, GatewayError>,
    ) -> Result<T, GatewayError> {
        self.with_session(session, |s| {
            let op = s.operations.get_mut(operation).ok_or_else(|| {
                GatewayError::new(
                    404,
                    format!(
                        "Operation '{}' does not exist in session '{session}' (closed or never started)",
                        sluice_rest_short(operation)
                    ),
                )
            })?;
            f(op)
        })
    }

    /// The settings of one job: the command line's, with the session's `SET`s over them.
    fn job_env(&self, job: &PlannedJob) -> Result<sluice_datastream::StreamEnv, GatewayError> {
        let mut args = self.env.clone();
        if let Some(p) = job.parallelism() {
            args.parallelism = p as usize;
        }
        if let Some(i) = job.checkpoint_interval() {
            args.checkpoint_interval = Some(i.as_millis().max(1) as u64);
        }
        let env = args
            .stream_env()
            .map_err(|e| GatewayError::new(400, e.to_string()))?;
        env.set_job_name(job.name.clone());
        Ok(env)
    }

    /// Starts a planned job: an INSERT's job id, or a query's running job and its rows.
    fn submit(&self, job: &PlannedJob) -> Result<(Vec<ColumnInfo>, Outcome), GatewayError> {
        let env = self.job_env(job)?;
        let launch_error = |e: sluice_datastream::GraphError| {
            GatewayError::new(400, format!("The job could not start: {e}"))
        };
        match job.kind {
            JobKind::Insert => {
                job.build(&env, QueryOutput::Stdout).map_err(refused)?;
                let handle = env.launch().map_err(launch_error)?;
                let monitor = handle.monitor();
                if let Some(r) = self.registry.upgrade() {
                    r.register(monitor.clone());
                }
                let id = monitor.job_id.to_string();
                let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
                jobs.retain(|j| !j.is_finished());
                jobs.push(handle);
                let id_type = DataType::string().not_null();
                Ok((
                    vec![values::column("job id", &id_type)],
                    Outcome::Fixed {
                        content: true,
                        rows: vec![vec![FieldValue::Text(id.clone())]],
                        job_id: Some(id),
                    },
                ))
            }
            JobKind::Query => {
                let root = job.plan.roots.first().ok_or_else(|| {
                    GatewayError::new(500, "internal plan error: a query without rows")
                })?;
                let types: Vec<DataType> = root
                    .schema
                    .iter()
                    .map(|f| f.ty.without_time_attribute())
                    .collect();
                let columns = root
                    .schema
                    .iter()
                    .zip(&types)
                    .map(|(f, t)| values::column(&f.name, t))
                    .collect();
                let (_, streams) =
                    SqlJob::build_streams(&env, &job.session, &job.plan, &Translation::default())
                        .map_err(|e| refused(locate(e, job.pos)))?;
                let stream = streams.first().ok_or_else(|| {
                    GatewayError::new(500, "internal plan error: a query without rows")
                })?;
                let rows = rows::LiveRows::default();
                rows.sink(stream).name("collect").uid("collect");
                let handle = env.launch().map_err(launch_error)?;
                let monitor = handle.monitor();
                if let Some(r) = self.registry.upgrade() {
                    r.register(monitor.clone());
                }
                Ok((
                    columns,
                    Outcome::Query(QueryJob {
                        handle: Some(handle),
                        monitor,
                        rows,
                        types,
                    }),
                ))
            }
        }
    }
}

/// An `OK` result (Flink's `TABLE_RESULT_OK`).
fn ok() -> (Vec<ColumnInfo>, Outcome) {
    (
        vec![values::column("result", &DataType::string())],
        Outcome::Fixed {
            content: false,
            rows: vec![vec![FieldValue::Text("OK".into())]],
            job_id: None,
        },
    )
}

/// A statement's text as Flink's columns: `SHOW TABLES` a `table name` per row, bare `SET`
/// `key` and `value`, `DESCRIBE` a column's `name` and `type`, `EXPLAIN` one `result`.
fn shown(kind: Shown, text: &str) -> (Vec<ColumnInfo>, Outcome) {
    let string = DataType::string();
    let lines = text.lines().filter(|l| !l.trim().is_empty());
    let text_of = |s: &str| FieldValue::Text(s.to_string());
    let (names, rows): (Vec<&str>, Vec<Vec<FieldValue>>) = match kind {
        Shown::Tables => (
            vec!["table name"],
            lines.map(|l| vec![text_of(l)]).collect(),
        ),
        Shown::Config => (
            vec!["key", "value"],
            lines
                .map(|l| {
                    let (k, v) = l.split_once(" = ").unwrap_or((l, ""));
                    vec![text_of(k.trim_matches('\'')), text_of(v.trim_matches('\''))]
                })
                .collect(),
        ),
        Shown::Describe => (
            vec!["name", "type"],
            lines
                .map(|l| {
                    let (n, t) = l.split_once(' ').unwrap_or((l, ""));
                    vec![text_of(n), text_of(t)]
                })
                .collect(),
        ),
        Shown::Explain => (vec!["result"], vec![vec![text_of(text)]]),
    };
    (
        names.iter().map(|n| values::column(n, &string)).collect(),
        Outcome::Fixed {
            content: true,
            rows,
            job_id: None,
        },
    )
}

/// Cancels and drops operations (outside any request's wait: their jobs end on cancel).
fn close_all(operations: HashMap<String, Operation>) {
    for (_, mut op) in operations {
        op.cancel();
    }
}

impl SqlGateway for SqlGatewayService {
    fn open_session(&self, request: OpenSessionRequest) -> Result<String, GatewayError> {
        let mut session = Session::new();
        for (k, v) in request.properties.unwrap_or_default() {
            session
                .config
                .set(&k, &v, Position::default())
                .map_err(|e| GatewayError::new(400, format!("Session property '{k}': {e}")))?;
        }
        let handle = new_handle();
        self.sessions().insert(
            handle.clone(),
            GatewaySession {
                session,
                operations: HashMap::new(),
                last_used: Instant::now(),
            },
        );
        Ok(handle)
    }

    fn session_config(&self, session: &str) -> Result<SessionConfig, GatewayError> {
        self.with_session(session, |s| {
            Ok(SessionConfig {
                properties: s
                    .session
                    .config
                    .entries()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
        })
    }

    fn heartbeat(&self, session: &str) -> Result<(), GatewayError> {
        self.with_session(session, |_| Ok(()))
    }

    fn close_session(&self, session: &str) -> Result<(), GatewayError> {
        let closed = self
            .sessions()
            .remove(session)
            .ok_or_else(|| unknown_session(session))?;
        close_all(closed.operations);
        Ok(())
    }

    fn execute(
        &self,
        session: &str,
        request: ExecuteStatementRequest,
    ) -> Result<String, GatewayError> {
        let mut statements = parse_script(&request.statement, &BTreeMap::new()).map_err(refused)?;
        if statements.len() != 1 {
            let at = statements.get(1).map(|s| s.pos());
            return Err(refused(SqlError::validation(
                at,
                format!(
                    "one statement per request ({} given): submit them one by one",
                    statements.len()
                ),
            )));
        }
        let stmt = statements.remove(0);
        let pos = stmt.pos();
        self.with_session(session, |s| {
            let mut work = s.session.clone();
            let per_statement = request.execution_config.unwrap_or_default();
            for (k, v) in &per_statement {
                work.config.set(k, v, pos).map_err(refused)?;
            }
            let planned = work.execute(stmt).map_err(|e| refused(locate(e, pos)))?;
            let shown_kind = match &planned {
                Some(PlannedStatement::ShowTables { .. }) => Some(Shown::Tables),
                Some(PlannedStatement::ShowConfig { .. }) => Some(Shown::Config),
                Some(PlannedStatement::Explain(_)) => Some(Shown::Explain),
                Some(PlannedStatement::Describe { .. }) => Some(Shown::Describe),
                _ => None,
            };
            let (columns, outcome) = match planned {
                None => ok(),
                Some(p) => match plan_step(&work, p).map_err(|e| refused(locate(e, pos)))? {
                    Step::Show(text) => shown(shown_kind.unwrap_or(Shown::Explain), &text),
                    Step::Job(job) => self.submit(&job)?,
                },
            };
            // The statement's own settings end with it; what it created or set stays.
            if per_statement.is_empty() {
                s.session = work;
            } else {
                s.session.catalog = work.catalog;
            }
            let handle = new_handle();
            s.operations
                .insert(handle.clone(), Operation::new(columns, outcome));
            Ok(handle)
        })
    }

    fn status(&self, session: &str, operation: &str) -> Result<String, GatewayError> {
        self.with_operation(session, operation, |op| Ok(op.status().name().to_string()))
    }

    fn cancel(&self, session: &str, operation: &str) -> Result<String, GatewayError> {
        self.with_operation(session, operation, |op| {
            op.cancel();
            Ok(op.status().name().to_string())
        })
    }

    fn close_operation(&self, session: &str, operation: &str) -> Result<String, GatewayError> {
        let op = self.with_session(session, |s| {
            s.operations.remove(operation).ok_or_else(|| {
                GatewayError::new(
                    404,
                    format!(
                        "Operation '{}' does not exist in session '{session}'",
                        sluice_rest_short(operation)
                    ),
                )
            })
        })?;
        close_all(HashMap::from([(String::new(), op)]));
        Ok("CLOSED".into())
    }

    fn fetch(
        &self,
        session: &str,
        operation: &str,
        token: u64,
    ) -> Result<FetchResultsResponse, GatewayError> {
        self.with_operation(session, operation, |op| op.fetch(token))
    }
}

/// A REST server serving Flink's SQL Gateway API (and Flink's monitoring paths for the jobs
/// its statements submit).
pub struct SqlGatewayServer {
    api: RestApi,
}

impl SqlGatewayServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.api.server.local_addr()
    }

    /// Stops the server (running jobs are cancelled as the gateway is dropped).
    pub fn shutdown(self) {
        self.api.server.shutdown();
    }
}

/// Starts a REST server (`rest`'s address, token and hosts) with the SQL gateway installed;
/// jobs take `env`'s settings under the sessions' `SET`s.
pub fn serve(env: EnvArgs, rest: &RestArgs) -> Result<SqlGatewayServer, SluiceError> {
    let mut rest = rest.clone();
    rest.no_rest = false;
    let api = start_rest(&rest, false)?.ok_or_else(|| {
        SluiceError::Config("the SQL gateway needs its REST server (drop --no-rest)".into())
    })?;
    let gateway = Arc::new(SqlGatewayService::new(env, &api.registry));
    api.registry.set_sql_gateway(gateway);
    Ok(SqlGatewayServer { api })
}

/// `sluice sql-gateway`'s flags: where the gateway listens (Flink's
/// `sql-gateway.endpoint.rest.*`) and the settings of the jobs it runs.
#[derive(clap::Args, Debug, Clone)]
pub struct GatewayArgs {
    /// Port of the gateway's REST API [sql-gateway.endpoint.rest.port]; 0 picks a free one.
    #[arg(long, default_value_t = 8083)]
    pub port: u16,
    /// Address it listens on [sql-gateway.endpoint.rest.address]; anything but loopback needs
    /// --rest-token.
    #[arg(long, default_value = "127.0.0.1", value_name = "IP")]
    pub address: std::net::IpAddr,
    /// Bearer token every session, statement and close request must carry.
    #[arg(long, env = "SLUICE_REST_TOKEN", hide_env_values = true)]
    pub rest_token: Option<String>,
    /// A host name (NAME or NAME:PORT) the gateway answers to besides its address.
    #[arg(long, value_name = "NAME")]
    pub rest_allowed_host: Vec<String>,
    /// The jobs' defaults (a session's `SET 'parallelism.default'` and
    /// `'execution.checkpointing.interval'` override them per job).
    #[command(flatten)]
    pub env: EnvArgs,
}

/// Runs the gateway until the process is stopped (Ctrl-C), announcing its address on stderr.
pub fn run_until_stopped(args: &GatewayArgs) -> Result<(), SluiceError> {
    let rest = RestArgs {
        rest_port: args.port,
        rest_address: args.address,
        rest_token: args.rest_token.clone(),
        rest_allowed_host: args.rest_allowed_host.clone(),
        savepoint_dir: None,
        no_rest: false,
        keep_rest: false,
    };
    let server = serve(args.env.clone(), &rest)?;
    eprintln!(
        "SQL gateway (Flink's SQL Gateway REST API v1-v3): http://{}/v3/sessions; jobs under /jobs; Ctrl-C stops it",
        server.local_addr()
    );
    loop {
        std::thread::park();
    }
}
