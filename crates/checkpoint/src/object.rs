//! Checkpoints on an S3-compatible object store (`object_store`'s Amazon S3 client): a
//! checkpoint directory named `s3://bucket/prefix` (as Flink's `state.checkpoints.dir`) keeps
//! the same layout as on disk — `prefix/chk-<id>/<operator>.<subtask>.state` and
//! `prefix/chk-<id>/_metadata` — so every process of a job split over machines (or pods) reads
//! and writes one place.
//!
//! Completeness without a rename: every state file is put first and `_metadata` last, and a
//! checkpoint counts only once its `_metadata` reads as a manifest whose files' sizes and CRC32s
//! match (a put is atomic per object, so a crash mid-checkpoint leaves a `chk-<id>` without
//! `_metadata`, which [`latest`](crate::storage::latest) skips and
//! [`prune`](crate::storage::prune) removes with the old ones).
//!
//! Connection settings come from the environment as the AWS tools read them
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL` for a store
//! other than AWS, `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint, ...). The client is async:
//! its calls run on one small tokio runtime of their own (`checkpoint-io` thread), each waited
//! for by the calling thread, which may be any thread (the coordinator, a launcher, a REST
//! handler).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sluice_types::OperatorError;

/// The URL scheme of an object-store checkpoint directory.
pub const SCHEME: &str = "s3://";

/// A checkpoint directory on an object store: the bucket's client and the key prefix.
pub(crate) struct ObjectDir {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    /// As given (`s3://bucket/prefix`), for messages and for the paths handed back.
    url: String,
}

/// `Some` when `dir` names an object-store location (`s3://…`).
pub(crate) fn parse(dir: &Path) -> Option<Result<ObjectDir, OperatorError>> {
    let url = dir.to_str()?.strip_suffix('/').unwrap_or(dir.to_str()?);
    let rest = url.strip_prefix(SCHEME)?;
    Some(open(url, rest))
}

fn open(url: &str, rest: &str) -> Result<ObjectDir, OperatorError> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(OperatorError::failed(format!(
            "checkpoint location {url}: no bucket (expected s3://BUCKET/PREFIX)"
        )));
    }
    let prefix = ObjectPath::parse(prefix).map_err(|e| {
        OperatorError::failed(format!("checkpoint location {url}: bad key prefix: {e}"))
    })?;
    Ok(ObjectDir {
        store: client(bucket, url)?,
        prefix,
        url: url.to_string(),
    })
}

/// One client per bucket for the process (connections are pooled inside it).
fn client(bucket: &str, url: &str) -> Result<Arc<dyn ObjectStore>, OperatorError> {
    static CLIENTS: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let mut clients = CLIENTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(c) = clients.get(bucket) {
        return Ok(c.clone());
    }
    // The TLS client uses ring, as the rest of the process (a second provider would make
    // rustls refuse to pick one).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .build()
        .map_err(|e| {
            OperatorError::failed(format!(
                "checkpoint location {url}: cannot set up the S3 client: {e}"
            ))
        })?;
    let store: Arc<dyn ObjectStore> = Arc::new(store);
    clients.insert(bucket.to_string(), store.clone());
    Ok(store)
}

/// Runs `fut` on the checkpoint I/O runtime and waits for it from this (any) thread.
fn block_on<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, OperatorError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    let rt = RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("checkpoint-io")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| OperatorError::failed(format!("starting the checkpoint I/O runtime: {e}")))?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .map_err(|_| OperatorError::failed("the checkpoint I/O runtime stopped".to_string()))
}

impl ObjectDir {
    fn key(&self, parts: &[&str]) -> ObjectPath {
        parts
            .iter()
            .fold(self.prefix.clone(), |p, part| p.join(*part))
    }

    fn err(&self, what: String, e: impl std::fmt::Display) -> OperatorError {
        OperatorError::failed(format!("{what} ({}): {e}", self.url))
    }

    /// The location `name` inside this one, as a path for the callers.
    pub fn child_path(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("{}/{name}", self.url))
    }

    pub fn put(&self, parts: &[&str], bytes: Vec<u8>) -> Result<(), OperatorError> {
        let (store, key) = (self.store.clone(), self.key(parts));
        let shown = key.to_string();
        block_on(async move { store.put(&key, PutPayload::from(bytes)).await })?
            .map(|_| ())
            .map_err(|e| self.err(format!("writing {shown}"), e))
    }

    /// The object's bytes; `None` when there is no such object.
    pub fn get(&self, parts: &[&str]) -> Result<Option<Vec<u8>>, OperatorError> {
        let (store, key) = (self.store.clone(), self.key(parts));
        let shown = key.to_string();
        let got = block_on(async move {
            match store.get(&key).await {
                Ok(r) => r.bytes().await.map(|b| Some(b.to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        got.map_err(|e| self.err(format!("reading {shown}"), e))
    }

    /// Removes the object `parts` (nothing when there is none).
    pub fn delete(&self, parts: &[&str]) -> Result<(), OperatorError> {
        let (store, key) = (self.store.clone(), self.key(parts));
        let shown = key.to_string();
        block_on(async move {
            match store.delete(&key).await {
                Err(object_store::Error::NotFound { .. }) => Ok(()),
                r => r,
            }
        })?
        .map_err(|e| self.err(format!("removing {shown}"), e))
    }

    /// Removes every object under `parts` (as a directory).
    pub fn delete_all(&self, parts: &[&str]) -> Result<(), OperatorError> {
        let (store, key) = (self.store.clone(), self.key(parts));
        let shown = key.to_string();
        block_on(async move {
            let keys: Vec<ObjectPath> = store
                .list(Some(&key))
                .map_ok(|m| m.location)
                .try_collect()
                .await?;
            for k in keys {
                store.delete(&k).await?;
            }
            Ok::<_, object_store::Error>(())
        })?
        .map_err(|e| self.err(format!("removing {shown}"), e))
    }

    /// The names directly under this location that look like directories (`chk-<id>`).
    pub fn children(&self) -> Result<Vec<String>, OperatorError> {
        let (store, key) = (self.store.clone(), self.prefix.clone());
        let listed = block_on(async move { store.list_with_delimiter(Some(&key)).await })?
            .map_err(|e| self.err("listing".to_string(), e))?;
        Ok(listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect())
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}
