//! `sluice-lookup-service [--port P] [--keys N] [--latency 10ms|uniform:A..B|exp:M]
//! [--error-rate R] [--drop-rate R] [--stall-rate R --stall D] [--fail-first N] [--seed S]`:
//! serves `GET /lookup/{key}` on 127.0.0.1 until stopped; prints `listening on http://…` once
//! ready (tests and `scripts/lookup-service.sh` wait for that line).

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (opts, port) = match sluice_lookup_service::ServiceOptions::from_args(&args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    match sluice_lookup_service::Service::start(addr, opts) {
        Ok(s) => {
            println!("listening on {}", s.url());
            let _ = std::io::stdout().flush();
            s.wait();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
