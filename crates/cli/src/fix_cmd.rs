//! `sluice fix <job> [job flags] (--set-parallelism OP=N [--ship S] | --two-phase-at OP[=B]) [--verify]`.

use std::process::ExitCode;

use anyhow::{bail, Context};
use sluice_datastream::fixer::{apply, PlanChange};
use sluice_datastream::plan::{job_graph_dot, job_graph_text, job_plan_json};
use sluice_types::{Id128, ShipStrategy};

use crate::args::{FixArgs, PlanFormatArg};
use crate::run::{build_job, BuiltJob};

fn parse_fix(a: &FixArgs) -> anyhow::Result<PlanChange> {
    match (&a.set_parallelism, &a.two_phase_at) {
        (Some(_), Some(_)) => bail!("give one change: --set-parallelism or --two-phase-at"),
        (None, None) => {
            bail!("no change given: use --set-parallelism OP=N or --two-phase-at OP[=BUCKETS]")
        }
        (Some(sp), None) => {
            let (op, n) = sp
                .rsplit_once('=')
                .with_context(|| format!("--set-parallelism expects OPERATOR=N, got '{sp}'"))?;
            let parallelism: usize = n
                .parse()
                .with_context(|| format!("--set-parallelism: '{n}' is not a parallelism"))?;
            let ship = ShipStrategy::parse(&a.ship)
                .with_context(|| format!("--ship: unknown ship strategy '{}'", a.ship))?;
            Ok(PlanChange::Parallelism {
                operator: op.to_string(),
                parallelism,
                ship,
            })
        }
        (None, Some(tp)) => {
            let (op, buckets) = match tp.rsplit_once('=') {
                Some((op, b)) => (
                    op,
                    b.parse::<u32>()
                        .with_context(|| format!("--two-phase-at: '{b}' is not a bucket count"))?,
                ),
                None => (tp.as_str(), 16),
            };
            Ok(PlanChange::TwoPhase {
                operator: op.to_string(),
                buckets,
            })
        }
    }
}

pub fn fix(a: FixArgs) -> anyhow::Result<ExitCode> {
    let change = parse_fix(&a)?;
    let (env, job, _) = build_job(&a.job)?;
    let diff = apply(&env, &change)?;
    println!("plan diff:\n{diff}");
    let g = env.job_graph()?;
    let plan = match a.format {
        PlanFormatArg::Json => env.execution_plan()?,
        PlanFormatArg::JobGraph => job_plan_json(&g, Id128::hash_of(g.name.as_bytes())).to_string(),
        PlanFormatArg::Text => job_graph_text(&g),
        PlanFormatArg::Dot => job_graph_dot(&g),
    };
    println!("fixed plan:\n{}", plan.trim_end());
    if a.verify {
        let fixed = match job {
            BuiltJob::Skew(j, _, _) => {
                env.execute()?;
                j.final_sums()
            }
            BuiltJob::Passthrough(_) => {
                bail!("--verify compares keyed results; passthrough has none")
            }
            BuiltJob::Scenario(_) | BuiltJob::RealScenario(_) | BuiltJob::Sql(_) => {
                bail!("--verify compares the skew job's results; use `fix skew` for them")
            }
        };
        let (env0, job0, _) = build_job(&a.job)?;
        env0.execute()?;
        let original = match job0 {
            BuiltJob::Skew(j, _, _) => j.final_sums(),
            BuiltJob::Passthrough(_)
            | BuiltJob::Scenario(_)
            | BuiltJob::RealScenario(_)
            | BuiltJob::Sql(_) => {
                bail!("--verify: the job changed kind")
            }
        };
        if original == fixed {
            println!(
                "verified: the fixed job's final sums equal the original's ({} keys)",
                fixed.len()
            );
        } else {
            let differing = original
                .iter()
                .filter(|(k, v)| fixed.get(k) != Some(v))
                .count();
            eprintln!(
                "error: the fixed job's results differ from the original's on {differing} keys"
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}
