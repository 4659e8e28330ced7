//! Properties of Flink-exact placement: key groups, round robins, pointwise wiring, and the
//! real Flink 2.3 placements in the fixture.

use std::collections::BTreeSet;

use proptest::prelude::*;
use sluice_plan::partition::{
    assign_key_to_subtask, assign_to_key_group, check_max_parallelism, default_max_parallelism,
    key_group_line, key_group_range_for_subtask, key_group_to_subtask, pointwise_sources,
    pointwise_targets, JavaHash, KeyType, RoundRobin, SplitMix64, UPPER_BOUND_MAX_PARALLELISM,
};

/// `(parallelism, max_parallelism)` with `1 <= p <= M <= 32768`, biased towards small values
/// (where off-by-one errors in the range formulas show up) but reaching the upper bound.
fn parallelisms() -> impl Strategy<Value = (u32, u32)> {
    prop_oneof![
        (1u32..=300).prop_flat_map(|m| (1..=m, Just(m))),
        (1u32..=UPPER_BOUND_MAX_PARALLELISM).prop_flat_map(|m| (1..=m, Just(m))),
        (1u32..=UPPER_BOUND_MAX_PARALLELISM).prop_map(|m| (m, m)),
    ]
}

fn check_key_placement<K: JavaHash + ?Sized>(key: &K, p: u32, m: u32) -> Result<(), TestCaseError> {
    let subtask = assign_key_to_subtask(key, m, p);
    prop_assert!(
        subtask < p,
        "subtask {} not below parallelism {}",
        subtask,
        p
    );
    prop_assert_eq!(
        assign_key_to_subtask(key, m, p),
        subtask,
        "placement not deterministic"
    );
    let key_group = assign_to_key_group(key.java_hash_code(), m);
    prop_assert!(key_group < m);
    prop_assert_eq!(key_group_to_subtask(m, p, key_group), subtask);
    let range = key_group_range_for_subtask(m, p, subtask);
    prop_assert!(
        range.contains(key_group),
        "key group {} outside subtask {}'s range {:?}",
        key_group,
        subtask,
        range
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn i64_keys_land_on_one_subtask_owning_their_key_group(key in any::<i64>(), (p, m) in parallelisms()) {
        check_key_placement(&key, p, m)?;
    }

    #[test]
    fn string_keys_land_on_one_subtask_owning_their_key_group(key in any::<String>(), (p, m) in parallelisms()) {
        check_key_placement(key.as_str(), p, m)?;
        check_key_placement(&key, p, m)?;
        prop_assert_eq!(assign_key_to_subtask(key.as_str(), m, p), assign_key_to_subtask(&key, m, p));
    }

    #[test]
    fn string_hash_is_polynomial_over_utf16(a in any::<String>(), b in any::<String>()) {
        // Java: (a + b).hashCode() == a.hashCode() * 31^len16(b) + b.hashCode(), wrapping.
        let shift = b.encode_utf16().fold(1i32, |acc, _| acc.wrapping_mul(31));
        let joined = format!("{a}{b}");
        prop_assert_eq!(
            joined.java_hash_code(),
            a.java_hash_code().wrapping_mul(shift).wrapping_add(b.java_hash_code())
        );
    }

    #[test]
    fn single_char_string_hashes_to_its_utf16_units(c in any::<char>()) {
        // Together with the polynomial property above this pins String.hashCode down completely.
        let cp = c as u32;
        let want = if cp <= 0xFFFF {
            cp as i32
        } else {
            let (hi, lo) = (0xD800 + ((cp - 0x1_0000) >> 10), 0xDC00 + ((cp - 0x1_0000) & 0x3FF));
            (hi * 31 + lo) as i32
        };
        prop_assert_eq!(c.to_string().java_hash_code(), want);
    }

    #[test]
    fn long_hash_xors_its_halves(hi in any::<u32>(), lo in any::<u32>()) {
        let v = ((u64::from(hi) << 32) | u64::from(lo)) as i64;
        prop_assert_eq!(v.java_hash_code(), (hi ^ lo) as i32);
        prop_assert_eq!((v as u64).java_hash_code(), (hi ^ lo) as i32);
    }

    #[test]
    fn string_key_lines_round_trip_through_csv(key in any::<String>(), (p, m) in parallelisms()) {
        let line = key_group_line(KeyType::String, &key, p, m).unwrap();
        let kg = assign_to_key_group(key.java_hash_code(), m);
        let subtask = key_group_to_subtask(m, p, kg);
        prop_assert_eq!(parse_csv(&line), vec![vec![key.clone(), kg.to_string(), subtask.to_string()]]);
    }

    #[test]
    fn subtask_ranges_partition_all_key_groups((p, m) in parallelisms()) {
        prop_assert!(check_max_parallelism(p, m).is_ok());
        let mut next_expected = 0u32;
        let (mut smallest, mut largest) = (u32::MAX, 0u32);
        for subtask in 0..p {
            let range = key_group_range_for_subtask(m, p, subtask);
            prop_assert_eq!(range.start, next_expected, "gap or overlap before subtask {}", subtask);
            prop_assert!(!range.is_empty(), "subtask {} owns no key group", subtask);
            for kg in range.iter() {
                prop_assert_eq!(key_group_to_subtask(m, p, kg), subtask);
            }
            smallest = smallest.min(range.len());
            largest = largest.max(range.len());
            next_expected = range.end + 1;
        }
        prop_assert_eq!(next_expected, m, "ranges do not end at max parallelism");
        prop_assert!(largest - smallest <= 1, "uneven ranges: {}..={}", smallest, largest);
    }

    #[test]
    fn rebalance_spreads_evenly(n in 1usize..=64, seed in any::<u64>(), records in 0usize..5_000) {
        let mut rr = RoundRobin::rebalance(n, &mut SplitMix64::new(seed));
        let mut counts = vec![0usize; n];
        let mut previous: Option<usize> = None;
        for _ in 0..records {
            let c = rr.next_channel();
            prop_assert!(c < n);
            if let Some(prev) = previous {
                prop_assert_eq!(c, (prev + 1) % n, "not a strict round robin");
            }
            previous = Some(c);
            counts[c] += 1;
        }
        let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        prop_assert!(hi - lo <= 1, "counts {:?}", counts);
        prop_assert_eq!(counts.iter().sum::<usize>(), records);
    }

    #[test]
    fn rescale_spreads_evenly_from_local_channel_zero(n in 1usize..=64, records in 1usize..5_000) {
        let mut rr = RoundRobin::rescale(n);
        let mut counts = vec![0usize; n];
        for k in 0..records {
            let c = rr.next_channel();
            if k == 0 {
                prop_assert_eq!(c, 0, "first record must go to local channel 0");
            }
            counts[c] += 1;
        }
        for (channel, &count) in counts.iter().enumerate() {
            let want = records / n + usize::from(channel < records % n);
            prop_assert_eq!(count, want, "channel {} of {}", channel, n);
        }
    }

    #[test]
    fn key_group_line_agrees_with_assignment(key in any::<i64>(), (p, m) in parallelisms()) {
        let kg = assign_to_key_group(key.java_hash_code(), m);
        let want = format!("{key},{kg},{}", key_group_to_subtask(m, p, kg));
        prop_assert_eq!(key_group_line(KeyType::I64, &key.to_string(), p, m).unwrap(), want);
    }
}

/// docs/src/reference/flink-formats.md#pointwise-wiring, written as the set each side is *defined*
/// by; the other side is derived by
/// brute-force inversion so that the library's closed forms are checked, not repeated.
#[allow(clippy::manual_div_ceil)] // kept in the reference's literal form on purpose
fn spec_targets_and_sources(s: usize, t: usize) -> (Vec<BTreeSet<usize>>, Vec<BTreeSet<usize>>) {
    let mut targets = vec![BTreeSet::new(); s];
    let mut sources = vec![BTreeSet::new(); t];
    let mut link = |i: usize, j: usize| {
        targets[i].insert(j);
        sources[j].insert(i);
    };
    if s == t {
        (0..s).for_each(|i| link(i, i));
    } else if s > t {
        for j in 0..t {
            (j * s / t..(j + 1) * s / t).for_each(|i| link(i, j));
        }
    } else {
        for i in 0..s {
            ((i * t + s - 1) / s..((i + 1) * t + s - 1) / s).for_each(|j| link(i, j));
        }
    }
    (targets, sources)
}

#[test]
fn default_max_parallelism_is_smallest_fitting_power_of_two() {
    for p in 1..=40_000u32 {
        let m = default_max_parallelism(p);
        let wanted = p + p / 2;
        assert!(
            m.is_power_of_two() && (128..=32_768).contains(&m),
            "p={p} m={m}"
        );
        if m < 32_768 {
            assert!(m >= wanted, "p={p} m={m} is too small");
        }
        if m > 128 {
            assert!(m / 2 < wanted, "p={p} m={m} is not the smallest");
        }
        if p <= 32_768 {
            assert!(check_max_parallelism(p, m).is_ok(), "p={p} m={m}");
        }
    }
}

#[test]
fn pointwise_wiring_matches_spec_for_all_small_parallelisms() {
    for s in 1..=16 {
        for t in 1..=16 {
            let (spec_targets, spec_sources) = spec_targets_and_sources(s, t);
            assert_eq!(spec_targets.len(), s);
            for (i, want) in spec_targets.iter().enumerate() {
                let got: BTreeSet<_> = pointwise_targets(s, t, i).collect();
                assert!(!got.is_empty(), "{s}->{t}: upstream {i} has no target");
                assert_eq!(&got, want, "{s}->{t}: targets of upstream {i}");
                if s >= t {
                    assert_eq!(got.len(), 1, "{s}->{t}: upstream {i} must have one target");
                }
            }
            assert_eq!(spec_sources.len(), t);
            for (j, want) in spec_sources.iter().enumerate() {
                let got: BTreeSet<_> = pointwise_sources(s, t, j).collect();
                assert!(!got.is_empty(), "{s}->{t}: downstream {j} has no source");
                assert_eq!(&got, want, "{s}->{t}: sources of downstream {j}");
                if s <= t {
                    assert_eq!(
                        got.len(),
                        1,
                        "{s}->{t}: downstream {j} must have one source"
                    );
                }
            }
            for i in 0..s {
                for j in 0..t {
                    assert_eq!(
                        pointwise_targets(s, t, i).contains(&j),
                        pointwise_sources(s, t, j).contains(&i),
                        "{s}->{t}: targets/sources disagree on {i}->{j}"
                    );
                }
            }
        }
    }
}

/// RFC 4180 parsing: quoted fields with `""` escapes and embedded separators/newlines, and either
/// LF or CRLF record ends (the fixture was written with CRLF).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut in_quotes = false;
    let mut field_started = false;
    while let Some(c) = chars.next() {
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => in_quotes = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                in_quotes = true;
                field_started = true;
            }
            ',' => {
                record.push(std::mem::take(&mut field));
                field_started = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                if field_started || !field.is_empty() || !record.is_empty() {
                    record.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut record));
                }
                field_started = false;
            }
            _ => {
                field.push(c);
                field_started = true;
            }
        }
    }
    assert!(!in_quotes, "unterminated quoted field");
    if field_started || !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

#[test]
fn csv_parser_handles_quotes_and_line_ends() {
    let rows = parse_csv("a,b\r\n\"x,\"\"y\"\"\n z\",\r\n\"\",1\n");
    assert_eq!(
        rows,
        vec![
            vec!["a".to_string(), "b".to_string()],
            vec!["x,\"y\"\n z".to_string(), String::new()],
            vec![String::new(), "1".to_string()],
        ]
    );
}

const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/flink/flink-keygroups-sample.csv"
));

#[test]
fn flink_sample_vectors_match() {
    let rows = parse_csv(FIXTURE);
    assert_eq!(
        rows[0],
        [
            "kind",
            "key",
            "parallelism",
            "max_parallelism",
            "key_group",
            "subtask"
        ]
    );
    let mut kinds = BTreeSet::new();
    for (line, row) in rows.iter().enumerate().skip(1) {
        assert_eq!(row.len(), 6, "fixture row {line}: {row:?}");
        let num = |s: &str| -> u32 { s.parse().unwrap_or_else(|e| panic!("row {line}: {e}")) };
        let (p, m) = (num(&row[2]), num(&row[3]));
        let (want_kg, want_subtask) = (num(&row[4]), num(&row[5]));
        let hash = match row[0].as_str() {
            "i64" => row[1].parse::<i64>().unwrap().java_hash_code(),
            "string" => row[1].java_hash_code(),
            other => panic!("row {line}: unknown kind {other:?}"),
        };
        kinds.insert(row[0].clone());
        let kg = assign_to_key_group(hash, m);
        assert_eq!(kg, want_kg, "row {line} {row:?}: key group");
        assert_eq!(
            key_group_to_subtask(m, p, kg),
            want_subtask,
            "row {line} {row:?}: subtask"
        );
        let kind = if row[0] == "i64" {
            KeyType::I64
        } else {
            KeyType::String
        };
        let subtask = match kind {
            KeyType::I64 => assign_key_to_subtask(&row[1].parse::<i64>().unwrap(), m, p),
            KeyType::String => assign_key_to_subtask(row[1].as_str(), m, p),
        };
        assert_eq!(
            subtask, want_subtask,
            "row {line} {row:?}: assign_key_to_subtask"
        );
        assert!(key_group_range_for_subtask(m, p, subtask).contains(kg));
        let csv_line = key_group_line(kind, &row[1], p, m).unwrap();
        assert_eq!(
            parse_csv(&csv_line),
            vec![vec![
                row[1].clone(),
                want_kg.to_string(),
                want_subtask.to_string()
            ]],
            "row {line}: key_group_line"
        );
    }
    // Guard against the fixture silently shrinking to nothing useful.
    assert!(rows.len() > 100, "fixture has only {} rows", rows.len());
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), ["i64", "string"]);
}
