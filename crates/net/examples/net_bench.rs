//! `cargo run --release -p sluice-net --example net_bench [records]`: the same figures as
//! `sluice bench net`, without building the CLI.
fn main() {
    let records = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000_000u64);
    match sluice_net::bench::run(records) {
        Ok(cases) => {
            for c in &cases {
                println!(
                    "{:32} {:>14.0} records/s {:>10.1} MB/s",
                    c.name,
                    c.records_per_s(),
                    c.bytes_per_s() / 1e6
                );
            }
        }
        Err(e) => {
            eprintln!("net bench failed: {e}");
            std::process::exit(1);
        }
    }
}
