//! A thread dump of the process in Flink's shape (`threadInfos[]` of `threadName` and
//! `stringifiedThreadInfo`, Java's `ThreadInfo.toString`): every thread with a Java-like state,
//! task threads named `<vertex> (<i>/<p>)#<attempt>` with their frames: the native stack they
//! were running (sampled for a moment), or, off CPU, what they wait in.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::procfs::{self, syscall_name, FutexWait, WaitKind};
use super::{native, off_cpu_stack, ProfiledThread};

/// One thread of a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    /// A task thread's Flink name (`<vertex> (<i>/<p>)#<attempt>`), else the OS thread's name.
    pub thread_name: String,
    /// Java's format: `"name" Id=N STATE`, then a tab-indented `at frame` per line, leaf first.
    pub stringified: String,
}

/// How long running threads are sampled for their native stacks.
const NATIVE_GLANCE: Duration = Duration::from_millis(200);

/// Java's state of a thread Linux shows as `look` (with Java's `on <lock>` for a blocked one):
/// running and I/O-blocked threads are RUNNABLE (as Java reports a thread in a socket read), a
/// futex wait on a contended mutex BLOCKED, sleeps and timed waits TIMED_WAITING (as is a task
/// waiting for input or credit, `engine_wait`), other futex waits WAITING.
fn java_state(look: &procfs::ThreadLook, engine_wait: bool) -> String {
    if look.on_cpu() || look.state == 'D' {
        return "RUNNABLE".into();
    }
    match look.futex_wait() {
        Some(FutexWait::Mutex { addr }) if !engine_wait => {
            return format!("BLOCKED on mutex@{addr:#x}");
        }
        Some(_) if engine_wait => return "TIMED_WAITING".into(),
        Some(FutexWait::Timed) => return "TIMED_WAITING".into(),
        Some(_) => return "WAITING".into(),
        None => {}
    }
    match look.syscall.map(|nr| syscall_name(nr).1) {
        Some(WaitKind::Sleep) => "TIMED_WAITING".into(),
        Some(WaitKind::Io) => "RUNNABLE".into(),
        _ => "WAITING".into(),
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
                    stringified: stringify(&name, tid, &java_state(&look, timed), &frames),
                    thread_name: name,
                });
            }
            None => {
                let name = procfs::comm(tid).unwrap_or_else(|| format!("thread-{tid}"));
                let mut frames = Vec::new();
                if let Some(w) = &look.wchan {
                    frames.push(format!("[kernel] {w}"));
                }
                if let Some(f) = super::call_frame(&look) {
                    frames.push(f);
                }
                out.push(ThreadInfo {
                    stringified: stringify(&name, tid, &java_state(&look, false), &frames),
                    thread_name: name,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Instant;

    fn state_of<'a>(dump: &'a [ThreadInfo], name: &str) -> Option<&'a str> {
        let t = dump.iter().find(|t| t.thread_name == name)?;
        let first = t.stringified.lines().next()?;
        Some(first.split_once(" Id=")?.1.split_once(' ')?.1)
    }

    #[test]
    fn a_thread_waiting_for_a_held_mutex_is_blocked_others_wait() {
        let lock = Arc::new(Mutex::new(()));
        let held = lock.lock().unwrap();
        let l = lock.clone();
        let blocked = std::thread::Builder::new()
            .name("lock-waiter".into())
            .spawn(move || drop(l.lock().unwrap()))
            .unwrap();
        let cond = Arc::new((Mutex::new(false), Condvar::new()));
        let c = cond.clone();
        let waiting = std::thread::Builder::new()
            .name("cond-waiter".into())
            .spawn(move || {
                let (m, cv) = &*c;
                let mut done = m.lock().unwrap();
                while !*done {
                    done = cv.wait(done).unwrap();
                }
            })
            .unwrap();
        let parker = std::thread::Builder::new()
            .name("timed-parker".into())
            .spawn(|| std::thread::park_timeout(Duration::from_secs(30)))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut last;
        let seen = loop {
            last = thread_dump(&[], 8);
            let s = |n| state_of(&last, n).map(str::to_string);
            let states = (s("lock-waiter"), s("cond-waiter"), s("timed-parker"));
            if states
                .0
                .as_deref()
                .is_some_and(|s| s.starts_with("BLOCKED on mutex@0x"))
                && states.1.as_deref() == Some("WAITING")
                && states.2.as_deref() == Some("TIMED_WAITING")
            {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        drop(held);
        blocked.join().unwrap();
        *cond.0.lock().unwrap() = true;
        cond.1.notify_all();
        waiting.join().unwrap();
        parker.thread().unpark();
        parker.join().unwrap();
        assert!(seen, "{last:#?}");
        let waiter = last
            .iter()
            .find(|t| t.thread_name == "lock-waiter")
            .unwrap();
        assert!(
            waiter
                .stringified
                .contains("\tat [syscall] futex (lock: contended mutex)\n"),
            "{waiter:?}"
        );
    }
}
