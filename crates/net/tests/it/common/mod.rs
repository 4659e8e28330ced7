//! What the net crate's integration tests share: two endpoints on loopback, and a record of
//! the control events one of them sees.

#![allow(dead_code)]

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_net::{ControlEvent, Liveness, NetEndpoint};

/// Processes 0 and 1 connected on loopback, with the default liveness rule.
pub fn pair() -> (NetEndpoint, NetEndpoint) {
    pair_with(Liveness::default())
}

/// Processes 0 and 1 connected on loopback under `liveness`.
pub fn pair_with(liveness: Liveness) -> (NetEndpoint, NetEndpoint) {
    let (l0, l1) = (
        TcpListener::bind("127.0.0.1:0").unwrap(),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    );
    let addrs = vec![l0.local_addr().unwrap(), l1.local_addr().unwrap()];
    let a1 = addrs.clone();
    let t = std::thread::spawn(move || {
        NetEndpoint::start_with(1, &a1, l1, Duration::from_secs(30), liveness)
    });
    let e0 = NetEndpoint::start_with(0, &addrs, l0, Duration::from_secs(30), liveness).unwrap();
    (e0, t.join().unwrap().unwrap())
}

/// The control events an endpoint saw, in order.
pub type Seen = Arc<Mutex<Vec<ControlEvent>>>;

/// Starts recording `e`'s control events.
pub fn record(e: &NetEndpoint) -> Seen {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    e.on_control(Arc::new(move |ev| s.lock().unwrap().push(ev)));
    seen
}
