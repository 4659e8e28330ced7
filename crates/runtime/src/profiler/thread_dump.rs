//! A thread dump of the process in Flink's shape (`threadInfos[]` of `threadName` and
//! `stringifiedThreadInfo`, Java's `ThreadInfo.toString`): every thread with a Java-like state,
//! task threads named `<vertex> (<i>/<p>)#<attempt>` with their frames: the native stack they
//! were running (sampled for a moment), or, off CPU, what they wait in.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::procfs::{self, syscall_name, WaitKind};
use super::{native, off_cpu_stack, ProfiledThread};

/// One thread of a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    pub thread_name: String,
    /// Java's format: `"name" Id=N STATE`, then a tab-indented `at frame` per line, leaf first.
    pub stringified: String,
}

/// How long running threads are sampled for their native stacks.
const NATIVE_GLANCE: Duration = Duration::from_millis(200);

/// Java's state of a thread Linux shows as `look`: running and I/O-blocked threads are
/// RUNNABLE (as Java reports a thread in a socket read), sleeps and timed parks TIMED_WAITING,
/// other futex waits WAITING.
fn java_state(look: &procfs::ThreadLook, timed_wait: bool) -> &'static str {
    if look.on_cpu() || look.state == 'D' {
        return "RUNNABLE";
    }
    match look.syscall.map(|nr| syscall_name(nr).1) {
        Some(WaitKind::Sleep) => "TIMED_WAITING",
        Some(WaitKind::Io) => "RUNNABLE",
        Some(WaitKind::Futex) if timed_wait => "TIMED_WAITING",
        _ => "WAITING",
    }
}

fn stringify(name: &str, tid: u64, state: &str, frames_leaf_first: &[String]) -> String {
    let mut s = format!("\"{name}\" Id={tid} {state}\n");
    for f in frames_leaf_first {
        s.push_str("\tat ");
        s.push_str(f);
        s.push('\n');
    }
    s.push('\n');
    s
}

/// Dumps every thread of the process; `tasks` are the task threads of the running jobs (the
/// others are named by their kernel name).
pub fn thread_dump(tasks: &[ProfiledThread], max_depth: usize) -> Vec<ThreadInfo> {
    let by_tid: HashMap<u64, &ProfiledThread> = tasks
        .iter()
        .filter(|t| t.metrics.thread_id.load(Relaxed) != 0)
        .map(|t| (t.metrics.thread_id.load(Relaxed), t))
        .collect();
    let pthreads: Vec<u64> = tasks
        .iter()
        .map(|t| t.metrics.pthread_id.load(Relaxed))
        .filter(|p| *p != 0)
        .collect();
    // The most frequent native stack of each running task thread over a short glance.
    let (_, native) = if pthreads.is_empty() {
        ((), Err(String::new()))
    } else {
        native::sample_during_if_free(499, &pthreads, || std::thread::sleep(NATIVE_GLANCE))
    };
    let mut out = Vec::new();
    for tid in procfs::threads() {
        let Some(look) = procfs::look(tid) else {
            continue;
        };
        match by_tid.get(&tid) {
            Some(t) => {
                let name = t.thread_name();
                let timed = t.metrics.waits.idle_since.load(Relaxed) != 0
                    || t.metrics.waits.backpressured_since.load(Relaxed) != 0;
                let mut frames: Vec<String> = if look.on_cpu() {
                    native
                        .as_ref()
                        .ok()
                        .and_then(|n| n.by_thread.get(&t.metrics.pthread_id.load(Relaxed)))
                        .and_then(|stacks| stacks.iter().max_by_key(|(_, c)| *c))
                        .map(|(s, _)| {
                            let mut st = vec![super::task_frame(&t.vertex_name)];
                            st.extend(super::trim_stack(s, max_depth).iter().cloned());
                            st
                        })
                        .unwrap_or_else(|| {
                            let why = match &native {
                                Err(e) if !e.is_empty() => format!("[running] ({e})"),
                                _ => "[running] (no native stack sampled)".to_string(),
                            };
                            vec![super::task_frame(&t.vertex_name), why]
                        })
                } else {
                    off_cpu_stack(t, &look)
                };
                frames.reverse();
                frames.truncate(max_depth);
                out.push(ThreadInfo {
                    stringified: stringify(&name, tid, java_state(&look, timed), &frames),
                    thread_name: name,
                });
            }
            None => {
                let name = procfs::comm(tid).unwrap_or_else(|| format!("thread-{tid}"));
                let mut frames = Vec::new();
                if let Some(w) = &look.wchan {
                    frames.push(format!("[kernel] {w}"));
                }
                if let Some(nr) = look.syscall {
                    frames.push(super::syscall_frame(nr));
                }
                out.push(ThreadInfo {
                    stringified: stringify(&name, tid, java_state(&look, false), &frames),
                    thread_name: name,
                });
            }
        }
    }
    out
}
