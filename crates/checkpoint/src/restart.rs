//! Restart strategies (Flink's `restart-strategy.type`): whether, and after how long, a failed
//! job restarts from its latest completed checkpoint. Pure: the caller passes the failure times.

use std::time::Duration;

/// What a failed job does: fail for good, or restart from its latest completed checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestartStrategy {
    /// Fail the job on the first failure (`none`; Flink's default without checkpoints).
    NoRestart,
    /// Restart up to `attempts` times, waiting `delay` each time (`fixed-delay`; with
    /// checkpoints Flink defaults to unlimited attempts and a 1 s delay).
    FixedDelay {
        /// Restarts allowed over the job's life.
        attempts: u32,
        /// Wait before each restart.
        delay: Duration,
    },
    /// Restart unless more than `max_failures` failures fell within `interval`
    /// (`failure-rate`).
    FailureRate {
        /// Most failures tolerated within `interval`.
        max_failures: u32,
        /// The window, ending at the latest failure, in which failures count.
        interval: Duration,
        /// Wait before each restart.
        delay: Duration,
    },
}

impl RestartStrategy {
    /// After the failure at `failures_ms.last()` (all failures so far, oldest first, in ms on
    /// one clock): the delay before restarting, or `None` to fail the job.
    pub fn decide(&self, failures_ms: &[i64]) -> Option<Duration> {
        let n = failures_ms.len() as u64;
        match self {
            RestartStrategy::NoRestart => None,
            RestartStrategy::FixedDelay { attempts, delay } => {
                (n <= u64::from(*attempts)).then_some(*delay)
            }
            RestartStrategy::FailureRate {
                max_failures,
                interval,
                delay,
            } => {
                let now = *failures_ms.last()?;
                let window = interval.as_millis() as i64;
                let recent = failures_ms.iter().filter(|&&t| now - t < window).count() as u64;
                (recent <= u64::from(*max_failures)).then_some(*delay)
            }
        }
    }

    /// `none`, `fixed-delay:<attempts>:<delay ms>` or `failure-rate:<max>:<interval ms>:<delay ms>`.
    pub fn parse(s: &str) -> Result<RestartStrategy, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let num = |p: &str, what: &str| {
            p.parse::<u64>().map_err(|_| {
                format!("restart strategy '{s}': {what} must be a whole number, got '{p}'")
            })
        };
        match parts.as_slice() {
            ["none"] => Ok(RestartStrategy::NoRestart),
            ["fixed-delay", a, d] => Ok(RestartStrategy::FixedDelay {
                attempts: num(a, "attempts")?.min(u32::MAX as u64) as u32,
                delay: Duration::from_millis(num(d, "delay")?),
            }),
            ["failure-rate", m, i, d] => Ok(RestartStrategy::FailureRate {
                max_failures: num(m, "max failures")?.min(u32::MAX as u64) as u32,
                interval: Duration::from_millis(num(i, "interval")?),
                delay: Duration::from_millis(num(d, "delay")?),
            }),
            _ => Err(format!(
                "unknown restart strategy '{s}' (none, fixed-delay:<attempts>:<delay ms>, failure-rate:<max failures>:<interval ms>:<delay ms>)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_delay_counts_attempts() {
        let s = RestartStrategy::FixedDelay {
            attempts: 2,
            delay: Duration::from_millis(5),
        };
        assert_eq!(s.decide(&[0]), Some(Duration::from_millis(5)));
        assert_eq!(s.decide(&[0, 10]), Some(Duration::from_millis(5)));
        assert_eq!(s.decide(&[0, 10, 20]), None);
        assert_eq!(RestartStrategy::NoRestart.decide(&[0]), None);
    }

    #[test]
    fn failure_rate_looks_at_the_window() {
        let s = RestartStrategy::FailureRate {
            max_failures: 2,
            interval: Duration::from_millis(100),
            delay: Duration::ZERO,
        };
        assert!(s.decide(&[0, 50]).is_some());
        assert!(s.decide(&[0, 50, 90]).is_none(), "3 within 100 ms");
        assert!(
            s.decide(&[0, 50, 200]).is_some(),
            "the first fell out of the window"
        );
    }

    #[test]
    fn parses_flinks_kinds_and_rejects_the_rest() {
        assert_eq!(
            RestartStrategy::parse("none"),
            Ok(RestartStrategy::NoRestart)
        );
        assert_eq!(
            RestartStrategy::parse("fixed-delay:3:100"),
            Ok(RestartStrategy::FixedDelay {
                attempts: 3,
                delay: Duration::from_millis(100)
            })
        );
        assert!(RestartStrategy::parse("failure-rate:3:1000:10").is_ok());
        let e = RestartStrategy::parse("fixed-delay:x:1").unwrap_err();
        assert!(e.contains("attempts"), "{e}");
        assert!(RestartStrategy::parse("always").is_err());
    }
}
