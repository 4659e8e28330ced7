//! Field-writing speed: `cargo run --release -p sluice-csv --example field_speed`.
//!
//! Formats Nexmark-like text fields (names, URLs, a few needing quotes) into a reused line,
//! with `push_field` and with the quoter it replaced in the Nexmark canonical rows
//! (`str::contains` over a char set, then `replace`), interleaved, best of 7 rounds.
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

fn old_quoter(s: &str, out: &mut String) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

fn main() {
    let fields: Vec<String> = (0..1024u64)
        .map(|i| match i % 64 {
            0 => format!("with, comma {i}"),
            1 => format!("say \"hi\" {i}"),
            k if k % 2 == 0 => format!("https://www.nexmark.com/item/{i}/bid?channel_id={k}"),
            _ => format!("Peter Walton {i}"),
        })
        .collect();
    let rounds = 2_000;
    let mut line = String::with_capacity(256);
    let mut time = |f: &dyn Fn(&str, &mut String)| {
        let t = Instant::now();
        let mut total = 0usize;
        for _ in 0..rounds {
            for chunk in fields.chunks(4) {
                line.clear();
                for s in chunk {
                    f(s, &mut line);
                    line.push(',');
                }
                total += line.len();
            }
        }
        std::hint::black_box(total);
        t.elapsed().as_secs_f64() * 1e9 / (rounds * fields.len()) as f64
    };
    let (mut best_old, mut best_new) = (f64::MAX, f64::MAX);
    for _ in 0..7 {
        best_old = best_old.min(time(&old_quoter));
        best_new = best_new.min(time(&|s, o| sluice_csv::push_field(o, s)));
    }
    println!("ns per field: old quoter {best_old:.2}, sluice_csv::push_field {best_new:.2}");
}
