//! The run loop of a task with one (possibly unioned) input.

use sluice_channel::{ChannelEvent, GateItem, InputGate};
use sluice_types::{Collector, Data, OperatorError, Watermark};

use crate::time::watermarks::{WatermarkCombiner, WatermarkEvent};
use crate::TaskContext;

/// Pulls buffers from `gate` and pushes every record through `head` (the chain), until every
/// input channel has ended; then finishes the chain. Waiting for input counts as idle time (in
/// the gate); on the buffer timeout with no input, partial output buffers are flushed.
///
/// Watermarks are combined per channel (Flink's `StatusWatermarkValve`): the chain sees the
/// minimum over the channels that are neither idle nor ended, only when it rises. An ended
/// channel can send nothing more, so it stops holding the minimum back.
pub fn run_one_input<T: Data>(
    mut gate: InputGate<T>,
    head: &mut dyn Collector<T>,
    ctx: &TaskContext,
) -> Result<(), OperatorError> {
    let timeout = ctx.control.buffer_timeout();
    if !timeout.is_zero() {
        gate.set_wake_interval(Some(timeout));
    }
    let size = sluice_types::estimated_record_size::<T>() as u64;
    // The buffer timeout must bound latency even when input never pauses (e.g. a filter that
    // passes one record in a million): check the flush clock after every buffer, not only when
    // idle. One relaxed load per buffer.
    let epoch = ctx.control.flush_epoch();
    let mut seen_epoch = epoch.load(std::sync::atomic::Ordering::Relaxed);
    {
        let mut ins = ctx
            .metrics
            .input_channels
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        ins.extend(gate.counters());
    }
    let mut valve = WatermarkCombiner::new(gate.open_channels());
    loop {
        match gate.next().map_err(|_| OperatorError::Cancelled)? {
            None => break,
            Some(GateItem::Buffer(mut buf)) => {
                let n = buf.records.len() as u64;
                ctx.metrics.add_records_in(n);
                ctx.metrics
                    .bytes_in
                    .fetch_add(n * size, std::sync::atomic::Ordering::Relaxed);
                for r in buf.records.drain(..) {
                    head.collect(r)?;
                }
                gate.release(buf);
                let now = epoch.load(std::sync::atomic::Ordering::Relaxed);
                if now != seen_epoch {
                    seen_epoch = now;
                    head.flush()?;
                }
            }
            Some(GateItem::Event { channel, event }) => {
                let forward = match event {
                    ChannelEvent::Watermark(w) => valve.on_watermark(channel, w.0),
                    ChannelEvent::Idleness(true) | ChannelEvent::EndOfPartition => {
                        valve.mark_idle(channel)
                    }
                    ChannelEvent::Idleness(false) => valve.mark_active(channel),
                    ChannelEvent::Barrier(_) => None,
                };
                match forward {
                    Some(WatermarkEvent::Watermark(w)) => {
                        ctx.metrics.input_watermark.set(w);
                        head.emit_watermark(Watermark(w))?;
                    }
                    // Every input ended: the end of input is not an idleness to report.
                    Some(WatermarkEvent::Idle) if gate.open_channels() == 0 => {}
                    Some(WatermarkEvent::Idle) => head.emit_idleness(true)?,
                    Some(WatermarkEvent::Active) => head.emit_idleness(false)?,
                    None => {}
                }
            }
            Some(GateItem::Idle) => {
                seen_epoch = epoch.load(std::sync::atomic::Ordering::Relaxed);
                head.flush()?
            }
        }
    }
    head.finish()
}
