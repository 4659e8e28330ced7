//! Wait stacks of waits that were parked before a profiler run started: the run's start wakes
//! them (a source sat in one long credit wait, a receiver in one long input wait) and they
//! capture their native stack while the run lasts.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sluice_channel::{ExchangeConfig, InputGate, WaitPoint, WaitTimes};

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn waits_parked_before_a_run_capture_their_stacks_when_it_starts() {
    let cfg = ExchangeConfig {
        exclusive_credits: 1,
        floating_credits: 0,
        ..Default::default()
    };
    let receiver_waits = Arc::new(WaitTimes::default());
    let sender_waits = Arc::new(WaitTimes::default());
    let (mut gate, senders) = InputGate::<u64>::new(1, &cfg, receiver_waits.clone());
    let canceller = gate.canceller();
    let per_buffer = cfg.records_per_buffer::<u64>() as u64;
    let mut writer = senders
        .into_iter()
        .next()
        .unwrap()
        .into_writer(&cfg, sender_waits.clone());
    // The sender fills its one credit and parks for the next: nobody reads.
    let sender = thread::spawn(move || {
        for i in 0.. {
            if writer.push(i).is_err() {
                return i;
            }
        }
        unreachable!()
    });
    eventually("the sender waits for credit", || {
        sender_waits.backpressured_since.load(Relaxed) != 0
    });
    thread::sleep(Duration::from_millis(100));
    assert!(sender_waits.stacks.latest(WaitPoint::Credit).is_none());
    sender_waits.stacks.want(true);
    eventually("the parked sender captured its stack", || {
        sender_waits.stacks.latest(WaitPoint::Credit).is_some()
    });
    let stack = sender_waits.stacks.latest(WaitPoint::Credit).unwrap();
    assert!(stack.len() > 2, "{stack:?}");
    sender_waits.stacks.want(false);
    assert!(sender_waits.stacks.latest(WaitPoint::Credit).is_none());

    // A receiver parked on an empty gate (a second one, so nothing is queued).
    canceller.cancel();
    let sent = sender.join().unwrap();
    assert!(sent >= per_buffer, "{sent} records pushed");

    let (mut gate2, _senders2) = InputGate::<u64>::new(1, &cfg, receiver_waits.clone());
    let canceller2 = gate2.canceller();
    let receiver = thread::spawn(move || gate2.next().is_err());
    eventually("the receiver waits for input", || {
        receiver_waits.idle_since.load(Relaxed) != 0
    });
    thread::sleep(Duration::from_millis(100));
    assert!(receiver_waits.stacks.latest(WaitPoint::Input).is_none());
    receiver_waits.stacks.want(true);
    eventually("the parked receiver captured its stack", || {
        receiver_waits.stacks.latest(WaitPoint::Input).is_some()
    });
    receiver_waits.stacks.want(false);
    canceller2.cancel();
    assert!(receiver.join().unwrap(), "cancelled, not an item");
    drop(gate.next());
}
