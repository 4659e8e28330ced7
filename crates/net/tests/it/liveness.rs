//! A peer that goes silent without closing its connection (partition, SIGSTOP) is declared
//! lost within the heartbeat timeout; a live but idle one is not.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use sluice_net::{ControlEvent, Liveness, NetEndpoint, NetError};

use crate::common;
use common::{pair_with as pair, record, Seen};

fn lost(seen: &Seen) -> Option<String> {
    seen.lock().unwrap().iter().find_map(|e| match e {
        ControlEvent::PeerLost { reason, .. } => Some(reason.clone()),
        _ => None,
    })
}

/// Short enough for a test, with room for a loaded machine: 30 heartbeats per timeout.
const FAST: Liveness = Liveness {
    heartbeat_interval: Duration::from_millis(100),
    timeout: Duration::from_secs(3),
};

/// Process 1 is a raw socket: it says hello, then neither reads nor writes nor closes.
#[test]
fn a_silent_peer_is_declared_lost_within_the_heartbeat_timeout() {
    let l0 = TcpListener::bind("127.0.0.1:0").unwrap();
    let addrs = vec![l0.local_addr().unwrap(), "127.0.0.1:9".parse().unwrap()];
    let mut silent = TcpStream::connect(addrs[0]).unwrap();
    // Hello from process 1: length 5, kind 0, process 1.
    silent.write_all(&[5, 0, 0, 0, 0, 1, 0, 0, 0]).unwrap();
    let started = Instant::now();
    let e0 = NetEndpoint::start_with(0, &addrs, l0, Duration::from_secs(30), FAST).unwrap();
    let seen = record(&e0);
    let deadline = started + Duration::from_secs(60);
    let reason = loop {
        if let Some(r) = lost(&seen) {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "the silent peer was not declared lost after {:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    assert!(took >= FAST.timeout, "declared lost after {took:?} only");
    assert!(reason.contains("heartbeat timeout"), "{reason}");
    assert!(e0.failure().is_some());
    // The connection was cut: the silent side reads what was sent to it, then its end.
    silent
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut sink = [0u8; 4096];
    loop {
        match silent.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the lost peer's connection was not cut: {e}"),
        }
    }
}

/// Two live endpoints with nothing to say for several timeouts: heartbeats keep them alive.
#[test]
fn an_idle_live_peer_is_not_lost() {
    let (e0, e1) = pair(FAST);
    let (seen0, seen1) = (record(&e0), record(&e1));
    let until = Instant::now() + FAST.timeout * 3;
    while Instant::now() < until {
        assert_eq!(lost(&seen0), None);
        assert_eq!(lost(&seen1), None);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(e0.failure(), None);
    assert_eq!(e1.failure(), None);
    e1.send_control(0, vec![5]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen0.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the message did not arrive");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        seen0.lock().unwrap()[0],
        ControlEvent::Message {
            from: 1,
            bytes: vec![5]
        }
    );
    e1.shutdown();
    e0.shutdown();
}

#[test]
fn liveness_settings_that_would_lose_a_live_peer_are_refused() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addrs = vec![l.local_addr().unwrap()];
    let bad = Liveness {
        heartbeat_interval: Duration::from_secs(10),
        timeout: Duration::from_secs(15),
    };
    match NetEndpoint::start_with(0, &addrs, l, Duration::from_secs(1), bad) {
        Err(NetError::Config(m)) => assert!(m.contains("twice"), "{m}"),
        other => panic!("{other:?}"),
    }
}
