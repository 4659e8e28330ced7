//! Two endpoints over real loopback TCP (in one test process, so both sides can be observed):
//! order per channel, events, in-flight bound under a slow consumer, backpressure of the source.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use sluice_channel::{
    ChannelEvent, ExchangeConfig, GateItem, InputGate, OutputDebt, OverdraftBudget, WaitTimes,
};
use sluice_net::{
    open_inputs, open_outputs, open_outputs_cancellable, ChannelId, NetEndpoint, NetError,
    SerdeMetrics,
};
use sluice_types::Watermark;

use crate::common;
use common::pair;

struct Outcome {
    per_channel: Vec<Vec<u64>>,
    watermarks: Vec<Vec<i64>>,
    max_in_flight_records: u64,
    bound_records: u64,
    max_gate_buffers: u64,
    gate_buffer_bound: u64,
    source_backpressured_ns: u64,
}

/// `senders` upstream subtasks in process 0 → one downstream gate in process 1.
fn run(senders: usize, records: u64, cfg: ExchangeConfig, slow: Option<Duration>) -> Outcome {
    let (e0, e1) = pair();
    let ids: Vec<ChannelId> = (0..senders as u32)
        .map(|from| ChannelId {
            edge: 0,
            from,
            to: 0,
        })
        .collect();
    let out_metrics = Arc::new(SerdeMetrics::default());
    let in_metrics = Arc::new(SerdeMetrics::default());
    let (gate, gate_senders) = InputGate::<(u32, u64)>::new(senders, &cfg, Default::default());
    open_inputs(
        &e1,
        0,
        ids.iter().copied().zip(gate_senders).collect(),
        cfg.exclusive_credits,
        in_metrics.clone(),
    )
    .unwrap();
    let mut producers = Vec::new();
    let mut pumps = Vec::new();
    let waits = Arc::new(WaitTimes::default());
    // One outbox per upstream subtask, as a task would open them.
    for (s, id) in ids.iter().enumerate() {
        let (mut tx, pump) =
            open_outputs::<(u32, u64)>(&e0, 1, vec![*id], out_metrics.clone()).unwrap();
        pumps.push(pump);
        let mut w = tx.remove(0).into_writer(&cfg, waits.clone());
        producers.push(std::thread::spawn(move || {
            for seq in 0..records {
                w.push((s as u32, seq)).unwrap();
                if seq % 1000 == 999 {
                    w.send_event(ChannelEvent::Watermark(Watermark(seq as i64)))
                        .unwrap();
                }
            }
            w.finish().unwrap();
        }));
    }
    let rpb = cfg.records_per_buffer::<(u32, u64)>() as u64;
    let credits = (cfg.exclusive_credits * senders + cfg.floating_credits) as u64;
    let mut gate = gate;
    let mut per_channel = vec![Vec::new(); senders];
    let mut watermarks = vec![Vec::new(); senders];
    let mut released = 0u64;
    let mut max_in_flight = 0u64;
    while let Some(item) = gate.next().unwrap() {
        match item {
            GateItem::Buffer(buf) => {
                for &(s, seq) in &buf.records {
                    assert_eq!(s as usize, buf.channel, "record on the wrong channel");
                    per_channel[buf.channel].push(seq);
                }
                if let Some(d) = slow {
                    std::thread::sleep(d);
                }
                released += buf.records.len() as u64;
                gate.release(buf);
                let sent = out_metrics.encoded_records.load(Relaxed);
                max_in_flight = max_in_flight.max(sent.saturating_sub(released));
            }
            GateItem::Event {
                channel,
                event: ChannelEvent::Watermark(w),
            } => watermarks[channel].push(w.0),
            _ => {}
        }
    }
    for p in producers {
        p.join().unwrap();
    }
    for p in pumps {
        p.join().unwrap().unwrap();
    }
    assert_eq!(e0.failure(), None);
    assert_eq!(e1.failure(), None);
    let max_gate_buffers = gate
        .counters()
        .iter()
        .map(|c| c.max_buffers_in_flight.load(Relaxed))
        .max()
        .unwrap_or(0);
    e0.shutdown();
    e1.shutdown();
    assert_eq!(
        in_metrics.decoded_records.load(Relaxed),
        records * senders as u64
    );
    Outcome {
        per_channel,
        watermarks,
        max_in_flight_records: max_in_flight,
        bound_records: credits * rpb,
        max_gate_buffers,
        gate_buffer_bound: (cfg.exclusive_credits + cfg.floating_credits) as u64,
        source_backpressured_ns: waits.backpressured_ns.load(Relaxed),
    }
}

fn assert_in_order(o: &Outcome, records: u64) {
    for (c, seqs) in o.per_channel.iter().enumerate() {
        assert_eq!(
            seqs.len() as u64,
            records,
            "channel {c} lost or duplicated records"
        );
        assert!(
            seqs.windows(2).all(|w| w[0] + 1 == w[1]),
            "channel {c} out of order"
        );
    }
    for (c, wms) in o.watermarks.iter().enumerate() {
        let want: Vec<i64> = (0..records as i64).filter(|s| s % 1000 == 999).collect();
        assert_eq!(wms, &want, "channel {c}: watermarks lost or reordered");
    }
}

#[test]
fn slow_consumer_backpressures_the_remote_source_within_credits() {
    let cfg = ExchangeConfig {
        buffer_bytes: 1024,
        exclusive_credits: 2,
        floating_credits: 2,
        ..Default::default()
    };
    let records = 20_000;
    let o = run(2, records, cfg, Some(Duration::from_micros(300)));
    assert_in_order(&o, records);
    assert!(
        o.max_in_flight_records <= o.bound_records,
        "in flight {} records > credits {}",
        o.max_in_flight_records,
        o.bound_records
    );
    assert!(o.max_gate_buffers <= o.gate_buffer_bound);
    // The source waited for credit: the receiver's pace reached it over the wire.
    assert!(o.source_backpressured_ns > 0, "source never backpressured");
}

/// A writer in the middle of one input record's outputs ships buffers in overdraft, ahead of
/// the receiver's credits: the pump holds them until the receiver grants their credits (a
/// buffer on the wire without an announced credit is a protocol violation at the receiver).
/// One channel from process 0 to a gate in process 1, with 8-record buffers and one credit.
struct OneChannel {
    e0: NetEndpoint,
    e1: NetEndpoint,
    cfg: ExchangeConfig,
    gate: InputGate<u64>,
    tx: Vec<sluice_channel::ChannelSender<u64>>,
    pump: sluice_net::outbound::Pump,
    canceller: sluice_channel::GateCanceller,
    metrics: Arc<SerdeMetrics>,
}

fn one_channel() -> OneChannel {
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
    let (gate, senders) = InputGate::<u64>::new(1, &cfg, Default::default());
    let metrics = Arc::new(SerdeMetrics::default());
    open_inputs(
        &e1,
        0,
        vec![(id, senders.into_iter().next().unwrap())],
        1,
        metrics.clone(),
    )
    .unwrap();
    let (tx, pump, canceller) =
        open_outputs_cancellable::<u64>(&e0, 1, vec![id], metrics.clone()).unwrap();
    OneChannel {
        e0,
        e1,
        cfg,
        gate,
        tx,
        pump,
        canceller,
        metrics,
    }
}

#[test]
fn overdraft_buffers_wait_in_the_pump_for_the_receivers_credit() {
    let OneChannel {
        e0,
        e1,
        cfg,
        mut gate,
        mut tx,
        pump,
        ..
    } = one_channel();
    let waits = Arc::new(WaitTimes::default());
    let debt = OutputDebt::new();
    let budget = OverdraftBudget::new(5, debt.clone());
    let mut w = tx
        .remove(0)
        .into_writer(&cfg, waits.clone())
        .with_overdraft(budget);
    let producer = std::thread::spawn(move || {
        let mut seq = 0u64;
        for _ in 0..50 {
            // One input record fans out to several buffers' worth of outputs.
            debt.begin_record(&waits).unwrap();
            for _ in 0..40 {
                w.push(seq).unwrap();
                seq += 1;
            }
        }
        w.finish().unwrap();
        seq
    });
    // A protocol violation ends the connection, not the gate: look up now and then.
    gate.set_wake_interval(Some(Duration::from_millis(100)));
    let mut got = Vec::new();
    while let Some(item) = gate.next().unwrap() {
        match item {
            GateItem::Buffer(b) => {
                got.extend_from_slice(&b.records);
                gate.release(b);
            }
            GateItem::Idle => assert_eq!(e1.failure(), None),
            _ => {}
        }
    }
    let sent = producer.join().unwrap();
    pump.join().unwrap().unwrap();
    assert_eq!(e0.failure(), None);
    assert_eq!(e1.failure(), None);
    assert_eq!(got, (0..sent).collect::<Vec<_>>());
    e0.shutdown();
    e1.shutdown();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]
    #[test]
    fn order_kept_and_in_flight_within_credits(
        senders in 1usize..4,
        records in 1u64..5_000,
        buffer_bytes in 16usize..2048,
        exclusive in 0usize..3,
        floating in 0usize..4,
    ) {
        prop_assume!(exclusive + floating > 0);
        let cfg = ExchangeConfig { buffer_bytes, exclusive_credits: exclusive, floating_credits: floating, ..Default::default() };
        let o = run(senders, records, cfg, None);
        assert_in_order(&o, records);
        prop_assert!(o.max_in_flight_records <= o.bound_records,
            "in flight {} > bound {}", o.max_in_flight_records, o.bound_records);
        prop_assert!(o.max_gate_buffers <= o.gate_buffer_bound);
    }
}

/// A process whose tasks all finished shuts its exchange down while an outbox pump still holds
/// their last buffers and end of partition for want of credit (the receiver is not reading
/// yet). The goodbye must wait for that pump: a peer stops reading at the goodbye, so what the
/// pump sent after it would be lost and the receiving task would wait forever.
#[test]
fn shutdown_waits_for_a_pump_holding_buffers_without_credit() {
    let OneChannel {
        e0,
        e1,
        cfg,
        mut gate,
        mut tx,
        pump,
        ..
    } = one_channel();
    let waits = Arc::new(WaitTimes::default());
    let mut w = tx.remove(0).into_writer(&cfg, waits);
    // 8 records per buffer: a receiver granting 1 credit at a time holds most of them back.
    // The sender's own pool (2 per channel + 8 floating) takes the rest, so the writer ends.
    const RECORDS: u64 = 60;
    for seq in 0..RECORDS {
        w.push(seq).unwrap();
    }
    w.finish().unwrap();
    let e0 = Arc::new(e0);
    let closing = e0.clone();
    let shut = std::thread::spawn(move || closing.shutdown());
    // Only now does the receiver read: everything, then the end of the partition.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let ended = loop {
            match gate.next() {
                Ok(Some(GateItem::Buffer(b))) => {
                    got.extend_from_slice(&b.records);
                    gate.release(b);
                }
                Ok(Some(_)) => {}
                Ok(None) => break true,
                Err(_) => break false,
            }
        };
        let _ = done_tx.send((got, ended));
    });
    let (got, ended) = done_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the receiver got the end of the partition (it waited for it forever)");
    assert!(ended, "the gate ended by its channel's end, not cancelled");
    assert_eq!(got, (0..RECORDS).collect::<Vec<_>>());
    shut.join().unwrap();
    pump.join().unwrap().unwrap();
    assert_eq!(e0.failure(), None);
    assert_eq!(e1.failure(), None);
    e1.shutdown();
}

/// The receiver grants one credit and never reads: the writer ends (the sender's own buffers
/// take its records), its pump holds the rest waiting for credit. Cancelling the outbox (what
/// a failing job does) must end the pump.
#[test]
fn a_pump_waiting_for_credit_ends_when_cancelled() {
    // The endpoints and the gate stay alive to the end (`_name` keeps what `_` would drop).
    let OneChannel {
        e0: _e0,
        e1: _e1,
        cfg,
        gate: _gate,
        mut tx,
        pump,
        canceller,
        metrics,
    } = one_channel();
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
