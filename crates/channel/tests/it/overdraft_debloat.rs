//! Overdraft buffers and buffer debloating over real threads (style of `exchange_props.rs`).
//!
//! - A fan-out record finishes on overdraft instead of blocking mid-record, never beyond the
//!   limit, and the next record waits until the debt is paid back.
//! - Property: with overdraft and unaligned barriers, a channel never holds more than
//!   exclusive + floating + overdraft limit + 1 (the barrier's partial buffer) buffers, the gate
//!   never more than channels × (exclusive + limit + 1) + floating, and records stay in order.
//! - Debloating: the announced buffer size falls under backpressure and recovers when released.
//!
//! Every multi-threaded scenario runs under a deadline, so a lost wake-up fails the test.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use sluice_channel::{
    ChannelCounters, DebloatConfig, ExchangeConfig, GateCanceller, GateItem, InputGate, OutputDebt,
    OverdraftBudget, WaitTimes,
};
use sluice_types::{Barrier, CheckpointKind};

type Rec = (u64, u64);
const REC_SIZE: usize = std::mem::size_of::<Rec>();
const DEADLINE: Duration = Duration::from_secs(30);

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
            panic!("scenario did not finish within {limit:?}: deadlock or lost wake-up")
        }
    }
}

struct CancelOnPanic(GateCanceller);

impl Drop for CancelOnPanic {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.cancel();
        }
    }
}

/// Polls `cond` until it holds or the deadline passes.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

fn get(v: &AtomicU64) -> u64 {
    ChannelCounters::get(v)
}

fn config(capacity: usize, exclusive: usize, floating: usize, overdraft: usize) -> ExchangeConfig {
    let cfg = ExchangeConfig {
        buffer_bytes: capacity * REC_SIZE,
        exclusive_credits: exclusive,
        floating_credits: floating,
        max_overdraft_buffers: overdraft,
        ..Default::default()
    };
    assert_eq!(cfg.records_per_buffer::<Rec>(), capacity);
    cfg
}

// ------------------------------------------------------------------------------------------------
// overdraft: a fan-out record finishes, within the limit

#[test]
fn overdraft_lets_a_fan_out_record_finish_and_never_exceeds_its_limit() {
    with_deadline(DEADLINE, || {
        // One record per buffer, one credit, an overdraft of 3.
        let cfg = config(1, 1, 0, 3);
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
        let counters = gate.counters();
        let debt = OutputDebt::new();
        let budget = OverdraftBudget::new(cfg.max_overdraft_buffers, debt.clone());
        let waits = Arc::new(WaitTimes::default());
        let sender = senders.into_iter().next().expect("one channel");
        let mut w = sender
            .into_writer(&cfg, waits.clone())
            .with_overdraft(budget.clone());
        let canceller = gate.canceller();

        // Record 1 fans out into 4 outputs: the first takes the credit, the next 3 go on
        // overdraft, and nothing blocks although the receiver has not taken a single buffer.
        debt.begin_record(&waits).expect("not cancelled");
        for i in 0..4 {
            w.push((0, i)).expect("not cancelled");
        }
        assert_eq!(get(&counters[0].buffers_in_flight), 4);
        assert_eq!(get(&counters[0].overdraft_buffers), 3);
        assert_eq!(budget.in_use(), 3);
        assert_eq!(debt.outstanding(), 3);
        assert_eq!(
            waits.backpressured_ns.load(Ordering::Relaxed),
            0,
            "the record never waited for credit"
        );

        let done_records = Arc::new(AtomicU64::new(0));
        let out_of_budget = Arc::new(AtomicBool::new(false));
        thread::scope(|s| {
            let _guard = CancelOnPanic(canceller.clone());
            let done = done_records.clone();
            let waits2 = waits.clone();
            let debt2 = debt.clone();
            let oob = out_of_budget.clone();
            let sender = s.spawn(move || {
                let _guard = CancelOnPanic(canceller);
                // A 5th output of the same record: the budget is used up, so this one waits.
                w.push((0, 4))?;
                oob.store(true, Ordering::SeqCst);
                w.push((0, 5))?;
                done.store(1, Ordering::SeqCst);
                // Record 2 may start only once every overdraft buffer is paid back.
                debt2.begin_record(&waits2)?;
                done.store(2, Ordering::SeqCst);
                w.push((0, 6))?;
                w.finish()
            });
            eventually("the 5th output waits for credit", || {
                waits.backpressured_since.load(Ordering::Relaxed) != 0
            });
            assert_eq!(done_records.load(Ordering::SeqCst), 0);
            assert!(budget.in_use() <= 3);

            let mut seq = 0;
            let mut max_in_flight = 0;
            loop {
                let item = gate.next().expect("not cancelled");
                match item {
                    None => break,
                    Some(GateItem::Buffer(buf)) => {
                        max_in_flight = max_in_flight.max(get(&counters[0].buffers_in_flight));
                        assert!(budget.in_use() <= 3, "overdraft beyond its limit");
                        for r in &buf.records {
                            assert_eq!(r.1, seq, "records in order");
                            seq += 1;
                        }
                        if done_records.load(Ordering::SeqCst) == 2 {
                            assert_eq!(debt.outstanding(), 0, "record 2 started in debt");
                        }
                        gate.release(buf);
                    }
                    Some(GateItem::Event { .. }) => {}
                    Some(other) => panic!("unexpected {other:?}"),
                }
            }
            sender.join().expect("sender").expect("not cancelled");
            assert_eq!(seq, 7);
            assert!(
                max_in_flight <= 1 + 3,
                "{max_in_flight} buffers in flight > 1 credit + 3 overdraft"
            );
        });
        assert_eq!(debt.outstanding(), 0);
        assert_eq!(budget.in_use(), 0);
    });
}

#[test]
fn first_buffer_of_a_record_waits_for_credit_as_usual() {
    with_deadline(DEADLINE, || {
        let cfg = config(1, 1, 0, 5);
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
        let debt = OutputDebt::new();
        let budget = OverdraftBudget::new(5, debt.clone());
        let waits = Arc::new(WaitTimes::default());
        let mut w = senders
            .into_iter()
            .next()
            .expect("one channel")
            .into_writer(&cfg, waits.clone())
            .with_overdraft(budget.clone());
        let canceller = gate.canceller();
        debt.begin_record(&waits).expect("not cancelled");
        w.push((0, 0)).expect("credit free");
        thread::scope(|s| {
            let _guard = CancelOnPanic(canceller.clone());
            let waits2 = waits.clone();
            let t = s.spawn(move || {
                let _guard = CancelOnPanic(canceller);
                // A new record (1:1 map): its first full buffer has no credit and must wait.
                debt.begin_record(&waits2)?;
                w.push((0, 1))?;
                w.finish()
            });
            eventually("the next record's buffer waits for credit", || {
                waits.backpressured_since.load(Ordering::Relaxed) != 0
            });
            assert!(only_the_credited_buffer_shipped(&gate));
            assert_eq!(
                budget.in_use(),
                0,
                "no overdraft outside a record's fan-out"
            );
            while let Some(item) = gate.next().expect("not cancelled") {
                if let GateItem::Buffer(b) = item {
                    gate.release(b);
                }
            }
            t.join().expect("sender").expect("not cancelled");
        });
    });

    fn only_the_credited_buffer_shipped(gate: &InputGate<Rec>) -> bool {
        // The sender's single buffer occupies the only credit; the second cannot ship.
        get(&gate.counters()[0].buffers_out) == 1 && get(&gate.counters()[0].overdraft_buffers) == 0
    }
}

// ------------------------------------------------------------------------------------------------
// property: the in-flight bound with overdraft and unaligned barriers

#[derive(Clone, Debug)]
struct Case {
    capacity: usize,
    exclusive: usize,
    floating: usize,
    overdraft: usize,
    /// Per channel: outputs per input record, input records, a barrier every k records.
    plans: Vec<(u64, u64, Option<u64>)>,
    /// The receiver yields after this many buffers (creates backpressure).
    receiver_yield: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=4,
        1usize..=8,
        0usize..=2,
        0usize..=2,
        0usize..=4,
        1u64..=5,
    )
        .prop_filter("credits", |t| t.2 + t.3 >= 1)
        .prop_flat_map(|(channels, capacity, exclusive, floating, overdraft, ry)| {
            proptest::collection::vec(
                (1u64..=30, 0u64..=40, proptest::option::of(1u64..=10)),
                channels,
            )
            .prop_map(move |plans| Case {
                capacity,
                exclusive,
                floating,
                overdraft,
                plans,
                receiver_yield: ry,
            })
        })
}

fn run_case(c: Case) {
    let channels = c.plans.len();
    let cfg = config(c.capacity, c.exclusive, c.floating, c.overdraft);
    let (mut gate, senders) = InputGate::<Rec>::new(channels, &cfg, Default::default());
    let counters = gate.counters();
    let canceller = gate.canceller();
    let per_channel = (c.exclusive + c.floating + c.overdraft + 1) as u64;
    let total = (channels * (c.exclusive + c.overdraft + 1) + c.floating) as u64;
    // One barrier at a time per channel (as with one concurrent checkpoint): set by the sender,
    // cleared by the receiver once the entries the barrier overtook are released.
    let barrier_open: Arc<Vec<AtomicBool>> =
        Arc::new((0..channels).map(|_| AtomicBool::new(false)).collect());
    let budgets: Vec<_> = (0..channels)
        .map(|_| OverdraftBudget::new(c.overdraft, OutputDebt::new()))
        .collect();

    thread::scope(|s| {
        let _guard = CancelOnPanic(canceller.clone());
        for (ch, (sender, &(fanout, records, barrier_every))) in
            senders.into_iter().zip(&c.plans).enumerate()
        {
            let waits = Arc::new(WaitTimes::default());
            let budget = budgets[ch].clone();
            let mut w = sender
                .into_writer(&cfg, waits.clone())
                .with_overdraft(budget.clone());
            let canceller = canceller.clone();
            let open = barrier_open.clone();
            s.spawn(move || {
                let _guard = CancelOnPanic(canceller);
                let task = budget_task(&budget);
                let mut seq = 0;
                for r in 0..records {
                    task.begin_record(&waits)?;
                    for _ in 0..fanout {
                        w.push((ch as u64, seq))?;
                        seq += 1;
                        assert!(budget.in_use() <= budget.limit(), "overdraft beyond limit");
                    }
                    if barrier_every.is_some_and(|k| r % k == 0)
                        && !open[ch].swap(true, Ordering::SeqCst)
                    {
                        w.send_unaligned_barrier(Barrier {
                            checkpoint_id: r + 1,
                            timestamp_ms: 0,
                            kind: CheckpointKind::Unaligned,
                        })?;
                    }
                }
                w.finish()
            });
        }

        let mut next_seq = vec![0u64; channels];
        // Entries still to release before a channel's barrier is closed.
        let mut overtaken_left = vec![0usize; channels];
        let mut taken = 0u64;
        while let Some(item) = gate.next().expect("cancelled: a sender panicked") {
            let mut sum = 0;
            for (ch, cn) in counters.iter().enumerate() {
                let n = get(&cn.buffers_in_flight);
                assert!(
                    n <= per_channel,
                    "channel {ch}: {n} buffers in flight > exclusive + floating + overdraft + barrier = {per_channel}"
                );
                sum += n;
            }
            assert!(sum <= total, "gate: {sum} buffers in flight > {total}");
            for b in &budgets {
                assert!(b.in_use() <= b.limit());
            }
            match item {
                GateItem::Buffer(buf) => {
                    let ch = buf.channel;
                    for r in &buf.records {
                        assert_eq!(r.1, next_seq[ch], "channel {ch}: order");
                        next_seq[ch] += 1;
                    }
                    taken += 1;
                    if taken.is_multiple_of(c.receiver_yield) {
                        thread::yield_now();
                    }
                    gate.release(buf);
                    if overtaken_left[ch] > 0 {
                        overtaken_left[ch] -= 1;
                        if overtaken_left[ch] == 0 {
                            barrier_open[ch].store(false, Ordering::SeqCst);
                        }
                    }
                }
                GateItem::UnalignedBarrier {
                    channel, overtaken, ..
                } => {
                    if overtaken == 0 {
                        barrier_open[channel].store(false, Ordering::SeqCst);
                    } else {
                        overtaken_left[channel] = overtaken;
                    }
                }
                GateItem::Event { channel, .. } => {
                    // Only end-of-partition; it never lies among overtaken buffers.
                    assert_eq!(overtaken_left[channel], 0);
                }
                GateItem::Idle => panic!("no wake interval set"),
            }
        }
        for (ch, &(fanout, records, _)) in c.plans.iter().enumerate() {
            assert_eq!(next_seq[ch], fanout * records, "channel {ch}: records lost");
        }
    });
    for b in &budgets {
        assert_eq!(b.in_use(), 0, "every overdraft paid back at the end");
    }
}

/// The task debt a budget charges (the one its sender's record loop waits on).
fn budget_task(b: &Arc<OverdraftBudget>) -> Arc<OutputDebt> {
    b.task_debt()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn in_flight_bound_holds_with_overdraft_and_unaligned_barriers(c in case()) {
        with_deadline(DEADLINE, move || run_case(c));
    }
}

// ------------------------------------------------------------------------------------------------
// debloating: the size falls under backpressure and recovers when released

#[test]
fn debloated_size_falls_under_backpressure_and_recovers_when_released() {
    with_deadline(Duration::from_secs(60), || {
        let capacity = 256; // 4 KiB of 16-byte records
        let mut cfg = config(capacity, 2, 1, 0);
        cfg.debloat = DebloatConfig {
            enabled: true,
            target: Duration::from_millis(1),
            period: Duration::from_millis(5),
            samples: 2,
            threshold_percentages: 25,
            min_bytes: 256,
            starting_bytes: 4096,
        };
        cfg.validate().expect("valid");
        let (mut gate, senders) = InputGate::<Rec>::new(1, &cfg, Default::default());
        let gauges = gate.debloat_gauges();
        assert_eq!(
            gauges.buffer_size(),
            4096,
            "starts at the starting size (here the configured size)"
        );
        let canceller = gate.canceller();
        let stop = Arc::new(AtomicBool::new(false));
        let slow = Arc::new(AtomicBool::new(true));
        thread::scope(|s| {
            let _guard = CancelOnPanic(canceller.clone());
            let sender = senders.into_iter().next().expect("one channel");
            let mut w = sender.into_writer(&cfg, Default::default());
            let stop2 = stop.clone();
            s.spawn(move || {
                let _guard = CancelOnPanic(canceller);
                let mut seq = 0;
                while !stop2.load(Ordering::Relaxed) {
                    w.push((0, seq))?;
                    seq += 1;
                }
                w.finish()
            });
            let mut smallest_slow_buffer = usize::MAX;
            let mut phase_fell = false;
            let mut recovered = false;
            while let Some(item) = gate.next().expect("not cancelled") {
                let GateItem::Buffer(buf) = item else {
                    continue;
                };
                if slow.load(Ordering::Relaxed) {
                    // A slow consumer: ~20 µs per record (spinning, so the gate stays active).
                    for _ in &buf.records {
                        let t = Instant::now();
                        while t.elapsed() < Duration::from_micros(20) {
                            std::hint::spin_loop();
                        }
                    }
                    if phase_fell {
                        smallest_slow_buffer = smallest_slow_buffer.min(buf.records.len());
                    }
                    if !phase_fell && gauges.buffer_size() <= 512 {
                        phase_fell = true;
                    }
                    if phase_fell && smallest_slow_buffer <= 512 / REC_SIZE {
                        // The sender ships the announced, smaller buffers: release.
                        slow.store(false, Ordering::Relaxed);
                    }
                } else if gauges.buffer_size() == 4096 {
                    recovered = true;
                    stop.store(true, Ordering::Relaxed);
                }
                gate.release(buf);
            }
            assert!(phase_fell, "the size fell under backpressure");
            assert!(
                smallest_slow_buffer <= 512 / REC_SIZE,
                "the sender shipped smaller buffers: {smallest_slow_buffer} records"
            );
            assert!(recovered, "the size recovered once released");
        });
    });
}
