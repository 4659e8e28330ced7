//! `Source: Nexmark`: subtask `k` of `n` runs generator split `k` of `n` (reference mode: the
//! events numbered `≡ k (mod n)`), so the union of all subtasks is the same for every `n`. The
//! split source is `sluice-table`'s, the one the SQL `nexmark` connector runs, here emitting the
//! events themselves.

use sluice_datastream::{DataStream, StreamEnv};
use sluice_nexmark::{Event, GeneratorConfig};
use sluice_table::connectors::nexmark::NexmarkSplitSource;

/// One generator split emitting its events, named (checkpointed by position, see
/// [`NexmarkSplitSource`]); the query jobs' `events` runs the same with a closure the
/// compiler inlines.
pub type NexmarkSource = NexmarkSplitSource<fn(Event) -> Event>;

/// The event stream of `config` (bounded by `config.events`).
pub fn events(env: &StreamEnv, config: GeneratorConfig) -> DataStream<Event> {
    env.add_source("Nexmark", move |k, n| {
        NexmarkSplitSource::new(&config, k, n, |e: Event| e)
    })
}
