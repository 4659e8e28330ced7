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
    let mut completions = Completions::new(services.hub());
    loop {
        let next = match gate.next() {
            Ok(next) => next,
            Err(_) => {
                // Cancelled (a stop-with-savepoint, or a failure elsewhere): a checkpoint that
                // completed meanwhile is the chain's to commit before the task ends.
                let _ = completions.notify(head);
                return Err(OperatorError::Cancelled);
            }
        };
        // Every item, events too: with no buffer timeout an idle input's only items are
        // barriers, and a sink must not wait for the next record to commit.
        completions.notify(head)?;
        match next {
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
                        // An unaligned checkpoint this end completes is acknowledged before a
                        // newer aligned one it completes too passes the chain (whose barrier
                        // starts new snapshots).
                        aligner.ended[channel] = true;
                        if let Some(u) = &mut unaligned {
                            u.received[channel] = true;
                        }
                        finish_unaligned(
                            &mut unaligned,
                            &aligner.ended,
                            &mut aligner.last,
                            services,
                        );
                        if let Some(done) = aligner.on_end(channel, &mut gate) {
                            done.pass(head, services)?;
                        }
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
                if id > aligner.last && id >= aligner.newest {
                    if unaligned
                        .as_ref()
                        .is_none_or(|u| u.barrier.checkpoint_id < id)
                    {
                        // The first barrier of this checkpoint: snapshot now and send the
                        // barrier on, ahead of everything queued downstream. An older
                        // checkpoint still aligning here is abandoned for good: its barriers
                        // that are still to come are stale (the coordinator expires it).
                        gate.unblock_all();
                        aligner.started(id);
                        services.begin_barrier(id);
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
    completions.notify(head)?;
    head.finish()
}

/// Tells a task's chain of completed checkpoints
/// ([`ControlEvent::CheckpointComplete`](sluice_types::ControlEvent::CheckpointComplete)): the
/// newest one, once, between two records. One atomic load per call.
struct Completions<'a> {
    hub: Option<&'a crate::checkpoint::CheckpointHub>,
    notified: u64,
}

impl<'a> Completions<'a> {
    fn new(hub: Option<&'a std::sync::Arc<crate::checkpoint::CheckpointHub>>) -> Self {
        let hub = hub.map(|h| &**h);
        Completions {
            notified: hub.map_or(0, |h| h.completed_checkpoint()),
            hub,
        }
    }

    #[inline]
    fn notify<T>(&mut self, head: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let Some(hub) = self.hub else {
            return Ok(());
        };
        let done = hub.completed_checkpoint();
        if done > self.notified {
            self.notified = done;
            head.notify_checkpoint_complete(done)?;
        }
        Ok(())
    }
}

/// Aligned checkpoint barriers (Flink's `SingleCheckpointBarrierHandler`, aligned mode): a
/// channel that delivered barrier `n` is blocked until every channel has delivered it (or
/// ended); then the barrier passes the chain once and the task acknowledges.
///
/// Checkpoint ids only grow through the chain: a barrier of a checkpoint no newer than one that
/// already started here (passed aligned, or started unaligned) is stale, whichever kind it is,
/// and an alignment such a newer checkpoint overtook never completes (not by a barrier, not by
/// the end of a channel). Otherwise an aligned checkpoint retried as unaligned (the aligned
/// timeout) would pass the chain after its successor and take the successor's snapshots.
struct Aligner {
    current: Option<Alignment>,
    ended: Vec<bool>,
    /// The last checkpoint that passed (aligned) or completed (unaligned) here.
    last: u64,
    /// The newest checkpoint that started here: passed aligned, or whose unaligned snapshot
    /// was taken. Barriers up to it are stale.
    newest: u64,
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
        services.begin_barrier(self.barrier.checkpoint_id);
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
            newest: 0,
        }
    }

    /// Checkpoint `id` started here unaligned: an older alignment is abandoned.
    fn started(&mut self, id: u64) {
        self.newest = self.newest.max(id);
        if self
            .current
            .as_ref()
            .is_some_and(|a| a.barrier.checkpoint_id <= id)
        {
            self.current = None;
        }
    }

    /// Whether a barrier of checkpoint `id` comes too late to start anything here.
    fn is_stale(&self, id: u64) -> bool {
        id <= self.last.max(self.newest)
    }

    fn on_barrier<T: Send + 'static>(
        &mut self,
        channel: usize,
        barrier: Barrier,
        gate: &mut InputGate<T>,
    ) -> Option<Aligned> {
        let id = barrier.checkpoint_id;
        if self.is_stale(id) {
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
        // Set by the match above unless it returned.
        let a = self.current.as_mut()?;
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
        if self.is_stale(a.barrier.checkpoint_id) {
            // Overtaken by a newer checkpoint (see `started`): never completes.
            self.current = None;
            gate.unblock_all();
            return None;
        }
        let all = a.received.iter().zip(&self.ended).all(|(r, e)| *r || *e);
        if !all {
            return None;
        }
        let a = self.current.take()?;
        gate.unblock_all();
        self.last = a.barrier.checkpoint_id;
        self.newest = self.newest.max(self.last);
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
    let Some(u) = u.take() else {
        return;
    };
    let id = u.barrier.checkpoint_id;
    *last = (*last).max(id);
    if let Some(c) = services.checkpoints() {
        c.store_channel_state(id, Box::new(u.in_flight));
    }
    services.ack(
        id,
        u.barrier.timestamp_ms,
        u.started.elapsed().as_nanos() as u64,
    );
}

#[cfg(test)]
mod tests {
    //! Barrier handling of one input gate with two channels: an aligned checkpoint that a newer
    //! unaligned one overtook must never pass the chain after it.

    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use sluice_channel::{ChannelEvent, ChannelSender, ExchangeConfig, InputGate};
    use sluice_types::{Barrier, CheckpointKind, Collector, ControlEvent, OperatorError};

    use super::run_one_input;
    use crate::checkpoint::{CheckpointConfig, CheckpointHub};
    use crate::{JobControl, TaskContext, TaskMetrics, TaskServices};

    /// What reached the chain: records, and the barriers that passed it (each one recording a
    /// snapshot named after its checkpoint, as an operator with state does).
    #[derive(Default)]
    struct Seen {
        records: Vec<u64>,
        barriers: Vec<u64>,
        completed: Vec<u64>,
    }

    struct Head {
        seen: Arc<Mutex<Seen>>,
        services: Arc<TaskServices>,
    }

    impl Collector<u64> for Head {
        fn collect(&mut self, r: u64) -> Result<(), OperatorError> {
            self.seen.lock().unwrap().records.push(r);
            Ok(())
        }
        fn emit_event(&mut self, e: ControlEvent) -> Result<(), OperatorError> {
            match e {
                ControlEvent::Barrier(b) => {
                    self.services
                        .record("op", format!("state@{}", b.checkpoint_id).into_bytes());
                    self.seen.lock().unwrap().barriers.push(b.checkpoint_id);
                }
                ControlEvent::CheckpointComplete(id) => {
                    self.seen.lock().unwrap().completed.push(id)
                }
                _ => {}
            }
            Ok(())
        }
    }

    fn barrier(id: u64, kind: CheckpointKind) -> Barrier {
        Barrier {
            checkpoint_id: id,
            timestamp_ms: 0,
            kind,
        }
    }

    struct Task {
        senders: Vec<ChannelSender<u64>>,
        seen: Arc<Mutex<Seen>>,
        hub: Arc<CheckpointHub>,
        canceller: sluice_channel::GateCanceller,
        thread: std::thread::JoinHandle<Result<(), OperatorError>>,
    }

    /// A task with a two-channel gate running its input loop on a thread of its own.
    fn task() -> Task {
        let cfg = ExchangeConfig::default();
        let (gate, senders) = InputGate::<u64>::new(2, &cfg, Default::default());
        let canceller = gate.canceller();
        let hub = CheckpointHub::new(CheckpointConfig::default(), std::env::temp_dir());
        let metrics = Arc::new(TaskMetrics::default());
        let control = JobControl::new(Duration::ZERO);
        let services = TaskServices::new(metrics.clone(), Some(hub.clone()), 0, 0, None);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut head = Head {
            seen: seen.clone(),
            services: services.clone(),
        };
        let ctx = TaskContext {
            control,
            metrics,
            vertex_name: "test".into(),
            subtask: 0,
            parallelism: 1,
            fail_after_records: None,
            services,
            output_debt: sluice_channel::OutputDebt::new(),
        };
        let thread = std::thread::spawn(move || run_one_input(gate, &mut head, &ctx));
        Task {
            senders,
            seen,
            hub,
            canceller,
            thread,
        }
    }

    fn wait_until(seen: &Mutex<Seen>, what: &str, f: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !f(&seen.lock().unwrap()) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn send(s: &ChannelSender<u64>, r: u64) {
        s.send_blocking(vec![r], &Default::default()).unwrap();
    }

    /// Ends the task and returns the barriers that passed its chain and the acknowledgements it
    /// sent: `(checkpoint id, recorded snapshot names)`.
    fn finish(t: Task) -> (Vec<u64>, Vec<(u64, Vec<String>)>) {
        for s in &t.senders {
            s.send_event(ChannelEvent::EndOfPartition).unwrap();
        }
        t.thread.join().unwrap().unwrap();
        let (acks, declines) = t.hub.take_acks(Duration::ZERO);
        assert!(declines.is_empty(), "{declines:?}");
        let acks = acks
            .into_iter()
            .map(|a| {
                let states = a
                    .states
                    .iter()
                    .map(|(_, b)| String::from_utf8(b.clone()).unwrap())
                    .collect();
                (a.checkpoint_id, states)
            })
            .collect();
        let barriers = std::mem::take(&mut t.seen.lock().unwrap().barriers);
        (barriers, acks)
    }

    #[test]
    fn an_aligned_barrier_arriving_after_a_newer_unaligned_one_started_is_stale() {
        let t = task();
        let (c0, c1) = (&t.senders[0], &t.senders[1]);
        // Aligned checkpoint 1 reached channel 0; on channel 1 it is behind a record when the
        // aligned-checkpoint timeout retries it as unaligned checkpoint 2, whose barrier
        // overtakes both. Channel 0's barrier of 2 comes later (its sender is slow).
        c0.send_event(ChannelEvent::Barrier(barrier(1, CheckpointKind::Aligned)))
            .unwrap();
        send(c1, 10);
        c1.send_event(ChannelEvent::Barrier(barrier(1, CheckpointKind::Aligned)))
            .unwrap();
        send(c1, 11);
        c1.send_unaligned_barrier(barrier(2, CheckpointKind::Unaligned), Vec::new())
            .unwrap();
        wait_until(&t.seen, "records 10 and 11", |s| s.records.contains(&11));
        c0.send_unaligned_barrier(barrier(2, CheckpointKind::Unaligned), Vec::new())
            .unwrap();
        let (barriers, acks) = finish(t);
        assert_eq!(barriers, vec![2], "checkpoint 1 passed after checkpoint 2");
        assert_eq!(acks, vec![(2, vec!["state@2".to_string()])]);
    }

    #[test]
    fn an_alignment_overtaken_by_an_unaligned_checkpoint_does_not_complete_at_end_of_input() {
        let t = task();
        let (c0, c1) = (&t.senders[0], &t.senders[1]);
        c0.send_event(ChannelEvent::Barrier(barrier(1, CheckpointKind::Aligned)))
            .unwrap();
        send(c1, 5);
        wait_until(&t.seen, "record 5", |s| s.records.contains(&5));
        // Unaligned checkpoint 2 overtakes the alignment of 1 and completes on both channels.
        c1.send_unaligned_barrier(barrier(2, CheckpointKind::Unaligned), Vec::new())
            .unwrap();
        c0.send_unaligned_barrier(barrier(2, CheckpointKind::Unaligned), Vec::new())
            .unwrap();
        send(c1, 6);
        wait_until(&t.seen, "record 6", |s| s.records.contains(&6));
        // Channel 1 ends: that must not complete the abandoned alignment of checkpoint 1.
        let (barriers, acks) = finish(t);
        assert_eq!(barriers, vec![2], "checkpoint 1 passed after checkpoint 2");
        assert_eq!(acks, vec![(2, vec!["state@2".to_string()])]);
    }

    #[test]
    fn completed_checkpoints_reach_the_chain_between_records_and_before_a_cancelled_task_ends() {
        let t = task();
        // The loop runs (a task hears of completions after its start only).
        send(&t.senders[0], 0);
        wait_until(&t.seen, "record 0", |s| s.records.contains(&0));
        t.hub
            .complete(1, CheckpointKind::Aligned, Vec::new(), 0, None);
        send(&t.senders[0], 1);
        wait_until(&t.seen, "the completion of 1", |s| s.completed == [1]);
        // A savepoint that does not stop the job is never told.
        t.hub
            .complete(2, CheckpointKind::Savepoint, Vec::new(), 0, None);
        send(&t.senders[0], 2);
        wait_until(&t.seen, "record 2", |s| s.records.contains(&2));
        assert_eq!(t.seen.lock().unwrap().completed, vec![1]);
        // A stop-with-savepoint completes and the job is cancelled right after it: the chain
        // hears of it before the task ends.
        t.hub.set_stop_savepoint(3);
        t.hub
            .complete(3, CheckpointKind::Savepoint, Vec::new(), 0, None);
        t.canceller.cancel();
        let r = t.thread.join().unwrap();
        assert!(matches!(r, Err(OperatorError::Cancelled)), "{r:?}");
        assert_eq!(t.seen.lock().unwrap().completed, vec![1, 3]);
    }

    #[test]
    fn with_no_buffer_timeout_a_completion_reaches_the_chain_with_the_next_event() {
        // The task's buffer timeout is zero (no idle wake-ups): after its last record only
        // events come, and the sink must not wait for a record to commit.
        let t = task();
        send(&t.senders[0], 0);
        wait_until(&t.seen, "record 0", |s| s.records.contains(&0));
        t.hub
            .complete(1, CheckpointKind::Aligned, Vec::new(), 0, None);
        t.senders[1]
            .send_event(ChannelEvent::Watermark(sluice_types::Watermark(5)))
            .unwrap();
        wait_until(&t.seen, "the completion of 1", |s| s.completed == [1]);
        let _ = finish(t);
    }
}
