//! The sink subtask: buffers rows, writes them in batches (by size, by interval, at every
//! barrier, at end of input), retries a lost connection, and — for exactly-once appends —
//! runs one transaction per checkpoint: `PREPARE TRANSACTION` at the barrier, `COMMIT
//! PREPARED` once the checkpoint completed (seen on the job's checkpoint hub, polled on the
//! task's flush ticks and every few hundred records, as the transactional file sink does).
//! A flush hands the batch to the subtask's [`Session`]: into the transaction's open COPY, a
//! COPY of its own (autocommit appends), or a pipelined upsert statement (see the crate docs).

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use postgres::Client;
use sluice_runtime::checkpoint::CheckpointHub;
use sluice_runtime::state::layout;
use sluice_types::{Collector, ControlEvent, OperatorContext, OperatorError, ServicesHandle};

use crate::connect::{backoff_for, Endpoint};
use crate::copy_format;
use crate::error::is_connection_loss;
use crate::mapping::RowMapping;
use crate::metrics::{SinkMetrics, TaskCounters};
use crate::schema::check_table;
use crate::session::{Session, Submission};
use crate::value::Value;
use crate::write::{copy_sql, Upserter};
use crate::{xa, Mode, PostgresError, SinkOptions};

/// What every subtask of one sink shares.
pub(crate) struct SinkSpec<T: 'static> {
    pub endpoint: Endpoint,
    pub table: String,
    pub mapping: RowMapping<T>,
    pub mode: Mode,
    pub options: SinkOptions,
    /// The gid prefix of two-phase commit (see [`xa`]); `None` = `sluice:<table>:<operator id>`.
    pub gid_prefix: Option<String>,
    pub metrics: Arc<SinkMetrics>,
}

impl<T: 'static> SinkSpec<T> {
    /// This spec with the plan node's connector options applied (the values the job declared,
    /// or the fixer's change); the same spec when they change nothing. A bad value fails the
    /// subtask naming the option.
    pub fn with_node_options(
        self: &Arc<Self>,
        ctx: &OperatorContext,
    ) -> Result<Arc<Self>, OperatorError> {
        let mut options = self.options.clone();
        for (k, v) in &ctx.options {
            options.set(k, v)?;
        }
        if options == self.options {
            return Ok(self.clone());
        }
        Ok(Arc::new(SinkSpec {
            endpoint: self.endpoint.clone(),
            table: self.table.clone(),
            mapping: self.mapping.clone(),
            mode: self.mode.clone(),
            options,
            gid_prefix: self.gid_prefix.clone(),
            metrics: self.metrics.clone(),
        }))
    }

    pub fn prefix(&self, operator_id: &str) -> String {
        self.gid_prefix
            .clone()
            .unwrap_or_else(|| format!("sluice:{}:{operator_id}", self.table))
    }

    fn err(&self, what: &str, source: postgres::Error) -> PostgresError {
        PostgresError::Statement {
            table: self.table.clone(),
            what: what.to_string(),
            source,
        }
    }

    /// Runs `f` on `slot`'s connection (connecting first if needed), reconnecting with backoff
    /// on a lost connection up to `sink.max-retries` times. For connections without state of
    /// their own (the committer's, the restore's).
    fn retrying<R>(
        &self,
        slot: &mut Option<Client>,
        app: &str,
        what: &str,
        task_retries: Option<&std::sync::atomic::AtomicI64>,
        mut f: impl FnMut(&mut Client) -> Result<R, postgres::Error>,
    ) -> Result<R, PostgresError> {
        let mut attempt = 0u32;
        loop {
            if slot.is_none() {
                *slot = Some(self.endpoint.connect_retrying(
                    app,
                    self.options.max_retries.saturating_sub(attempt),
                    self.options.retry_backoff,
                )?);
            }
            // Connected just above; should the slot be empty anyway, connect again.
            let Some(client) = slot.as_mut() else {
                continue;
            };
            match f(client) {
                Ok(r) => return Ok(r),
                Err(e) if is_connection_loss(&e) && attempt < self.options.max_retries => {
                    tracing::warn!(table = %self.table, what, error = %e, "PostgreSQL connection lost; retrying");
                    self.metrics.retries.fetch_add(1, Relaxed);
                    if let Some(r) = task_retries {
                        r.fetch_add(1, Relaxed);
                    }
                    *slot = None;
                    std::thread::sleep(backoff_for(self.options.retry_backoff, attempt));
                    attempt += 1;
                }
                Err(e) => return Err(self.err(what, e)),
            }
        }
    }
}

/// Records between two looks at the hub for completed checkpoints / the flush interval.
const CHECK_EVERY: u32 = 64;

/// One subtask of a PostgreSQL sink (see the crate docs).
pub struct PostgresSinkWriter<T: 'static> {
    spec: Arc<SinkSpec<T>>,
    app: String,
    /// The main connection: its COPY stays open across the batches of a two-phase
    /// transaction; upsert statements are pipelined on it.
    session: Option<Session>,
    copy_sql: Arc<str>,
    /// Upsert statements sent and not known to be acknowledged, oldest first: sent again on
    /// a new connection if this one is lost (idempotent, in their order).
    unacked: VecDeque<Arc<Submission>>,
    /// A second connection for `COMMIT PREPARED` (it cannot run inside the open transaction).
    committer: Option<Client>,
    upserter: Option<Upserter>,
    /// Buffered rows, flattened (`columns` values per row).
    buffer: Vec<Value>,
    /// Per buffered row, whether it deletes its key's row.
    deleted: Vec<bool>,
    rows: usize,
    /// When the oldest buffered row must be written (`sink.buffer-flush.interval`).
    deadline: Option<Instant>,
    countdown: u32,
    // --- two-phase commit (appends in a checkpointing job) ---
    xa: bool,
    prefix: String,
    subtask: usize,
    attempt: String,
    /// A transaction is open on `stream` (BEGIN sent, its COPY open until the barrier).
    txn_open: bool,
    /// The open transaction's COPY tuples as sent, batch by batch: replayed into a new
    /// transaction if the connection is lost (cheap clones of what went to the wire).
    txn_chunks: Vec<Bytes>,
    /// The gid being prepared, if `PREPARE TRANSACTION` was sent but not acknowledged.
    preparing: Option<String>,
    /// Prepared transactions waiting for their checkpoint: `(checkpoint id, gid)`.
    pending: Vec<(u64, String)>,
    /// The sink's parallelism and its bound of prepared transactions per subtask
    /// ([`xa::prepared_per_subtask`]): what a refused `PREPARE TRANSACTION` reports.
    parallelism: usize,
    per_subtask: u64,
    hub: Option<Arc<CheckpointHub>>,
    /// The newest completed checkpoint the task told this sink of
    /// (`ControlEvent::CheckpointComplete`): what it may commit up to.
    completed: u64,
    services: ServicesHandle,
    operator_id: String,
    counters: TaskCounters,
    /// FLIP-33 `currentSendTime` of this subtask, ms (an operator gauge on REST).
    send_time: Option<Arc<sluice_runtime::OperatorGauge>>,
}

impl<T: 'static> PostgresSinkWriter<T> {
    /// The sink of subtask `ctx.subtask_index`: connects, checks the table, and on a restore
    /// commits the prepared transactions the checkpoint names and rolls back this sink's
    /// others.
    pub(crate) fn open(
        spec: Arc<SinkSpec<T>>,
        ctx: &OperatorContext,
    ) -> Result<Self, OperatorError> {
        let hub = sluice_runtime::TaskServices::of(ctx).and_then(|s| s.hub().cloned());
        let (me, p) = (ctx.subtask_index, ctx.parallelism.max(1));
        let app = format!("sluice sink {} {}/{}", spec.table, me + 1, p);
        let prefix = spec.prefix(&ctx.operator_id);
        let mut connected = spec.endpoint.connect(&app)?;
        let pg_types = check_table(
            &mut connected,
            &spec.table,
            spec.mapping.columns(),
            &spec.mode,
        )?;
        let mut client = Some(connected);
        let columns = spec.mapping.columns();
        let upserter = match &spec.mode {
            Mode::Upsert { key } => Some(Upserter::new(
                &spec.table,
                columns,
                &pg_types,
                key,
                spec.options.upsert_statement,
            )),
            Mode::Append => None,
        };
        let xa =
            spec.mode == Mode::Append && hub.as_ref().is_some_and(|h| h.config.interval.is_some());
        let attempt = hub.as_ref().map_or_else(
            || sluice_runtime::executor::epoch_ms().to_string(),
            |h| h.attempt_tag(),
        );
        let mut sink = PostgresSinkWriter {
            copy_sql: copy_sql(&spec.table, columns).into(),
            session: None,
            unacked: VecDeque::new(),
            upserter,
            buffer: Vec::new(),
            deleted: Vec::new(),
            rows: 0,
            deadline: None,
            countdown: CHECK_EVERY,
            completed: 0,
            xa,
            prefix,
            subtask: me,
            attempt,
            txn_open: false,
            txn_chunks: Vec::new(),
            preparing: None,
            pending: Vec::new(),
            parallelism: p,
            per_subtask: hub
                .as_ref()
                .map_or(1, |h| xa::prepared_per_subtask(&h.config)),
            hub,
            services: ctx.services.clone(),
            operator_id: ctx.operator_id.clone(),
            counters: TaskCounters::new(spec.metrics.clone(), ctx),
            send_time: sluice_runtime::services::task_metrics(ctx).map(|m| {
                m.register_gauge(
                    &ctx.operator_name,
                    "currentSendTime",
                    sluice_runtime::GaugeKind::Gauge,
                    "Time of the last write to PostgreSQL, ms",
                    0,
                )
            }),
            app,
            committer: None,
            spec,
        };
        sink.recover(ctx, &mut client)?;
        // Batches go through the session; the connection that checked the table commits
        // prepared transactions (or is closed when there are none).
        if sink.xa {
            sink.committer = client;
        }
        Ok(sink)
    }

    /// Restore: commit what the restored checkpoint names (idempotently), roll back every
    /// other prepared transaction of the subtasks this one takes over. Appends only: upserts
    /// prepare nothing and converge by replay.
    fn recover(
        &mut self,
        ctx: &OperatorContext,
        client: &mut Option<Client>,
    ) -> Result<(), OperatorError> {
        if self.spec.mode != Mode::Append {
            return Ok(());
        }
        let (me, p) = (ctx.subtask_index, ctx.parallelism.max(1));
        let mut owned = vec![me];
        if let Some(restored) = sluice_runtime::services::restored_parts(ctx) {
            let old_p = restored.parallelism.max(1);
            owned = (0..old_p.max(p)).filter(|i| i % p == me).collect();
            for (old, bytes) in &restored.parts {
                if old % p != me {
                    continue;
                }
                let named: Vec<(u64, String)> = layout::decode(bytes)?;
                for (id, gid) in named {
                    if id <= restored.checkpoint_id {
                        let done = self.spec.retrying(
                            client,
                            &self.app,
                            "COMMIT PREPARED on restore",
                            Some(&self.counters.retries),
                            |c| xa::commit_prepared(c, &gid),
                        )?;
                        if done {
                            self.spec.metrics.committed.fetch_add(1, Relaxed);
                        }
                    }
                }
            }
        }
        let prefix = self.prefix.clone();
        let strays = self.spec.retrying(
            client,
            &self.app,
            "listing pg_prepared_xacts",
            Some(&self.counters.retries),
            |c| xa::prepared_of(c, &prefix),
        )?;
        for (gid, sub) in strays {
            if owned.contains(&sub) {
                tracing::info!(table = %self.spec.table, gid = %gid, "rolling back a stray prepared transaction");
                if self.spec.retrying(
                    client,
                    &self.app,
                    "ROLLBACK PREPARED on restore",
                    Some(&self.counters.retries),
                    |c| xa::rollback_prepared(c, &gid),
                )? {
                    self.spec.metrics.rolled_back.fetch_add(1, Relaxed);
                }
            }
        }
        Ok(())
    }

    fn table(&self) -> &str {
        &self.spec.table
    }

    /// Runs `f` on the main connection with retries: on a lost connection, reconnect after a
    /// backoff (up to `sink.max-retries` times), rebuild the open transaction — `BEGIN` and
    /// its rows copied again, unless the gid being prepared turns out to be prepared already —
    /// and run `f` again.
    fn on_main<R>(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut Self) -> Result<R, postgres::Error>,
    ) -> Result<R, PostgresError> {
        let mut attempt = 0u32;
        loop {
            let r = if self.session.is_none() {
                self.session = Some(Session::connect(
                    &self.spec.endpoint,
                    &self.app,
                    self.spec.options.max_retries.saturating_sub(attempt),
                    self.spec.options.retry_backoff,
                )?);
                self.rebuild_transaction().and_then(|()| f(self))
            } else {
                f(self)
            };
            match r {
                Ok(v) => return Ok(v),
                Err(e) if is_connection_loss(&e) && attempt < self.spec.options.max_retries => {
                    tracing::warn!(table = %self.spec.table, what, error = %e, "PostgreSQL connection lost; retrying");
                    self.spec.metrics.retries.fetch_add(1, Relaxed);
                    self.counters.retries.fetch_add(1, Relaxed);
                    self.session = None;
                    std::thread::sleep(backoff_for(self.spec.options.retry_backoff, attempt));
                    attempt += 1;
                }
                Err(e) => return Err(self.spec.err(what, e)),
            }
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "only called while on_main holds a connection; the callers' error type (postgres::Error) cannot be built here"
    )]
    fn session(&mut self) -> &mut Session {
        self.session
            .as_mut()
            .expect("on_main connects before calling")
    }

    /// `acked` of the oldest unacknowledged upsert statements were acknowledged.
    fn ack(&mut self, acked: usize) {
        self.unacked.drain(..acked.min(self.unacked.len()));
    }

    /// After a reconnection: the open transaction died with the old connection; open a new
    /// one holding the same rows. Upserts send their unacknowledged statements again.
    fn rebuild_transaction(&mut self) -> Result<(), postgres::Error> {
        let again: Vec<Arc<Submission>> = self.unacked.iter().cloned().collect();
        for sub in again {
            let acked = self.session().submit(&sub)?;
            self.ack(acked);
        }
        if !self.txn_open {
            return Ok(());
        }
        if let Some(gid) = self.preparing.clone() {
            if self.session().is_prepared(&gid)? {
                // The PREPARE went through before the connection dropped.
                self.txn_open = false;
                return Ok(());
            }
        }
        let sql = self.copy_sql.clone();
        #[allow(
            clippy::expect_used,
            reason = "only called while on_main holds a connection; postgres::Error cannot be built here"
        )]
        let session = self
            .session
            .as_mut()
            .expect("on_main connects before calling");
        session.batch_execute("BEGIN")?;
        session.start(&sql)?;
        for chunk in &self.txn_chunks {
            session.send(&sql, chunk.clone())?;
        }
        Ok(())
    }

    /// Writes the buffered rows (one batch).
    fn flush_buffer(&mut self) -> Result<(), PostgresError> {
        self.deadline = None;
        if self.rows == 0 {
            return Ok(());
        }
        let started = Instant::now();
        let written = match self.spec.mode {
            Mode::Upsert { .. } => {
                let Some(u) = self.upserter.as_mut() else {
                    return Ok(());
                };
                let (subs, keys) = u.batch(&self.buffer, &self.deleted);
                for sub in subs {
                    // Sent and left in flight (see `Session::submit`).
                    self.on_main("upsert batch", |s| {
                        let acked = s.session().submit(&sub)?;
                        s.ack(acked);
                        Ok(())
                    })?;
                    self.unacked.push_back(sub);
                }
                keys
            }
            Mode::Append => {
                let mut tuples = BytesMut::new();
                copy_format::rows(&self.buffer, self.spec.mapping.columns().len(), &mut tuples);
                let tuples = tuples.freeze();
                if self.xa {
                    // Into the checkpoint transaction's open COPY: no round trip until the
                    // barrier finishes it.
                    let sql = self.copy_sql.clone();
                    self.on_main("COPY batch", |s| {
                        if !s.txn_open {
                            s.session().batch_execute("BEGIN")?;
                            s.txn_open = true;
                        }
                        s.session().send(&sql, tuples.clone())
                    })?;
                    self.txn_chunks.push(tuples);
                    self.rows as u64
                } else {
                    // Autocommit: a COPY of its own per batch (visible when it returns).
                    let sql = self.copy_sql.clone();
                    self.on_main("COPY batch", |s| {
                        let session = s.session();
                        session.send(&sql, tuples.clone())?;
                        session.finish()
                    })?
                }
            }
        };
        self.buffer.clear();
        self.deleted.clear();
        self.rows = 0;
        self.counters.batch(written, started.elapsed());
        let took = started.elapsed();
        if let Some(g) = &self.send_time {
            // FLIP-33 `currentSendTime`: how long the last flush blocked in PostgreSQL (for the
            // doctor; a slow server shows here as waits for the COPY or older statements).
            g.set(took.as_millis().min(i64::MAX as u128) as i64);
        }
        Ok(())
    }

    /// At barrier `checkpoint` (or at end of input, `None`): write the buffer; for two-phase
    /// appends prepare the open transaction under its gid.
    fn pre_commit(&mut self, checkpoint: Option<u64>) -> Result<(), PostgresError> {
        self.flush_buffer()?;
        if !self.unacked.is_empty() {
            // Every upsert before the barrier acknowledged (committed) before it is.
            self.on_main("upsert batch", |s| {
                let acked = s.session().drain()?;
                s.ack(acked);
                Ok(())
            })?;
        }
        if !self.xa || !self.txn_open {
            return Ok(());
        }
        let gid = xa::gid(&self.prefix, self.subtask, checkpoint, &self.attempt);
        self.preparing = Some(gid.clone());
        let sql = format!("PREPARE TRANSACTION {}", xa::literal(&gid));
        // Whether the error, if any, answers the PREPARE (not the COPY's end before it).
        let mut at_prepare = false;
        let prepared = self.on_main("PREPARE TRANSACTION", |s| {
            at_prepare = false;
            if s.txn_open {
                let session = s.session();
                session.finish()?;
                at_prepare = true;
                session.batch_execute(&sql)?;
                s.txn_open = false;
            }
            Ok(())
        });
        match prepared {
            Err(PostgresError::Statement { source, .. })
                if at_prepare && xa::is_out_of_prepared_slots(&source) =>
            {
                return Err(self.out_of_prepared_slots(checkpoint, &source));
            }
            r => r?,
        }
        self.preparing = None;
        self.txn_chunks.clear();
        self.spec.metrics.prepared.fetch_add(1, Relaxed);
        self.pending.push((checkpoint.unwrap_or(u64::MAX), gid));
        Ok(())
    }

    /// The error for a `PREPARE TRANSACTION` the server refused for want of a prepared
    /// transaction slot: ours, naming the setting, what holds the slots and this sink's bound
    /// (PostgreSQL's says only that the maximum is reached). The figures are read on the
    /// committer's connection, best effort: the job fails either way.
    fn out_of_prepared_slots(
        &mut self,
        checkpoint: Option<u64>,
        source: &postgres::Error,
    ) -> PostgresError {
        if self.committer.is_none() {
            self.committer = self.spec.endpoint.connect(&self.app).ok();
        }
        let (max, held) = match self.committer.as_mut() {
            Some(c) => (
                xa::max_prepared_transactions(c).ok().flatten(),
                xa::prepared_count(c).ok(),
            ),
            None => (None, None),
        };
        let at = match checkpoint {
            Some(id) => format!("checkpoint {id}"),
            None => "the end of input".to_string(),
        };
        let setting = match max {
            Some(0) => "the server has prepared transactions disabled \
                        (max_prepared_transactions = 0)"
                .to_string(),
            Some(m) => format!("the server's max_prepared_transactions ({m}) is reached"),
            None => "the server's max_prepared_transactions is reached".to_string(),
        };
        let held = held.map_or(String::new(), |n| {
            format!(
                "; {n} prepared transactions on the server, {} of them this subtask's",
                self.pending.len()
            )
        });
        PostgresError::PreparedTransactions {
            table: self.spec.table.clone(),
            problem: format!(
                "PREPARE TRANSACTION at {at} of subtask {} refused: {setting}{held}. This sink \
                 holds at most {} per subtask, {} at parallelism {}, by its checkpoint \
                 settings (more only after failed savepoints or aligned checkpoints retried unaligned); other sinks, jobs or clients \
                 hold the rest: see pg_prepared_xacts (commit or roll back what is stale) or \
                 raise max_prepared_transactions (PostgreSQL: {})",
                self.subtask,
                self.per_subtask,
                self.per_subtask.saturating_mul(self.parallelism as u64),
                self.parallelism,
                source
                    .as_db_error()
                    .map_or_else(|| source.to_string(), |d| d.message().to_string()),
            ),
        }
    }

    /// Commits the prepared transactions whose checkpoint completed.
    fn commit_due(&mut self) -> Result<(), PostgresError> {
        let done = self.completed;
        if !self.pending.iter().any(|(id, _)| *id <= done) {
            return Ok(());
        }
        let due: Vec<(u64, String)> = self
            .pending
            .iter()
            .filter(|(id, _)| *id <= done)
            .cloned()
            .collect();
        let app = format!("{} (commits)", self.app);
        for (id, gid) in due {
            let spec = self.spec.clone();
            if spec.retrying(
                &mut self.committer,
                &app,
                "COMMIT PREPARED",
                Some(&self.counters.retries),
                |c| xa::commit_prepared(c, &gid),
            )? {
                spec.metrics.committed.fetch_add(1, Relaxed);
            }
            self.pending.retain(|(i, g)| !(*i == id && *g == gid));
        }
        Ok(())
    }

    /// End of input: write and prepare the rest; what is prepared is committed once the whole
    /// job has finished (a failure before that restores the last checkpoint, which does not
    /// name it).
    fn end_of_input(&mut self) -> Result<(), OperatorError> {
        self.pre_commit(None)?;
        if !self.xa {
            return Ok(());
        }
        self.commit_due()?;
        let gids: Vec<String> = self.pending.drain(..).map(|(_, g)| g).collect();
        if gids.is_empty() {
            return Ok(());
        }
        let spec = self.spec.clone();
        let app = format!("{} (final commit)", self.app);
        let publish = move || -> Result<(), OperatorError> {
            let mut slot = None;
            for gid in &gids {
                if spec.retrying(&mut slot, &app, "COMMIT PREPARED at the end", None, |c| {
                    xa::commit_prepared(c, gid)
                })? {
                    spec.metrics.committed.fetch_add(1, Relaxed);
                }
            }
            Ok(())
        };
        match &self.hub {
            Some(h) => h.register_final_commit(Box::new(publish)),
            None => publish()?,
        }
        Ok(())
    }

    /// Buffers one row, checking its values against the mapping's column types.
    fn push_row(&mut self, record: &T) -> Result<(), PostgresError> {
        let start = self.buffer.len();
        self.spec.mapping.row_into(record, &mut self.buffer);
        for (v, c) in self.buffer[start..].iter().zip(self.spec.mapping.columns()) {
            if !v.fits(c.ty) || (*v == Value::Null && !c.nullable) {
                let problem = if *v == Value::Null {
                    "the mapping produced NULL for a column it declared NOT NULL".to_string()
                } else {
                    format!(
                        "the mapping produced {v:?} for a column of type {}",
                        c.ty.sql_name()
                    )
                };
                self.buffer.truncate(start);
                return Err(PostgresError::Value {
                    table: self.table().to_string(),
                    column: c.name.clone(),
                    problem,
                });
            }
        }
        self.deleted.push(self.spec.mapping.is_delete(record));
        self.rows += 1;
        if self.deadline.is_none() && !self.spec.options.flush_interval.is_zero() {
            self.deadline = Some(Instant::now() + self.spec.options.flush_interval);
        }
        Ok(())
    }

    fn interval_due(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

impl<T: Send + 'static> Collector<T> for PostgresSinkWriter<T> {
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        self.push_row(&record)?;
        let max = self.spec.options.max_rows;
        if max > 0 && self.rows >= max {
            self.flush_buffer()?;
        }
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = CHECK_EVERY;
            if self.interval_due() {
                self.flush_buffer()?;
            }
        }
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            // The task's buffer-timeout tick: the flush interval.
            ControlEvent::Flush => {
                if self.interval_due() {
                    self.flush_buffer()?;
                }
            }
            // Checkpoint `id` completed: commit the transactions prepared up to it.
            ControlEvent::CheckpointComplete(id) => {
                self.completed = self.completed.max(id);
                self.commit_due()?;
            }
            // Every row before the barrier is written (and prepared) before it is acknowledged.
            ControlEvent::Barrier(barrier) => {
                self.pre_commit(Some(barrier.checkpoint_id))?;
                let bytes = layout::encode(&self.pending)?;
                if let Some(s) = self.services.get::<sluice_runtime::TaskServices>() {
                    s.record(&self.operator_id, bytes);
                }
                self.commit_due()?;
            }
            ControlEvent::EndOfInput => self.end_of_input()?,
            // Rows follow checkpoints, not event time.
            ControlEvent::Watermark(_) | ControlEvent::Idleness(_) => {}
        }
        Ok(())
    }
}

impl<T: 'static> Drop for PostgresSinkWriter<T> {
    // A cancelled or failed subtask: commit what completed checkpoints named (best effort, one
    // attempt, no retries, so a dead server does not hold up the failover; otherwise the next
    // restore commits them). Nothing is rolled back here: a checkpoint may still complete, and
    // the restore decides which strays to roll back.
    fn drop(&mut self) {
        // The task told the sink of every completion before it ended (also on a cancel).
        let done = self.completed;
        let due: Vec<&String> = self
            .pending
            .iter()
            .filter(|(id, _)| *id <= done)
            .map(|(_, g)| g)
            .collect();
        if !self.xa || due.is_empty() {
            return;
        }
        if self.committer.is_none() {
            self.committer = self.spec.endpoint.connect(&self.app).ok();
        }
        let Some(c) = self.committer.as_mut() else {
            return;
        };
        for gid in due {
            if let Err(e) = xa::commit_prepared(c, gid) {
                tracing::warn!(table = %self.spec.table, error = %e, "committing a prepared transaction on close failed; the next restore commits it");
                return;
            }
        }
    }
}
