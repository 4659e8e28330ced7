//! The facts about a bottleneck vertex that the rules look at: its busy and idle subtasks, how
//! they compare, where the time goes inside the chain, CPU and state-access time, stalls, and
//! the parallelism a fix would aim at. Computed once, before any rule runs.

use crate::{
    mean, mean_opt, pct, Bottleneck, HostSample, JobView, Snapshot, SubtaskSample, VertexView,
    TARGET_BUSY,
};

/// The bottleneck vertex and its subtask breakdown.
pub(crate) struct Breakdown<'a> {
    pub job: &'a JobView,
    pub vertex_index: usize,
    pub v: &'a VertexView,
    /// Subtasks of the vertex (at least 1).
    pub p: usize,
    /// Busy, not backpressured subtasks.
    pub hot: Vec<usize>,
    /// The other subtasks.
    pub others: Vec<usize>,
    /// Busy ms/s per subtask.
    pub busy: Vec<f64>,
    pub hot_busy: f64,
    pub others_busy: f64,
    pub others_idle: f64,
    /// A few subtasks do most of the work while their siblings are much less busy.
    pub skewed: bool,
    /// Some input is HASH partitioned.
    pub keyed: bool,
    /// The chain's head operator.
    pub first_op: Option<String>,
    /// The operator with most exclusive busy time on the hot subtasks, and its share.
    pub hottest: Option<(String, f64)>,
    /// Where the flame graph's working samples fall in the chain, when its frames show the
    /// operators (Flink: no per-operator metrics; see [`crate::chain`]). When the metrics name
    /// no operator, the hottest position names it.
    pub chain_time: Option<crate::chain::ChainTime>,
    /// The operator the bottleneck is in, when known.
    pub operator: Option<String>,
    /// The operator, else the vertex name.
    pub op_or_vertex: String,
    /// Records per second into the hot subtasks and into the whole vertex.
    pub hot_rate: f64,
    pub total_rate: f64,
    /// The hot subtasks' share of the vertex's records, when rates are reported.
    pub hot_share: Option<f64>,
    /// Averages over the hot subtasks (`None`: not reported).
    pub cpu: Option<f64>,
    pub cpu_wait: Option<f64>,
    pub state: Option<f64>,
    /// Samples in which the vertex stalled (see [`stalls`]), and the number of samples.
    pub stall_samples: Option<usize>,
    /// The busy subtasks' flame graphs, summed up, when given.
    pub profile: Option<crate::ProfileSummary>,
    pub sample_count: usize,
    /// Mean busy share of all subtasks (0..=1) and the parallelism that brings it to
    /// [`TARGET_BUSY`] (at least one more subtask, capped by the free cores).
    pub busy_ratio: f64,
    pub n: usize,
    /// The subtasks run flat out, so the true demand may exceed what `n` covers.
    pub saturated: bool,
    /// The hot subtasks' TaskManager (the one with most GC time), on a cluster that reports it.
    pub host: Option<HostSample>,
    /// How `cpu` was read from the TaskManager's process CPU, when it was (see
    /// [`super::jvm::host_cpu`]).
    pub host_cpu_line: Option<String>,
}

impl<'a> Breakdown<'a> {
    pub fn new(job: &'a JobView, vi: usize, hot: Vec<usize>, samples: &[Snapshot]) -> Self {
        let v = &job.vertices[vi];
        let p = v.subtasks.len().max(1);
        let busy: Vec<f64> = v.subtasks.iter().map(SubtaskSample::busy_ms).collect();
        let keyed = v
            .ship_strategies
            .iter()
            .any(|s| s.eq_ignore_ascii_case("HASH"));
        let skewed_by_busy = |hot: &[usize]| {
            let others: Vec<usize> = (0..v.subtasks.len()).filter(|i| !hot.contains(i)).collect();
            p >= 2
                && !others.is_empty()
                && hot.len() <= (p / 2).max(1)
                && mean(others.iter().map(|&i| busy[i])) < 0.5 * mean(hot.iter().map(|&i| busy[i]))
        };
        let mut skewed = skewed_by_busy(&hot);
        let mut hot = hot;
        if !skewed && keyed && oversubscribed(v) {
            if let Some(by_rate) = hot_by_rate(v) {
                hot = by_rate;
                skewed = true;
            }
        }
        let others: Vec<usize> = (0..v.subtasks.len()).filter(|i| !hot.contains(i)).collect();
        let hot_busy = mean(hot.iter().map(|&i| busy[i]));
        let others_busy = mean(others.iter().map(|&i| busy[i]));
        let others_idle = mean(others.iter().map(|&i| v.subtasks[i].idle_ms()));
        let first_op = v.operators.first().cloned();
        let mut hottest = hottest_operator(v, &hot);
        // In a source chain the source's own time is derived (the task's busy time minus what
        // the chained operators were measured to take), so it also absorbs time the thread spent
        // preempted on a loaded machine. A chained operator with a quarter or more of the time is
        // the better suspect: the source is then not what limits the chain.
        if v.is_source
            && v.operators.len() > 1
            && hottest.as_ref().map(|(name, _)| name) == v.operators.first()
        {
            if let Some(other) = busiest_chained_operator(v, &hot).filter(|(_, s)| *s >= 0.25) {
                hottest = Some(other);
            }
        }
        let profile = v.profile.as_ref().and_then(|p| p.summary());
        let chain_time = v
            .profile
            .as_ref()
            .filter(|_| v.operators.len() > 1)
            .and_then(|p| crate::chain::attribute(p, v.operators.len()))
            .filter(|t| t.total() >= crate::profile::MIN_ON_CPU_SAMPLES);
        if hottest.is_none() {
            let named = chain_time.as_ref().and_then(|t| t.hottest());
            if let Some((k, share)) = named.filter(|(_, s)| *s >= crate::chain::NAMING_SHARE) {
                hottest = v.operators.get(k).map(|name| (name.clone(), share));
            }
        }
        let operator = match &hottest {
            Some((name, _)) => Some(name.clone()),
            None if v.operators.len() == 1 => first_op.clone(),
            None => None,
        };
        let op_or_vertex = operator.clone().unwrap_or_else(|| v.name.clone());
        let rates: Vec<Option<f64>> = v.subtasks.iter().map(|s| s.records_in).collect();
        let total_rate: f64 = rates.iter().flatten().sum();
        let hot_rate: f64 = hot.iter().filter_map(|&i| rates[i]).sum();
        let hot_share = (total_rate > 0.0).then(|| hot_rate / total_rate);
        let cpu = mean_opt(hot.iter().map(|&i| v.subtasks[i].cpu));
        let cpu_wait = mean_opt(hot.iter().map(|&i| v.subtasks[i].cpu_wait));
        let state = mean_opt(hot.iter().map(|&i| v.subtasks[i].state_access));
        let avg_busy = mean(busy.iter().copied());
        let busy_ratio = (avg_busy / 1000.0).clamp(0.0, 1.0);
        let mut n = ((p as f64 * busy_ratio / TARGET_BUSY).ceil() as usize).max(p + 1);
        if let Some(cores) = job.available_cores {
            n = n.min(cores);
        }
        let mut b = Breakdown {
            job,
            vertex_index: vi,
            v,
            p,
            others,
            hot_busy,
            others_busy,
            others_idle,
            skewed,
            keyed,
            first_op,
            hottest,
            operator,
            op_or_vertex,
            hot_rate,
            total_rate,
            hot_share,
            cpu,
            cpu_wait,
            state,
            stall_samples: stalls(samples, vi),
            profile,
            chain_time,
            sample_count: samples.len(),
            busy_ratio,
            n,
            saturated: avg_busy >= 950.0,
            busy,
            hot,
            host: None,
            host_cpu_line: None,
        };
        b.host = super::jvm::hot_host(&b);
        if b.cpu.is_none() {
            if let Some((cpu, line)) = super::jvm::host_cpu(&b) {
                b.cpu = Some(cpu);
                b.host_cpu_line = Some(line);
            }
        }
        b
    }

    /// Mean busy ms/s over all subtasks.
    pub fn avg_busy(&self) -> f64 {
        mean(self.busy.iter().copied())
    }

    /// The bottleneck as found (a rule may still name another operator).
    pub fn bottleneck(&self) -> Bottleneck {
        Bottleneck {
            vertex: self.vertex_index,
            vertex_name: self.v.name.clone(),
            parallelism: self.p,
            operator: self.operator.clone(),
            operator_share: self
                .operator_from_profile()
                .then(|| self.hottest.as_ref().map(|h| h.1))
                .flatten(),
            subtasks: self.hot.clone(),
        }
    }

    /// The operator is known and heads the chain.
    pub fn operator_is_first(&self) -> bool {
        self.operator.is_some() && self.operator == self.first_op
    }

    /// The operator is known and ends the chain.
    pub fn operator_is_last(&self) -> bool {
        self.operator.is_some() && self.operator == self.v.operators.last().cloned()
    }

    /// What every diagnosis of a bottleneck starts with: this vertex is the first busy one, its
    /// consumers wait for it, and which operator of the chain takes the time.
    pub fn context_evidence(&self) -> Vec<String> {
        let v = self.v;
        let max_busy = self.busy.iter().copied().fold(0.0, f64::max);
        let mut evidence = vec![format!(
            "`{}` is the first vertex from the sources that is busy (max {}) and not backpressured",
            v.name,
            pct(max_busy)
        )];
        let downstream = self.job.vertices.iter();
        for d in downstream.filter(|d| d.inputs.contains(&self.vertex_index)) {
            let busiest = d
                .subtasks
                .iter()
                .map(SubtaskSample::busy_ms)
                .fold(0.0, f64::max);
            let idle = mean(d.subtasks.iter().map(SubtaskSample::idle_ms));
            evidence.push(format!(
                "downstream `{}` waits for input: idle {} on average, busy at most {}",
                d.name,
                pct(idle),
                pct(busiest)
            ));
        }
        if let Some(line) = self.profile.as_ref().and_then(|p| p.top_self_line()) {
            evidence.push(line);
        }
        evidence.extend(self.host_cpu_line.clone());
        if let Some(line) = self.chain_line() {
            evidence.push(line);
        } else if let Some((name, share)) = &self.hottest {
            if v.operators.len() > 1 {
                evidence.push(format!(
                    "inside the chain, `{name}` takes {:.0}% of the busy subtasks' operator time",
                    share * 100.0
                ));
            }
        }
        evidence
    }
}

impl Breakdown<'_> {
    /// Whether the operator was named from the flame graph's frames (no per-operator metrics).
    pub fn operator_from_profile(&self) -> bool {
        self.chain_time.is_some() && !self.v.subtasks.iter().any(|s| !s.operator_busy.is_empty())
    }

    /// The chain position of the named operator.
    pub fn operator_position(&self) -> Option<usize> {
        let op = self.operator.as_ref()?;
        self.v.operators.iter().position(|o| o == op)
    }

    /// The evidence line on where the flame graph's samples fall in the chain.
    fn chain_line(&self) -> Option<String> {
        if !self.operator_from_profile() {
            return None;
        }
        let t = self.chain_time.as_ref()?;
        let total = t.total().max(1) as f64;
        let share = |j: usize| {
            format!(
                "`{}` {:.0}%",
                self.v.operators[j],
                100.0 * t.at(j) as f64 / total
            )
        };
        let outside = (t.outside > 0).then(|| {
            format!(
                "outside the operators (the task's input, output and (de)serialization) {:.0}%",
                100.0 * t.outside as f64 / total
            )
        });
        let Some(k) = self.operator_position() else {
            let all: Vec<String> = (0..t.on_cpu.len()).map(share).chain(outside).collect();
            return Some(format!(
                "flame graph: {}: no operator of the chain has {:.0}% of the working samples: {}",
                self.v.name,
                crate::chain::NAMING_SHARE * 100.0,
                all.join(", ")
            ));
        };
        let name = &self.v.operators[k];
        let under = match &t.user_frames[k] {
            Some(u) => format!("under Flink's `{}`, user code `{u}`", t.wrappers[k]),
            None => format!("under Flink's `{}`", t.wrappers[k]),
        };
        let others: Vec<String> = (0..t.on_cpu.len())
            .filter(|&j| j != k)
            .map(share)
            .chain(outside)
            .collect();
        Some(format!(
            "flame graph: {}: the time is in `{name}` ({:.0}% of the working samples, {:.0}% \
             of the on-CPU samples; {:.0}% of its samples off CPU), {under}; {}",
            self.v.name,
            100.0 * t.at(k) as f64 / total,
            100.0 * t.on_cpu_share(k),
            100.0 * t.blocked_share(k),
            others.join(", ")
        ))
    }
}

/// The operator taking most exclusive busy time over the given subtasks.
fn hottest_operator(v: &VertexView, subs: &[usize]) -> Option<(String, f64)> {
    let mut totals: Vec<(String, f64)> = Vec::new();
    for &i in subs {
        for (name, ms) in &v.subtasks[i].operator_busy {
            match totals.iter_mut().find(|(n, _)| n == name) {
                Some(t) => t.1 += ms,
                None => totals.push((name.clone(), *ms)),
            }
        }
    }
    let total: f64 = totals.iter().map(|t| t.1).sum();
    let (name, ms) = totals.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (total > 0.0).then_some((name, ms / total))
}

/// The busiest operator of a chain other than its head, with its share of the operator time.
fn busiest_chained_operator(v: &VertexView, subs: &[usize]) -> Option<(String, f64)> {
    let head = v.operators.first()?;
    let mut totals: Vec<(String, f64)> = Vec::new();
    let mut total = 0.0;
    for &i in subs {
        for (name, ms) in &v.subtasks[i].operator_busy {
            total += ms;
            if name == head {
                continue;
            }
            match totals.iter_mut().find(|(n, _)| n == name) {
                Some(t) => t.1 += ms,
                None => totals.push((name.clone(), *ms)),
            }
        }
    }
    let (name, ms) = totals.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (total > 0.0).then_some((name, ms / total))
}

/// Periodic stalls of vertex `vi` over the series: samples where the rate fell below a third of
/// its median while busy stayed at least at 80 % of its median, in every subtask at once, in some
/// but not most samples. Returns how many.
fn stalls(samples: &[Snapshot], vi: usize) -> Option<usize> {
    if samples.len() < 4 {
        return None;
    }
    let median = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let subs = samples[0].get(vi)?.len();
    if subs == 0 {
        return None;
    }
    let mut stalled = vec![true; samples.len()];
    for i in 0..subs {
        let rate: Vec<f64> = samples
            .iter()
            .map(|s| {
                s.get(vi)
                    .and_then(|v| v.get(i))
                    .and_then(|x| x.rate())
                    .unwrap_or(0.0)
            })
            .collect();
        let busy: Vec<f64> = samples
            .iter()
            .map(|s| {
                s.get(vi)
                    .and_then(|v| v.get(i))
                    .map_or(0.0, |x| x.busy_ms())
            })
            .collect();
        let (mr, mb) = (median(rate.clone()), median(busy.clone()));
        if mr <= 0.0 {
            return None;
        }
        for t in 0..samples.len() {
            if !(rate[t] < mr / 3.0 && busy[t] >= 0.8 * mb) {
                stalled[t] = false;
            }
        }
    }
    let k = stalled.iter().filter(|s| **s).count();
    (k >= 1 && 2 * k < samples.len()).then_some(k)
}

/// The machine is oversubscribed for this vertex: its subtasks spend at least a fifth of their
/// busy time runnable but waiting for a free CPU (`cpu_wait`). Busy time then includes that
/// wait, so a lightly loaded subtask can look as busy as the hot one.
fn oversubscribed(v: &VertexView) -> bool {
    let busy: f64 = v.subtasks.iter().map(SubtaskSample::busy_ms).sum();
    let waits: Vec<f64> = v.subtasks.iter().filter_map(|s| s.cpu_wait).collect();
    waits.len() == v.subtasks.len() && busy > 0.0 && waits.iter().sum::<f64>() >= 0.2 * busy
}

/// Behind a HASH edge on an oversubscribed machine the records per subtask tell the skew that
/// busy time hides: the subtasks with at least half the busiest one's input rate, when they are
/// at most half of the subtasks and the others get less than half their mean rate.
fn hot_by_rate(v: &VertexView) -> Option<Vec<usize>> {
    let p = v.subtasks.len();
    let rates: Option<Vec<f64>> = v.subtasks.iter().map(|s| s.records_in).collect();
    let rates = rates?;
    let max = rates.iter().copied().fold(0.0, f64::max);
    if p < 2 || max <= 0.0 {
        return None;
    }
    let hot: Vec<usize> = (0..p).filter(|&i| rates[i] >= 0.5 * max).collect();
    let others: Vec<usize> = (0..p).filter(|i| !hot.contains(i)).collect();
    let skewed = hot.len() <= (p / 2).max(1)
        && !others.is_empty()
        && mean(others.iter().map(|&i| rates[i])) < 0.5 * mean(hot.iter().map(|&i| rates[i]));
    skewed.then_some(hot)
}
