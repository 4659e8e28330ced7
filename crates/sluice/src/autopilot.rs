//! The autopilot `--autopilot` starts by default: [`sluice_autopilot::driver`]'s loop on a
//! thread of its own against the job's REST API, its log on stderr.

use crate::session::AutopilotStop;

/// Starts the autopilot's driver on job `job_id` at `url` (with the server's bearer `token`, if
/// any); a driver that cannot start says why on stderr and the job runs on without it. A
/// [`crate::StartAutopilot`]: what [`crate::launch`] and `sluice run` use.
pub fn start_default(url: &str, token: Option<String>, job_id: String) -> AutopilotStop {
    match sluice_autopilot::driver::InProcess::start(url, token, job_id, |l| eprintln!("{l}")) {
        Ok(p) => Box::new(move || p.stop()),
        Err(e) => {
            eprintln!("autopilot stopped: {e}");
            Box::new(|| {})
        }
    }
}
