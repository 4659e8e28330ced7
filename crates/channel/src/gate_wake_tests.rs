//! When a sender parked for credit is woken: while credits come back fast, after a batch of them
//! while the receiver still has data queued, once its channel is at most half full, at once
//! when the receiver is about to wait; while they come back slowly, for each. The decisions
//! are taken under the gate lock, so these tests read them there, without timing; the pace is
//! fixed by the test (`batch_wakes_within`), not by how fast this machine runs it.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::*;

fn config(exclusive: usize, floating: usize) -> ExchangeConfig {
    ExchangeConfig {
        buffer_bytes: 8,
        exclusive_credits: exclusive,
        floating_credits: floating,
        ..ExchangeConfig::default()
    }
}

/// A gate whose credits always count as coming back fast (`true`) or slowly (`false`).
fn gate_at_pace(
    channels: usize,
    cfg: &ExchangeConfig,
    fast: bool,
) -> (InputGate<u64>, Vec<ChannelSender<u64>>) {
    let (gate, senders) = InputGate::<u64>::new(channels, cfg, Arc::default());
    gate.shared.lock().batch_wakes_within = if fast { u64::MAX } else { 0 };
    (gate, senders)
}

/// Polls `cond` on the gate's state until it holds (the parking thread runs on its own).
fn wait_until(gate: &InputGate<u64>, what: &str, cond: impl Fn(&State<u64>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond(&gate.shared.lock()) {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        thread::yield_now();
    }
}

fn fill(sender: &ChannelSender<u64>, buffers: usize) {
    for i in 0..buffers {
        let sent = sender.try_send(vec![i as u64]).expect("not cancelled");
        assert!(sent.is_ok(), "buffer {i} had a credit");
    }
}

fn next_buffer(gate: &mut InputGate<u64>) -> ReceivedBuffer<u64> {
    match gate.next().expect("not cancelled") {
        Some(GateItem::Buffer(b)) => b,
        _ => panic!("expected a buffer"),
    }
}

/// Reserves a credit on a thread of its own, parking while none is free; gives the sender back.
fn park_reserving(
    sender: ChannelSender<u64>,
    waits: Arc<WaitTimes>,
) -> thread::JoinHandle<ChannelSender<u64>> {
    thread::spawn(move || {
        let permit = sender.reserve(&waits).expect("not cancelled");
        drop(permit);
        sender
    })
}

/// Takes the next buffer and hands it back; returns its channel.
fn release_next(gate: &mut InputGate<u64>) -> usize {
    let b = next_buffer(gate);
    let channel = b.channel;
    gate.release(b);
    channel
}

/// Asserts that the parked sender of `channel` was woken (or already ran).
fn assert_woken(gate: &InputGate<u64>, channel: usize, what: &str) {
    let st = gate.shared.lock();
    let chan = &st.channels[channel];
    assert!(chan.notified || !chan.waiting, "{what}");
}

#[test]
fn a_parked_sender_is_woken_for_a_batch_of_credits_not_for_each() {
    // 2 exclusive + 8 floating credits: the batch is 5.
    let (mut gate, mut senders) = gate_at_pace(1, &config(2, 8), true);
    let sender = senders.remove(0);
    fill(&sender, 10);
    let waits = Arc::new(WaitTimes::default());
    let parked = park_reserving(sender, waits.clone());
    wait_until(&gate, "the sender parks", |st| st.channels[0].waiting);
    for released in 1..=4 {
        release_next(&mut gate);
        let st = gate.shared.lock();
        assert!(
            !st.channels[0].notified,
            "woken after {released} freed credits, with {} buffers still queued",
            st.channels[0].queue.len()
        );
    }
    release_next(&mut gate);
    assert_woken(&gate, 0, "the fifth freed credit wakes the sender");
    parked.join().expect("the sender proceeds");
    assert!(
        waits.backpressured_ns_at(mono_ns()) > 0,
        "its wait was backpressure"
    );
}

#[test]
fn a_sender_below_its_batch_is_woken_when_the_receiver_runs_out_of_data() {
    // 1 exclusive credit per channel + 4 floating: the batch is 2. Channel 0 is blocked
    // (barrier alignment) with its queue full and its sender parked; channel 1's released
    // floating buffer leaves channel 0 one usable credit, below the batch. The receiver then has
    // nothing readable and parks: it must wake the sender before it does.
    let (mut gate, mut senders) = gate_at_pace(2, &config(1, 4), true);
    let s1 = senders.pop().expect("two senders");
    let s0 = senders.pop().expect("two senders");
    fill(&s0, 4); // its exclusive credit and 3 floating ones
    fill(&s1, 2); // its exclusive credit and the last floating one
    gate.set_blocked(0, true);
    let parked = park_reserving(s0, Arc::default());
    wait_until(&gate, "channel 0's sender parks", |st| {
        st.channels[0].waiting
    });
    // Channel 1's exclusive buffer, then its floating one: the floating release leaves channel 0
    // one usable credit, below its batch of 2, and its queue still holds 4 buffers.
    for _ in 0..2 {
        assert_eq!(release_next(&mut gate), 1);
    }
    {
        let st = gate.shared.lock();
        assert_eq!(st.usable_credits(0), 1);
        assert!(!st.channels[0].notified, "one credit is below the batch");
    }
    // Nothing readable is left: the receiver parks, and wakes the sender first.
    let (tx, rx) = std::sync::mpsc::channel();
    let canceller = gate.canceller();
    let receiver = thread::spawn(move || {
        let item = gate.next();
        let _ = tx.send(());
        item.is_err()
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !parked.is_finished() {
        if Instant::now() >= deadline {
            canceller.cancel();
            panic!("the receiver waits for data while the sender stays parked with a credit");
        }
        thread::yield_now();
    }
    parked.join().expect("the sender proceeds");
    assert!(
        rx.try_recv().is_err(),
        "the receiver is still waiting for data"
    );
    canceller.cancel();
    assert!(receiver.join().expect("receiver thread"), "cancelled");
}

#[test]
fn a_sender_whose_floating_credits_others_hold_is_woken_at_half_full() {
    // 2 exclusive + 8 floating credits: the batch is 5, more than channel 0 can get while
    // channel 1 holds every floating credit. It is woken once its channel is half full.
    let (mut gate, mut senders) = gate_at_pace(2, &config(2, 8), true);
    let s1 = senders.pop().expect("two senders");
    let s0 = senders.pop().expect("two senders");
    fill(&s0, 2); // its exclusive credits
    fill(&s1, 10); // its exclusive credits and every floating one
    let parked = park_reserving(s0, Arc::default());
    wait_until(&gate, "channel 0's sender parks", |st| {
        st.channels[0].waiting
    });
    assert_eq!(release_next(&mut gate), 0, "channel 0 became ready first");
    {
        let st = gate.shared.lock();
        assert_eq!(st.usable_credits(0), 1);
        assert_eq!(st.channels[0].queue.len(), 1);
    }
    assert_woken(&gate, 0, "one free, one queued: woken");
    parked.join().expect("the sender proceeds");
    drop(s1);
}

#[test]
fn credits_coming_back_slowly_wake_the_sender_for_each() {
    let (mut gate, mut senders) = gate_at_pace(1, &config(2, 8), false);
    let sender = senders.remove(0);
    fill(&sender, 10);
    let parked = park_reserving(sender, Arc::default());
    wait_until(&gate, "the sender parks", |st| st.channels[0].waiting);
    release_next(&mut gate);
    assert_woken(&gate, 0, "the first slow credit wakes the sender");
    parked.join().expect("the sender proceeds");
}

#[test]
fn a_floating_credit_passes_a_sender_short_of_its_batch_for_one_whose_channel_ran_low() {
    // Floating credits only (8: the batch is 4). Channel 0 holds 7 and parks first, channel 1
    // holds the last one and parks second. Releasing one of channel 0's buffers frees a
    // floating credit: channel 0 then has 1 usable with 6 queued, short of its batch; channel
    // 1 has 1 usable with 1 queued, half full. The credit goes to channel 1.
    let (mut gate, mut senders) = gate_at_pace(2, &config(0, 8), true);
    let s1 = senders.pop().expect("two senders");
    let s0 = senders.pop().expect("two senders");
    fill(&s0, 7);
    fill(&s1, 1);
    let first = park_reserving(s0, Arc::default());
    wait_until(&gate, "channel 0's sender parks", |st| {
        st.channels[0].waiting
    });
    let second = park_reserving(s1, Arc::default());
    wait_until(&gate, "channel 1's sender parks", |st| {
        st.channels[1].waiting
    });
    assert_eq!(release_next(&mut gate), 0, "channel 0 became ready first");
    assert!(
        !gate.shared.lock().channels[0].notified,
        "channel 0 is short of its batch"
    );
    assert_woken(&gate, 1, "the floating credit went to channel 1");
    second.join().expect("channel 1's sender proceeds");
    // The rest of both queues: channel 0's sender gets its batch.
    for _ in 0..7 {
        release_next(&mut gate);
    }
    first.join().expect("channel 0's sender proceeds");
}
