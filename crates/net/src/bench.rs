//! `sluice bench net`: a pass-through of `u64` records across two endpoints on loopback TCP,
//! beside the same pass-through through an in-process gate and beside a bare TCP copy loop
//! (write 256 KiB chunks, read and discard), all in the same run.
//!
//! The two endpoints live in one OS process (separate threads, a real TCP connection between
//! them): what is measured is the protocol, the codec and the socket, not process start-up.
//!
//! Each case also reports the CPU time the whole process spent during it (user + system, all
//! threads, from `/proc/self/stat` in clock ticks of 10 ms; `None` where that file does not
//! exist), so the cost per record can be named apart from the wall-clock rate, which drifts
//! with the machine's load.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_channel::{ExchangeConfig, GateItem, InputGate, WaitTimes};

use crate::{open_inputs, open_outputs, ChannelId, NetEndpoint, NetError, SerdeMetrics};

/// One measured case.
#[derive(Debug, Clone)]
pub struct BenchCase {
    /// The case's name as the report prints it.
    pub name: &'static str,
    /// Records sent.
    pub records: u64,
    /// Bytes that crossed: on the wire for TCP cases, `records × 8` in process.
    pub bytes: u64,
    /// Wall-clock time of the case.
    pub seconds: f64,
    /// CPU time of the process (all threads, user + system) during the case.
    pub cpu_seconds: Option<f64>,
}

impl BenchCase {
    /// Records per second of wall-clock time.
    pub fn records_per_s(&self) -> f64 {
        self.records as f64 / self.seconds
    }
    /// Bytes per second of wall-clock time.
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds
    }
    /// CPU nanoseconds per record (all threads), when the CPU time is known.
    pub fn cpu_ns_per_record(&self) -> Option<f64> {
        self.cpu_seconds
            .filter(|_| self.records > 0)
            .map(|c| c * 1e9 / self.records as f64)
    }
}

/// The process's CPU time so far (user + system, all threads, dead ones included), from
/// `/proc/self/stat` (fields 14 and 15, in ticks of `USER_HZ` = 100 on Linux).
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// Measures the CPU time of `f` (the process's, so nothing else may run meanwhile).
fn with_cpu<R>(f: impl FnOnce() -> R) -> (R, Option<f64>) {
    let before = process_cpu_seconds();
    let r = f();
    let cpu = process_cpu_seconds()
        .zip(before)
        .map(|(a, b)| (a - b).max(0.0));
    (r, cpu)
}

fn consume(mut gate: InputGate<u64>) -> u64 {
    let mut sum = 0u64;
    while let Ok(Some(item)) = gate.next() {
        if let GateItem::Buffer(b) = item {
            sum = b.records.iter().fold(sum, |a, &r| a.wrapping_add(r));
            gate.release(b);
        }
    }
    sum
}

fn produce(senders: Vec<sluice_channel::ChannelSender<u64>>, cfg: &ExchangeConfig, records: u64) {
    let mut w = senders
        .into_iter()
        .next()
        .map(|s| s.into_writer(cfg, Arc::new(WaitTimes::default())));
    if let Some(w) = &mut w {
        for r in 0..records {
            if w.push(r).is_err() {
                return;
            }
        }
        let _ = w.finish();
    }
}

fn in_process(records: u64, cfg: &ExchangeConfig) -> BenchCase {
    let (gate, senders) = InputGate::<u64>::new(1, cfg, Default::default());
    let started = Instant::now();
    let c = std::thread::spawn(move || consume(gate));
    let cfg2 = cfg.clone();
    let p = std::thread::spawn(move || produce(senders, &cfg2, records));
    let _ = p.join();
    let _ = c.join();
    BenchCase {
        name: "in-process gate",
        records,
        bytes: records * 8,
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: None,
    }
}

fn remote(records: u64, cfg: &ExchangeConfig) -> Result<BenchCase, NetError> {
    let l0 = TcpListener::bind("127.0.0.1:0")?;
    let l1 = TcpListener::bind("127.0.0.1:0")?;
    let addrs: Vec<SocketAddr> = vec![l0.local_addr()?, l1.local_addr()?];
    let a1 = addrs.clone();
    let t = std::thread::spawn(move || NetEndpoint::start(1, &a1, l1, Duration::from_secs(30)));
    let e0 = NetEndpoint::start(0, &addrs, l0, Duration::from_secs(30))?;
    let e1 = t
        .join()
        .map_err(|_| NetError::Connect("endpoint thread panicked".into()))??;
    let id = ChannelId {
        edge: 0,
        from: 0,
        to: 0,
    };
    let metrics = Arc::new(SerdeMetrics::default());
    let (gate, gate_senders) = InputGate::<u64>::new(1, cfg, Default::default());
    open_inputs(
        &e1,
        0,
        vec![(
            id,
            gate_senders.into_iter().next().ok_or(NetError::Cancelled)?,
        )],
        cfg.exclusive_credits,
        metrics.clone(),
    )?;
    let started = Instant::now();
    let (senders, pump) = open_outputs::<u64>(&e0, 1, vec![id], metrics.clone())?;
    let c = std::thread::spawn(move || consume(gate));
    let cfg2 = cfg.clone();
    let p = std::thread::spawn(move || produce(senders, &cfg2, records));
    let _ = p.join();
    let _ = c.join();
    let seconds = started.elapsed().as_secs_f64();
    pump.join()
        .map_err(|_| NetError::Connect("pump panicked".into()))??;
    e0.shutdown();
    e1.shutdown();
    Ok(BenchCase {
        name: "remote channel (loopback TCP)",
        records,
        bytes: metrics.encoded_bytes.load(Relaxed),
        seconds,
        cpu_seconds: None,
    })
}

fn bare_tcp(bytes: u64) -> Result<BenchCase, NetError> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let started = Instant::now();
    let reader = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut s, _) = l.accept()?;
        let mut buf = vec![0u8; 256 << 10];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                return Ok(got);
            }
            got += n as u64;
        }
    });
    let mut s = TcpStream::connect(addr)?;
    let chunk = vec![7u8; 256 << 10];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    drop(s);
    let got = reader
        .join()
        .map_err(|_| NetError::Connect("reader panicked".into()))??;
    Ok(BenchCase {
        name: "bare TCP copy loop",
        records: 0,
        bytes: got,
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: None,
    })
}

/// The three cases, `records` u64 records each (the bare loop copies as many bytes as the remote
/// case put on the wire), Flink's default exchange sizes.
pub fn run(records: u64) -> Result<Vec<BenchCase>, NetError> {
    let cfg = ExchangeConfig::default();
    let (mut local, cpu) = with_cpu(|| in_process(records, &cfg));
    local.cpu_seconds = cpu;
    let (remote, cpu) = with_cpu(|| remote(records, &cfg));
    let mut remote = remote?;
    remote.cpu_seconds = cpu;
    let (bare, cpu) = with_cpu(|| bare_tcp(remote.bytes.max(1)));
    let mut bare = bare?;
    bare.cpu_seconds = cpu;
    Ok(vec![local, remote, bare])
}
