//! Slow and idle clients cannot hold the server: 200 slowloris connections (one byte a second),
//! 4 that send a request and then trickle a byte every 80 ms without reading, and 6 that never
//! send anything (a browser's speculative connections) — meanwhile a normal client gets
//! `/overview` in well under a second, and the server closes every one of them by its deadline.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{env, get, Served};
use sluice_rest::{CLOSE_GRACE, REQUEST_DEADLINE};

/// True once the peer closed `s` (EOF or reset), after reading whatever it still sends.
fn closed_by_server(s: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left.min(Duration::from_millis(500))))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
}

#[test]
fn slow_and_idle_clients_do_not_delay_a_normal_one() {
    let env = env(1);
    env.generate(u64::MAX, |i| i).name("gen").discard();
    let s = Served::start(&env);
    let addr = s.addr;
    let started = Instant::now();

    let slowloris: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut c = TcpStream::connect(addr).expect("connect");
            c.write_all(b"G").unwrap();
            c
        })
        .collect();
    let draining: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(addr).expect("connect");
            c.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .unwrap();
            c
        })
        .collect();
    let mut idle: Vec<TcpStream> = (0..6)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect();

    // The attackers keep going on their own threads while the normal client is served.
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = |mut conns: Vec<TcpStream>, every: Duration, byte: &'static [u8]| {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for c in &mut conns {
                    let _ = c.write_all(byte);
                }
                std::thread::sleep(every);
            }
            conns
        })
    };
    let loris = trickle(slowloris, Duration::from_secs(1), b"E");
    let drain = trickle(draining, Duration::from_millis(80), b"x");

    let mut latencies = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let r = get(addr, "/overview");
        latencies.push(t.elapsed());
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let measured_within = started.elapsed();
    let worst = *latencies.iter().max().unwrap();
    eprintln!(
        "/overview under 200 slowloris + 4 draining + 6 idle connections: worst {worst:?}, all {latencies:?}"
    );
    assert!(worst < Duration::from_secs(1), "worst {worst:?}");
    // The attackers were all still connected: none is closed before its head deadline.
    assert!(
        measured_within < REQUEST_DEADLINE,
        "measured over {measured_within:?}: the slow connections may have been closed already"
    );

    // Every one of them is closed by the server by its deadline (plus scheduling slack).
    let patience = REQUEST_DEADLINE + CLOSE_GRACE + Duration::from_secs(10);
    for c in &mut idle {
        assert!(
            closed_by_server(c, patience),
            "an idle connection stayed open"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let mut slowloris = loris.join().unwrap();
    let mut draining = drain.join().unwrap();
    for c in slowloris.iter_mut().chain(draining.iter_mut()) {
        assert!(
            closed_by_server(c, patience),
            "a slow connection stayed open"
        );
    }
    assert!(
        started.elapsed() < patience + Duration::from_secs(10),
        "closing took {:?}",
        started.elapsed()
    );
    assert_eq!(get(addr, "/overview").status, 200);
}
