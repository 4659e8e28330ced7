//! Keyed state with a timer: report users who went quiet.
//! `cargo run -p sluice-examples --example timers`.
//!
//! For every event the function keeps its time in the user's `ListState` and sets an
//! event-time timer `QUIET_MS` after it. A timer fires once the watermark passes it, and by then
//! every event up to its time has arrived — but later ones may have too (watermarks are
//! periodic), so the timer looks only at the events between its event and its own time: if
//! there are none, the user was quiet that long and it emits `(user, last seen)`. That makes the
//! answer the same however often watermarks come. At the end of the bounded input the maximal
//! watermark fires every remaining timer.

use sluice::{
    Collector, KeyedProcessFunction, OnTimerContext, OperatorError, ProcessContext, StreamEnv,
    WatermarkStrategy,
};

/// How long a user must be silent to be reported.
pub const QUIET_MS: i64 = 30_000;

/// An event: a user and its time (milliseconds of event time).
pub type Event = (u32, i64);

/// Keeps each user's event times and reports silences of [`QUIET_MS`].
#[derive(Clone)]
pub struct QuietUsers;

impl KeyedProcessFunction<u32, Event, (u32, i64)> for QuietUsers {
    fn process_element(
        &mut self,
        event: Event,
        ctx: &mut ProcessContext<'_, u32>,
        _out: &mut dyn Collector<(u32, i64)>,
    ) -> Result<(), OperatorError> {
        ctx.list_state::<i64>("seen").add(event.1)?; // state of the current key (user)
        ctx.timer_service()
            .register_event_time_timer(event.1 + QUIET_MS);
        Ok(())
    }

    fn on_timer(
        &mut self,
        at: i64,
        ctx: &mut OnTimerContext<'_, u32>,
        out: &mut dyn Collector<(u32, i64)>,
    ) -> Result<(), OperatorError> {
        let (user, event) = (*ctx.current_key(), at - QUIET_MS);
        let mut seen = ctx.list_state::<i64>("seen");
        let times = seen.get()?;
        if !times.iter().any(|&t| t > event && t <= at) {
            out.collect((user, event))?;
        }
        // Timers fire in time order: no later timer looks at or before this one's event.
        seen.update(times.into_iter().filter(|&t| t > event).collect())?;
        Ok(())
    }
}

/// The demo input: 3 users; user 1 pauses for 40 s in the middle, user 2 stops early.
pub fn events() -> Vec<Event> {
    let mut events = Vec::new();
    for t in (0..120_000).step_by(5_000) {
        events.push((0, t));
        if !(40_000..80_000).contains(&t) {
            events.push((1, t + 1_000));
        }
        if t < 20_000 {
            events.push((2, t + 2_000));
        }
    }
    events
}

/// `(user, last seen before a silence of QUIET_MS)`, sorted.
pub fn quiet_users(
    events: Vec<Event>,
    parallelism: usize,
) -> Result<Vec<(u32, i64)>, Box<dyn std::error::Error>> {
    let env = StreamEnv::new();
    env.set_parallelism(parallelism);
    let quiet = env
        .from_vec(events)
        .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps(
            |e: &Event| e.1,
        ))
        .key_by(|e: &Event| e.0)
        .process_event_time(QuietUsers)
        .collect();
    env.execute()?;
    let mut rows = quiet.handle.take();
    rows.sort();
    Ok(rows)
}

#[allow(dead_code)] // the test compiles this file as a module
fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (user, seen) in quiet_users(events(), 2)? {
        println!(
            "user {user} quiet for {} s after {seen} ms",
            QUIET_MS / 1_000
        );
    }
    Ok(())
}
