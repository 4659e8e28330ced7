//! The run loop of a task with one (possibly unioned) input.

use sluice_channel::{ChannelEvent, GateItem, InputGate};
use sluice_types::{Barrier, Collector, CollectorExt, Data, OperatorError, Watermark};

use crate::time::watermarks::{WatermarkCombiner, WatermarkEvent};
use crate::{TaskContext, TaskServices};

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
    *ctx.metrics
        .input_debloat
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = Some(gate.debloat_gauges());
    // Overdraft taken while emitting one record's outputs is paid back before the next record.
    let debt = &*ctx.output_debt;
    let waits = &*ctx.metrics.waits;
    let mut valve = WatermarkCombiner::new(gate.open_channels());
    let mut aligner = Aligner::new(gate.num_channels());
    // An unaligned checkpoint whose barrier has not arrived on every channel yet.
    let mut unaligned: Option<Unaligned<T>> = None;
    // Restoring from an unaligned checkpoint: its in-flight records come first.
    let services = &*ctx.services;
    services.set_input_waker(gate.waker());
    let restored = match services.checkpoints() {
        Some(c) => c
            .restored_channel_state::<T>()
            .map_err(|e| OperatorError::Failed(format!("restoring its input: {e}")))?,
        None => None,
    };
    if let Some(records) = restored {
        for r in records {
            head.collect(r)?;
        }
    }
    // Records received by this attempt of the task (fault injection counts these).
    let mut seen = 0u64;
    loop {
        match gate.next().map_err(|_| OperatorError::Cancelled)? {
            None => break,
            Some(GateItem::Buffer(mut buf)) => {
                if let Some(u) = &mut unaligned {
                    // Before this channel's barrier: in flight for the unaligned checkpoint.
                    if u.takes(buf.channel) {
                        u.in_flight.extend(buf.records.iter().cloned());
                    }
                }
                finish_unaligned(&mut unaligned, &aligner.ended, &mut aligner.last, services);
                let n = buf.records.len() as u64;
                ctx.metrics.add_records_in(n);
                ctx.metrics
                    .bytes_in
                    .fetch_add(n * size, std::sync::atomic::Ordering::Relaxed);
                if debt.may_overdraft() {
                    // Overdraft is allowed only mid-record: the record boundaries must be seen.
                    for r in buf.records.drain(..) {
                        debt.begin_record(waits)
                            .map_err(|_| OperatorError::Cancelled)?;
                        head.collect(r)?;
                    }
                } else {
                    // One call into the chain per buffer (the chain is a `dyn Collector`).
                    head.collect_batch(&mut buf.records)?;
                }
                gate.release(buf);
                seen += n;
                if let Some(limit) = ctx.fail_after_records {
                    if seen >= limit {
                        return Err(OperatorError::failed(format!(
                            "injected failure after {seen} records (fault injection)"
                        )));
                    }
                }
                let now = epoch.load(std::sync::atomic::Ordering::Relaxed);
                if now != seen_epoch {
                    seen_epoch = now;
                    head.flush()?;
                }
            }
            Some(GateItem::Event { channel, event }) => {
                let forward = match event {
                    ChannelEvent::Watermark(w) => valve.on_watermark(channel, w.0),
                    ChannelEvent::Idleness(true) => valve.mark_idle(channel),
                    ChannelEvent::EndOfPartition => {
                        if let Some(done) = aligner.on_end(channel, &mut gate) {
                            done.pass(head, services)?;
                        }
                        if let Some(u) = &mut unaligned {
                            u.received[channel] = true;
                        }
                        finish_unaligned(
                            &mut unaligned,
                            &aligner.ended,
                            &mut aligner.last,
                            services,
                        );
                        valve.mark_idle(channel)
                    }
                    ChannelEvent::Idleness(false) => valve.mark_active(channel),
                    ChannelEvent::Barrier(b) => {
                        if let Some(done) = aligner.on_barrier(channel, b, &mut gate) {
                            done.pass(head, services)?;
                        }
                        None
                    }
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
            Some(GateItem::UnalignedBarrier {
                channel,
                barrier,
                overtaken,
                overtaken_buffers,
                behind,
            }) => {
                let id = barrier.checkpoint_id;
                if id > aligner.last {
                    if unaligned
                        .as_ref()
                        .is_none_or(|u| u.barrier.checkpoint_id < id)
                    {
                        // The first barrier of this checkpoint: snapshot now and send the
                        // barrier on, ahead of everything queued downstream.
                        gate.unblock_all();
                        head.emit_barrier(barrier)?;
                        unaligned = Some(Unaligned {
                            barrier,
                            received: vec![false; gate.num_channels()],
                            owed: vec![None; gate.num_channels()],
                            in_flight: Vec::new(),
                            started: std::time::Instant::now(),
                        });
                    }
                    if let Some(u) = &mut unaligned {
                        if u.barrier.checkpoint_id == id {
                            u.in_flight.extend(gate.in_flight(channel, overtaken));
                            if behind == 0 {
                                u.received[channel] = true;
                            } else {
                                // Overtaken at a remote sender: the next `behind` buffers after
                                // the locally overtaken ones (already copied) are in flight too.
                                u.owed[channel] = Some(Owed {
                                    skip: overtaken_buffers,
                                    take: behind,
                                });
                            }
                        }
                    }
                    finish_unaligned(&mut unaligned, &aligner.ended, &mut aligner.last, services);
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

/// Aligned checkpoint barriers (Flink's `SingleCheckpointBarrierHandler`, aligned mode): a
/// channel that delivered barrier `n` is blocked until every channel has delivered it (or
/// ended); then the barrier passes the chain once and the task acknowledges.
struct Aligner {
    current: Option<Alignment>,
    ended: Vec<bool>,
    /// The last checkpoint that passed; older barriers are stale.
    last: u64,
}

struct Alignment {
    barrier: Barrier,
    received: Vec<bool>,
    started: std::time::Instant,
}

/// A barrier whose alignment completed: pass it through the chain, then acknowledge.
struct Aligned {
    barrier: Barrier,
    alignment_ns: u64,
}

impl Aligned {
    fn pass<T>(
        self,
        head: &mut dyn Collector<T>,
        services: &TaskServices,
    ) -> Result<(), OperatorError> {
        head.emit_barrier(self.barrier)?;
        services.ack(
            self.barrier.checkpoint_id,
            self.barrier.timestamp_ms,
            self.alignment_ns,
        );
        Ok(())
    }
}

impl Aligner {
    fn new(channels: usize) -> Aligner {
        Aligner {
            current: None,
            ended: vec![false; channels],
            last: 0,
        }
    }

    fn on_barrier<T: Send + 'static>(
        &mut self,
        channel: usize,
        barrier: Barrier,
        gate: &mut InputGate<T>,
    ) -> Option<Aligned> {
        let id = barrier.checkpoint_id;
        if id <= self.last {
            return None;
        }
        match &self.current {
            Some(a) if a.barrier.checkpoint_id == id => {}
            Some(a) if a.barrier.checkpoint_id > id => return None,
            _ => {
                // A newer checkpoint overtakes an unfinished alignment: that one is abandoned
                // (the coordinator expires it).
                gate.unblock_all();
                self.current = Some(Alignment {
                    barrier,
                    received: vec![false; self.ended.len()],
                    started: std::time::Instant::now(),
                });
            }
        }
        let a = self.current.as_mut().expect("alignment started above");
        a.received[channel] = true;
        gate.set_blocked(channel, true);
        self.complete(gate)
    }

    fn on_end<T: Send + 'static>(
        &mut self,
        channel: usize,
        gate: &mut InputGate<T>,
    ) -> Option<Aligned> {
        self.ended[channel] = true;
        self.complete(gate)
    }

    fn complete<T: Send + 'static>(&mut self, gate: &mut InputGate<T>) -> Option<Aligned> {
        let a = self.current.as_ref()?;
        let all = a.received.iter().zip(&self.ended).all(|(r, e)| *r || *e);
        if !all {
            return None;
        }
        let a = self.current.take().expect("checked above");
        gate.unblock_all();
        self.last = a.barrier.checkpoint_id;
        Some(Aligned {
            barrier: a.barrier,
            alignment_ns: a.started.elapsed().as_nanos() as u64,
        })
    }
}

/// An unaligned checkpoint in progress at this task: the snapshot is taken, the in-flight
/// records before each channel's barrier are being collected.
struct Unaligned<T> {
    barrier: Barrier,
    received: Vec<bool>,
    /// Channels whose barrier came, overtaking buffers at a remote sender that are still to
    /// arrive (see [`Owed`]).
    owed: Vec<Option<Owed>>,
    in_flight: Vec<T>,
    started: std::time::Instant,
}

/// A channel's barrier came ahead of buffers that precede it at its (remote) sender: the next
/// `skip` buffers were copied into the channel state when the barrier came (it overtook them in
/// the local queue), the `take` after them are copied as they arrive; then the channel is done.
#[derive(Clone, Copy, Debug)]
struct Owed {
    skip: usize,
    take: usize,
}

impl<T> Unaligned<T> {
    /// Whether the next buffer of `channel` belongs to the channel state (counting it).
    fn takes(&mut self, channel: usize) -> bool {
        if self.received[channel] {
            return false;
        }
        let Some(o) = &mut self.owed[channel] else {
            return true;
        };
        if o.skip > 0 {
            o.skip -= 1;
            return false;
        }
        o.take -= 1;
        if o.take == 0 {
            self.owed[channel] = None;
            self.received[channel] = true;
        }
        true
    }
}

/// Acknowledges the unaligned checkpoint once its barrier came on every channel (or the
/// channel ended), storing the in-flight records as its channel state.
fn finish_unaligned<T: Data>(
    u: &mut Option<Unaligned<T>>,
    ended: &[bool],
    last: &mut u64,
    services: &TaskServices,
) {
    let done = u
        .as_ref()
        .is_some_and(|u| u.received.iter().zip(ended).all(|(r, e)| *r || *e));
    if !done {
        return;
    }
    let u = u.take().expect("checked above");
    let id = u.barrier.checkpoint_id;
    *last = id;
    if let Some(c) = services.checkpoints() {
        c.store_channel_state(id, Box::new(u.in_flight));
    }
    services.ack(
        id,
        u.barrier.timestamp_ms,
        u.started.elapsed().as_nanos() as u64,
    );
}
