//! The decision loop on synthetic jobs diagnosed by the real doctor.

use proptest::prelude::*;
use sluice_doctor::{diagnose, JobView, PlanChange, ShipStrategy, SubtaskSample, VertexView};

use super::*;

fn sub(busy: f64, bp: f64, rate: f64) -> SubtaskSample {
    SubtaskSample {
        busy: Some(busy),
        backpressured: Some(bp),
        idle: Some((1000.0 - busy - bp).max(0.0)),
        records_in: Some(rate),
        records_out: Some(rate),
        cpu: Some(busy * 0.95),
        ..Default::default()
    }
}

fn vertex(name: &str, inputs: Vec<usize>, ship: &str, subs: Vec<SubtaskSample>) -> VertexView {
    VertexView {
        id: name.to_string(),
        name: name.to_string(),
        parallelism: subs.len(),
        ship_strategies: if inputs.is_empty() {
            vec![]
        } else {
            vec![ship.to_string()]
        },
        inputs,
        operators: vec![name.to_string()],
        subtasks: subs,
        ..Default::default()
    }
}

/// source (p=1) -REBALANCE-> heavy-map (p = map.len()) -REBALANCE-> sink (p=1).
fn job(source: SubtaskSample, map: Vec<SubtaskSample>, sink_rate: f64) -> JobView {
    let mut v = vec![
        vertex("Source: gen", vec![], "", vec![source]),
        vertex("heavy-map", vec![0], "REBALANCE", map),
        vertex(
            "Sink: out",
            vec![1],
            "REBALANCE",
            vec![sub(50.0, 0.0, sink_rate)],
        ),
    ];
    v[0].is_source = true;
    v[2].is_sink = true;
    JobView {
        vertices: v,
        available_cores: Some(4),
    }
}

/// A map at parallelism 1, busy, its source backpressured: under-provisioned.
fn underprovisioned() -> JobView {
    job(
        sub(100.0, 850.0, 1000.0),
        vec![sub(980.0, 0.0, 1000.0)],
        1000.0,
    )
}

fn always(_: &PlanChange) -> bool {
    true
}

fn apply_of(p: Proposal) -> PlanChange {
    match p {
        Proposal::Apply { change, .. } => change,
        other => panic!("expected a change to apply, got {other:?}"),
    }
}

#[test]
fn raises_an_underprovisioned_map_and_keeps_it_when_both_figures_rise() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    let d = diagnose(&before);
    let change = apply_of(ap.propose(1_000, &d, &before, &always));
    let PlanChange::Parallelism {
        operator,
        parallelism,
        ..
    } = &change
    else {
        panic!("expected a parallelism change, got {change:?}");
    };
    assert_eq!(operator, "heavy-map");
    assert!(*parallelism >= 2);
    ap.applied(1_500, Ok(vec!["plan diff: heavy-map 1 -> 2".into()]));
    // Before the stabilisation ends, nothing is judged.
    assert_eq!(
        ap.judge(2_000, &before),
        Verdict::NotYet { until_ms: 3_500 }
    );
    let after = job(
        sub(300.0, 400.0, 1900.0),
        vec![sub(900.0, 0.0, 950.0), sub(900.0, 0.0, 950.0)],
        1900.0,
    );
    assert_eq!(ap.judge(9_000, &after), Verdict::Keep { decision: 1 });
    let d = &ap.log()[0];
    assert_eq!(d.outcome, Outcome::Kept);
    let (r, t) = d.gains().unwrap();
    assert!((r - 0.9).abs() < 1e-9 && (t - 0.9).abs() < 1e-9, "{r} {t}");
    assert_eq!(d.before.as_ref().unwrap().parallelism, 1);
    assert_eq!(d.after.as_ref().unwrap().parallelism, 2);
    let j = ap.to_json();
    assert_eq!(j["decisions"][0]["outcome"], "kept");
    assert_eq!(j["decisions"][0]["before"]["bottleneck-rate"], 1000.0);
    assert_eq!(j["decisions"][0]["after"]["throughput"], 1900.0);
    assert_eq!(j["decisions"][0]["change"]["kind"], "parallelism");
    // Cooldown: nothing proposed within it.
    assert!(matches!(
        ap.propose(10_000, &diagnose(&after), &after, &always),
        Proposal::Nothing(r) if r.contains("cooling down")
    ));
}

/// The source is the real ceiling: the map looks busy, a second map subtask does not raise the
/// rate, so the change is rolled back to parallelism 1 and never tried again.
#[test]
fn source_ceiling_job_tries_a_parallelism_finds_it_ineffective_and_rolls_back() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    let change = apply_of(ap.propose(0, &diagnose(&before), &before, &always));
    ap.applied(100, Ok(vec![]));
    // The source cannot go faster: 1,030/s instead of 1,000/s, +3 %.
    let after = job(
        sub(990.0, 0.0, 1030.0),
        vec![sub(500.0, 0.0, 515.0), sub(500.0, 0.0, 515.0)],
        1030.0,
    );
    let v = ap.judge(10_000, &after);
    let Verdict::RollBack { decision, to, .. } = v else {
        panic!("expected a roll-back, got {v:?}");
    };
    assert_eq!(decision, 1);
    assert_eq!(
        to,
        Some(PlanChange::Parallelism {
            operator: "heavy-map".into(),
            parallelism: 1,
            ship: ShipStrategy::Rebalance
        })
    );
    ap.rolled_back(1, Ok(vec!["heavy-map back at parallelism 1".into()]));
    let d = &ap.log()[0];
    assert!(
        matches!(&d.outcome, Outcome::RolledBack { reason } if reason.contains("+3 %")),
        "{:?}",
        d.outcome
    );
    assert_eq!(ap.ineffective().len(), 1);
    // After the cooldown the same diagnosis comes back: the change is not retried, and the
    // skip is logged once however often the loop sees it.
    for t in [30_000, 40_000, 50_000] {
        let p = ap.propose(t, &diagnose(&before), &before, &always);
        assert!(
            matches!(&p, Proposal::Nothing(r) if r.starts_with("not retried")),
            "{p:?} for {change:?}"
        );
    }
    assert_eq!(ap.log().len(), 2);
    assert_eq!(ap.log()[1].outcome.name(), "skipped");
}

/// A raise whose added subtask gets no work (one split, one reader) is rolled back even when
/// the rates drift up between the windows (a shared machine gets faster or slower).
#[test]
fn a_raise_whose_added_subtasks_idle_is_rolled_back_whatever_the_rates_did() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    apply_of(ap.propose(0, &diagnose(&before), &before, &always));
    ap.applied(100, Ok(vec![]));
    // +25 % on both figures, but the second map subtask processes nothing.
    let after = job(
        sub(300.0, 400.0, 1250.0),
        vec![sub(980.0, 0.0, 1250.0), sub(0.0, 0.0, 0.0)],
        1250.0,
    );
    let v = ap.judge(10_000, &after);
    assert!(matches!(v, Verdict::RollBack { .. }), "{v:?}");
    let d = &ap.log()[0];
    assert!(
        matches!(&d.outcome, Outcome::RolledBack { reason }
            if reason.contains("did not spread") && reason.contains("1 of 2")),
        "{:?}",
        d.outcome
    );
    assert_eq!(d.after.as_ref().unwrap().working_subtasks, 1);
    assert_eq!(ap.to_json()["decisions"][0]["after"]["working-subtasks"], 1);
}

/// The window after the change when the input ran dry: the source waits for input, nothing
/// is busy, the rates are low.
fn dry() -> JobView {
    let mut j = job(
        sub(50.0, 0.0, 200.0),
        vec![sub(100.0, 0.0, 100.0), sub(100.0, 0.0, 100.0)],
        200.0,
    );
    j.vertices[0].subtasks[0].idle = Some(950.0);
    j
}

#[test]
fn a_window_in_which_the_input_ran_dry_is_measured_again_and_never_marks_the_change_ineffective() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    apply_of(ap.propose(0, &diagnose(&before), &before, &always));
    ap.applied(0, Ok(vec![]));
    for (i, t) in [5_000u64, 10_000].into_iter().enumerate() {
        let v = ap.judge(t, &dry());
        assert_eq!(v, Verdict::NotYet { until_ms: t }, "window {i}");
        assert!(ap.awaiting_judgement());
        assert_eq!(ap.log()[0].outcome.name(), "applied");
    }
    // Still dry after MAX_REMEASURE more windows: rolled back (no gain shown), not remembered.
    assert!(matches!(ap.judge(15_000, &dry()), Verdict::RollBack { .. }));
    assert!(matches!(&ap.log()[0].outcome,
        Outcome::RolledBack { reason } if reason.starts_with("inconclusive")));
    assert!(ap.ineffective().is_empty());
    ap.rolled_back(1, Ok(vec![]));
    // After the cooldown the same bottleneck gets the same change again.
    let p = ap.propose(60_000, &diagnose(&before), &before, &always);
    assert!(matches!(p, Proposal::Apply { decision: 2, .. }), "{p:?}");
}

#[test]
fn a_dry_input_after_a_gain_does_not_delay_keeping_it() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    apply_of(ap.propose(0, &diagnose(&before), &before, &always));
    ap.applied(0, Ok(vec![]));
    // The backlog drained at twice the rate, then the source waits for input.
    let mut after = job(
        sub(100.0, 0.0, 2000.0),
        vec![sub(400.0, 0.0, 1000.0), sub(400.0, 0.0, 1000.0)],
        2000.0,
    );
    after.vertices[0].subtasks[0].idle = Some(900.0);
    assert!(matches!(ap.judge(5_000, &after), Verdict::Keep { .. }));
}

#[test]
fn throughput_must_rise_too() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    apply_of(ap.propose(0, &diagnose(&before), &before, &always));
    ap.applied(0, Ok(vec![]));
    // The map got faster but the sink delivers the same: the bottleneck moved, nothing gained.
    let after = job(
        sub(300.0, 0.0, 1500.0),
        vec![sub(700.0, 0.0, 750.0), sub(700.0, 0.0, 750.0)],
        1000.0,
    );
    assert!(matches!(ap.judge(5_000, &after), Verdict::RollBack { .. }));
    assert!(matches!(&ap.log()[0].outcome,
        Outcome::RolledBack { reason } if reason.contains("throughput")));
}

#[test]
fn parallelism_is_capped_by_slots_and_skipped_at_the_limit() {
    let policy = Policy {
        available_slots: Some(2),
        ..Policy::default()
    };
    let mut ap = Autopilot::new(policy.clone());
    let before = underprovisioned();
    let c = apply_of(ap.propose(0, &diagnose(&before), &before, &always));
    assert!(
        matches!(c, PlanChange::Parallelism { parallelism: 2, .. }),
        "{c:?}"
    );
    // Already at the cap: skipped with the reason.
    let mut ap = Autopilot::new(Policy {
        max_parallelism: Some(1),
        ..policy
    });
    let p = ap.propose(0, &diagnose(&before), &before, &always);
    assert!(
        matches!(&p, Proposal::Nothing(r) if r.contains("cannot raise")),
        "{p:?}"
    );
    assert_eq!(ap.log()[0].outcome.name(), "skipped");
}

#[test]
fn a_change_the_target_cannot_apply_is_advice_once() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    let never = |_: &PlanChange| false;
    let p = ap.propose(0, &diagnose(&before), &before, &never);
    assert!(matches!(p, Proposal::Advice { decision: 1, .. }), "{p:?}");
    let p = ap.propose(60_000, &diagnose(&before), &before, &never);
    assert!(matches!(p, Proposal::Nothing(_)), "{p:?}");
    assert_eq!(ap.log().len(), 1);
}

#[test]
fn a_failed_apply_is_logged_and_not_retried() {
    let mut ap = Autopilot::new(Policy::default());
    let before = underprovisioned();
    apply_of(ap.propose(0, &diagnose(&before), &before, &always));
    ap.applied(10, Err("HTTP 409: job is restarting".into()));
    assert_eq!(ap.log()[0].outcome.name(), "failed");
    assert_eq!(ap.judge(100_000, &before), Verdict::Idle);
    let p = ap.propose(100_000, &diagnose(&before), &before, &always);
    assert!(
        matches!(&p, Proposal::Nothing(r) if r.contains("not retried")),
        "{p:?}"
    );
}

#[test]
fn no_bottleneck_changes_nothing_and_logs_nothing() {
    let mut ap = Autopilot::new(Policy::default());
    let calm = job(sub(100.0, 0.0, 100.0), vec![sub(100.0, 0.0, 100.0)], 100.0);
    assert!(matches!(
        ap.propose(0, &diagnose(&calm), &calm, &always),
        Proposal::Nothing(_)
    ));
    assert!(ap.log().is_empty());
}

proptest! {
    /// Whatever the figures after a change, the verdict keeps it exactly when both rose by the
    /// gain; a roll-back always returns to the old parallelism; the log's figures are the ones
    /// measured; no proposal ever exceeds the cap.
    #[test]
    fn keep_exactly_when_both_figures_rise(
        map_after in 0.0f64..5000.0,
        sink_after in 0.0f64..5000.0,
        cap in 1usize..6,
    ) {
        let mut ap = Autopilot::new(Policy { available_slots: Some(cap), ..Policy::default() });
        let before = underprovisioned();
        let p = ap.propose(0, &diagnose(&before), &before, &always);
        if cap < 2 {
            prop_assert!(matches!(p, Proposal::Nothing(_)));
            return Ok(());
        }
        let change = apply_of(p);
        let PlanChange::Parallelism { parallelism, .. } = change else { panic!() };
        prop_assert!(parallelism <= cap && parallelism >= 2);
        ap.applied(0, Ok(vec![]));
        let after = job(sub(200.0, 0.0, map_after), vec![sub(800.0, 0.0, map_after)], sink_after);
        let keep = map_after >= 1100.0 && sink_after >= 1100.0;
        match ap.judge(10_000, &after) {
            Verdict::Keep { .. } => prop_assert!(keep),
            Verdict::RollBack { to: Some(PlanChange::Parallelism { parallelism: 1, .. }), .. } => {
                prop_assert!(!keep)
            }
            v => prop_assert!(false, "unexpected {:?}", v),
        }
        let a = ap.log()[0].after.clone().unwrap();
        prop_assert_eq!(a.bottleneck_rate, map_after);
        prop_assert_eq!(a.throughput, sink_after);
    }
}
