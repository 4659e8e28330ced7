//! Integration tests of the credit-based exchange, run over real threads.
//!
//! Properties (proptest): no loss, no duplication, per-channel FIFO order with events in place;
//! data in flight bounded by credits, observed through `ChannelCounters` from the receiver and
//! from an independent observer thread. Plain tests: credit/permit semantics, cancellation of
//! blocked senders and receivers, wait-time accounting, events needing no credit, idle wake-ups.
//!
//! Every multi-threaded scenario runs under a deadline so that a deadlock or a lost wake-up fails
//! the test instead of hanging it.

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use sluice_channel::{
    Cancelled, ChannelCounters, ChannelEvent, ChannelWriter, ExchangeConfig, GateCanceller,
    GateItem, InputGate, ReceivedBuffer, WaitTimes,
};
use sluice_types::Watermark;

/// `(channel_id, seq)`.
type Rec = (u64, u64);
const REC_SIZE: usize = std::mem::size_of::<Rec>();

/// Generous limit for a whole scenario; real runs take milliseconds.
const DEADLINE: Duration = Duration::from_secs(20);
/// Limit for one proptest case (each takes well under a second).
const PROP_DEADLINE: Duration = Duration::from_secs(10);
/// How promptly cancellation must unblock threads.
const PROMPT: Duration = Duration::from_secs(2);

// ------------------------------------------------------------------------------------------------
// helpers

/// Runs `f` on its own thread and fails (instead of hanging) if it does not finish in `limit`.
/// A panic inside `f` is re-raised with its original payload.
fn with_deadline<R: Send + 'static>(limit: Duration, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    let handle = thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(limit) {
        Ok(()) | Err(RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(r) => r,
            Err(payload) => std::panic::resume_unwind(payload),
        },
        Err(RecvTimeoutError::Timeout) => {
            panic!("exchange scenario did not finish within {limit:?}: deadlock or lost wake-up")
        }
    }
}

/// Cancels the gate if the thread holding it panics: a failed receiver then releases senders
/// parked for credit, a failed sender releases the receiver waiting for its end-of-partition, so
/// the scope can join every thread and report the original panic instead of timing out.
struct CancelOnPanic(GateCanceller);

impl Drop for CancelOnPanic {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.cancel();
        }
    }
}

struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

fn config(capacity: usize, slack: usize, exclusive: usize, floating: usize) -> ExchangeConfig {
    let cfg = ExchangeConfig {
        buffer_bytes: capacity * REC_SIZE + slack,
        exclusive_credits: exclusive,
        floating_credits: floating,
        ..Default::default()
    };
    assert_eq!(cfg.records_per_buffer::<Rec>(), capacity);
    cfg.validate().expect("test configs are valid");
    cfg
}

fn writers(
    senders: Vec<sluice_channel::ChannelSender<Rec>>,
    cfg: &ExchangeConfig,
    waits: &Arc<WaitTimes>,
) -> Vec<ChannelWriter<Rec>> {
    senders
        .into_iter()
        .map(|s| s.into_writer(cfg, waits.clone()))
        .collect()
}

fn get(v: &std::sync::atomic::AtomicU64) -> u64 {
    ChannelCounters::get(v)
}

fn expect_buffer(item: Option<GateItem<Rec>>) -> ReceivedBuffer<Rec> {
    match item {
        Some(GateItem::Buffer(b)) => b,
        other => panic!("expected a buffer, got {other:?}"),
    }
}

fn expect_event(item: Option<GateItem<Rec>>) -> (usize, ChannelEvent) {
    match item {
        Some(GateItem::Event { channel, event }) => (channel, event),
        other => panic!("expected an event, got {other:?}"),
    }
}

fn seqs(buf: &ReceivedBuffer<Rec>) -> Vec<u64> {
    buf.records.iter().map(|r| r.1).collect()
}

/// Credit bounds of one gate.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    /// exclusive + floating: the most buffers one channel can have in flight.
    per_channel: u64,
    /// channels * exclusive + floating: the most buffers the whole gate can have in flight.
    total: u64,
    capacity: u64,
}

impl Bounds {
    fn new(channels: usize, cfg: &ExchangeConfig, capacity: usize) -> Self {
        Bounds {
            per_channel: (cfg.exclusive_credits + cfg.floating_credits) as u64,
            total: (channels * cfg.exclusive_credits + cfg.floating_credits) as u64,
            capacity: capacity as u64,
        }
    }
}

/// Checks made by the receiver right after `next()` (before `release`). Only the receiver
/// decrements `buffers_in_flight` and increments `records_in`, so between its own operations the
/// in-flight values it reads can only be at or below the current ones and `records_in` is exact:
/// the per-channel and whole-gate bounds are sound here without any snapshot.
fn check_bounds_from_receiver(counters: &[Arc<ChannelCounters>], b: Bounds) {
    let mut in_flight_sum = 0;
    let mut queued_records_sum = 0i64;
    for (ch, c) in counters.iter().enumerate() {
        let in_flight = get(&c.buffers_in_flight);
        assert!(
            in_flight <= b.per_channel,
            "channel {ch}: {in_flight} buffers in flight > exclusive + floating = {}",
            b.per_channel
        );
        in_flight_sum += in_flight;
        let queued = get(&c.records_out) as i64 - get(&c.records_in) as i64;
        assert!(
            queued <= (b.per_channel * b.capacity) as i64,
            "channel {ch}: records_out - records_in = {queued} > {} credits x {} records",
            b.per_channel,
            b.capacity
        );
        queued_records_sum += queued;
    }
    assert!(
        in_flight_sum <= b.total,
        "{in_flight_sum} buffers in flight on the gate > channels*exclusive + floating = {}",
        b.total
    );
    assert!(
        queued_records_sum <= (b.total * b.capacity) as i64,
        "gate: records_out - records_in = {queued_records_sum} > {} x {}",
        b.total,
        b.capacity
    );
}

/// Checks made by an independent thread while senders and receiver run. Returns whether the
/// whole-gate in-flight sum could be checked this time.
///
/// - Per-channel `buffers_in_flight` is one atomic, only ever changed under the gate lock, so any
///   value read is a state the channel really was in: the per-channel bound is exact.
/// - `records_out` and `records_in` only grow: reading all `records_out` first and all
///   `records_in` afterwards can only under-estimate what is queued, so both the per-channel and
///   the summed records bound are sound.
/// - The in-flight *sum* across channels is not one atomic value: a buffer released on channel 0
///   and a floating credit reused on channel 1 between two reads would add up to a state that never
///   existed. So the sum is only checked when `buffers_out` of every channel is unchanged across
///   the in-flight reads (no buffer shipped meanwhile; releases only lower the values).
///
/// The counters are `Relaxed` atomics written under the gate lock; the fences keep this thread's
/// reads in the order the argument above needs.
fn check_bounds_from_observer(counters: &[Arc<ChannelCounters>], b: Bounds) -> bool {
    let mut records_out_sum = 0i64;
    let records_out: Vec<u64> = counters.iter().map(|c| get(&c.records_out)).collect();
    fence(Ordering::SeqCst);
    for (ch, c) in counters.iter().enumerate() {
        let queued = records_out[ch] as i64 - get(&c.records_in) as i64;
        assert!(
            queued <= (b.per_channel * b.capacity) as i64,
            "observer: channel {ch}: records_out - records_in = {queued} > {} x {}",
            b.per_channel,
            b.capacity
        );
        records_out_sum += queued;
    }
    assert!(
        records_out_sum <= (b.total * b.capacity) as i64,
        "observer: gate records_out - records_in = {records_out_sum} > {} x {}",
        b.total,
        b.capacity
    );

    let shipped_before: Vec<u64> = counters.iter().map(|c| get(&c.buffers_out)).collect();
    fence(Ordering::SeqCst);
    let in_flight: Vec<u64> = counters.iter().map(|c| get(&c.buffers_in_flight)).collect();
    fence(Ordering::SeqCst);
    let shipped_after: Vec<u64> = counters.iter().map(|c| get(&c.buffers_out)).collect();
    for (ch, &n) in in_flight.iter().enumerate() {
        assert!(
            n <= b.per_channel,
            "observer: channel {ch}: {n} buffers in flight > exclusive + floating = {}",
            b.per_channel
        );
    }
    if shipped_before == shipped_after {
        let sum: u64 = in_flight.iter().sum();
        assert!(
            sum <= b.total,
            "observer: {sum} buffers in flight on the gate > channels*exclusive + floating = {}",
            b.total
        );
        true
    } else {
        false
    }
}

// ------------------------------------------------------------------------------------------------
// 1. no loss, no duplication, per-channel FIFO, events in place, end only after every channel

#[derive(Clone, Debug)]
struct ChannelPlan {
    records: u64,
    /// Call `try_flush` after every this many records.
    flush_every: Option<u64>,
    /// Send `Watermark(records written so far)` after every this many records.
    watermark_every: Option<u64>,
    /// Yield the sender thread after every this many records (varies interleavings).
    yield_every: Option<u64>,
}

#[derive(Clone, Debug)]
struct ExchangeCase {
    capacity: usize,
    slack: usize,
    exclusive: usize,
    floating: usize,
    plans: Vec<ChannelPlan>,
}

fn channel_plan(max_records: u64) -> impl Strategy<Value = ChannelPlan> {
    (
        0..=max_records,
        proptest::option::of(1u64..20),
        proptest::option::weighted(0.3, 1u64..40),
        proptest::option::of(1u64..30),
    )
        .prop_map(
            |(records, flush_every, watermark_every, yield_every)| ChannelPlan {
                records,
                flush_every,
                watermark_every,
                yield_every,
            },
        )
}

fn exchange_case(max_channels: usize, max_records: u64) -> impl Strategy<Value = ExchangeCase> {
    (
        1..=max_channels,
        1usize..=50,
        0..REC_SIZE,
        0usize..=3,
        0usize..=3,
    )
        .prop_filter("exclusive + floating must be at least 1", |t| {
            t.3 + t.4 >= 1
        })
        .prop_flat_map(move |(channels, capacity, slack, exclusive, floating)| {
            proptest::collection::vec(channel_plan(max_records), channels).prop_map(move |plans| {
                ExchangeCase {
                    capacity,
                    slack,
                    exclusive,
                    floating,
                    plans,
                }
            })
        })
}

fn run_sender(mut w: ChannelWriter<Rec>, ch: u64, plan: &ChannelPlan) -> Result<(), Cancelled> {
    for seq in 0..plan.records {
        w.push((ch, seq))?;
        assert!(
            w.pending() < w.capacity(),
            "a full buffer must have shipped"
        );
        let written = seq + 1;
        if plan.flush_every.is_some_and(|k| written % k == 0) {
            let before = w.pending();
            if w.try_flush()? {
                assert!(before > 0, "try_flush shipped an empty buffer");
                assert_eq!(w.pending(), 0, "try_flush shipped but kept records");
            } else {
                assert_eq!(w.pending(), before, "try_flush without credit lost records");
            }
        }
        if plan.watermark_every.is_some_and(|k| written % k == 0) {
            w.send_event(ChannelEvent::Watermark(Watermark(written as i64)))?;
            assert_eq!(w.pending(), 0, "send_event must ship pending records first");
        }
        if plan.yield_every.is_some_and(|k| written % k == 0) {
            thread::yield_now();
        }
    }
    w.finish()
}

fn run_exchange(case: ExchangeCase) {
    let channels = case.plans.len();
    let cfg = config(case.capacity, case.slack, case.exclusive, case.floating);
    let recv_waits = Arc::new(WaitTimes::default());
    let send_waits = Arc::new(WaitTimes::default());
    let (mut gate, senders) = InputGate::<Rec>::new(channels, &cfg, recv_waits.clone());
    assert_eq!(gate.num_channels(), channels);
    assert_eq!(gate.open_channels(), channels);
    let counters = gate.counters();
    let bounds = Bounds::new(channels, &cfg, case.capacity);
    let writers = writers(senders, &cfg, &send_waits);
    let canceller = gate.canceller();

    thread::scope(|s| {
        // Inside the scope: the scope joins its threads before it re-raises a panic.
        let _guard = CancelOnPanic(canceller.clone());
        let handles: Vec<_> = writers
            .into_iter()
            .zip(&case.plans)
            .enumerate()
            .map(|(ch, (w, plan))| {
                assert_eq!(w.capacity(), case.capacity);
                assert_eq!(w.sender().channel(), ch);
                let canceller = canceller.clone();
                s.spawn(move || {
                    let _guard = CancelOnPanic(canceller);
                    run_sender(w, ch as u64, plan)
                })
            })
            .collect();

        let mut next_seq = vec![0u64; channels];
        let mut ended = vec![false; channels];
        let mut buffers = vec![0u64; channels];
        loop {
            let item = gate
                .next()
                .expect("cancelled: a sender panicked (its message is above)");
            match item {
                None => break,
                Some(GateItem::Idle) => panic!("Idle without a wake interval"),
                Some(GateItem::UnalignedBarrier { .. }) => panic!("no unaligned barrier was sent"),
                Some(GateItem::Buffer(buf)) => {
                    let ch = buf.channel;
                    assert!(ch < channels, "buffer from unknown channel {ch}");
                    assert!(!ended[ch], "channel {ch}: buffer after end-of-partition");
                    assert!(
                        !buf.records.is_empty(),
                        "channel {ch}: empty buffer shipped"
                    );
                    assert!(
                        buf.records.len() <= case.capacity,
                        "channel {ch}: buffer of {} records > capacity {}",
                        buf.records.len(),
                        case.capacity
                    );
                    for &(rc, seq) in &buf.records {
                        assert_eq!(rc, ch as u64, "record of channel {rc} delivered on {ch}");
                        assert_eq!(
                            seq, next_seq[ch],
                            "channel {ch}: out of order, lost or duplicated record"
                        );
                        next_seq[ch] += 1;
                    }
                    buffers[ch] += 1;
                    check_bounds_from_receiver(&counters, bounds);
                    gate.release(buf);
                }
                Some(GateItem::Event { channel, event }) => {
                    assert!(channel < channels, "event from unknown channel {channel}");
                    assert!(
                        !ended[channel],
                        "channel {channel}: event after end-of-partition"
                    );
                    match event {
                        ChannelEvent::EndOfPartition => {
                            assert_eq!(
                                next_seq[channel], case.plans[channel].records,
                                "channel {channel}: end-of-partition overtook records"
                            );
                            ended[channel] = true;
                            let open = ended.iter().filter(|e| !**e).count();
                            assert_eq!(gate.open_channels(), open);
                        }
                        ChannelEvent::Watermark(Watermark(w)) => {
                            assert_eq!(
                                w as u64, next_seq[channel],
                                "channel {channel}: watermark out of place"
                            );
                        }
                        other => panic!("unexpected event {other:?}"),
                    }
                }
            }
        }
        assert!(
            ended.iter().all(|e| *e),
            "next() returned None before every channel ended: {ended:?}"
        );
        assert_eq!(gate.open_channels(), 0);
        assert!(matches!(gate.next(), Ok(None)), "None must be sticky");
        for (ch, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), Ok(()), "sender {ch} failed");
        }

        for (ch, c) in counters.iter().enumerate() {
            let n = case.plans[ch].records;
            assert_eq!(next_seq[ch], n, "channel {ch}: records missing");
            assert_eq!(get(&c.records_out), n, "channel {ch}: records_out");
            assert_eq!(get(&c.records_in), n, "channel {ch}: records_in");
            assert_eq!(
                get(&c.bytes_out),
                n * REC_SIZE as u64,
                "channel {ch}: bytes_out"
            );
            assert_eq!(
                get(&c.bytes_in),
                n * REC_SIZE as u64,
                "channel {ch}: bytes_in"
            );
            assert_eq!(
                get(&c.buffers_out),
                buffers[ch],
                "channel {ch}: buffers_out"
            );
            assert_eq!(get(&c.buffers_in), buffers[ch], "channel {ch}: buffers_in");
            assert_eq!(get(&c.buffers_in_flight), 0, "channel {ch}: buffers leaked");
            assert_eq!(
                get(&c.buffers_queued),
                0,
                "channel {ch}: buffers left queued"
            );
            assert_eq!(get(&c.bytes_queued), 0, "channel {ch}: bytes left queued");
            assert_eq!(
                get(&c.floating_in_flight),
                0,
                "channel {ch}: floating credits leaked"
            );
            assert!(
                buffers[ch] >= n.div_ceil(case.capacity as u64),
                "channel {ch}: fewer buffers than records need"
            );
        }
    });
    assert_eq!(send_waits.idle_ns.load(Ordering::Relaxed), 0);
    assert_eq!(recv_waits.backpressured_ns.load(Ordering::Relaxed), 0);
}

// ------------------------------------------------------------------------------------------------
// 2. bounded in flight with a slow receiver

#[derive(Clone, Copy, Debug)]
enum Slowness {
    Yield,
    SleepMicros(u64),
}

fn run_bounded(case: ExchangeCase, slowness: Slowness) {
    let channels = case.plans.len();
    let cfg = config(case.capacity, case.slack, case.exclusive, case.floating);
    let (mut gate, senders) = InputGate::<Rec>::new(channels, &cfg, Default::default());
    let counters = gate.counters();
    let bounds = Bounds::new(channels, &cfg, case.capacity);
    let writers = writers(senders, &cfg, &Default::default());
    let done = AtomicBool::new(false);
    let canceller = gate.canceller();

    thread::scope(|s| {
        // Inside the scope: the scope joins its threads before it re-raises a panic.
        let _guard = CancelOnPanic(canceller.clone());
        let observer = s.spawn(|| {
            let (mut observations, mut sum_checks) = (0u64, 0u64);
            loop {
                let finished = done.load(Ordering::Acquire);
                observations += 1;
                sum_checks += u64::from(check_bounds_from_observer(&counters, bounds));
                if finished {
                    break;
                }
                thread::yield_now();
            }
            (observations, sum_checks)
        });
        let handles: Vec<_> = writers
            .into_iter()
            .zip(&case.plans)
            .enumerate()
            .map(|(ch, (w, plan))| {
                let canceller = canceller.clone();
                s.spawn(move || {
                    let _guard = CancelOnPanic(canceller);
                    run_sender(w, ch as u64, plan)
                })
            })
            .collect();

        // Stops the observer even if the receiver panics.
        let stop_observer = SetOnDrop(&done);
        let mut received = vec![0u64; channels];
        let mut result = Ok(());
        loop {
            let item = match gate.next() {
                Ok(Some(item)) => item,
                Ok(None) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            check_bounds_from_receiver(&counters, bounds);
            if let GateItem::Buffer(buf) = item {
                for &(ch, seq) in &buf.records {
                    assert_eq!(seq, received[ch as usize], "channel {ch}: order broken");
                    received[ch as usize] += 1;
                }
                match slowness {
                    Slowness::Yield => thread::yield_now(),
                    Slowness::SleepMicros(us) => thread::sleep(Duration::from_micros(us)),
                }
                gate.release(buf);
            }
        }
        // The observer makes one more observation of the final, quiet state before it stops.
        drop(stop_observer);
        assert_eq!(result, Ok(()));
        for h in handles {
            assert_eq!(h.join().unwrap(), Ok(()));
        }
        let (observations, sum_checks) = observer.join().unwrap();
        assert!(observations >= 1);
        // After the end every channel is quiet, so at least the last observation is stable.
        assert!(sum_checks >= 1);
        for (ch, plan) in case.plans.iter().enumerate() {
            assert_eq!(received[ch], plan.records);
            assert_eq!(get(&counters[ch].buffers_in_flight), 0);
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        failure_persistence: None,
        // A deadlock costs PROP_DEADLINE per shrink step: cap the time spent shrinking.
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn exchange_delivers_every_record_once_in_channel_order(case in exchange_case(5, 400)) {
        with_deadline(PROP_DEADLINE, move || run_exchange(case));
    }

    #[test]
    fn in_flight_data_is_bounded_by_credits(
        case in exchange_case(4, 120),
        slowness in prop_oneof![
            Just(Slowness::Yield),
            (10u64..150).prop_map(Slowness::SleepMicros),
        ],
    ) {
        with_deadline(PROP_DEADLINE, move || run_bounded(case, slowness));
    }
}

/// With a receiver that takes nothing, senders ship exactly the gate's credits and then park:
/// the bound is reached, never exceeded, and exclusive credits are never lent to other channels.
#[test]
fn stalled_receiver_saturates_credits_exactly() {
    with_deadline(DEADLINE, || {
        let (channels, exclusive, floating, capacity) = (3usize, 2usize, 3usize, 4usize);
        let cfg = config(capacity, 0, exclusive, floating);
        let send_waits = Arc::new(WaitTimes::default());
        let (mut gate, senders) = InputGate::<Rec>::new(channels, &cfg, Default::default());
        let counters = gate.counters();
        let bounds = Bounds::new(channels, &cfg, capacity);
        let writers = writers(senders, &cfg, &send_waits);
        let canceller = gate.canceller();
        let per_channel = 100u64;

        thread::scope(|s| {
            // Inside the scope: the scope joins its threads before it re-raises a panic.
            let _guard = CancelOnPanic(canceller);
            let handles: Vec<_> = writers
                .into_iter()
                .enumerate()
                .map(|(ch, mut w)| {
                    s.spawn(move || {
                        for seq in 0..per_channel {
                            w.push((ch as u64, seq))?;
                        }
                        w.finish()
                    })
                })
                .collect();

            let total = || -> u64 { counters.iter().map(|c| get(&c.buffers_in_flight)).sum() };
            let started = Instant::now();
            while total() < bounds.total {
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "senders never filled credits"
                );
                check_bounds_from_observer(&counters, bounds);
                thread::sleep(Duration::from_millis(1));
            }
            // Give the senders time to overshoot if they could.
            thread::sleep(Duration::from_millis(50));
            assert_eq!(total(), bounds.total);
            let shipped: u64 = counters.iter().map(|c| get(&c.buffers_out)).sum();
            assert_eq!(shipped, bounds.total, "shipped more buffers than credits");
            let records: u64 = counters.iter().map(|c| get(&c.records_out)).sum();
            assert_eq!(records, bounds.total * capacity as u64);
            for (ch, c) in counters.iter().enumerate() {
                let n = get(&c.buffers_in_flight);
                // Nothing has been taken yet: everything in flight is still queued, and what
                // exceeds the exclusive credits holds floating ones.
                assert_eq!(get(&c.buffers_queued), n, "channel {ch}: queued gauge");
                assert_eq!(
                    get(&c.bytes_queued),
                    get(&c.bytes_in_flight),
                    "channel {ch}"
                );
                assert_eq!(
                    get(&c.floating_in_flight),
                    n.saturating_sub(exclusive as u64),
                    "channel {ch}: floating gauge"
                );
                assert!(
                    (exclusive as u64..=bounds.per_channel).contains(&n),
                    "channel {ch}: {n} in flight, expected its {exclusive} exclusive credits \
                     plus at most {floating} floating"
                );
            }

            let mut next_seq = vec![0u64; channels];
            while let Some(item) = gate.next().unwrap() {
                check_bounds_from_receiver(&counters, bounds);
                if let GateItem::Buffer(buf) = item {
                    for &(ch, seq) in &buf.records {
                        assert_eq!(seq, next_seq[ch as usize]);
                        next_seq[ch as usize] += 1;
                    }
                    gate.release(buf);
                }
            }
            assert_eq!(next_seq, vec![per_channel; channels]);
            for h in handles {
                assert_eq!(h.join().unwrap(), Ok(()));
            }
        });
        assert!(
            send_waits.backpressured_ns.load(Ordering::Relaxed) > 0,
            "senders waited for credit but no backpressure time was recorded"
        );
    });
}

// ------------------------------------------------------------------------------------------------
// 3. credits and permits

#[test]
fn zero_credit_refuses_reserve_and_send_and_permits_return_credit() {
    let cfg = config(4, 0, 1, 1);
    let (mut gate, senders) = InputGate::<Rec>::new(2, &cfg, Default::default());
    let counters = gate.counters();
    let (s0, s1) = (&senders[0], &senders[1]);

    // Channel 0 takes its exclusive credit and the gate's only floating credit.
    let p_exclusive = s0.try_reserve().unwrap().expect("exclusive credit free");
    let p_floating = s0.try_reserve().unwrap().expect("floating credit free");
    assert!(
        s0.try_reserve().unwrap().is_none(),
        "channel 0 has no credit left"
    );
    // Channel 1 still owns its exclusive credit, but the floating one is taken.
    let p1 = s1
        .try_reserve()
        .unwrap()
        .expect("channel 1 exclusive credit");
    assert!(s1.try_reserve().unwrap().is_none());

    // try_send without credit hands the very same records back, untouched, and ships nothing.
    let records = vec![(1, 0), (1, 1), (1, 2)];
    let ptr = records.as_ptr();
    let back = s1
        .try_send(records)
        .unwrap()
        .expect_err("no credit: records come back");
    assert_eq!(back, vec![(1, 0), (1, 1), (1, 2)]);
    assert_eq!(
        back.as_ptr(),
        ptr,
        "records were copied instead of handed back"
    );
    assert_eq!(get(&counters[1].buffers_out), 0);
    assert_eq!(get(&counters[1].records_out), 0);

    // Dropping an unused permit returns its credit: the floating one is free for channel 1 now.
    drop(p_floating);
    let p1_floating = s1
        .try_reserve()
        .unwrap()
        .expect("dropped permit returned its credit");
    assert!(s0.try_reserve().unwrap().is_none());
    drop(p1_floating);
    drop(p1);

    // Permit::send consumes the credit: after it, channel 0 can only borrow the floating credit.
    let fresh = p_exclusive.send(vec![(0, 0), (0, 1)]);
    assert!(fresh.is_empty());
    assert_eq!(get(&counters[0].buffers_in_flight), 1);
    assert_eq!(get(&counters[0].records_out), 2);
    let p_borrow = s0.try_reserve().unwrap().expect("floating credit");
    assert!(
        s0.try_reserve().unwrap().is_none(),
        "send must consume the credit"
    );
    assert!(matches!(s0.try_send(vec![(0, 9)]), Ok(Err(_))));
    drop(p_borrow);

    // The credit of a sent buffer returns only when the receiver releases the buffer.
    let held = s0.try_reserve().unwrap().expect("floating");
    let buf = expect_buffer(gate.next().unwrap());
    assert_eq!((buf.channel, seqs(&buf)), (0, vec![0, 1]));
    assert!(
        s0.try_reserve().unwrap().is_none(),
        "credit returned before release"
    );
    gate.release(buf);
    assert_eq!(get(&counters[0].buffers_in_flight), 0);
    let again = s0
        .try_reserve()
        .unwrap()
        .expect("release returned the credit");
    drop((again, held));
}

#[test]
fn single_credit_permit_lifecycle() {
    let cfg = config(2, 0, 1, 0);
    let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
    let s = &senders[0];

    let p = s.try_reserve().unwrap().expect("one credit");
    assert!(s.try_reserve().unwrap().is_none());
    drop(p);
    let p = s
        .try_reserve()
        .unwrap()
        .expect("dropping the permit returned the credit");
    let _ = p.send(vec![(0, 0)]);
    assert!(
        s.try_reserve().unwrap().is_none(),
        "send consumed the credit"
    );
    assert!(matches!(s.try_send(vec![(0, 1)]), Ok(Err(_))));

    let buf = expect_buffer(gate.next().unwrap());
    gate.release(buf);
    assert!(matches!(s.try_send(vec![(0, 1)]), Ok(Ok(_))));
    assert!(s.try_reserve().unwrap().is_none());
    assert_eq!(seqs(&expect_buffer(gate.next().unwrap())), vec![1]);
}

#[test]
fn try_flush_without_credit_keeps_records_until_credit_returns() {
    let cfg = config(10, 0, 1, 0);
    let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
    let mut w = writers(senders, &cfg, &Default::default()).remove(0);
    w.push((0, 0)).unwrap();
    assert_eq!(w.try_flush(), Ok(true));
    w.push((0, 1)).unwrap();
    w.push((0, 2)).unwrap();
    assert_eq!(w.try_flush(), Ok(false), "no credit: nothing may ship");
    assert_eq!(w.pending(), 2);
    let buf = expect_buffer(gate.next().unwrap());
    assert_eq!(seqs(&buf), vec![0]);
    gate.release(buf);
    assert_eq!(w.try_flush(), Ok(true));
    assert_eq!(w.pending(), 0);
    assert_eq!(w.try_flush(), Ok(false), "nothing pending");
    assert_eq!(seqs(&expect_buffer(gate.next().unwrap())), vec![1, 2]);
}

/// A thread parked in `reserve()` is woken when another holder drops an unused permit.
#[test]
fn dropped_permit_wakes_a_parked_reserve() {
    with_deadline(DEADLINE, || {
        let cfg = config(2, 0, 1, 0);
        let waits = WaitTimes::default();
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
        let sender = &senders[0];
        let held = sender.try_reserve().unwrap().expect("one credit");
        thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let waits = &waits;
            let h = s.spawn(move || {
                let permit = sender.reserve(waits)?;
                let _ = permit.send(vec![(0, 42)]);
                let _ = tx.send(());
                Ok::<(), Cancelled>(())
            });
            thread::sleep(Duration::from_millis(50));
            assert_eq!(
                rx.try_recv(),
                Err(TryRecvError::Empty),
                "reserve did not park"
            );
            drop(held);
            rx.recv_timeout(PROMPT)
                .expect("parked reserve was not woken");
            assert_eq!(h.join().unwrap(), Ok(()));
        });
        assert!(waits.backpressured_ns.load(Ordering::Relaxed) > 0);
        assert_eq!(seqs(&expect_buffer(gate.next().unwrap())), vec![42]);
    });
}

/// Buffers handed to the writer for refilling are topped up to the writer's capacity.
#[test]
fn writer_refills_recycled_buffers_to_full_capacity() {
    let capacity = 10;
    let cfg = config(capacity, 0, 3, 0);
    let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
    let mut w = writers(senders, &cfg, &Default::default()).remove(0);

    // A small buffer shipped through a permit ends up in the channel's recycle list.
    let small = vec![(0, 0)];
    assert_eq!(small.capacity(), 1);
    let permit = w.sender().try_reserve().unwrap().expect("credit");
    let _ = permit.send(small);
    let buf = expect_buffer(gate.next().unwrap());
    gate.release(buf);

    // The writer's first full buffer ships and the recycled small allocation comes back to it;
    // the second buffer is built in that allocation.
    for seq in 1..=2 * capacity as u64 {
        w.push((0, seq)).unwrap();
    }
    let first = expect_buffer(gate.next().unwrap());
    let second = expect_buffer(gate.next().unwrap());
    assert_eq!(seqs(&first), (1..=10).collect::<Vec<_>>());
    assert_eq!(seqs(&second), (11..=20).collect::<Vec<_>>());
    // Built with `Vec::with_capacity(capacity)` / topped up with `reserve_exact`, a buffer never
    // has to grow while it is filled, so its allocation holds exactly `capacity` records.
    assert_eq!(
        second.records.capacity(),
        capacity,
        "the recycled buffer was not topped up to capacity and regrew while being filled"
    );
}

// ------------------------------------------------------------------------------------------------
// 4. cancellation

#[test]
fn cancel_unblocks_parked_senders_and_receivers_promptly() {
    with_deadline(DEADLINE, || {
        // Gate A: nobody consumes, so its senders run out of credit and park.
        let cfg_a = config(8, 0, 1, 0);
        let waits_a = Arc::new(WaitTimes::default());
        let (mut gate_a, mut senders_a) =
            InputGate::<Rec>::new(2, &cfg_a, Arc::new(WaitTimes::default()));
        let counters_a = gate_a.counters();
        let cancel_a = gate_a.canceller();
        let sender_a1 = senders_a.pop().unwrap();
        let mut writer_a0 = senders_a
            .pop()
            .unwrap()
            .into_writer(&cfg_a, waits_a.clone());

        // Gate B: nobody sends, so its receiver parks in next().
        let cfg_b = ExchangeConfig::default();
        let waits_b = Arc::new(WaitTimes::default());
        let (mut gate_b, senders_b) = InputGate::<Rec>::new(2, &cfg_b, waits_b.clone());
        let cancel_b = gate_b.canceller();

        let (tx_ship, rx_ship) = mpsc::channel();
        let shipper = thread::spawn(move || {
            let mut result = Ok(());
            for seq in 0..3 {
                writer_a0.push((0, seq)).unwrap(); // capacity 8: never ships by itself
                result = writer_a0.ship(); // the second ship has no credit and parks
                if result.is_err() {
                    break;
                }
            }
            let _ = tx_ship.send(result);
            writer_a0
        });
        let (tx_reserve, rx_reserve) = mpsc::channel();
        let reserve_waits = waits_a.clone();
        let reserver = thread::spawn(move || {
            let first = sender_a1
                .reserve(&reserve_waits)
                .map(|p| p.send(vec![(1, 0)]));
            assert!(first.is_ok());
            let second = sender_a1.reserve(&reserve_waits).map(|_| ()); // parks: no credit
            let _ = tx_reserve.send(second);
            sender_a1
        });
        let (tx_next, rx_next) = mpsc::channel();
        let receiver = thread::spawn(move || {
            let r = gate_b.next().map(|item| format!("{item:?}"));
            let _ = tx_next.send(r);
            gate_b
        });

        // Wait until gate A's credits are used up, then make sure everyone is still parked.
        let started = Instant::now();
        while get(&counters_a[0].buffers_out) < 1 || get(&counters_a[1].buffers_out) < 1 {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "senders never shipped"
            );
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            rx_ship.try_recv(),
            Err(TryRecvError::Empty),
            "ship() did not park"
        );
        assert_eq!(
            rx_reserve.try_recv(),
            Err(TryRecvError::Empty),
            "reserve() did not park"
        );
        assert_eq!(
            rx_next.try_recv(),
            Err(TryRecvError::Empty),
            "next() did not park"
        );
        assert_eq!(get(&counters_a[0].buffers_out), 1, "shipped without credit");

        let cancelled_at = Instant::now();
        cancel_a.cancel();
        cancel_b.cancel();
        assert_eq!(rx_ship.recv_timeout(PROMPT), Ok(Err(Cancelled)));
        assert_eq!(rx_reserve.recv_timeout(PROMPT), Ok(Err(Cancelled)));
        assert_eq!(rx_next.recv_timeout(PROMPT), Ok(Err(Cancelled)));
        assert!(cancelled_at.elapsed() < PROMPT);
        let mut writer_a0 = shipper.join().unwrap();
        let sender_a1 = reserver.join().unwrap();
        let mut gate_b = receiver.join().unwrap();

        // Blocking time before the cancellation was accounted.
        assert!(waits_a.backpressured_ns.load(Ordering::Relaxed) > 0);
        assert!(waits_b.idle_ns.load(Ordering::Relaxed) > 0);

        // Everything after cancellation fails fast, even with data queued or credit free.
        assert!(matches!(gate_a.next(), Err(Cancelled)));
        assert!(matches!(gate_b.next(), Err(Cancelled)));
        assert!(sender_a1.try_reserve().is_err());
        assert!(sender_a1.reserve(&WaitTimes::default()).is_err());
        assert!(sender_a1.try_send(vec![(1, 1)]).is_err());
        assert_eq!(
            sender_a1.send_event(ChannelEvent::EndOfPartition),
            Err(Cancelled)
        );
        assert_eq!(
            senders_b[0].send_event(ChannelEvent::EndOfPartition),
            Err(Cancelled)
        );
        assert!(senders_b[1]
            .send_blocking(vec![(1, 1)], &WaitTimes::default())
            .is_err());
        writer_a0.push((0, 99)).unwrap();
        assert_eq!(writer_a0.try_flush(), Err(Cancelled));
        assert_eq!(writer_a0.finish(), Err(Cancelled));
        // Cancelling twice is harmless.
        cancel_a.cancel();
    });
}

/// Cancellation also ends a receiver that wakes up periodically (wake interval set).
#[test]
fn cancel_stops_a_receiver_with_wake_interval() {
    with_deadline(DEADLINE, || {
        let (mut gate, _senders) =
            InputGate::<Rec>::new(1, &ExchangeConfig::default(), Default::default());
        gate.set_wake_interval(Some(Duration::from_millis(5)));
        let canceller = gate.canceller();
        let (tx, rx) = mpsc::channel();
        let h = thread::spawn(move || loop {
            match gate.next() {
                Ok(Some(GateItem::Idle)) => continue,
                other => {
                    let _ = tx.send(other.map(|o| format!("{o:?}")));
                    return;
                }
            }
        });
        thread::sleep(Duration::from_millis(30));
        canceller.cancel();
        assert_eq!(rx.recv_timeout(PROMPT), Ok(Err(Cancelled)));
        h.join().unwrap();
    });
}

// ------------------------------------------------------------------------------------------------
// 5. wait-time accounting

#[test]
fn waiting_for_credit_is_backpressure_and_waiting_for_data_is_idle() {
    with_deadline(DEADLINE, || {
        let cfg = config(1, 0, 1, 0);
        let send_waits = Arc::new(WaitTimes::default());
        let recv_waits = Arc::new(WaitTimes::default());
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, recv_waits.clone());
        let mut w = writers(senders, &cfg, &send_waits).remove(0);
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let h = thread::spawn(move || {
            go_rx.recv().unwrap();
            thread::sleep(Duration::from_millis(50)); // receiver is parked in next() by now
            for seq in 0..3 {
                w.push((0, seq))?; // capacity 1: every push ships; from the second one, it waits
            }
            w.finish()
        });
        go_tx.send(()).unwrap();
        let first = expect_buffer(gate.next().unwrap());
        // Hold the buffer (and with it the only credit) so the sender has to wait.
        thread::sleep(Duration::from_millis(20));
        assert_eq!(seqs(&first), vec![0]);
        gate.release(first);
        let mut got = vec![];
        while let Some(item) = gate.next().unwrap() {
            if let GateItem::Buffer(b) = item {
                got.extend(seqs(&b));
                gate.release(b);
            }
        }
        assert_eq!(got, vec![1, 2]);
        assert_eq!(h.join().unwrap(), Ok(()));

        assert!(send_waits.backpressured_ns.load(Ordering::Relaxed) > 0);
        assert!(recv_waits.idle_ns.load(Ordering::Relaxed) > 0);
        // Each side's time goes to its own subtask's account.
        assert_eq!(send_waits.idle_ns.load(Ordering::Relaxed), 0);
        assert_eq!(recv_waits.backpressured_ns.load(Ordering::Relaxed), 0);
    });
}

#[test]
fn no_wait_no_wait_time() {
    let cfg = config(4, 0, 2, 0);
    let send_waits = Arc::new(WaitTimes::default());
    let recv_waits = Arc::new(WaitTimes::default());
    let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, recv_waits.clone());
    let mut w = writers(senders, &cfg, &send_waits).remove(0);
    for seq in 0..5 {
        w.push((0, seq)).unwrap();
    }
    w.finish().unwrap();
    let mut n = 0;
    while let Some(item) = gate.next().unwrap() {
        if let GateItem::Buffer(b) = item {
            n += b.records.len();
            gate.release(b);
        }
    }
    assert_eq!(n, 5);
    assert_eq!(send_waits.backpressured_ns.load(Ordering::Relaxed), 0);
    assert_eq!(recv_waits.idle_ns.load(Ordering::Relaxed), 0);
}

// ------------------------------------------------------------------------------------------------
// 6. events keep their place and need no credit

#[test]
fn events_need_no_credit_and_keep_their_place() {
    with_deadline(DEADLINE, || {
        let cfg = config(2, 0, 1, 0);
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
        let mut w = writers(senders, &cfg, &Default::default()).remove(0);

        w.push((0, 0)).unwrap();
        w.push((0, 1)).unwrap(); // full: ships with the only credit
        assert!(
            w.sender().try_reserve().unwrap().is_none(),
            "credit exhausted"
        );
        // Nothing pending, no credit: the event goes out anyway, without blocking.
        w.send_event(ChannelEvent::Watermark(Watermark(2))).unwrap();
        w.sender()
            .send_event(ChannelEvent::Barrier(sluice_types::Barrier {
                checkpoint_id: 7,
                timestamp_ms: 0,
                kind: sluice_types::CheckpointKind::Aligned,
            }))
            .unwrap();

        let h = thread::spawn(move || {
            w.push((0, 2))?;
            w.push((0, 3))?; // waits for the credit of [0, 1]
            w.send_event(ChannelEvent::Watermark(Watermark(4)))?;
            w.push((0, 4))?;
            w.finish() // ships [4] (waits for the credit of [2, 3]), then end-of-partition
        });

        let b01 = expect_buffer(gate.next().unwrap());
        assert_eq!(seqs(&b01), vec![0, 1]);
        // The buffer (and the only credit) is still held, yet the events are deliverable.
        assert_eq!(
            expect_event(gate.next().unwrap()),
            (0, ChannelEvent::Watermark(Watermark(2)))
        );
        assert!(matches!(
            expect_event(gate.next().unwrap()),
            (0, ChannelEvent::Barrier(b)) if b.checkpoint_id == 7
        ));
        gate.release(b01);
        let b23 = expect_buffer(gate.next().unwrap());
        assert_eq!(seqs(&b23), vec![2, 3]);
        assert_eq!(
            expect_event(gate.next().unwrap()),
            (0, ChannelEvent::Watermark(Watermark(4)))
        );
        gate.release(b23);
        let b4 = expect_buffer(gate.next().unwrap());
        assert_eq!(seqs(&b4), vec![4]);
        gate.release(b4);
        assert_eq!(
            expect_event(gate.next().unwrap()),
            (0, ChannelEvent::EndOfPartition)
        );
        assert!(matches!(gate.next(), Ok(None)));
        assert_eq!(h.join().unwrap(), Ok(()));
    });
}

/// An event written after records that could not ship yet (no credit) must not overtake them:
/// the writer ships them first, waiting for credit, and only then sends the event.
#[test]
fn event_does_not_overtake_records_waiting_for_credit() {
    with_deadline(DEADLINE, || {
        let cfg = config(4, 0, 1, 0);
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
        gate.set_wake_interval(Some(Duration::from_millis(20)));
        let mut w = writers(senders, &cfg, &Default::default()).remove(0);
        for seq in 0..5 {
            w.push((0, seq)).unwrap(); // [0..4) ships, 4 stays pending
        }
        assert_eq!(w.pending(), 1);
        let (tx, rx) = mpsc::channel();
        let h = thread::spawn(move || {
            let r = w.send_event(ChannelEvent::Watermark(Watermark(5)));
            let _ = tx.send(());
            r?;
            w.finish()
        });

        let first = expect_buffer(gate.next().unwrap());
        assert_eq!(seqs(&first), vec![0, 1, 2, 3]);
        // Holding the only credit: the watermark must not be visible ahead of record 4.
        match gate.next().unwrap() {
            Some(GateItem::Idle) => {}
            other => panic!("watermark overtook a pending record: {other:?}"),
        }
        assert_eq!(
            rx.try_recv(),
            Err(TryRecvError::Empty),
            "send_event did not wait"
        );
        gate.release(first);
        let mut rest = vec![];
        while let Some(item) = gate.next().unwrap() {
            match item {
                GateItem::Idle => {}
                GateItem::Buffer(b) => {
                    rest.push(format!("{:?}", seqs(&b)));
                    gate.release(b);
                }
                GateItem::Event { event, .. } => rest.push(format!("{event:?}")),
                GateItem::UnalignedBarrier { .. } => panic!("no unaligned barrier was sent"),
            }
        }
        assert_eq!(
            rest,
            vec![
                "[4]".to_string(),
                format!("{:?}", ChannelEvent::Watermark(Watermark(5))),
                format!("{:?}", ChannelEvent::EndOfPartition),
            ]
        );
        assert_eq!(h.join().unwrap(), Ok(()));
    });
}

// ------------------------------------------------------------------------------------------------
// 7. wake interval

#[test]
fn wake_interval_yields_idle_when_no_data_arrives() {
    with_deadline(DEADLINE, || {
        let cfg = config(4, 0, 2, 2);
        let recv_waits = Arc::new(WaitTimes::default());
        let (mut gate, senders) = InputGate::<Rec>::new(2, &cfg, recv_waits.clone());
        gate.set_wake_interval(Some(Duration::from_millis(10)));
        let mut ws = writers(senders, &cfg, &Default::default());

        // No data at all: Idle, and the wait counts as idle time.
        assert!(matches!(gate.next(), Ok(Some(GateItem::Idle))));
        assert!(matches!(gate.next(), Ok(Some(GateItem::Idle))));
        assert!(recv_waits.idle_ns.load(Ordering::Relaxed) > 0);

        // Data already queued is returned, not Idle.
        ws[1].push((1, 0)).unwrap();
        assert_eq!(ws[1].try_flush(), Ok(true));
        let b = expect_buffer(gate.next().unwrap());
        assert_eq!((b.channel, seqs(&b)), (1, vec![0]));
        gate.release(b);
        assert!(matches!(gate.next(), Ok(Some(GateItem::Idle))));

        // Data arriving later, from another thread, is picked up after Idle wake-ups: the sender
        // starts only once the receiver has reported Idle a few times.
        let mut w0 = ws.remove(0);
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let h = thread::spawn(move || {
            go_rx.recv().unwrap();
            thread::sleep(Duration::from_millis(5));
            w0.push((0, 0))?;
            w0.finish()
        });
        let mut idles = 0;
        let mut seen = vec![];
        loop {
            match gate.next().unwrap() {
                Some(GateItem::Idle) => {
                    idles += 1;
                    if idles == 3 {
                        go_tx.send(()).unwrap();
                    }
                }
                Some(GateItem::Buffer(b)) => {
                    seen.push((b.channel, seqs(&b)));
                    gate.release(b);
                }
                Some(GateItem::Event { channel, event }) => {
                    assert_eq!(event, ChannelEvent::EndOfPartition);
                    seen.push((channel, vec![]));
                    break;
                }
                None => panic!("channel 1 has not ended yet"),
                Some(GateItem::UnalignedBarrier { .. }) => panic!("no unaligned barrier was sent"),
            }
        }
        assert!(idles >= 3);
        assert_eq!(seen, vec![(0, vec![0]), (0, vec![])]);
        assert_eq!(h.join().unwrap(), Ok(()));

        // After every channel ended, next() reports the end, not Idle.
        ws[0].finish().unwrap();
        assert_eq!(
            expect_event(gate.next().unwrap()),
            (1, ChannelEvent::EndOfPartition)
        );
        assert!(matches!(gate.next(), Ok(None)));
        assert!(matches!(gate.next(), Ok(None)));
    });
}

#[test]
fn without_wake_interval_next_blocks_instead_of_idling() {
    with_deadline(DEADLINE, || {
        let cfg = config(4, 0, 1, 0);
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
        let mut w = writers(senders, &cfg, &Default::default()).remove(0);
        let (tx, rx) = mpsc::channel();
        let h = thread::spawn(move || {
            let first = gate.next().map(|i| format!("{i:?}"));
            let _ = tx.send(first);
            gate
        });
        thread::sleep(Duration::from_millis(50));
        assert_eq!(
            rx.try_recv(),
            Err(TryRecvError::Empty),
            "next() returned without data"
        );
        w.finish().unwrap();
        let got = rx
            .recv_timeout(PROMPT)
            .expect("receiver was not woken by the event");
        assert_eq!(
            got,
            Ok(format!(
                "{:?}",
                Some(GateItem::<Rec>::Event {
                    channel: 0,
                    event: ChannelEvent::EndOfPartition
                })
            ))
        );
        let mut gate = h.join().unwrap();
        assert!(matches!(gate.next(), Ok(None)));
    });
}
