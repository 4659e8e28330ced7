//! What Linux tells about a thread of this process without stopping it: its scheduler state
//! (`/proc/self/task/<tid>/stat`), the system call it is blocked in (`.../syscall`) and the
//! kernel function it sleeps in (`.../wchan`). Plain file reads: no signals, no ptrace.

/// One look at a thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadLook {
    /// The state letter of `stat`: `R` running or runnable, `S` sleeping, `D` uninterruptible
    /// (disk), `T`/`t` stopped, `Z` zombie.
    pub state: char,
    /// The system call the thread is blocked in (`None` when running or unknown).
    pub syscall: Option<u64>,
    /// Its first four arguments (zeros when unknown): what a `futex` wait waits for.
    pub args: [u64; 4],
    /// The kernel function the thread sleeps in (`None` when running or hidden).
    pub wchan: Option<String>,
}

impl ThreadLook {
    /// Whether the thread is on (or ready for) a CPU.
    pub fn on_cpu(&self) -> bool {
        self.state == 'R'
    }
}

/// Looks at thread `tid` of this process; `None` when it is gone.
pub fn look(tid: u64) -> Option<ThreadLook> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let state = parse_stat_state(&stat)?;
    if state == 'R' {
        return Some(ThreadLook {
            state,
            syscall: None,
            args: [0; 4],
            wchan: None,
        });
    }
    let line = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).ok();
    let syscall = line.as_deref().and_then(parse_syscall);
    let args = line.as_deref().map(parse_syscall_args).unwrap_or([0; 4]);
    let wchan = std::fs::read_to_string(format!("/proc/self/task/{tid}/wchan"))
        .ok()
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty() && w != "0");
    Some(ThreadLook {
        state,
        syscall,
        args,
        wchan,
    })
}

impl ThreadLook {
    /// What the thread waits for when it is blocked in `futex` (`None` otherwise).
    pub fn futex_wait(&self) -> Option<FutexWait> {
        match self.syscall.map(|nr| syscall_name(nr).1) {
            Some(WaitKind::Futex) => Some(classify_futex(&self.args)),
            _ => None,
        }
    }
}

/// What a `futex` wait is, read from its arguments (`uaddr`, `op`, `val`, `timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexWait {
    /// A contended mutex: a wait for the value 2, untimed. 2 is "locked, with waiters" in both
    /// glibc's low-level lock (`pthread_mutex_lock`) and Rust std's futex mutex, and the value
    /// a lock waits for; a priority-inheritance lock (`FUTEX_LOCK_PI`) is a mutex by its op.
    /// Java calls such a thread BLOCKED. (A condition variable whose sequence number happens to
    /// be 2 looks the same: rare, and short-lived, as the number moves with every notify.)
    Mutex {
        /// The lock word's address (`uaddr`): threads waiting on one lock share it.
        addr: u64,
    },
    /// A wait with a timeout: a timed park or condition wait (TIMED_WAITING).
    Timed,
    /// Any other wait: a park, a condition variable, a channel (WAITING).
    Untimed,
}

/// Linux's `futex` commands (the low 7 bits of `op`).
const FUTEX_WAIT: u64 = 0;
const FUTEX_LOCK_PI: u64 = 6;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_LOCK_PI2: u64 = 13;

/// Classifies a `futex` call from its first four arguments.
pub fn classify_futex(args: &[u64; 4]) -> FutexWait {
    let [addr, op, val, timeout] = *args;
    match op & 0x7f {
        FUTEX_LOCK_PI | FUTEX_LOCK_PI2 => FutexWait::Mutex { addr },
        FUTEX_WAIT | FUTEX_WAIT_BITSET if timeout != 0 => FutexWait::Timed,
        FUTEX_WAIT | FUTEX_WAIT_BITSET if val as u32 == 2 => FutexWait::Mutex { addr },
        _ => FutexWait::Untimed,
    }
}

/// The state letter of a `stat` line: the field after the parenthesised command name (which
/// may itself hold spaces and parentheses, hence the last `)`).
pub fn parse_stat_state(stat: &str) -> Option<char> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// The system call number of a `syscall` line (`running` or `-1 ...` give `None`).
pub fn parse_syscall(line: &str) -> Option<u64> {
    line.split_whitespace().next()?.parse().ok()
}

/// The first four arguments of a `syscall` line (`nr arg0 … arg5 sp pc`, hexadecimal); zeros
/// where missing.
pub fn parse_syscall_args(line: &str) -> [u64; 4] {
    let mut out = [0; 4];
    for (slot, field) in out.iter_mut().zip(line.split_whitespace().skip(1)) {
        *slot = u64::from_str_radix(field.trim_start_matches("0x"), 16).unwrap_or(0);
    }
    out
}

/// The comm name of thread `tid` (at most 15 bytes: the kernel's limit).
pub fn comm(tid: u64) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Ids of every thread of this process.
pub fn threads() -> Vec<u64> {
    let mut tids: Vec<u64> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    tids
}

/// What a blocking system call is, for frames and the doctor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// `nanosleep`, `clock_nanosleep`: a sleep.
    Sleep,
    /// `read`, `recvfrom`, `recvmsg`, `poll`, `epoll_wait`, ...: waiting for a socket, pipe or file.
    Io,
    /// `futex`: a lock, a condition variable, a park.
    Futex,
    /// Anything else.
    Other,
}

/// The name and kind of an x86-64 or aarch64 system call number (the ones threads block in).
pub fn syscall_name(nr: u64) -> (&'static str, WaitKind) {
    #[cfg(target_arch = "aarch64")]
    let table: &[(u64, &str, WaitKind)] = &[
        (101, "nanosleep", WaitKind::Sleep),
        (115, "clock_nanosleep", WaitKind::Sleep),
        (98, "futex", WaitKind::Futex),
        (63, "read", WaitKind::Io),
        (65, "readv", WaitKind::Io),
        (67, "pread64", WaitKind::Io),
        (207, "recvfrom", WaitKind::Io),
        (212, "recvmsg", WaitKind::Io),
        (73, "ppoll", WaitKind::Io),
        (72, "pselect6", WaitKind::Io),
        (22, "epoll_pwait", WaitKind::Io),
        (202, "accept", WaitKind::Io),
        (242, "accept4", WaitKind::Io),
        (203, "connect", WaitKind::Io),
        (64, "write", WaitKind::Io),
        (206, "sendto", WaitKind::Io),
        (82, "fsync", WaitKind::Io),
        (83, "fdatasync", WaitKind::Io),
        (260, "wait4", WaitKind::Other),
    ];
    #[cfg(not(target_arch = "aarch64"))]
    let table: &[(u64, &str, WaitKind)] = &[
        (35, "nanosleep", WaitKind::Sleep),
        (230, "clock_nanosleep", WaitKind::Sleep),
        (202, "futex", WaitKind::Futex),
        (0, "read", WaitKind::Io),
        (19, "readv", WaitKind::Io),
        (17, "pread64", WaitKind::Io),
        (45, "recvfrom", WaitKind::Io),
        (47, "recvmsg", WaitKind::Io),
        (7, "poll", WaitKind::Io),
        (271, "ppoll", WaitKind::Io),
        (23, "select", WaitKind::Io),
        (270, "pselect6", WaitKind::Io),
        (232, "epoll_wait", WaitKind::Io),
        (281, "epoll_pwait", WaitKind::Io),
        (43, "accept", WaitKind::Io),
        (288, "accept4", WaitKind::Io),
        (42, "connect", WaitKind::Io),
        (1, "write", WaitKind::Io),
        (44, "sendto", WaitKind::Io),
        (74, "fsync", WaitKind::Io),
        (75, "fdatasync", WaitKind::Io),
        (61, "wait4", WaitKind::Other),
    ];
    table
        .iter()
        .find(|(n, _, _)| *n == nr)
        .map(|(_, name, kind)| (*name, *kind))
        .unwrap_or(("syscall", WaitKind::Other))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_state_survives_odd_command_names() {
        assert_eq!(parse_stat_state("12 (a) b) S 1 2 3"), Some('S'));
        assert_eq!(parse_stat_state("12 (map (1/2)) R 1"), Some('R'));
        assert_eq!(parse_stat_state("garbage"), None);
    }

    #[test]
    fn syscall_lines() {
        assert_eq!(
            parse_syscall("230 0x1 0x0 0x7ffd 0x0 0x0 0x0 0x7ff 0x7f"),
            Some(230)
        );
        assert_eq!(parse_syscall("running"), None);
        assert_eq!(parse_syscall("-1 0x7ffd 0x7f"), None);
        assert_eq!(
            parse_syscall_args("202 0x7f10 0x89 0x2 0x0 0x0 0xffffffff 0x7ffd 0x7f"),
            [0x7f10, 0x89, 2, 0]
        );
        assert_eq!(parse_syscall_args("running"), [0; 4]);
    }

    #[test]
    fn futex_waits_are_told_apart_by_their_arguments() {
        // Rust std's mutex and glibc's lll_lock_wait: wait for 2, no timeout.
        assert_eq!(
            classify_futex(&[0x10, 0x89, 2, 0]),
            FutexWait::Mutex { addr: 0x10 }
        );
        assert_eq!(
            classify_futex(&[0x10, 0x80, 2, 0]),
            FutexWait::Mutex { addr: 0x10 }
        );
        assert_eq!(
            classify_futex(&[0x10, 0x86, 0, 0]),
            FutexWait::Mutex { addr: 0x10 }
        );
        // A park (std waits for u32::MAX), a timed park, a condition variable.
        assert_eq!(
            classify_futex(&[0x10, 0x89, 0xffff_ffff, 0]),
            FutexWait::Untimed
        );
        assert_eq!(
            classify_futex(&[0x10, 0x89, 0xffff_ffff, 0x7ffd]),
            FutexWait::Timed
        );
        assert_eq!(classify_futex(&[0x10, 0x89, 7, 0]), FutexWait::Untimed);
    }

    #[test]
    fn a_sleeping_thread_is_seen_in_its_sleep() {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            tx.send(sluice_metrics::cpu::current_thread_id()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(400));
        });
        let tid = rx.recv().unwrap().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut seen = None;
        while std::time::Instant::now() < deadline {
            let l = look(tid).unwrap();
            if l.state == 'S' && l.syscall.is_some() {
                seen = Some(l);
                break;
            }
        }
        h.join().unwrap();
        let l = seen.expect("the thread was never seen asleep");
        assert_eq!(syscall_name(l.syscall.unwrap()).1, WaitKind::Sleep, "{l:?}");
        assert!(threads().contains(&sluice_metrics::cpu::current_thread_id().unwrap()));
    }
}
