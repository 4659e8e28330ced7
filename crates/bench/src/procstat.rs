//! Process CPU time and peak memory, read from /proc (Linux) so no C bindings are needed.

/// CPU time (user + system) of this process so far, in nanoseconds; `None` off Linux.
pub fn cpu_time_ns() -> Option<u64> {
    cpu_time_ns_of("self")
}

/// [`cpu_time_ns`] of process `pid` (`"self"` or a number).
pub fn cpu_time_ns_of(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux configuration Rust supports in practice.
    Some((utime + stime) * 10_000_000)
}

/// Peak resident set size (VmHWM) in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    peak_rss_kib_of("self")
}

/// [`peak_rss_kib`] of process `pid` (`"self"` or a number).
pub fn peak_rss_kib_of(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
