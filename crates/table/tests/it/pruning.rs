//! Nested projection push-down at run time (`sluice_table::demand`): over the official Nexmark
//! plans — whose EXPLAIN keeps Flink's whole `TableSourceScan` — the analysis finds exactly the
//! `ROW` fields the queries read, so the source builds only those. (That the answers do not
//! change is what `sluice nexmark --sql --verify` checks against DuckDB and the hand-written
//! queries, and `flink_answers` against Flink.)

use std::collections::BTreeSet;

use sluice_table::demand::{scan_demands, Demand};
use sluice_table::official::runner_script;
use sluice_table::SqlScript;

use crate::support::{nexmark_vars, queries_dir};

fn demands(query: &str) -> Vec<Demand> {
    let dir = queries_dir().unwrap();
    let text = runner_script(&dir, query).unwrap();
    let script = SqlScript::prepare(&text, &nexmark_vars(1000, 10_000)).unwrap();
    let jobs = script.jobs();
    let all = scan_demands(&jobs[0].plan.roots);
    assert_eq!(
        all.len(),
        1,
        "{query}: one scan (reused where the plan repeats it)"
    );
    all.into_values().next().unwrap()
}

fn fields(f: &[usize]) -> Demand {
    Demand::Fields(f.iter().copied().collect::<BTreeSet<_>>())
}

#[test]
fn the_official_queries_read_only_some_fields_of_the_events() {
    if queries_dir().is_none() {
        return;
    }
    // [event_type, person, auction, bid]; person.dateTime is field 6, auction's 5, bid's 5.
    // q0: bid.auction, bidder, price, dateTime, extra (not channel, url).
    assert_eq!(
        demands("q0"),
        [
            Demand::Whole,
            fields(&[6]),
            fields(&[5]),
            fields(&[0, 1, 2, 5, 6])
        ]
    );
    // q21: auction, bidder, price, channel, url (and dateTime for the watermark).
    assert_eq!(
        demands("q21"),
        [
            Demand::Whole,
            fields(&[6]),
            fields(&[5]),
            fields(&[0, 1, 2, 3, 4, 5])
        ]
    );
    // q5 reads bids twice (the plan reuses the scan): auction and dateTime.
    assert_eq!(
        demands("q5"),
        [Demand::Whole, fields(&[6]), fields(&[5]), fields(&[0, 5])]
    );
}
