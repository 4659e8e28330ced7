//! Where rows come from: the sources' common face, and the per-subtask client that a runtime
//! drives (sync: the task thread's `block_on`; async: the subtask's I/O thread).

use std::sync::Arc;

use crate::http::{HttpClient, HttpLookup};
use crate::memory::MemoryLookup;
use crate::metrics::LookupStats;
use crate::postgres::{PgClient, PostgresLookup};
use crate::{LookupError, LookupKey};

/// A row as the source holds it: a JSON value (an HTTP answer's body; a PostgreSQL row as an
/// object of its columns).
pub type Row = serde_json::Value;

/// An external system to look rows up in by key. Cloning shares its [`LookupStats`].
#[derive(Clone, Debug)]
pub struct LookupSource {
    pub(crate) kind: SourceKind,
    pub(crate) stats: Arc<LookupStats>,
}

#[derive(Clone, Debug)]
pub(crate) enum SourceKind {
    Http(HttpLookup),
    Postgres(PostgresLookup),
    Memory(MemoryLookup),
}

impl From<HttpLookup> for LookupSource {
    fn from(h: HttpLookup) -> Self {
        LookupSource {
            kind: SourceKind::Http(h),
            stats: Arc::default(),
        }
    }
}

impl From<PostgresLookup> for LookupSource {
    fn from(p: PostgresLookup) -> Self {
        LookupSource {
            kind: SourceKind::Postgres(p),
            stats: Arc::default(),
        }
    }
}

impl From<MemoryLookup> for LookupSource {
    fn from(m: MemoryLookup) -> Self {
        LookupSource {
            kind: SourceKind::Memory(m),
            stats: Arc::default(),
        }
    }
}

impl LookupSource {
    /// An HTTP JSON service: `GET` the template with `{key}` replaced (see [`HttpLookup`]).
    pub fn http(url_template: &str) -> Result<LookupSource, LookupError> {
        Ok(HttpLookup::new(url_template)?.into())
    }

    /// A PostgreSQL table by key column (see [`PostgresLookup`]).
    pub fn postgres(url: &str, table: &str, key_column: &str) -> Result<LookupSource, LookupError> {
        Ok(PostgresLookup::new(url, table, key_column)?.into())
    }

    /// Counters of every lookup that uses this source (all subtasks and attempts).
    pub fn stats(&self) -> &Arc<LookupStats> {
        &self.stats
    }

    /// What the source is, for names and errors (no credentials).
    pub fn describe(&self) -> String {
        match &self.kind {
            SourceKind::Http(h) => h.describe(),
            SourceKind::Postgres(p) => p.describe(),
            SourceKind::Memory(m) => m.describe(),
        }
    }

    /// A client for one subtask; runs inside the subtask's runtime.
    pub(crate) async fn connect(&self) -> Result<Client, LookupError> {
        Ok(match &self.kind {
            SourceKind::Http(h) => Client::Http(Arc::new(h.client()?)),
            SourceKind::Postgres(p) => Client::Postgres(Arc::new(p.client().await?)),
            SourceKind::Memory(m) => Client::Memory(m.clone()),
        })
    }
}

/// One subtask's connection to its source; cheap to clone into request futures.
#[derive(Clone)]
pub(crate) enum Client {
    Http(Arc<HttpClient>),
    Postgres(Arc<PgClient>),
    Memory(MemoryLookup),
}

impl Client {
    /// One attempt: the rows of `key` (empty: none).
    pub(crate) async fn get(&self, key: &LookupKey) -> Result<Vec<Row>, LookupError> {
        if *key == LookupKey::Null {
            return Ok(Vec::new());
        }
        match self {
            Client::Http(c) => c.get(key).await,
            Client::Postgres(c) => c.get(key).await,
            Client::Memory(m) => Ok(m.get(key).as_ref().clone()),
        }
    }
}
