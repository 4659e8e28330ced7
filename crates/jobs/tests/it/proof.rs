//! `doctor fix`'s proof on the skew job with a costly sum (`sum_work`, the demo's job): the two-phase
//! fix keeps every final sum, both runs count every record, and the fixed plan's CPU use allows
//! more throughput on 2 cores — the CPU-bound figure, which a loaded machine does not change
//! (a thread's CPU time does not grow while it waits for a core), unlike the wall clock.

use sluice_datastream::fixer::PlanChange;
use sluice_datastream::StreamEnv;
use sluice_jobs::built::BuiltJob;
use sluice_jobs::proof::{calibrate, records_for, CpuUse, FixProof};
use sluice_jobs::scenarios::{self, ScenarioConfig, ScenarioJob};
use sluice_jobs::skew::{self, SkewConfig};

fn costly_skew(records: u64) -> SkewConfig {
    SkewConfig {
        records,
        sum_work: 600,
        ..SkewConfig::default()
    }
}

fn build(cfg: &SkewConfig) -> Result<(StreamEnv, BuiltJob), String> {
    let env = StreamEnv::new();
    let job = skew::build(&env, cfg).map_err(|e| e.to_string())?;
    Ok((env, BuiltJob::Skew(job, None, None)))
}

#[test]
fn the_two_phase_fix_of_a_costly_sum_keeps_the_sums_and_needs_less_of_the_busiest_thread() {
    let cfg = costly_skew(100_000);
    let fix = PlanChange::TwoPhase {
        operator: "sum-per-key".into(),
        buckets: 16,
    };
    let watched = std::sync::Mutex::new(Vec::new());
    let watch = |label: &str, _m| -> Box<dyn FnOnce()> {
        watched.lock().unwrap().push(label.to_string());
        Box::new(|| ())
    };
    let proof = FixProof::run(|| build(&cfg), &fix, &watch).unwrap();
    assert!(proof.identical(), "{}", proof.text(2));
    assert_eq!(*watched.lock().unwrap(), ["original", "fixed"]);
    assert_eq!(
        (proof.original.records, proof.fixed.records),
        (100_000, 100_000)
    );
    let (o, f) = (proof.original.cpu.unwrap(), proof.fixed.cpu.unwrap());
    // The hot subtask does ~90% of the sum's work in the original; the fix spreads it.
    assert!(f.busiest_ms < 0.8 * o.busiest_ms, "{o:?} {f:?}");
    let x = proof.cpu_speedup(2).unwrap();
    assert!(
        x > 1.2,
        "CPU-bound speed-up on 2 cores {x:.2}\n{}",
        proof.text(2)
    );
    let text = proof.text(2);
    assert!(
        text.contains("records compared                  original 100000   fixed 100000"),
        "{text}"
    );
    assert!(
        text.contains("throughput (records/s)") && text.contains("CPU-bound on 2 cores"),
        "{text}"
    );
}

#[test]
fn cpu_bound_throughput_is_the_busiest_thread_or_the_cores_whichever_is_slower() {
    let c = CpuUse {
        total_ms: 3000.0,
        busiest_ms: 1000.0,
    };
    // One core: all 3 s of CPU in a row; two: 1.5 s; four: the busiest thread's 1 s.
    assert_eq!(c.bound(3000, 1), 1000.0);
    assert_eq!(c.bound(3000, 2), 2000.0);
    assert_eq!(c.bound(3000, 4), 3000.0);
}

#[test]
fn records_for_a_proof_are_the_rate_times_the_target_within_bounds() {
    let s = std::time::Duration::from_secs(4);
    assert_eq!(records_for(10_000.0, s), 40_000);
    assert_eq!(records_for(10.0, s), 1_000);
    assert_eq!(records_for(1e12, s), 20_000_000);
    assert_eq!(records_for(f64::NAN, s), 1_000);
}

#[test]
fn calibration_sizes_an_unbounded_scenario_to_a_bounded_run_of_about_the_target() {
    let build = |n: u64| -> Result<(StreamEnv, BuiltJob), String> {
        let env = StreamEnv::new();
        let cfg = ScenarioConfig {
            records: n,
            ..ScenarioConfig::new("under-provisioned")
        };
        let job: ScenarioJob = scenarios::build(&env, &cfg).map_err(|e| e.to_string())?;
        Ok((env, BuiltJob::Scenario(job)))
    };
    let target = std::time::Duration::from_millis(1500);
    let n = calibrate(build, target).unwrap();
    assert!(n >= 1_000, "{n}");
    // The run it sized takes about the target: within 4x either way on a shared machine.
    let (env, job) = build(n).unwrap();
    let t0 = std::time::Instant::now();
    env.execute().unwrap();
    let took = t0.elapsed();
    assert!(
        took > target / 4 && took < target * 4,
        "{n} records took {took:?}"
    );
    drop(job);
}
