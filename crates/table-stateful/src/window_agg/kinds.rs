//! The windows of Flink's window table functions, as slices: TUMBLE, HOP and CUMULATE windows
//! are unions of equal slices (Flink's `SliceAssigner`s), so a record or a locally
//! pre-aggregated slice contributes to every window that contains its slice; SESSION windows
//! are not sliced (they merge per key at run time).

use serde::{Deserialize, Serialize};
use sluice_sql::{Result, SqlError};

/// A window's time span, `[start, end)` in epoch milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Window {
    /// The first millisecond in the window.
    pub start: i64,
    /// The first millisecond after the window.
    pub end: i64,
}

impl Window {
    /// The window's last millisecond (`end - 1`): its `window_time`, and when it fires.
    pub fn max_timestamp(&self) -> i64 {
        self.end - 1
    }
}

/// A window table function (all with offset 0), sizes in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WindowKind {
    /// `TUMBLE(size)`.
    Tumble {
        /// Window length.
        size: i64,
    },
    /// `HOP(slide, size)`: a window starting every `slide`.
    Hop {
        /// Time between window starts.
        slide: i64,
        /// Window length.
        size: i64,
    },
    /// `CUMULATE(step, size)`: windows `[p, p + step)`, `[p, p + 2 step)` … `[p, p + size)` for
    /// each period `p` of `size`.
    Cumulate {
        /// How much each window of a period is longer than the previous one.
        step: i64,
        /// The longest window (the period).
        size: i64,
    },
    /// `SESSION(gap)`: a key's records closer than `gap` apart share a window.
    Session {
        /// The inactivity that closes a session.
        gap: i64,
    },
}

impl WindowKind {
    /// Refuses what Flink refuses: a size, slide, step or gap that is not positive, a HOP size
    /// that is not a multiple of its slide, a CUMULATE size that is not a multiple of its step.
    pub fn validate(&self) -> Result<()> {
        let positive = |what: &str, v: i64| {
            if v > 0 {
                Ok(())
            } else {
                Err(SqlError::validation(
                    None,
                    format!("{what} of a window must be positive, found {v} ms"),
                ))
            }
        };
        match *self {
            WindowKind::Tumble { size } => positive("The size", size),
            WindowKind::Hop { slide, size } => {
                positive("The slide", slide)?;
                positive("The size", size)?;
                if size % slide != 0 {
                    return Err(SqlError::validation(
                        None,
                        format!(
                            "HOP table function based aggregate requires size must be an \
                             integral multiple of slide, but got size {size} ms and slide {slide} ms."
                        ),
                    ));
                }
                Ok(())
            }
            WindowKind::Cumulate { step, size } => {
                positive("The step", step)?;
                positive("The max size", size)?;
                if size % step != 0 {
                    return Err(SqlError::validation(
                        None,
                        format!(
                            "CUMULATE table function based aggregate requires maxSize must be an \
                             integral multiple of step, but got maxSize {size} ms and step {step} ms."
                        ),
                    ));
                }
                Ok(())
            }
            WindowKind::Session { gap } => positive("The gap", gap),
        }
    }

    /// The slice length (`None` for SESSION, which is not sliced).
    pub fn slice_size(&self) -> Option<i64> {
        match *self {
            WindowKind::Tumble { size } => Some(size),
            WindowKind::Hop { slide, .. } => Some(slide),
            WindowKind::Cumulate { step, .. } => Some(step),
            WindowKind::Session { .. } => None,
        }
    }

    /// The end of the slice holding time `ts` (`None` for SESSION).
    pub fn slice_end(&self, ts: i64) -> Option<i64> {
        let s = self.slice_size()?;
        Some(ts - ts.rem_euclid(s) + s)
    }

    /// The windows that contain the slice ending at `slice_end`, by growing end (empty for
    /// SESSION).
    pub fn windows_of_slice(&self, slice_end: i64) -> Vec<Window> {
        match *self {
            WindowKind::Tumble { size } => vec![Window {
                start: slice_end - size,
                end: slice_end,
            }],
            WindowKind::Hop { slide, size } => (0..size / slide)
                .map(|k| {
                    let end = slice_end + k * slide;
                    Window {
                        start: end - size,
                        end,
                    }
                })
                .collect(),
            WindowKind::Cumulate { step, size } => {
                let slice_start = slice_end - step;
                let period = slice_start - slice_start.rem_euclid(size);
                (0..)
                    .map(|k| slice_end + k * step)
                    .take_while(|end| *end <= period + size)
                    .map(|end| Window { start: period, end })
                    .collect()
            }
            WindowKind::Session { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(start: i64, end: i64) -> Window {
        Window { start, end }
    }

    #[test]
    fn slices_and_their_windows() {
        let hop = WindowKind::Hop {
            slide: 2_000,
            size: 10_000,
        };
        assert_eq!(hop.slice_end(3_999), Some(4_000));
        assert_eq!(hop.slice_end(-1), Some(0));
        assert_eq!(
            hop.windows_of_slice(4_000),
            vec![
                w(-6_000, 4_000),
                w(-4_000, 6_000),
                w(-2_000, 8_000),
                w(0, 10_000),
                w(2_000, 12_000)
            ]
        );
        let cum = WindowKind::Cumulate { step: 10, size: 30 };
        assert_eq!(cum.slice_end(35), Some(40));
        assert_eq!(
            cum.windows_of_slice(40),
            vec![w(30, 40), w(30, 50), w(30, 60)]
        );
        assert_eq!(cum.windows_of_slice(60), vec![w(30, 60)]);
        let tumble = WindowKind::Tumble { size: 5 };
        assert_eq!(tumble.windows_of_slice(5), vec![w(0, 5)]);
        assert!(WindowKind::Hop { slide: 3, size: 10 }.validate().is_err());
        assert!(WindowKind::Tumble { size: 0 }.validate().is_err());
    }
}
