//! `Source: Nexmark`: subtask `k` of `n` runs generator split `k` of `n` (reference mode: the
//! events numbered `≡ k (mod n)`), so the union of all subtasks is the same for every `n`.

use sluice_datastream::{DataStream, OperatorError, StreamEnv};
use sluice_nexmark::{Event, GeneratorConfig, NexmarkGenerator, Split};
use sluice_runtime::sources::{SourceContext, SourceFunction, SOURCE_BATCH};
use sluice_types::Collector;

/// One generator split. Its checkpoint position is the number of events it emitted; a restore
/// at the same parallelism skips them (generator splits are `n ≡ k mod p`, so another
/// parallelism would need a different split and is refused).
pub struct NexmarkSource {
    split: Split,
    emitted: u64,
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
            let emitted = self.emitted;
            ctx.checkpoint_if_due(out, || sluice_runtime::state::layout::encode(&emitted))?;
            let mut n = 0;
            for (_, e) in self.split.by_ref().take(SOURCE_BATCH as usize) {
                out.collect(e)?;
                n += 1;
            }
            self.emitted += n;
            ctx.add_emitted(n);
            if n < SOURCE_BATCH {
                let emitted = self.emitted;
                return ctx.await_final_checkpoint(out, || {
                    sluice_runtime::state::layout::encode(&emitted)
                });
            }
        }
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        if parts.len() != op.parallelism {
            return Err(OperatorError::failed(format!(
                "the Nexmark source was checkpointed at parallelism {} and cannot resume at {}",
                parts.len(),
                op.parallelism
            )));
        }
        for (i, bytes) in parts {
            if *i == op.subtask_index {
                let emitted: u64 = sluice_runtime::state::layout::decode(bytes)?;
                self.split.skip_events(emitted);
                self.emitted = emitted;
            }
        }
        Ok(())
    }
}

/// The event stream of `config` (bounded by `config.events`).
pub fn events(env: &StreamEnv, config: GeneratorConfig) -> DataStream<Event> {
    env.add_source("Nexmark", move |k, n| {
        let generator = NexmarkGenerator::new(config.clone())
            .map_err(|e| OperatorError::failed(format!("nexmark generator: {e}")))?;
        Ok(NexmarkSource {
            split: generator.split(k, n),
            emitted: 0,
        })
    })
}
