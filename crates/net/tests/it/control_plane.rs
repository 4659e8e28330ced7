//! The control plane between two endpoints on loopback: messages arrive in order (also those
//! sent before a handler was set), a peer that goes away without a goodbye is reported lost,
//! one that says goodbye is not, and nothing more is sent to it.

use std::time::{Duration, Instant};

use sluice_net::ControlEvent;

use crate::common;
use common::{pair, record, Seen};

fn wait_for(seen: &Seen, n: usize) -> Vec<ControlEvent> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = seen.lock().unwrap().clone();
        if v.len() >= n {
            return v;
        }
        assert!(Instant::now() < deadline, "only {v:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn messages_arrive_in_order_including_those_sent_before_the_handler() {
    let (e0, e1) = pair();
    e1.send_control(0, vec![1]).unwrap();
    e1.send_control(0, vec![2, 2]).unwrap();
    // Give the reader a chance to queue them before the handler exists.
    let deadline = Instant::now() + Duration::from_millis(200);
    while Instant::now() < deadline {
        std::thread::yield_now();
    }
    let seen = record(&e0);
    e1.send_control(0, vec![3]).unwrap();
    let got = wait_for(&seen, 3);
    let bytes: Vec<Vec<u8>> = got
        .into_iter()
        .map(|e| match e {
            ControlEvent::Message { from: 1, bytes } => bytes,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(bytes, vec![vec![1], vec![2, 2], vec![3]]);
    assert_eq!(e0.processes(), 2);
}

#[test]
fn a_peer_gone_without_goodbye_is_lost_one_that_said_goodbye_is_not() {
    let (e0, e1) = pair();
    let seen0 = record(&e0);
    let seen1 = record(&e1);
    // Process 1 ends well: process 0 hears no loss, and sends nothing more to it.
    e1.shutdown();
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        seen0.lock().unwrap().is_empty(),
        "{:?}",
        seen0.lock().unwrap()
    );
    e0.send_control(1, vec![9])
        .expect("a departed peer is skipped");
    assert!(seen1.lock().unwrap().is_empty());

    // A pair whose process 1 vanishes (its sockets shut down, no goodbye): process 0 is told.
    let (f0, f1) = pair();
    let lost = record(&f0);
    f1.abort();
    match &wait_for(&lost, 1)[0] {
        ControlEvent::PeerLost { process: 1, .. } => {}
        other => panic!("{other:?}"),
    }
}

/// Waits until `done` holds for the events seen (or fails naming them).
fn wait_until(seen: &Seen, done: impl Fn(&[ControlEvent]) -> bool) -> Vec<ControlEvent> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let v = seen.lock().unwrap().clone();
        if done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "only {} events", v.len());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A follower's checkpoint acknowledgement carries its operators' snapshots: it may be far
/// larger than one frame. It must arrive whole, in order with the messages around it, and the
/// connection must survive it (defect 5: the receiver refused the frame and lost the peer).
#[test]
fn a_control_message_larger_than_a_frame_arrives_whole_and_the_connection_survives() {
    let (e0, e1) = pair();
    let seen = record(&e0);
    let big: Vec<u8> = (0..70usize << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let expected = big.clone();
    // Sent from a thread of its own: a sender whose peer stopped reading would block.
    let sender = std::thread::spawn(move || {
        e1.send_control(0, vec![1]).unwrap();
        e1.send_control(0, big).unwrap();
        e1.send_control(0, vec![3]).unwrap();
        e1
    });
    let got = wait_until(&seen, |v| {
        v.len() >= 3 || v.iter().any(|e| matches!(e, ControlEvent::PeerLost { .. }))
    });
    let lost: Vec<String> = got
        .iter()
        .filter_map(|e| match e {
            ControlEvent::PeerLost { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(lost.is_empty(), "peer lost: {lost:?}");
    let sizes: Vec<usize> = got
        .iter()
        .map(|e| match e {
            ControlEvent::Message { from: 1, bytes } => bytes.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(sizes, vec![1, expected.len(), 1]);
    match &got[1] {
        ControlEvent::Message { bytes, .. } => assert!(bytes == &expected, "bytes differ"),
        other => panic!("{other:?}"),
    }
    let e1 = sender.join().unwrap();
    assert_eq!(e0.failure(), None);
    // The connection still carries messages both ways.
    let seen1 = record(&e1);
    e0.send_control(1, vec![4]).unwrap();
    wait_until(&seen1, |v| v.len() == 1);
}

/// Two threads sending large control messages at once: each arrives whole (their pieces never
/// interleave), and messages one thread sent in a row keep their order.
#[test]
fn large_control_messages_sent_at_once_do_not_mix() {
    let (e0, e1) = pair();
    let seen = record(&e0);
    let senders: Vec<_> = [7u8, 9]
        .into_iter()
        .map(|tag| {
            let e1 = e1.clone();
            std::thread::spawn(move || {
                e1.send_control(0, vec![tag; 20 << 20]).unwrap();
                e1.send_control(0, vec![tag]).unwrap();
            })
        })
        .collect();
    let got = wait_until(&seen, |v| v.len() >= 4);
    for s in senders {
        s.join().unwrap();
    }
    for tag in [7u8, 9] {
        let mine: Vec<&Vec<u8>> = got
            .iter()
            .filter_map(|e| match e {
                ControlEvent::Message { bytes, .. } if bytes[0] == tag => Some(bytes),
                _ => None,
            })
            .collect();
        assert_eq!(mine.len(), 2);
        assert_eq!(mine[0].len(), 20 << 20);
        assert!(mine[0].iter().all(|b| *b == tag), "message {tag} mixed");
        assert_eq!(mine[1], &vec![tag]);
    }
    assert_eq!(e0.failure(), None);
}
