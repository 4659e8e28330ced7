//! Runs every example's job and checks its output against a model computed without Sluice, so
//! the examples stay true. Each example file is compiled in as a module (its `main` unused).
// Tests, benchmarks and examples may unwrap: a panic there is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

#[path = "../word_count.rs"]
mod word_count;

#[path = "../windows.rs"]
mod windows;

#[path = "../timers.rs"]
mod timers;

#[path = "../backpressure.rs"]
mod backpressure;

#[path = "../sql.rs"]
mod sql;

#[test]
fn word_count_counts_every_word_at_any_parallelism() {
    let text = "To be or not to be\nthat is the question\nTO BE";
    let mut model: BTreeMap<String, i64> = BTreeMap::new();
    for w in text.split_whitespace() {
        *model.entry(w.to_lowercase()).or_default() += 1;
    }
    for p in ["1", "3"] {
        let options =
            sluice::RunOptions::try_from_args(["word_count", "-p", p, "--no-rest", "--quiet"])
                .unwrap();
        let got = word_count::word_count(text, &options).unwrap();
        assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>(), "p={p}");
    }
}

#[test]
fn windows_count_each_users_clicks_per_ten_seconds() {
    let n = 400;
    let mut model: BTreeMap<(u32, i64), u64> = BTreeMap::new();
    for i in 0..n {
        let c = windows::click(i);
        *model
            .entry((c.user, c.ts - c.ts.rem_euclid(10_000)))
            .or_default() += 1;
    }
    let model: Vec<_> = model
        .into_iter()
        .map(|((u, s), n)| (u, s, s + 10_000, n))
        .collect();
    for p in [1, 2] {
        assert_eq!(windows::clicks_per_window(n, p).unwrap(), model, "p={p}");
    }
}

#[test]
fn timers_report_each_silence_and_each_users_last_event() {
    let events = timers::events();
    let mut by_user: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    for (u, t) in &events {
        by_user.entry(*u).or_default().push(*t);
    }
    let mut model = Vec::new();
    for (u, ts) in &by_user {
        for pair in ts.windows(2) {
            if pair[1] > pair[0] + timers::QUIET_MS {
                model.push((*u, pair[0]));
            }
        }
        model.push((*u, *ts.last().unwrap()));
    }
    model.sort();
    assert!(
        model.contains(&(1, 36_000)),
        "the demo input has a silence: {model:?}"
    );
    for p in [1, 2] {
        assert_eq!(
            timers::quiet_users(events.clone(), p).unwrap(),
            model,
            "p={p}"
        );
    }
}

#[test]
fn sql_counts_each_sites_views_per_window_at_any_parallelism() {
    let n = 1_000;
    let mut model: BTreeMap<(i64, String), i64> = BTreeMap::new();
    for i in 0..n {
        let v = sql::view(i);
        // The host by hand: what follows "://" up to the next '/'.
        let after = &v.url[v.url.find("://").unwrap() + 3..];
        let host = after[..after.find('/').unwrap_or(after.len())].to_string();
        *model
            .entry((v.ts - v.ts.rem_euclid(10_000), host))
            .or_default() += 1;
    }
    let model: Vec<_> = model.into_iter().map(|((s, h), c)| (s, h, c)).collect();
    assert_eq!(
        model.len(),
        3 * 11,
        "three sites in each of 11 windows: {model:?}"
    );
    for p in ["1", "2"] {
        let options =
            sluice::RunOptions::try_from_args(["sql", "-p", p, "--no-rest", "--quiet"]).unwrap();
        assert_eq!(sql::views_per_site(n, &options).unwrap(), model, "p={p}");
    }
}

#[test]
fn backpressure_the_doctor_names_the_hot_key() {
    let d = backpressure::diagnose_hot_key_job(Duration::from_secs(60)).unwrap();
    assert_eq!(d["cause"], "key-skew", "{d}");
    assert_eq!(d["hot-keys"][0]["key"], "0", "{d}");
    assert!(
        d["verdict"].as_str().unwrap().contains("sum-per-key"),
        "{d}"
    );
    assert_eq!(d["fix"]["plan-change"]["kind"], "two-phase", "{d}");
}

#[test]
fn the_readme_shows_the_word_count_example_as_it_is() {
    let example = include_str!("../word_count.rs");
    let program = &example[example.find("use std::collections").unwrap()..];
    let readme = include_str!("../../README.md");
    assert!(
        readme.contains(program.trim_end()),
        "README.md's program differs from examples/word_count.rs: copy the file from its first `use`"
    );
}
