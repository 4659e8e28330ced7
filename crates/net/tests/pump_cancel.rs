//! A pump holding buffers for a receiver that grants no credit ends when its outbox is
//! cancelled (what a failing job does), instead of waiting for that credit forever.

use std::net::TcpListener;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_channel::{ExchangeConfig, InputGate, WaitTimes};
use sluice_net::{
    open_inputs, open_outputs_cancellable, ChannelId, NetEndpoint, NetError, SerdeMetrics,
};

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

/// The receiver grants one credit and never reads: the writer ends (the sender's own buffers
/// take its records), its pump holds the rest waiting for credit. Cancelling the outbox (what
/// a failing job does) must end the pump.
#[test]
fn a_pump_waiting_for_credit_ends_when_cancelled() {
    let (e0, e1) = pair();
    let id = ChannelId {
        edge: 0,
        from: 0,
        to: 0,
    };
    let cfg = ExchangeConfig {
        buffer_bytes: 64,
        exclusive_credits: 1,
        floating_credits: 0,
        ..Default::default()
    };
    let (_gate, senders) = InputGate::<u64>::new(1, &cfg, Default::default());
    let metrics = Arc::new(SerdeMetrics::default());
    open_inputs(
        &e1,
        0,
        vec![(id, senders.into_iter().next().unwrap())],
        1,
        metrics.clone(),
    )
    .unwrap();
    let (mut tx, pump, canceller) =
        open_outputs_cancellable::<u64>(&e0, 1, vec![id], metrics.clone()).unwrap();
    let mut w = tx
        .remove(0)
        .into_writer(&cfg, Arc::new(WaitTimes::default()));
    // 8 records per buffer: 5 buffers, 1 on the receiver's credit, 4 held by the pump.
    for seq in 0..40u64 {
        w.push(seq).unwrap();
    }
    w.finish().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while metrics.buffers_out.load(Relaxed) < 1 {
        assert!(Instant::now() < deadline, "the credited buffer never left");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Let the pump take the end of the partition and park for credit.
    let settle = Instant::now() + Duration::from_millis(300);
    while Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !pump.is_finished(),
        "the pump holds buffers: it must still wait"
    );
    let cancelled = Instant::now();
    canceller.cancel();
    let deadline = cancelled + Duration::from_secs(20);
    while !pump.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the pump still waits for credit {:?} after its outbox was cancelled",
            cancelled.elapsed()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(matches!(pump.join().unwrap(), Err(NetError::Cancelled)));
    assert_eq!(
        metrics.buffers_out.load(Relaxed),
        1,
        "no buffer left without credit"
    );
}
