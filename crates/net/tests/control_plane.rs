//! The control plane between two endpoints on loopback: messages arrive in order (also those
//! sent before a handler was set), a peer that goes away without a goodbye is reported lost,
//! one that says goodbye is not, and nothing more is sent to it.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_net::{ControlEvent, NetEndpoint};

fn pair() -> (NetEndpoint, NetEndpoint) {
    let (l0, l1) = (
        TcpListener::bind("127.0.0.1:0").unwrap(),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    );
    let addrs = vec![l0.local_addr().unwrap(), l1.local_addr().unwrap()];
    let a1 = addrs.clone();
    let t = std::thread::spawn(move || NetEndpoint::start(1, &a1, l1, Duration::from_secs(30)));
    let e0 = NetEndpoint::start(0, &addrs, l0, Duration::from_secs(30)).unwrap();
    (e0, t.join().unwrap().unwrap())
}

type Seen = Arc<Mutex<Vec<ControlEvent>>>;

fn record(e: &NetEndpoint) -> Seen {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    e.on_control(Arc::new(move |ev| s.lock().unwrap().push(ev)));
    seen
}

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
