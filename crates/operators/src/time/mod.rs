//! # Event time: watermark generation and window assignment (pure logic)
//!
//! Groundwork for event-time processing following Flink's semantics
//! (docs/src/reference/flink-formats.md#event-time, #easily-missed):
//!
//! - [`watermarks`]: [`BoundedOutOfOrderness`](watermarks::BoundedOutOfOrderness), Flink's
//!   periodic generator (`watermark = maxTs − outOfOrderness − 1`, starting at `i64::MIN`), with
//!   optional idleness driven by an explicit clock argument, and
//!   [`WatermarkCombiner`](watermarks::WatermarkCombiner), the min-over-non-idle-inputs valve of
//!   multi-input operators (monotonic; emits only on increase).
//! - [`windows`]: [`TimeWindow`](windows::TimeWindow) (`[start, end)`, `max_timestamp = end − 1`),
//!   tumbling, sliding and session assigners with Flink's exact start formula, session merging
//!   (windows merge when they overlap *or touch*), and the lateness predicates.
//!
//! Nothing here spawns threads, reads clocks or touches operators: every input, including "now",
//! is an argument, so every rule is unit-testable.
//!
//! ```
//! use sluice_operators::time::windows::{TumblingEventTimeWindows, TimeWindow};
//! use sluice_operators::time::watermarks::BoundedOutOfOrderness;
//! let tumbling = TumblingEventTimeWindows::of(10).unwrap();
//! assert_eq!(tumbling.assign_window(10), TimeWindow::new(10, 20)); // an end belongs to the next window
//! let mut wm = BoundedOutOfOrderness::new(5);
//! wm.on_event(100);
//! assert_eq!(wm.current_watermark(), 94); // 100 − 5 − 1
//! ```

pub mod watermarks;
pub mod windows;
