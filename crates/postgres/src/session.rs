//! The sink subtask's main connection: tokio-postgres on a current-thread runtime of the
//! subtask's own (the synchronous client's copy writer borrows its client and cannot outlive
//! one call; its statements cannot be left in flight). Two ways of keeping the server busy
//! without a round trip per batch:
//!
//! - **An open COPY** ([`Session::send`]): one `COPY … FROM STDIN (FORMAT binary)` stays open
//!   across batches — for the whole checkpoint transaction of a two-phase append. A batch's
//!   tuples are handed to it and the connection task is let run, so they reach the socket at
//!   the flush; the COPY's outcome is waited for in [`Session::finish`] (at the barrier).
//! - **Pipelined statements** ([`Session::submit`]): an upsert batch's statement is sent and
//!   left in flight; at most [`PIPELINE_DEPTH`] are, the oldest is waited for before another is
//!   sent, and [`Session::drain`] waits for all (at every barrier). Statements on one
//!   connection run in the order sent, so the last write of a key still wins.
//!
//! The server reports a failure (a lost connection, a refused value) when its outcome is
//! waited for; the sink keeps what is not acknowledged to send it again on a new connection.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::SinkExt;
use postgres::types::ToSql;
use tokio::runtime::Runtime;
use tokio_postgres::{CopyInSink, Error, NoTls, Statement};

use crate::connect::Endpoint;
use crate::copy_format;
use crate::value::Value;
use crate::write::ColumnArray;
use crate::PostgresError;

/// Upsert statements left in flight at most when a flush returns (the server works on one
/// while the sink buffers the next batch, and the next is queued when it finishes). On the
/// loopback benchmark, where the server's `ON CONFLICT` work is the limit, depths 0, 2 and 8
/// measured the same; the depth hides the network round trip of a remote server.
pub const PIPELINE_DEPTH: usize = 2;

/// The parameters of one statement, owned (they stay alive while it is in flight).
#[derive(Debug)]
pub(crate) enum Params {
    /// One array per column (`UNNEST`).
    Arrays(Vec<ColumnArray>),
    /// One value per placeholder (multi-row `VALUES`).
    Values(Vec<Value>),
}

impl Params {
    fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        match self {
            Params::Arrays(a) => a.iter().map(|v| v as &(dyn ToSql + Sync)).collect(),
            Params::Values(v) => v.iter().map(|v| v as &(dyn ToSql + Sync)).collect(),
        }
    }
}

/// One statement to run with its parameters; kept by the sink until acknowledged.
#[derive(Debug)]
pub(crate) struct Submission {
    pub sql: Arc<str>,
    pub params: Params,
}

type InFlight = Pin<Box<dyn Future<Output = Result<u64, Error>> + Send>>;

pub(crate) struct Session {
    rt: Runtime,
    client: Arc<tokio_postgres::Client>,
    /// Statements prepared on this connection, by SQL text.
    prepared: HashMap<Arc<str>, Statement>,
    /// The COPY in progress, if any.
    copy: Option<Pin<Box<CopyInSink<Bytes>>>>,
    /// Statements sent and not yet acknowledged, oldest first.
    in_flight: VecDeque<InFlight>,
}

impl Session {
    /// Connects (retrying as [`Endpoint::connect_retrying`]).
    pub fn connect(
        endpoint: &Endpoint,
        application_name: &str,
        retries: u32,
        backoff: Duration,
    ) -> Result<Session, PostgresError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                PostgresError::Config(format!("starting the sink connection's runtime: {e}"))
            })?;
        let mut config = endpoint.async_config().clone();
        config.application_name(application_name);
        let client = endpoint.retry_connect(retries, backoff, || {
            let (client, connection) = rt.block_on(config.connect(NoTls))?;
            // Driven whenever this subtask blocks on the runtime; ends with the connection.
            rt.spawn(connection);
            Ok(client)
        })?;
        Ok(Session {
            rt,
            client: Arc::new(client),
            prepared: HashMap::new(),
            copy: None,
            in_flight: VecDeque::new(),
        })
    }

    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.rt.block_on(self.client.batch_execute(sql))
    }

    /// Whether `gid` is prepared (after a connection was lost during `PREPARE TRANSACTION`).
    pub fn is_prepared(&mut self, gid: &str) -> Result<bool, Error> {
        let rows = self.rt.block_on(
            self.client
                .query("SELECT 1 FROM pg_prepared_xacts WHERE gid = $1", &[&gid]),
        )?;
        Ok(!rows.is_empty())
    }

    /// `sql` prepared on this connection (one round trip the first time).
    fn statement(&mut self, sql: &Arc<str>) -> Result<Statement, Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.rt.block_on(self.client.prepare(sql))?;
        self.prepared.insert(sql.clone(), s.clone());
        Ok(s)
    }

    /// Opens COPY statement `sql` (one round trip: the server's `CopyInResponse`) and queues
    /// the binary header.
    pub fn start(&mut self, sql: &Arc<str>) -> Result<(), Error> {
        let stmt = self.statement(sql)?;
        let client = self.client.clone();
        let sink = self.rt.block_on(async move {
            let mut sink = Box::pin(client.copy_in::<_, Bytes>(&stmt).await?);
            let mut header = BytesMut::with_capacity(19);
            copy_format::header(&mut header);
            sink.feed(header.freeze()).await?;
            Ok::<_, Error>(sink)
        })?;
        self.copy = Some(sink);
        Ok(())
    }

    /// Hands `tuples` (whole binary COPY tuples) to the open COPY — opening COPY statement
    /// `sql` first if none is — and lets the connection write them.
    pub fn send(&mut self, sql: &Arc<str>, tuples: Bytes) -> Result<(), Error> {
        if self.copy.is_none() {
            self.start(sql)?;
        }
        let Some(sink) = self.copy.as_mut() else {
            return Ok(());
        };
        self.rt.block_on(async {
            sink.send(tuples).await?;
            // The connection task runs when this future yields: the bytes go to the socket
            // now, not at the next call.
            tokio::task::yield_now().await;
            Ok(())
        })
    }

    /// Ends the open COPY (the trailer, `CopyDone`) and waits for the server's count of the
    /// rows it took; 0 if none is open.
    pub fn finish(&mut self) -> Result<u64, Error> {
        let Some(mut sink) = self.copy.take() else {
            return Ok(0);
        };
        let mut trailer = BytesMut::with_capacity(2);
        copy_format::trailer(&mut trailer);
        self.rt.block_on(async {
            sink.feed(trailer.freeze()).await?;
            sink.as_mut().finish().await
        })
    }

    /// Sends `sub` and leaves it in flight, then waits for the oldest statements until at
    /// most [`PIPELINE_DEPTH`] are (sent first, so the server finds the next one queued).
    /// Returns how many were acknowledged (oldest first).
    pub fn submit(&mut self, sub: &Arc<Submission>) -> Result<usize, Error> {
        let stmt = self.statement(&sub.sql)?;
        let (client, owned) = (self.client.clone(), sub.clone());
        let mut fut: InFlight = Box::pin(async move {
            let params = owned.params.refs();
            client.execute(&stmt, &params).await
        });
        // Poll it once (the request is queued for the connection), then let the connection
        // task write it; its result is waited for later.
        let early = self.rt.block_on(async {
            let r = futures_util::poll!(fut.as_mut());
            tokio::task::yield_now().await;
            r
        });
        match early {
            // Answered already (refused before it was sent, or a very fast server): kept in
            // order all the same, its outcome taken when it is the oldest.
            std::task::Poll::Ready(r) => self.in_flight.push_back(Box::pin(std::future::ready(r))),
            std::task::Poll::Pending => self.in_flight.push_back(fut),
        }
        let mut acked = 0;
        while self.in_flight.len() > PIPELINE_DEPTH {
            self.wait_oldest()?;
            acked += 1;
        }
        Ok(acked)
    }

    /// Waits for every statement in flight; returns how many were acknowledged.
    pub fn drain(&mut self) -> Result<usize, Error> {
        let mut acked = 0;
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
            acked += 1;
        }
        Ok(acked)
    }

    fn wait_oldest(&mut self) -> Result<(), Error> {
        if let Some(fut) = self.in_flight.pop_front() {
            self.rt.block_on(fut)?;
        }
        Ok(())
    }
}
