//! `sluice demo` (not on a terminal): the key lines, exit 0, and what the fix buys.

use std::process::Command;

#[test]
fn demo_finds_the_hot_key_and_proves_the_fix() {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !out.contains('\x1b'),
        "no escape codes off a terminal: {out}"
    );
    assert!(
        out.contains("REST API (Flink-compatible): http://127.0.0.1:"),
        "{out}"
    );
    assert!(out.contains("sum-per-key -> Sink: final-sums"), "{out}");
    assert!(out.contains("Hot key: 0 carries"), "{out}");
    assert!(out.contains("Verdict: key skew at `sum-per-key"), "{out}");
    assert!(out.contains("+ [9] pre-aggregate (salted)"), "{out}");
    assert!(out.contains("output: identical"), "{out}");
    assert!(
        out.contains("The fixed job's output is identical to the original's."),
        "{out}"
    );
    // Both throughputs are reported, measured...
    let measured = figures(&out, "throughput (records/s)");
    assert!(measured.iter().all(|r| *r > 0.0), "{out}");
    // ...and the fixed plan is faster. Judged on the throughput each run's own CPU time allows
    // on this machine's cores (`CPU-bound on N cores`), not on the wall clock: the tests share
    // 2 cores with other builds and tests, and a busy machine takes the cores the fix spreads
    // work over (its measured throughput can then fall to the original's), while a thread's
    // CPU time does not grow as it waits for a core. On 2 cores it comes out 1.6-1.8x; 1.2x
    // leaves room for cache effects of a loaded machine.
    let cpu_line = out
        .lines()
        .find(|l| l.starts_with("CPU-bound on "))
        .unwrap_or_else(|| panic!("no CPU-bound throughputs:\n{out}"));
    let cpu = figures(&out, "CPU-bound on ");
    assert!(cpu[1] > 1.2 * cpu[0], "{cpu_line}\n{out}");
    // What the fix buys is said either way, in plain words.
    assert!(
        out.contains("What the fix buys: ") || out.contains("The fix does NOT pay on this machine"),
        "{out}"
    );
}

/// The original's and the fixed run's records/s on the proof's line starting with `label`
/// (`original 95.0k/s   fixed 108.9k/s   (1.15x)`).
fn figures(out: &str, label: &str) -> [f64; 2] {
    let line = out
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no line `{label}`:\n{out}"));
    let rate = |word: &str| -> f64 {
        let v = line
            .split(word)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|w| w.strip_suffix("/s"))
            .unwrap_or_else(|| panic!("no {word} figure in {line}"));
        let (num, scale) = match v.chars().last() {
            Some('M') => (&v[..v.len() - 1], 1e6),
            Some('k') => (&v[..v.len() - 1], 1e3),
            _ => (v, 1.0),
        };
        num.parse::<f64>().unwrap() * scale
    };
    [rate("original "), rate("fixed ")]
}
