//! Checking a query whose windows run on processing time (q12): the rows depend on the wall
//! clock, so they are checked for their shape and rolled up to what does not depend on it.
//!
//! Each row of q12 is `(bidder, bid_count, starttime, endtime)`. A row passes when its window
//! is 10 s long and aligned to 10 s, its count is positive, and no bidder has two rows for one
//! window; the rows then sum per bidder into `(bidder, total)`. DuckDB's `count(*) … GROUP BY
//! bidder` over the same events is each bidder's number of bids. As in Flink, the window still
//! open when the input ends is never emitted; the job counts the rows it held
//! ([`sluice_table::LateRecords::open_at_end`]). So each bidder's total must be at most DuckDB's,
//! and all totals plus the rows left open must be exactly DuckDB's bids.

use std::collections::{BTreeMap, BTreeSet};

use sluice_sql::DataType;

use super::{compare, Verdict};

/// The window size of q12's `TUMBLE(…, INTERVAL '10' SECOND)`, in milliseconds.
const WINDOW_MS: i64 = 10_000;

/// q12's rows (canonical cells: `bidder`, `bid_count`, `ts:<millis>`, `ts:<millis>`) as
/// per-bidder totals, and how many windows they span; or the first row that breaks the shape.
pub fn rollup_per_bidder(rows: &[Vec<String>]) -> Result<(Vec<Vec<String>>, usize), String> {
    let mut totals: BTreeMap<i64, i64> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut windows = BTreeSet::new();
    for row in rows {
        let bad = |what: &str| format!("row {row:?}: {what}");
        let [bidder, count, start, end] = row.as_slice() else {
            return Err(bad("4 columns were expected"));
        };
        let int = |cell: &str, what: &str| {
            cell.parse::<i64>()
                .map_err(|_| bad(&format!("{what} is not an integer")))
        };
        let ts = |cell: &str, what: &str| {
            cell.strip_prefix("ts:")
                .and_then(|m| m.parse::<i64>().ok())
                .ok_or_else(|| bad(&format!("{what} is not a timestamp")))
        };
        let (bidder, count) = (int(bidder, "bidder")?, int(count, "bid_count")?);
        let (start, end) = (ts(start, "starttime")?, ts(end, "endtime")?);
        if end - start != WINDOW_MS || start.rem_euclid(WINDOW_MS) != 0 {
            return Err(bad("the window is not 10 s long and aligned to 10 s"));
        }
        if count < 1 {
            return Err(bad("a window with no bids"));
        }
        if !seen.insert((bidder, start)) {
            return Err(bad("a second row for this bidder and window"));
        }
        windows.insert(start);
        *totals.entry(bidder).or_default() += count;
    }
    let rows = totals
        .into_iter()
        .map(|(b, n)| vec![b.to_string(), n.to_string()])
        .collect();
    Ok((rows, windows.len()))
}

/// q12's verdict: Sluice's rows (canonical cells) against DuckDB's answer lines (`bidder`,
/// `bid_count`), with `open` rows left in windows open at the end of `events` events.
pub fn verdict_q12(
    ours: &[Vec<String>],
    duckdb: &[String],
    types: &[DataType],
    open: u64,
    events: usize,
) -> Verdict {
    let fail = |text: String| Verdict {
        oracle: "DuckDB",
        passed: false,
        text: format!("q12: {text}"),
    };
    let (totals, windows) = match rollup_per_bidder(ours) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let mut bids: BTreeMap<String, i64> = BTreeMap::new();
    for line in duckdb {
        match compare::duckdb_row(line, types.get(..2).unwrap_or(types)).as_deref() {
            Ok([bidder, n]) => {
                bids.insert(bidder.clone(), n.parse().unwrap_or(i64::MIN));
            }
            Ok(_) => return fail(format!("DuckDB's row {line} has not 2 columns")),
            Err(e) => return fail(e.clone()),
        }
    }
    let mut emitted = 0;
    for t in &totals {
        let [bidder, n] = t.as_slice() else { continue };
        let n: i64 = n.parse().unwrap_or(i64::MAX);
        emitted += n;
        match bids.get(bidder) {
            Some(&all) if n <= all => {}
            Some(all) => {
                return fail(format!(
                "bidder {bidder} has {n} bids in the windows emitted, DuckDB counts {all} in all"
            ))
            }
            None => return fail(format!("bidder {bidder} has no bids in DuckDB's answer")),
        }
    }
    let all: i64 = bids.values().sum();
    let open = i64::try_from(open).unwrap_or(i64::MAX);
    if emitted.saturating_add(open) != all {
        return fail(format!(
            "the {emitted} bids emitted plus the {open} in windows open at the end of input are \
             not DuckDB's {all} bids"
        ));
    }
    Verdict {
        oracle: "DuckDB",
        passed: true,
        text: format!(
            "verified: q12 (official SQL) agrees with DuckDB's per-bidder bid counts over the same \
             {events} events: {} rows in {windows} processing-time windows (10 s, aligned, a bidder \
             once per window); no bidder above its count; the {emitted} bids emitted plus the \
             {open} in the window still open at the end of input (not emitted, as in Flink) are \
             DuckDB's {all}; rows dropped as late: 0",
            ours.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(b: i64, n: i64, start: i64) -> Vec<String> {
        vec![
            b.to_string(),
            n.to_string(),
            format!("ts:{start}"),
            format!("ts:{}", start + WINDOW_MS),
        ]
    }

    #[test]
    fn rows_of_two_windows_sum_per_bidder() {
        let t = 1_700_000_000_000;
        let (rows, windows) =
            rollup_per_bidder(&[row(7, 2, t), row(7, 3, t + WINDOW_MS), row(9, 1, t)]).unwrap();
        assert_eq!(rows, vec![vec!["7", "5"], vec!["9", "1"]]);
        assert_eq!(windows, 2);
    }

    #[test]
    fn a_misaligned_window_or_a_repeated_bidder_is_named() {
        let t = 1_700_000_000_000;
        let e = rollup_per_bidder(&[row(7, 2, t + 1)]).unwrap_err();
        assert!(e.contains("aligned"), "{e}");
        let e = rollup_per_bidder(&[row(7, 2, t), row(7, 1, t)]).unwrap_err();
        assert!(e.contains("second row"), "{e}");
        let e = rollup_per_bidder(&[row(7, 0, t)]).unwrap_err();
        assert!(e.contains("no bids"), "{e}");
    }

    #[test]
    fn emitted_and_open_bids_must_add_up_to_duckdbs() {
        let t = 1_700_000_000_000;
        let types = vec![DataType::bigint(); 2];
        let ours = [row(7, 2, t), row(9, 1, t)];
        let duckdb = ["[7, 3]".to_string(), "[9, 1]".to_string()];
        let v = verdict_q12(&ours, &duckdb, &types, 1, 10);
        assert!(v.passed, "{}", v.text);
        assert!(
            v.text.contains("the 3 bids emitted plus the 1"),
            "{}",
            v.text
        );
        let v = verdict_q12(&ours, &duckdb, &types, 0, 10);
        assert!(
            !v.passed && v.text.contains("not DuckDB's 4 bids"),
            "{}",
            v.text
        );
        let v = verdict_q12(&[row(7, 4, t)], &duckdb, &types, 0, 10);
        assert!(
            !v.passed && v.text.contains("bidder 7 has 4 bids"),
            "{}",
            v.text
        );
    }
}
