//! Model checks (loom) of the gate's park / wake / credit logic: two senders and one receiver,
//! every interleaving of their lock acquisitions, waits and notifications up to loom's
//! preemption bound. Run by `scripts/test.sh` as
//! `RUSTFLAGS="--cfg loom" cargo test -p sluice-channel --lib --release loom_tests`.
//!
//! Each model checks, in every interleaving:
//! - no lost wake-up: every buffer arrives and every thread ends. A wake-up that is lost leaves
//!   its thread parked forever; once every thread is parked loom reports a deadlock, so a
//!   sender waiting for a credit nobody wakes it for, or a receiver waiting for a buffer that
//!   is queued, fails the model;
//! - no credit leak: once everything is received and released, every channel has its exclusive
//!   credits free again and the pool all its floating ones, and no sender is left listed as
//!   waiting or notified;
//! - per channel, buffers arrive in the order they were sent.
//!
//! What the model leaves out, and why that is sound:
//! - time. Loom has no clock. The receiver's wake-up interval is off (its default) and nobody
//!   wants wait stacks, so every park is untimed; loom's `wait_timeout` would wait untimed too.
//!   That is conservative: a timeout only adds a wake-up after which the waiter re-checks its
//!   condition, so a model that cannot rely on one must be woken by a notification — exactly
//!   the property checked. Whether credits come back "fast" (batched wake-ups) is read from
//!   the clock; each model fixes it (`Pace`) so no branch depends on real time, and both paces
//!   are checked;
//! - the profiler's run-start wake-ups (`WaitStacks::want`): extra notifications under the
//!   lock, which a waiter's loop treats as spurious; leaving them out only removes wake-ups;
//! - overdraft and debloating: overdraft is the task debt's own lock and condvar (the budget
//!   is std atomics), debloating only changes records per buffer, never a credit or a wake-up;
//!   neither is enabled here.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use loom::thread;

use super::*;

/// Preemptions per interleaving unless `LOOM_MAX_PREEMPTIONS` says otherwise: bounded so the
/// whole check stays within a few minutes on 2 cores. Loom's docs: "in practice, setting the
/// thread pre-emption bound to 2 or 3 is enough to catch most bugs".
const PREEMPTIONS: usize = 3;

/// How the gate judges the pace of freed credits (see `State::worth_waking`).
#[derive(Clone, Copy, Debug)]
enum Pace {
    /// Every credit counts as freed fast: wake-ups are batched, a parked sender is woken once
    /// a batch is free for it, its channel is at most half full, or the receiver is about to
    /// park.
    Fast,
    /// Every credit counts as freed slowly: a parked sender is woken for each.
    Slow,
}

/// One model: the gate's credits, what each of the two senders sends, the pace.
#[derive(Clone, Copy, Debug)]
struct Model {
    exclusive: usize,
    floating: usize,
    /// Buffers each sender ships (more than it can hold credits for, so it parks).
    buffers: [usize; 2],
    /// Sender 1 reserves a credit first and drops the permit unsent (it hands the credit back,
    /// waking whoever can use it).
    drop_a_permit: bool,
    pace: Pace,
}

/// Runs `model` under loom and prints the interleavings explored.
fn check(model: Model) {
    explore(&format!("{model:?}"), PREEMPTIONS, move || run(model));
}

/// Explores every interleaving of `execution` up to `preemptions` (or `LOOM_MAX_PREEMPTIONS`);
/// prints how many there were.
fn explore(name: &str, preemptions: usize, execution: impl Fn() + Send + Sync + 'static) {
    let explored = Arc::new(AtomicUsize::new(0));
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = builder.preemption_bound.or(Some(preemptions));
    let count = explored.clone();
    builder.check(move || {
        count.fetch_add(1, Relaxed);
        execution();
    });
    println!(
        "{name}: {} interleavings explored (preemption bound {:?})",
        explored.load(Relaxed),
        builder.preemption_bound
    );
}

/// What sender `sender` puts in its buffer `i` (one record a buffer).
fn record(sender: usize, i: usize) -> u64 {
    (sender * 100 + i) as u64
}

/// One execution: senders on loom threads, the receiver on the model's main thread.
fn run(model: Model) {
    let cfg = ExchangeConfig {
        buffer_bytes: 8,
        exclusive_credits: model.exclusive,
        floating_credits: model.floating,
        ..ExchangeConfig::default()
    };
    let (mut gate, senders) = InputGate::<u64>::new(2, &cfg, Arc::default());
    gate.shared.lock().batch_wakes_within = match model.pace {
        Pace::Fast => u64::MAX,
        Pace::Slow => 0,
    };
    let threads: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(s, sender)| {
            thread::spawn(move || {
                let waits = WaitTimes::default();
                if s == 1 && model.drop_a_permit {
                    drop(sender.reserve(&waits).expect("not cancelled"));
                }
                for i in 0..model.buffers[s] {
                    let records = vec![record(s, i)];
                    // Both ways to send on a credit: the writer's reserve-and-send under one
                    // lock, and a permit reserved first, sent after.
                    if s == 0 {
                        sender
                            .send_blocking(records, &waits)
                            .expect("not cancelled");
                    } else {
                        let permit = sender.reserve(&waits).expect("not cancelled");
                        let _ = permit.send(records);
                    }
                }
                sender
                    .send_event(ChannelEvent::EndOfPartition)
                    .expect("not cancelled");
            })
        })
        .collect();

    let mut got: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    while let Some(item) = gate.next().expect("not cancelled") {
        match item {
            GateItem::Buffer(b) => {
                got[b.channel].extend_from_slice(&b.records);
                gate.release(b);
            }
            GateItem::Event { event, .. } => assert_eq!(event, ChannelEvent::EndOfPartition),
            other => panic!("unexpected {other:?}"),
        }
    }
    for t in threads {
        t.join().expect("sender ran to its end");
    }

    for (s, got) in got.iter().enumerate() {
        let sent: Vec<u64> = (0..model.buffers[s]).map(|i| record(s, i)).collect();
        assert_eq!(got, &sent, "channel {s}: every buffer, in order");
    }
    let st = gate.shared.lock();
    assert_eq!(st.floating_free, model.floating, "floating credits leaked");
    for (c, chan) in st.channels.iter().enumerate() {
        assert_eq!(
            chan.exclusive_free, model.exclusive as isize,
            "channel {c}: exclusive credits leaked"
        );
        assert!(chan.queue.is_empty(), "channel {c}: entries left");
        assert!(
            !chan.waiting && !chan.notified,
            "channel {c}: sender still listed"
        );
    }
    assert!(st.waiters.is_empty() && st.ready.is_empty() && !st.receiver_waiting);
}

/// Exclusive credits only, one each: both senders park on their own channel's credit and
/// are woken by its release. One pace covers both here: with a batch of 1 (`wake_batch`:
/// (1 + 0) / 2, at least 1) a freed credit always leaves a batch for a sender it can wake, so
/// the fast pace takes the slow one's decisions.
#[test]
fn exclusive_credits_no_lost_wakeup_no_leak() {
    check(Model {
        exclusive: 1,
        floating: 0,
        buffers: [2, 2],
        drop_a_permit: false,
        pace: Pace::Slow,
    });
}

/// No exclusive credits, one floating credit contended by both channels: whoever is freed a
/// credit must wake the other's sender when it cannot use it, and a dropped permit hands its
/// credit on. A batch of 1 again, so one pace covers both (see above).
#[test]
fn floating_pool_contended_by_two_channels() {
    check(Model {
        exclusive: 0,
        floating: 1,
        buffers: [2, 2],
        drop_a_permit: true,
        pace: Pace::Slow,
    });
}

/// Exclusive and floating credits mixed, with a batch of 2 (`wake_batch`: (1 + 3) / 2): while
/// credits come back fast a parked sender short of its batch stays parked until its channel
/// drains or the receiver is about to park, the deferral a lost wake-up would hide in.
#[test]
fn batched_wakeups_mixed_credits() {
    for pace in [Pace::Fast, Pace::Slow] {
        check(Model {
            exclusive: 1,
            floating: 3,
            buffers: [3, 3],
            drop_a_permit: false,
            pace,
        });
    }
}

/// A job torn down mid-exchange: a fourth thread asks the receiver to look up once
/// ([`GateWaker`]) and then cancels the gate, at any point. Every thread must end whatever it
/// was parked on (a sender for credit, the receiver for input): the cancel flag and the
/// waker's request are set under the gate lock and checked under it before each park, so
/// neither notification can fall between a check and a park.
#[test]
fn cancel_and_waker_end_every_wait() {
    // Four threads: one preemption fewer keeps it within seconds.
    explore("cancel and waker", PREEMPTIONS - 1, || {
        let cfg = ExchangeConfig {
            buffer_bytes: 8,
            exclusive_credits: 1,
            floating_credits: 0,
            ..ExchangeConfig::default()
        };
        let (mut gate, senders) = InputGate::<u64>::new(2, &cfg, Arc::default());
        let mut threads: Vec<_> = senders
            .into_iter()
            .enumerate()
            .map(|(s, sender)| {
                thread::spawn(move || {
                    let waits = WaitTimes::default();
                    for i in 0..2 {
                        if sender.send_blocking(vec![record(s, i)], &waits).is_err() {
                            return;
                        }
                    }
                    let _ = sender.send_event(ChannelEvent::EndOfPartition);
                })
            })
            .collect();
        let (waker, canceller) = (gate.waker(), gate.canceller());
        threads.push(thread::spawn(move || {
            waker.wake();
            canceller.cancel();
        }));
        loop {
            match gate.next() {
                Ok(Some(GateItem::Buffer(b))) => gate.release(b),
                Ok(Some(GateItem::Event { .. } | GateItem::Idle)) => {}
                Ok(Some(other)) => panic!("unexpected {other:?}"),
                // Every channel ended before the cancel, or the cancel came first.
                Ok(None) | Err(Cancelled) => break,
            }
        }
        for t in threads {
            t.join().expect("thread ran to its end");
        }
    });
}
