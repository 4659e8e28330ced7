//! The main connection of an appending sink: tokio-postgres on a current-thread runtime of
//! the subtask's own, so that one `COPY … FROM STDIN (FORMAT binary)` can stay open across
//! batches — for the whole checkpoint transaction of a two-phase append. (The synchronous
//! client's copy writer borrows its client and cannot outlive one call.) A batch's bytes are
//! handed to the open COPY and the connection task is let run once, so they reach the socket
//! at the flush; no round trip is waited for until [`CopyStream::finish`] at the barrier.
//! The server reports a failed COPY (a lost connection, a refused value) at the latest there.

use std::pin::Pin;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::SinkExt;
use tokio::runtime::Runtime;
use tokio_postgres::{CopyInSink, NoTls, Statement};

use crate::connect::Endpoint;
use crate::copy_format;
use crate::PostgresError;

pub(crate) struct CopyStream {
    rt: Runtime,
    client: tokio_postgres::Client,
    sql: String,
    /// The COPY statement, prepared once per connection (one round trip saved per COPY).
    statement: Option<Statement>,
    /// The COPY in progress, if any.
    copy: Option<Pin<Box<CopyInSink<Bytes>>>>,
}

impl CopyStream {
    /// Connects (retrying as [`Endpoint::connect_retrying`]) for `COPY` statement `sql`.
    pub fn connect(
        endpoint: &Endpoint,
        application_name: &str,
        retries: u32,
        backoff: Duration,
        sql: &str,
    ) -> Result<CopyStream, PostgresError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PostgresError::Config(format!("starting the COPY connection's runtime: {e}")))?;
        let mut config = endpoint.async_config().clone();
        config.application_name(application_name);
        let client = endpoint.retry_connect(retries, backoff, || {
            let (client, connection) = rt.block_on(config.connect(NoTls))?;
            // Driven whenever this subtask blocks on the runtime; ends with the connection.
            rt.spawn(connection);
            Ok(client)
        })?;
        Ok(CopyStream {
            rt,
            client,
            sql: sql.to_string(),
            statement: None,
            copy: None,
        })
    }

    pub fn batch_execute(&mut self, sql: &str) -> Result<(), tokio_postgres::Error> {
        self.rt.block_on(self.client.batch_execute(sql))
    }

    /// Whether `gid` is prepared (after a connection was lost during `PREPARE TRANSACTION`).
    pub fn is_prepared(&mut self, gid: &str) -> Result<bool, tokio_postgres::Error> {
        let rows = self.rt.block_on(
            self.client
                .query("SELECT 1 FROM pg_prepared_xacts WHERE gid = $1", &[&gid]),
        )?;
        Ok(!rows.is_empty())
    }

    /// Opens a COPY (one round trip: the server's `CopyInResponse`) and queues the header.
    pub fn start(&mut self) -> Result<(), tokio_postgres::Error> {
        let CopyStream {
            rt,
            client,
            sql,
            statement,
            copy,
        } = self;
        rt.block_on(async {
            let stmt = match statement {
                Some(s) => s.clone(),
                None => statement.insert(client.prepare(sql).await?).clone(),
            };
            let mut sink = Box::pin(client.copy_in::<_, Bytes>(&stmt).await?);
            let mut header = BytesMut::with_capacity(19);
            copy_format::header(&mut header);
            sink.feed(header.freeze()).await?;
            *copy = Some(sink);
            Ok(())
        })
    }

    /// Hands `bytes` (whole tuples) to the open COPY (opened first if none is) and lets the
    /// connection write them.
    pub fn send(&mut self, bytes: Bytes) -> Result<(), tokio_postgres::Error> {
        if self.copy.is_none() {
            self.start()?;
        }
        let Some(sink) = self.copy.as_mut() else {
            return Ok(());
        };
        self.rt.block_on(async {
            sink.send(bytes).await?;
            // The connection task runs when this future yields: the bytes go to the socket
            // now, not at the next call.
            tokio::task::yield_now().await;
            Ok(())
        })
    }

    /// Ends the open COPY (the trailer, `CopyDone`) and waits for the server's count of the
    /// rows it took.
    pub fn finish(&mut self) -> Result<u64, tokio_postgres::Error> {
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
}
