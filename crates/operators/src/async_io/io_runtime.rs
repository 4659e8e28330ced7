//! Where the requests' futures run: tokio, one current-thread runtime per operator subtask (the
//! default) or one multi-threaded runtime shared by every async operator of the process (see
//! the module docs for the measurement behind the default). The task thread only creates futures and hands them over; it never polls one.

use std::future::Future;
use std::sync::OnceLock;

use sluice_types::OperatorError;

/// Which tokio runtime an async operator's requests run on (plan option `async.runtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeKind {
    /// One multi-threaded runtime for the whole process (`sluice-async-io-<n>` threads, as many
    /// as cores), created on first use.
    Shared,
    /// One current-thread runtime per operator subtask on a thread of its own
    /// (`sluice-async-<subtask>`), stopped and joined when the operator is dropped.
    PerTask,
}

impl RuntimeKind {
    /// The plan option's value for this kind, as [`RuntimeKind::parse`] reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::Shared => "shared",
            RuntimeKind::PerTask => "per-task",
        }
    }
    /// Reads the plan option's value (`shared` or `per-task`, any case); `None` otherwise.
    pub fn parse(s: &str) -> Option<RuntimeKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "shared" => Some(RuntimeKind::Shared),
            "per-task" => Some(RuntimeKind::PerTask),
            _ => None,
        }
    }
}

/// The process-wide runtime ([`RuntimeKind::Shared`]). Its threads are the process's, not a
/// job's: they park when no request is in flight and live until the process exits.
fn shared() -> Result<&'static tokio::runtime::Runtime, OperatorError> {
    static SHARED: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let workers = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .clamp(1, 8);
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name_fn(|| {
                    static N: std::sync::atomic::AtomicUsize =
                        std::sync::atomic::AtomicUsize::new(0);
                    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    format!("sluice-async-io-{n}")
                })
                .enable_time()
                .enable_io()
                .build()
                .map_err(|e| format!("cannot start the shared async I/O runtime: {e}"))
        })
        .as_ref()
        .map_err(|e| OperatorError::failed(e.clone()))
}

/// One operator subtask's handle on its runtime.
pub(crate) struct IoRuntime {
    handle: tokio::runtime::Handle,
    /// Per-task runtimes: the thread driving it and the signal that stops it.
    own: Option<(
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    )>,
}

impl IoRuntime {
    pub(crate) fn start(kind: RuntimeKind, subtask: usize) -> Result<IoRuntime, OperatorError> {
        match kind {
            RuntimeKind::Shared => Ok(IoRuntime {
                handle: shared()?.handle().clone(),
                own: None,
            }),
            RuntimeKind::PerTask => {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .enable_io()
                    .build()
                    .map_err(|e| {
                        OperatorError::failed(format!("cannot start an async I/O runtime: {e}"))
                    })?;
                let handle = rt.handle().clone();
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let thread = std::thread::Builder::new()
                    .name(format!("sluice-async-{subtask}"))
                    .spawn(move || {
                        let _ = rt.block_on(stopped);
                        // Dropping the runtime cancels whatever is still in flight.
                    })
                    .map_err(|e| {
                        OperatorError::failed(format!("cannot start an async I/O thread: {e}"))
                    })?;
                Ok(IoRuntime {
                    handle,
                    own: Some((stop, thread)),
                })
            }
        }
    }

    pub(crate) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.handle.enter()
    }

    pub(crate) fn spawn<F>(&self, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.handle.spawn(fut)
    }
}

impl Drop for IoRuntime {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.own.take() {
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}
