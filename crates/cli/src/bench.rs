//! `sluice bench`: the flags, handed to the harness (`sluice_bench`), which runs each case in a
//! fresh `sluice run --stats-json` process of this binary and prints its table.

use std::process::ExitCode;

use crate::args::BenchArgs;

pub fn bench(a: BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(t) = &a.target {
        return crate::bench_connectors::bench(t);
    }
    let exe = std::env::current_exe()?;
    let c = &a.cases;
    if c.profiler {
        sluice_bench::reference::bench_profiler(c, &exe)?;
    } else if c.debloat {
        sluice_bench::reference::bench_debloat(&exe, c)?;
    } else if c.nexmark && c.sql {
        sluice_bench::nexmark_sql::bench_sql(&exe, c)?;
    } else if c.nexmark {
        sluice_bench::nexmark::bench_queries(&exe, &c.into())?;
    } else if c.autopilot {
        sluice_bench::autopilot::bench_autopilot(&exe, c)?;
    } else {
        sluice_bench::reference::bench_reference(&exe, c)?;
    }
    Ok(ExitCode::SUCCESS)
}
