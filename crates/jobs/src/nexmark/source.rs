//! `Source: Nexmark`: subtask `k` of `n` runs generator split `k` of `n` (reference mode: the
//! events numbered `≡ k (mod n)`), so the union of all subtasks is the same for every `n`.

use sluice_graph::{DataStream, OperatorError, StreamEnv};
use sluice_nexmark::{Event, GeneratorConfig, NexmarkGenerator, Split};
use sluice_runtime::sources::{SourceContext, SourceFunction, SOURCE_BATCH};
use sluice_types::Collector;

/// One generator split.
pub struct NexmarkSource {
    split: Split,
}

impl SourceFunction<Event> for NexmarkSource {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<Event>,
    ) -> Result<(), OperatorError> {
        loop {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            let mut n = 0;
            for (_, e) in self.split.by_ref().take(SOURCE_BATCH as usize) {
                out.collect(e)?;
                n += 1;
            }
            ctx.add_emitted(n);
            if n < SOURCE_BATCH {
                return Ok(());
            }
        }
    }
}

/// The event stream of `config` (bounded by `config.events`).
pub fn events(env: &StreamEnv, config: GeneratorConfig) -> DataStream<Event> {
    env.add_source("Nexmark", move |k, n| {
        let generator = NexmarkGenerator::new(config.clone())
            .map_err(|e| OperatorError::failed(format!("nexmark generator: {e}")))?;
        Ok(NexmarkSource {
            split: generator.split(k, n),
        })
    })
}
