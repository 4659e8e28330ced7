//! Word count on the `sluice` crate: `cargo run -p sluice-examples --example word_count`.
//! While it runs, the REST API and dashboard are on 127.0.0.1:8081 (`--no-rest` skips them;
//! `--help` lists every flag: `-p`, `--checkpoint-interval`, `--restart`, ...).

use std::collections::BTreeMap;

use sluice::{RunOptions, SluiceError};

/// Counts the words of `text` in a job configured by `options`: `(word, count)`, by word.
pub fn word_count(text: &str, options: &RunOptions) -> Result<Vec<(String, i64)>, SluiceError> {
    let env = options.stream_env()?; // parallelism, checkpoints, restarts: from the flags
    let lines: Vec<String> = text.lines().map(String::from).collect();
    let counts = env
        .from_vec(lines)
        .flat_map(|line: String| {
            let words = line.split_whitespace().map(|w| (w.to_lowercase(), 1i64));
            words.collect::<Vec<_>>()
        })
        .key_by(|pair: &(String, i64)| pair.0.clone()) // a word's pairs meet on one subtask
        .sum(|pair: &mut (String, i64)| &mut pair.1) // a running count per word
        .collect();
    sluice::run(env, options)?; // REST API, dashboard and doctor while the job runs
    let last: BTreeMap<String, i64> = counts.handle.take().into_iter().collect();
    Ok(last.into_iter().collect()) // each word's last update is its count
}

#[allow(dead_code)] // tests/examples.rs compiles this file as a module
fn main() -> Result<(), SluiceError> {
    let text = "the quick brown fox jumps over the lazy dog\nthe dog sleeps";
    for (word, n) in word_count(text, &RunOptions::from_args())? {
        println!("{word} {n}");
    }
    Ok(())
}
