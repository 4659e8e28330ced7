//! `cargo run --release -p sluice-net --example net_bench [records]`: the same figures as
//! `sluice bench net`, without building the CLI, plus the remote channel's bytes/s as a share
//! of the bare TCP loop's in the same run (the machine's load moves both alike).
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]
fn main() {
    let records = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000_000u64);
    match sluice_net::bench::run(records) {
        Ok(cases) => {
            for c in &cases {
                let cpu = match (c.cpu_ns_per_record(), c.cpu_seconds) {
                    (Some(ns), _) => format!("{ns:6.1} CPU-ns/record"),
                    (None, Some(s)) => format!("{:6.1} CPU-ms", s * 1e3),
                    _ => String::new(),
                };
                println!(
                    "{:32} {:>14.0} records/s {:>10.1} MB/s   {cpu}",
                    c.name,
                    c.records_per_s(),
                    c.bytes_per_s() / 1e6
                );
            }
            if let [_, remote, bare] = &cases[..] {
                println!(
                    "remote / bare TCP bytes/s: {:.1} %",
                    100.0 * remote.bytes_per_s() / bare.bytes_per_s()
                );
            }
        }
        Err(e) => {
            eprintln!("net bench failed: {e}");
            std::process::exit(1);
        }
    }
}
