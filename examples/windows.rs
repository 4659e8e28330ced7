//! Clicks per user per 10-second window, in event time:
//! `cargo run -p sluice-examples --example windows`.
//!
//! The clicks arrive slightly out of order (up to 0.7 s); the watermark trails the largest
//! timestamp seen by 2 s, so none is late, and a window fires once the watermark passes its
//! end. A bounded input ends with the maximal watermark, so every window fires.

use sluice::{StreamEnv, WatermarkStrategy, WindowAssigner};

/// A click: who, and when (milliseconds of event time).
#[derive(Clone, Debug)]
pub struct Click {
    pub user: u32,
    pub ts: i64,
}

/// The `i`-th click of the demo input: 5 users, one click every 250 ms, jittered by up to 700 ms.
pub fn click(i: u64) -> Click {
    Click {
        user: (i.wrapping_mul(7_919) % 5) as u32,
        ts: i as i64 * 250 + (i as i64 * 37 % 8) * 100,
    }
}

/// One window's count: `(user, window start, window end, clicks)`.
pub type WindowCount = (u32, i64, i64, u64);

/// The count of every window over the first `n` clicks, sorted.
pub fn clicks_per_window(
    n: u64,
    parallelism: usize,
) -> Result<Vec<WindowCount>, Box<dyn std::error::Error>> {
    let env = StreamEnv::new();
    env.set_parallelism(parallelism);
    let counts = env
        .generate(n, click)
        .assign_timestamps_and_watermarks(WatermarkStrategy::for_bounded_out_of_orderness(
            2_000,
            |c: &Click| c.ts,
        ))
        .key_by(|c: &Click| c.user)
        .window(WindowAssigner::tumbling(10_000)?) // or sliding(size, slide), session(gap)
        .count() // or reduce, aggregate(AggregateFunction), process
        .collect();
    env.execute()?;
    let mut rows: Vec<_> = counts
        .handle
        .take()
        .into_iter()
        .map(|r| (r.key, r.window.start, r.window.end, r.value))
        .collect();
    rows.sort();
    Ok(rows)
}

#[allow(dead_code)] // the test compiles this file as a module
fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (user, start, end, n) in clicks_per_window(400, 2)? {
        println!("user {user}  [{start:>6}, {end:>6}) ms  {n} clicks");
    }
    Ok(())
}
