//! A job over several processes (`--processes N`, or a Kubernetes StatefulSet's pods).
//!
//! The launcher ([`launch`]) picks a loopback port per process and starts N copies of the
//! running program with the same arguments plus the process's index and every process's
//! address (`--process-index`, `--peers`). Each connects its `NetEndpoint` to the others
//! ([`join`]), builds the same job and runs the subtasks placed on it (see
//! `sluice_datastream::placement`). Process 0 serves the REST API. The launcher waits for all: if
//! one fails it stops the others (by PID) and, for a job that checkpoints, starts them all
//! again from the latest completed checkpoint as long as the job's restart strategy allows
//! (Flink's full restart; all share one `--job-id`, so their checkpoints are in one place),
//! else fails naming it. Files a job writes per process are named by [`part_path`].
//!
//! Because the launcher re-runs the program itself, any program that parses [`ProcessArgs`]
//! (the built-in `sluice run`, or a user's program through [`crate::launch`]) is split the
//! same way.

mod child_output;
mod join;
mod launcher;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

pub use join::{join, join_peers};
pub use launcher::{launch, Launcher};

/// The exit status of a process whose job was refused before it started (a bad flag, an
/// invalid job, an unreachable output): the same on every restart, so the launcher does not
/// restart it. A program returns it for [`crate::SluiceError::Refused`].
pub const REFUSED_EXIT: u8 = 3;

/// Set by the launcher in the processes it starts: its PID, which they exit without.
const LAUNCHER_PID: &str = "SLUICE_LAUNCHER_PID";

/// The flags that split a job over processes and put the autopilot on it; `sluice run`
/// flattens them, and so does [`crate::RunOptions`].
#[derive(Args, Debug, Clone)]
pub struct ProcessArgs {
    /// Run the autopilot on the job while it runs: the same loop as `sluice doctor --apply
    /// --watch`, against the job's own REST API (needs it; not with --no-rest). Decisions go to
    /// stderr and to GET /jobs/:jid/autopilot (the dashboard's timeline of changes).
    #[arg(long, global = true, conflicts_with = "no_rest")]
    pub autopilot: bool,
    /// Run the job over N local processes (TaskManagers): every process builds the same job
    /// and runs the subtasks placed on it (subtask k in slot k, the slots filling the
    /// processes in order); channels between processes go over TCP on loopback with Flink's
    /// credit-based protocol. Process 0 serves the REST API (with the subtasks it runs); a
    /// skew job's `--output` is the merge of every process's sums.
    #[arg(long, global = true, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=64),
          conflicts_with_all = ["autopilot", "process_index"])]
    pub processes: u16,
    /// This process's index in a job split over processes (`--processes` sets it in the
    /// processes it starts; a Kubernetes StatefulSet passes `from-hostname`: the pod's ordinal,
    /// the number after the hostname's last `-`).
    #[arg(long, global = true, value_name = "I|from-hostname", requires = "peers",
          value_parser = parse_process_index)]
    pub process_index: Option<ProcessIndex>,
    /// Every process's address, by index, as HOST:PORT (names are resolved, and retried until
    /// they resolve, for up to a minute: a StatefulSet's pods appear one by one).
    #[arg(
        long,
        global = true,
        value_name = "HOST:PORT,...",
        value_delimiter = ',',
        requires = "process_index"
    )]
    pub peers: Vec<String>,
    /// The job's id (32 hex digits), instead of a fresh one: what the processes of a split job
    /// share (`--processes` passes its own to every process; give one to a StatefulSet), and
    /// where its checkpoints go (`--checkpoint-dir`/ID/chk-N), so a restart finds them.
    #[arg(long, global = true, value_name = "ID", value_parser = parse_job_id)]
    pub job_id: Option<sluice_types::JobId>,
    /// How long a silent peer process goes unnoticed at most, in ms [heartbeat.timeout] (50 s):
    /// every connection between the processes of a split job carries a heartbeat every fifth
    /// of it [heartbeat.interval], and a peer from which nothing arrived for this long (a
    /// partitioned network, a stopped process) is lost: the job fails and its processes
    /// restart. At least 1 s.
    #[arg(long, global = true, value_name = "MS", default_value_t = 50_000,
          value_parser = clap::value_parser!(u64).range(1_000..=3_600_000))]
    pub heartbeat_timeout: u64,
}

impl ProcessArgs {
    /// `--heartbeat-timeout` as a duration.
    pub fn heartbeat_timeout(&self) -> Duration {
        Duration::from_millis(self.heartbeat_timeout)
    }
}

fn parse_job_id(s: &str) -> Result<sluice_types::JobId, String> {
    sluice_types::Id128::parse_hex(s)
        .ok_or_else(|| format!("'{s}' is not a job id (32 hexadecimal digits)"))
}

/// `--process-index`: a number, or the pod ordinal in the hostname.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessIndex {
    /// This index.
    Fixed(usize),
    /// The number after the hostname's last `-` (a StatefulSet pod's ordinal).
    FromHostname,
}

/// Parses `--process-index`: `0`, `1`, … or `from-hostname`.
pub fn parse_process_index(s: &str) -> Result<ProcessIndex, String> {
    if s == "from-hostname" {
        return Ok(ProcessIndex::FromHostname);
    }
    s.parse()
        .map(ProcessIndex::Fixed)
        .map_err(|_| format!("'{s}' is neither a process index (0, 1, ...) nor 'from-hostname'"))
}

/// The part of a per-process output file (e.g. a skew job's `--output`) that process `index`
/// writes; the launcher's caller merges the parts after the run.
pub fn part_path(path: &Path, index: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".process-{index}"));
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_indexes_parse() {
        assert_eq!(parse_process_index("3"), Ok(ProcessIndex::Fixed(3)));
        assert_eq!(
            parse_process_index("from-hostname"),
            Ok(ProcessIndex::FromHostname)
        );
        assert!(parse_process_index("x").unwrap_err().contains("'x'"));
        assert_eq!(
            part_path(Path::new("/tmp/out.csv"), 2),
            PathBuf::from("/tmp/out.csv.process-2")
        );
    }
}
