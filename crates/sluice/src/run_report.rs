//! What `sluice run`'s summary says about recovery: how often the job restarted, and which
//! injected failures did not fire (a fault that never fires must not look like a recovery
//! that worked).

use sluice_datastream::FaultSpec;

/// Lines for the summary. `restarts` is how many times the job restarted after a failure;
/// fault `k` is armed in attempt `k` (0 = the first run), so the faults from `restarts` on did
/// not fire: when the job `finished`, the one armed in its last attempt saw fewer records than
/// its count (when it failed, that fault may be the failure, which the error names); the later
/// ones never had an attempt.
pub fn recovery_lines(faults: &[FaultSpec], restarts: u64, finished: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if restarts > 0 {
        lines.push(format!(
            "the job restarted {restarts} time{} after a failure (each restart resumed from \
             the latest completed checkpoint, or from the start without one)",
            if restarts == 1 { "" } else { "s" }
        ));
    }
    let last = restarts as usize;
    let first_unfired = if finished { last } else { last + 1 };
    for (k, f) in faults.iter().enumerate().skip(first_unfired) {
        let spec = format!("{}:{}:{}", f.vertex, f.subtask, f.after_records);
        lines.push(if k == last {
            format!(
                "--inject-failure {spec} did not fire: subtask {} of the vertex '{}' received \
                 fewer than {} records in attempt {}",
                f.subtask,
                f.vertex,
                f.after_records,
                k + 1
            )
        } else {
            format!(
                "--inject-failure {spec} did not fire: it was for attempt {}, and the job \
                 ended in attempt {}",
                k + 1,
                last + 1
            )
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(n: u64) -> FaultSpec {
        FaultSpec {
            vertex: "sum".into(),
            subtask: 0,
            after_records: n,
        }
    }

    #[test]
    fn says_how_often_it_restarted_and_which_faults_did_not_fire() {
        assert!(recovery_lines(&[], 0, true).is_empty());
        let l = recovery_lines(&[fault(10)], 1, true);
        assert_eq!(l.len(), 1);
        assert!(l[0].contains("restarted 1 time after"), "{l:?}");
        let l = recovery_lines(&[fault(10), fault(u64::MAX), fault(5)], 1, true);
        assert!(l[0].contains("restarted 1 time"), "{l:?}");
        assert!(
            l[1].contains("did not fire") && l[1].contains("attempt 2"),
            "{l:?}"
        );
        assert!(l[2].contains("ended in attempt 2"), "{l:?}");
        let l = recovery_lines(&[fault(1 << 40)], 0, true);
        assert_eq!(l.len(), 1);
        assert!(l[0].contains("fewer than 1099511627776 records"), "{l:?}");
        // A failed job: the last attempt's fault may be the failure; later ones did not fire.
        assert!(recovery_lines(&[fault(10)], 0, false).is_empty());
        let l = recovery_lines(&[fault(10), fault(5)], 0, false);
        assert!(l.len() == 1 && l[0].contains("ended in attempt 1"), "{l:?}");
    }
}
