//! File and collection sources and the built-in sinks, end to end: `read_text_file` at several
//! parallelisms (every line exactly once, in file order across subtasks; CRLF; no final newline;
//! empty files; lines longer than a split; invalid UTF-8 to dead letters; a missing file),
//! `write_text` / `write_csv` at parallelism 1 (one file) and 2 (a directory of parts), CSV
//! quoting, `discard` counts and `print`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{guarded, TempDir, HANG_GUARD};
use sluice_datastream::{GraphError, JobResult, StreamEnv};

/// The lines a text source must produce for `bytes`, computed independently: split after each
/// `\n`, drop the `\n` and a `\r` before it; a final piece without `\n` is a line too. Lines that
/// are not UTF-8 are returned as their byte offsets instead.
fn oracle(bytes: &[u8]) -> (Vec<String>, Vec<u64>) {
    let (mut lines, mut bad) = (Vec::new(), Vec::new());
    let mut start = 0;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|k| start + k + 1)
            .unwrap_or(bytes.len());
        let mut line = &bytes[start..end];
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest.strip_suffix(b"\r").unwrap_or(rest);
        }
        match std::str::from_utf8(line) {
            Ok(s) => lines.push(s.to_string()),
            Err(_) => bad.push(start as u64),
        }
        start = end;
    }
    (lines, bad)
}

/// Reads `path` at parallelism `p` into a chained collect sink: returns the lines per subtask and
/// the job result.
fn read(path: &Path, p: usize) -> Result<(Vec<Vec<String>>, JobResult), GraphError> {
    let path = path.to_path_buf();
    guarded("read_text_file", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(p);
        let sink = env.read_text_file(&path).collect();
        let exec = env.execute()?;
        Ok((sink.handle.take_by_subtask(), exec.result))
    })
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn check_file(path: &Path, bytes: &[u8], parallelisms: std::ops::RangeInclusive<usize>) {
    let (want, bad) = oracle(bytes);
    assert!(bad.is_empty());
    for p in parallelisms {
        let (parts, result) = read(path, p).unwrap();
        assert_eq!(parts.len(), p);
        // Subtasks read contiguous byte ranges in order, so their outputs concatenate to the file.
        let got: Vec<String> = parts.into_iter().flatten().collect();
        assert_eq!(got, want, "parallelism {p}, file {bytes:?}");
        assert_eq!(result.dead_letters, 0);
    }
}

#[test]
fn every_line_exactly_once_at_parallelism_one_to_four() {
    let dir = TempDir::new("lines");
    let long = "x".repeat(700);
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!("line {i}\n"));
    }
    text.push_str("crlf one\r\ncrlf two\r\n\r\n");
    text.push_str(&long);
    text.push('\n');
    text.push_str("ünïcödé ✓ 𝄞\n\n\nlast line without newline");
    let path = write(&dir, "mixed.txt", text.as_bytes());
    // The 700-byte line is longer than a quarter of the file: it spans split boundaries.
    assert!(long.len() as u64 > std::fs::metadata(&path).unwrap().len() / 4);
    check_file(&path, text.as_bytes(), 1..=4);
}

#[test]
fn split_boundaries_on_line_starts_newlines_and_inside_lines() {
    let dir = TempDir::new("splits");
    let cases: &[&[u8]] = &[
        b"a\nb\nc\nd\n",
        b"a\nb\nc\nd",
        b"\n\n\n\n\n",
        b"\r\n\r\n",
        b"only one line",
        b"x",
        b"\n",
        b"ab\ncd\r\nef\n\ngh",
        b"0123456789\n0\n0123456789012345678901234567890\n",
    ];
    for (i, bytes) in cases.iter().enumerate() {
        let path = write(&dir, &format!("case-{i}.txt"), bytes);
        check_file(&path, bytes, 1..=7);
    }
}

#[test]
fn an_empty_file_yields_no_records() {
    let dir = TempDir::new("empty");
    let path = write(&dir, "empty.txt", b"");
    for p in 1..=3 {
        let (parts, result) = read(&path, p).unwrap();
        assert!(parts.iter().all(Vec::is_empty));
        assert_eq!(result.dead_letters, 0);
    }
}

#[test]
fn invalid_utf8_lines_go_to_dead_letters_with_file_and_offset() {
    let dir = TempDir::new("utf8");
    let mut bytes = Vec::new();
    for i in 0..30 {
        match i % 7 {
            3 => bytes.extend_from_slice(b"bad \xff\xfe bytes\n"),
            5 => bytes.extend_from_slice(b"truncated \xe2\x82\r\n"),
            _ => bytes.extend_from_slice(format!("good {i}\n").as_bytes()),
        }
    }
    bytes.extend_from_slice(b"\xc3"); // a final line that is a lone lead byte
    let path = write(&dir, "mixed-utf8.txt", &bytes);
    let (want, bad) = oracle(&bytes);
    assert_eq!(bad.len(), 4 + 4 + 1);
    let shown = path.display().to_string();
    for p in 1..=3 {
        let (parts, result) = read(&path, p).unwrap();
        let got: Vec<String> = parts.into_iter().flatten().collect();
        assert_eq!(got, want, "parallelism {p}");
        assert_eq!(result.dead_letters, bad.len() as u64, "parallelism {p}");
        let mut locations: Vec<String> = result
            .dead_letter_samples
            .iter()
            .map(|d| d.location.clone())
            .collect();
        locations.sort();
        let mut expected: Vec<String> =
            bad.iter().map(|o| format!("{shown} at byte {o}")).collect();
        expected.sort();
        assert_eq!(locations, expected, "parallelism {p}");
        for d in &result.dead_letter_samples {
            // The origin is the reading subtask's display name (the source heads the chain).
            assert!(d.origin.starts_with(&format!("Source: {shown}")), "{d:?}");
            assert!(d.origin.ends_with(&format!("/{p})")), "{d:?}");
            assert!(d.reason.contains("UTF-8"), "{d:?}");
        }
    }
}

#[test]
fn a_missing_input_file_fails_the_job_naming_the_path() {
    let dir = TempDir::new("missing");
    let path = dir.join("does-not-exist.txt");
    let shown = path.display().to_string();
    match read(&path, 2) {
        Err(GraphError::Failed(e)) => {
            assert!(e.message.contains(&shown), "{e:?}");
            assert!(e.to_string().contains(&shown), "{e}");
        }
        other => panic!(
            "expected a failure naming {shown}, got {:?}",
            other.map(|r| r.0)
        ),
    }
    // A directory is not a readable text file either.
    match read(dir.path(), 1) {
        Err(GraphError::Failed(e)) => {
            assert!(
                e.message.contains(&dir.path().display().to_string()),
                "{e:?}"
            )
        }
        other => panic!("expected a failure, got {:?}", other.map(|r| r.0)),
    }
}

fn lines_of(path: &Path) -> Vec<String> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    assert!(text.is_empty() || text.ends_with('\n'), "{text:?}");
    text.lines().map(str::to_string).collect()
}

#[test]
fn write_text_at_parallelism_one_writes_a_single_file() {
    let dir = TempDir::new("write1");
    let out = dir.join("out.txt");
    let o = out.clone();
    guarded("write_text p=1", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        env.generate(1_000, |i| i)
            .write_text(&o, |v: &u64, line: &mut String| {
                line.push_str(&format!("v={v}"))
            });
        env.execute().unwrap();
    });
    assert!(out.is_file());
    let want: Vec<String> = (0..1_000).map(|v| format!("v={v}")).collect();
    assert_eq!(lines_of(&out), want);
}

#[test]
fn write_text_at_parallelism_two_writes_part_files_in_a_directory() {
    let dir = TempDir::new("write2");
    let out = dir.join("nested").join("out");
    let o = out.clone();
    guarded("write_text p=2", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        env.generate(1_001, |i| i)
            .write_text(&o, |v: &u64, line: &mut String| {
                line.push_str(&v.to_string())
            });
        env.execute().unwrap();
    });
    assert!(out.is_dir());
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["part-0", "part-1"]);
    // The sink is chained to the generator: part-k holds subtask k's contiguous share.
    let p0 = lines_of(&out.join("part-0"));
    let p1 = lines_of(&out.join("part-1"));
    assert_eq!(p0, (0..500).map(|v| v.to_string()).collect::<Vec<_>>());
    assert_eq!(p1, (500..1_001).map(|v| v.to_string()).collect::<Vec<_>>());
}

#[test]
fn an_empty_share_still_writes_its_part_file() {
    let dir = TempDir::new("write-empty");
    let out = dir.join("out");
    let o = out.clone();
    guarded("write_text empty share", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        env.generate(1, |i| i)
            .write_text(&o, |v: &u64, line: &mut String| {
                line.push_str(&v.to_string())
            });
        env.execute().unwrap();
    });
    let total: usize = (0..3)
        .map(|k| lines_of(&out.join(format!("part-{k}"))).len())
        .sum();
    assert_eq!(total, 1);
}

#[test]
fn write_csv_quotes_commas_quotes_and_newlines() {
    let dir = TempDir::new("csv1");
    let out = dir.join("out.csv");
    let o = out.clone();
    let rows: Vec<(u32, String)> = vec![
        (1, "plain".into()),
        (2, "with, comma".into()),
        (3, "say \"hi\"".into()),
        (4, "two\nlines".into()),
        (5, String::new()),
        (6, "cr\rhere".into()),
    ];
    let r2 = rows.clone();
    guarded("write_csv p=1", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(1);
        env.from_vec(r2).write_csv(
            &o,
            &["id", "name, full", "quote\"d"],
            |r: &(u32, String)| vec![r.0.to_string(), r.1.clone(), format!("{}\"", r.0)],
        );
        env.execute().unwrap();
    });
    let text = std::fs::read_to_string(&out).unwrap();
    let want = concat!(
        "id,\"name, full\",\"quote\"\"d\"\n",
        "1,plain,\"1\"\"\"\n",
        "2,\"with, comma\",\"2\"\"\"\n",
        "3,\"say \"\"hi\"\"\",\"3\"\"\"\n",
        "4,\"two\nlines\",\"4\"\"\"\n",
        "5,\"\",\"5\"\"\"\n",
        "6,\"cr\rhere\",\"6\"\"\"\n",
    );
    assert_eq!(text, want);
}

#[test]
fn write_csv_at_parallelism_two_writes_a_header_in_every_part() {
    let dir = TempDir::new("csv2");
    let out = dir.join("csv-out");
    let o = out.clone();
    guarded("write_csv p=2", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        env.generate(100, |i| (i, format!("n{i}")))
            .rebalance()
            .write_csv(&o, &["k", "v"], |r: &(u64, String)| {
                vec![r.0.to_string(), r.1.clone()]
            });
        env.execute().unwrap();
    });
    let mut rows = Vec::new();
    for k in 0..2 {
        let lines = lines_of(&out.join(format!("part-{k}")));
        assert_eq!(lines[0], "k,v");
        rows.extend(lines[1..].iter().cloned());
    }
    rows.sort();
    let mut want: Vec<String> = (0..100).map(|i| format!("{i},n{i}")).collect();
    want.sort();
    assert_eq!(rows, want);
}

#[test]
fn discard_counts_every_record_it_drops() {
    let (all, filtered, result) = guarded("discard", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        let src = env.generate(12_345, |i| i);
        let all = src.discard();
        let filtered = src
            .rebalance()
            .filter(|v| v % 5 == 0)
            .set_parallelism(2)
            .discard()
            .set_parallelism(2);
        let exec = env.execute().unwrap();
        (all.handle.count(), filtered.handle.count(), exec.result)
    });
    assert_eq!(all, 12_345);
    assert_eq!(filtered, 12_345_u64.div_ceil(5));
    let sink_vertex = result
        .vertices
        .iter()
        .find(|v| v.name == "Filter -> Sink: Discard")
        .unwrap();
    assert_eq!(sink_vertex.records_in, 12_345);
}

#[test]
fn print_runs_at_parallelism_one_and_two() {
    for p in [1, 2] {
        guarded("print", HANG_GUARD, move || {
            let env = StreamEnv::new();
            env.set_parallelism(p);
            env.generate(3, |i| (i, "printed by a test")).print();
            let exec = env.execute().unwrap();
            assert_eq!(exec.graph.vertices.len(), 1);
        });
    }
}

#[test]
fn text_written_in_parts_reads_back_identically() {
    let dir = TempDir::new("roundtrip");
    let out = dir.join("parts");
    let o = out.clone();
    guarded("write then read", HANG_GUARD, move || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        env.generate(2_000, |i| {
            format!("{i}: {}", "ab".repeat((i % 13) as usize))
        })
        .write_text(&o, |s: &String, line: &mut String| line.push_str(s));
        env.execute().unwrap();
    });
    let mut got = Vec::new();
    for k in 0..3 {
        let (parts, _) = read(&out.join(format!("part-{k}")), 2).unwrap();
        got.extend(parts.into_iter().flatten());
    }
    let want: Vec<String> = (0..2_000)
        .map(|i| format!("{i}: {}", "ab".repeat(i % 13)))
        .collect();
    assert_eq!(got, want);
}
