//! Turns the raw, ever-growing subtask counters into Flink's per-second metrics.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use sluice_channel::mono_ns;

use super::cpu::{thread_cpu_ns, thread_run_queue_ns};
use super::snapshot::{OperatorSnapshot, SubtaskSnapshot, VertexSnapshot};
use super::window::{MeterWindow, TimerWindow};
use crate::metrics::TaskState;
use crate::TaskMetrics;

/// How often metrics update and how long their moving window is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Time between two samples of the counters (one slot of the window).
    pub update_interval: Duration,
    /// Slots in the window: the window is `update_interval × window_slots`.
    pub window_slots: usize,
}

impl Default for MetricsConfig {
    /// Flink's: updates every 5 s over 60 s.
    fn default() -> Self {
        MetricsConfig {
            update_interval: Duration::from_secs(5),
            window_slots: 12,
        }
    }
}

impl MetricsConfig {
    /// For demos and tests: updates every second over 5 s.
    pub fn short() -> Self {
        MetricsConfig {
            update_interval: Duration::from_secs(1),
            window_slots: 5,
        }
    }

    /// How far back a rate looks: `update_interval × window_slots`.
    pub fn window(&self) -> Duration {
        self.update_interval * self.window_slots as u32
    }
}

#[derive(Default, Clone, Copy)]
struct Totals {
    idle_ns: u64,
    bp_ns: u64,
    cpu_ns: Option<u64>,
    wait_ns: Option<u64>,
    state_ns: u64,
    ser_ns: u64,
    de_ns: u64,
}

struct OpState {
    busy: TimerWindow,
    records: MeterWindow,
    prev_exclusive_ns: f64,
}

struct SubtaskState {
    metrics: Arc<TaskMetrics>,
    slots: usize,
    prev: Totals,
    prev_tick: u64,
    done: bool,
    idle: TimerWindow,
    bp: TimerWindow,
    cpu: TimerWindow,
    cpu_wait: TimerWindow,
    state: TimerWindow,
    /// Encoding / decoding time of the subtask's remote channels (the exchange's threads).
    serialize: TimerWindow,
    deserialize: TimerWindow,
    records_in: MeterWindow,
    records_out: MeterWindow,
    bytes_in: MeterWindow,
    bytes_out: MeterWindow,
    buffers_out: MeterWindow,
    /// `[bytes local, bytes remote, buffers local, buffers remote]` received.
    input_split: [MeterWindow; 4],
    ops: Vec<OpState>,
    last: SubtaskSnapshot,
}

/// Per-job metric state. Call [`tick`](Self::tick) every update interval (and once when the job
/// ends); read [`vertices`](Self::vertices) any time.
pub struct Sampler {
    cfg: MetricsConfig,
    vertices: Vec<Vec<SubtaskState>>,
}

impl Sampler {
    /// A sampler over `subtasks[vertex][subtask]`, with empty windows sized by `cfg`.
    pub fn new(cfg: MetricsConfig, subtasks: &[Vec<Arc<TaskMetrics>>]) -> Sampler {
        let slots = cfg.window_slots;
        let vertices = subtasks
            .iter()
            .map(|v| {
                v.iter()
                    .enumerate()
                    .map(|(i, m)| SubtaskState {
                        metrics: m.clone(),
                        slots,
                        prev: Totals::default(),
                        prev_tick: 0,
                        done: false,
                        idle: TimerWindow::new(slots),
                        bp: TimerWindow::new(slots),
                        cpu: TimerWindow::new(slots),
                        cpu_wait: TimerWindow::new(slots),
                        state: TimerWindow::new(slots),
                        serialize: TimerWindow::new(slots),
                        deserialize: TimerWindow::new(slots),
                        records_in: MeterWindow::new(slots),
                        records_out: MeterWindow::new(slots),
                        bytes_in: MeterWindow::new(slots),
                        bytes_out: MeterWindow::new(slots),
                        buffers_out: MeterWindow::new(slots),
                        input_split: std::array::from_fn(|_| MeterWindow::new(slots)),
                        ops: Vec::new(),
                        last: SubtaskSnapshot {
                            subtask: i,
                            state: TaskState::Created,
                            start_time_ms: -1,
                            end_time_ms: -1,
                            cpu_ms_per_second: f64::NAN,
                            cpu_wait_ms_per_second: f64::NAN,
                            ..Default::default()
                        },
                    })
                    .collect()
            })
            .collect();
        Sampler { cfg, vertices }
    }

    /// The settings this sampler runs with.
    pub fn config(&self) -> MetricsConfig {
        self.cfg
    }

    /// Takes one sample of every subtask.
    pub fn tick(&mut self) {
        let now = mono_ns();
        let window_s = self.cfg.window().as_secs_f64();
        for v in &mut self.vertices {
            for s in v.iter_mut() {
                sample(s, now, window_s);
            }
        }
    }

    /// The latest per-subtask metrics, per vertex.
    pub fn vertices(&self) -> Vec<VertexSnapshot> {
        self.vertices
            .iter()
            .enumerate()
            .map(|(index, v)| VertexSnapshot {
                index,
                subtasks: v.iter().map(|s| s.last.clone()).collect(),
            })
            .collect()
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn sample(s: &mut SubtaskState, now: u64, window_s: f64) {
    let m = s.metrics.clone();
    let state = m.state();
    s.last.state = state;
    let started = m.started_mono_ns.load(Relaxed);
    if started == 0 || s.done {
        return;
    }
    let ended = m.ended_mono_ns.load(Relaxed);
    let at = if ended > 0 { ended.min(now) } else { now };
    let from = s.prev_tick.max(started);
    let interval_ns = at.saturating_sub(from);
    let idle = m.waits.idle_ns_at(at);
    let bp = m.waits.backpressured_ns_at(at);
    let tid = m.thread_id.load(Relaxed);
    // An ended thread's own last reading wins: its /proc entry may be gone already.
    let ended_cpu = Some(m.ended_cpu_ns.load(Relaxed)).filter(|&c| ended > 0 && c > 0);
    let cpu = if tid > 0 {
        ended_cpu.or_else(|| thread_cpu_ns(tid)).or(s.prev.cpu_ns)
    } else {
        None
    };
    let wait = if tid > 0 {
        thread_run_queue_ns(tid).or(s.prev.wait_ns)
    } else {
        None
    };
    let interval_s = interval_ns as f64 / 1e9;
    if let Some(w) = wait {
        s.cpu_wait.push(
            ms(w.saturating_sub(s.prev.wait_ns.unwrap_or(0))),
            interval_s,
        );
    }
    s.idle
        .push(ms(idle.saturating_sub(s.prev.idle_ns)), interval_s);
    s.bp.push(ms(bp.saturating_sub(s.prev.bp_ns)), interval_s);
    if let (Some(c), prev) = (cpu, s.prev.cpu_ns) {
        s.cpu
            .push(ms(c.saturating_sub(prev.unwrap_or(0))), interval_s);
    }
    let state_ns = m.state_access_ns.load(Relaxed);
    s.state
        .push(ms(state_ns.saturating_sub(s.prev.state_ns)), interval_s);
    let ser_ns = channel_total(&m.output_channels, |c| &c.serialize_ns);
    let de_ns = channel_total(&m.input_channels, |c| &c.deserialize_ns);
    s.serialize
        .push(ms(ser_ns.saturating_sub(s.prev.ser_ns)), interval_s);
    s.deserialize
        .push(ms(de_ns.saturating_sub(s.prev.de_ns)), interval_s);
    s.prev = Totals {
        idle_ns: idle,
        bp_ns: bp,
        cpu_ns: cpu.or(s.prev.cpu_ns),
        wait_ns: wait.or(s.prev.wait_ns),
        state_ns,
        ser_ns,
        de_ns,
    };
    s.prev_tick = at;

    let records_in = m.records_in.load(Relaxed);
    let records_out = m.records_out.load(Relaxed);
    let bytes_in = m.bytes_in.load(Relaxed);
    let bytes_out = m.bytes_out.load(Relaxed);
    let buffers_out = channel_total(&m.output_channels, |c| &c.buffers_out);
    s.records_in.push(records_in);
    s.records_out.push(records_out);
    s.bytes_in.push(bytes_in);
    s.bytes_out.push(bytes_out);
    s.buffers_out.push(buffers_out);
    let split = input_split(&m.input_channels);
    for (w, v) in s.input_split.iter_mut().zip(split) {
        w.push(v);
    }

    let idle_ps = s.idle.per_second();
    let bp_ps = s.bp.per_second();
    let busy_ps = 1000.0 - (idle_ps + bp_ps).min(1000.0);
    let elapsed_ms = ms(at.saturating_sub(started));
    let acc_busy = (elapsed_ms - ms(idle) - ms(bp)).max(0.0);

    let (in_used, in_queued) = channel_sums(&m.input_channels);
    let (out_used, out_queued) = channel_sums(&m.output_channels);
    let in_floating = channel_total(&m.input_channels, |c| &c.floating_in_flight).min(in_used);
    let in_exclusive = m.input_exclusive_size.load(Relaxed);
    let in_flight_bytes: u64 = m
        .input_channels
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|c| c.bytes_in_flight.load(Relaxed))
        .sum();
    let (debloated_buffer_size, estimated_time_to_consume_buffers_ms) = m
        .input_debloat
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map_or((0, 0), |g| {
            (g.buffer_size(), g.estimated_time_to_consume_ms())
        });
    let ratio = |used: u64, pool: u64| {
        if pool == 0 {
            0.0
        } else {
            used as f64 / pool as f64
        }
    };

    // Operators: inclusive sampled times, minus chained successors' → exclusive.
    let ops = m
        .operators
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let edges = m
        .operator_edges
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    while s.ops.len() < ops.len() {
        s.ops.push(OpState {
            busy: TimerWindow::new(s.slots),
            records: MeterWindow::new(s.slots),
            prev_exclusive_ns: 0.0,
        });
    }
    let inclusive: Vec<f64> = ops
        .iter()
        .map(|o| {
            if o.whole_task.load(Relaxed) {
                acc_busy * 1e6
            } else {
                o.estimated_inclusive_ns()
            }
        })
        .collect();
    let mut operators = Vec::with_capacity(ops.len());
    for (i, o) in ops.iter().enumerate() {
        let children: f64 = edges
            .iter()
            .filter(|(a, _)| *a == i)
            .map(|(_, b)| inclusive[*b])
            .sum();
        let exclusive = (inclusive[i] - children).max(0.0);
        let st = &mut s.ops[i];
        st.busy.push(
            (exclusive - st.prev_exclusive_ns).max(0.0) / 1e6,
            interval_s,
        );
        st.prev_exclusive_ns = exclusive;
        let rin = o.records_in.load(Relaxed);
        st.records.push(rin);
        operators.push(OperatorSnapshot {
            name: o.name.clone(),
            records_in: rin,
            records_in_per_second: st.records.per_second(window_s),
            busy_ms_per_second: st.busy.per_second(),
            accumulated_busy_ms: exclusive / 1e6,
        });
    }

    let wall_ms = |v: u64| if v == 0 { -1 } else { v as i64 };
    s.last = SubtaskSnapshot {
        subtask: s.last.subtask,
        state,
        start_time_ms: wall_ms(m.started_ms.load(Relaxed)),
        end_time_ms: wall_ms(m.ended_ms.load(Relaxed)),
        busy_ms_per_second: busy_ps,
        backpressured_ms_per_second: bp_ps,
        soft_backpressured_ms_per_second: 0.0,
        hard_backpressured_ms_per_second: bp_ps,
        idle_ms_per_second: idle_ps,
        max_hard_backpressure_ms: ms(m.waits.max_backpressured_ns.swap(0, Relaxed)),
        accumulated_busy_ms: acc_busy.floor(),
        accumulated_backpressured_ms: ms(bp).floor(),
        accumulated_idle_ms: ms(idle).floor(),
        is_backpressured: m.waits.backpressured_since.load(Relaxed) > 0,
        records_in,
        records_out,
        bytes_in,
        bytes_out,
        buffers_out,
        records_in_per_second: s.records_in.per_second(window_s),
        records_out_per_second: s.records_out.per_second(window_s),
        bytes_in_per_second: s.bytes_in.per_second(window_s),
        bytes_out_per_second: s.bytes_out.per_second(window_s),
        buffers_out_per_second: s.buffers_out.per_second(window_s),
        bytes_in_local: split[0],
        bytes_in_remote: split[1],
        buffers_in_local: split[2],
        buffers_in_remote: split[3],
        bytes_in_local_per_second: s.input_split[0].per_second(window_s),
        bytes_in_remote_per_second: s.input_split[1].per_second(window_s),
        buffers_in_local_per_second: s.input_split[2].per_second(window_s),
        buffers_in_remote_per_second: s.input_split[3].per_second(window_s),
        in_pool_usage: ratio(in_used, m.input_pool_size.load(Relaxed)),
        out_pool_usage: ratio(out_used, m.output_pool_size.load(Relaxed)),
        input_queue_length: in_queued,
        output_queue_length: out_queued,
        input_exclusive_buffers_usage: ratio(in_used - in_floating, in_exclusive),
        input_floating_buffers_usage: ratio(
            in_floating,
            m.input_pool_size.load(Relaxed).saturating_sub(in_exclusive),
        ),
        input_queue_size: channel_total(&m.input_channels, |c| &c.bytes_queued),
        output_queue_size: channel_total(&m.output_channels, |c| &c.bytes_queued),
        in_flight_bytes,
        debloated_buffer_size,
        estimated_time_to_consume_buffers_ms,
        cpu_ms_per_second: if s.prev.cpu_ns.is_some() {
            s.cpu.per_second()
        } else {
            f64::NAN
        },
        accumulated_cpu_ms: s.prev.cpu_ns.map(|c| ms(c).floor()).unwrap_or(f64::NAN),
        cpu_wait_ms_per_second: if s.prev.wait_ns.is_some() {
            s.cpu_wait.per_second()
        } else {
            f64::NAN
        },
        state_access_ms_per_second: s.state.per_second(),
        serialization_ms_per_second: s.serialize.per_second(),
        deserialization_ms_per_second: s.deserialize.per_second(),
        operators,
    };
    if ended > 0
        || matches!(
            state,
            TaskState::Finished | TaskState::Canceled | TaskState::Failed
        )
    {
        // Final values stay as they were when the subtask ended (Flink stops updating them too).
        s.done = ended > 0;
    }
}

/// `[bytes local, bytes remote, buffers local, buffers remote]` received on the input channels.
fn input_split(chs: &std::sync::Mutex<Vec<Arc<sluice_channel::ChannelCounters>>>) -> [u64; 4] {
    let chs = chs.lock().unwrap_or_else(|p| p.into_inner());
    chs.iter().fold([0; 4], |mut a, c| {
        let at = usize::from(c.remote.load(Relaxed));
        a[at] += c.bytes_in.load(Relaxed);
        a[2 + at] += c.buffers_in.load(Relaxed);
        a
    })
}

/// One counter summed over the channels.
fn channel_total(
    chs: &std::sync::Mutex<Vec<Arc<sluice_channel::ChannelCounters>>>,
    counter: impl Fn(&sluice_channel::ChannelCounters) -> &std::sync::atomic::AtomicU64,
) -> u64 {
    let chs = chs.lock().unwrap_or_else(|p| p.into_inner());
    chs.iter().map(|c| counter(c).load(Relaxed)).sum()
}

fn channel_sums(chs: &std::sync::Mutex<Vec<Arc<sluice_channel::ChannelCounters>>>) -> (u64, u64) {
    let chs = chs.lock().unwrap_or_else(|p| p.into_inner());
    chs.iter().fold((0, 0), |(u, q), c| {
        (
            u + c.buffers_in_flight.load(Relaxed),
            q + c.buffers_queued.load(Relaxed),
        )
    })
}
