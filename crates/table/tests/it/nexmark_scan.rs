//! The official Nexmark DDL gives a `datagen` table whose scan produces sluice-nexmark's events,
//! with `dateTime` as event time: an event-time window downstream closes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_datastream::{StreamEnv, WindowAssigner};
use sluice_nexmark::{Event, GeneratorConfig, NexmarkGenerator};
use sluice_sql::{BindContext, FunctionRegistry, LogicalType, Row, TimestampKind, Value};
use sluice_table::{RowErrors, ScanSettings, SqlKey, TableScan};
use sluice_types::{Collector, CollectorExt, Operator, OperatorError, Watermark};

use crate::support::{nexmark_session, queries_dir, table};

type BidTuple = (i64, i64, i64, String, String, i64, String);

fn bid_of_row(r: &Row) -> Option<BidTuple> {
    if r.get(0) != &Value::Int(2) {
        return None;
    }
    let Value::Row(b) = r.get(3) else {
        panic!("bid is a ROW: {r:?}")
    };
    assert!(
        r.get(1).is_null() && r.get(2).is_null(),
        "person and auction are NULL for a bid"
    );
    let int = |v: &Value| v.as_i64().unwrap();
    let text = |v: &Value| v.as_str().unwrap().to_string();
    let Value::Timestamp(t) = &b[5] else { panic!() };
    assert_eq!(r.get(4), &b[5], "dateTime is the bid's");
    Some((
        int(&b[0]),
        int(&b[1]),
        int(&b[2]),
        text(&b[3]),
        text(&b[4]),
        t.millis,
        text(&b[6]),
    ))
}

#[test]
fn the_official_datagen_table_scans_to_the_generators_events() {
    let Some(dir) = queries_dir() else { return };
    let (events, tps) = (5_000, 10_000);
    let s = nexmark_session(&dir, events, tps);
    let def = table(&s, "datagen");
    let functions = FunctionRegistry::builtins();
    let scan =
        TableScan::new(&def, &BindContext::new(&functions), ScanSettings::default()).unwrap();
    assert_eq!(
        scan.names(),
        ["event_type", "person", "auction", "bid", "dateTime"]
    );
    assert_eq!(scan.rowtime, Some(4));
    assert!(matches!(
        scan.types()[4].logical,
        LogicalType::Timestamp {
            precision: 3,
            kind: TimestampKind::Rowtime
        }
    ));

    let env = StreamEnv::new();
    env.set_parallelism(2);
    let errors = RowErrors::new();
    let rows = scan.stream(&env, &errors).collect();
    env.execute().unwrap();
    let rows = rows.handle.take();
    assert_eq!(rows.len() as u64, events);
    let mut got: Vec<BidTuple> = rows.iter().filter_map(bid_of_row).collect();
    got.sort();

    let generator = NexmarkGenerator::new(GeneratorConfig {
        events,
        rate: tps,
        ..GeneratorConfig::default()
    })
    .unwrap();
    let mut want: Vec<BidTuple> = generator
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Bid(b) => Some((
                b.auction,
                b.bidder,
                b.price,
                b.channel.to_string(),
                b.url.to_string(),
                b.date_time,
                b.extra.to_string(),
            )),
            _ => None,
        })
        .collect();
    want.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert_eq!(errors.count(), 0);
}

/// Passes rows on and records the watermarks it sees, with the largest `dateTime` seen before each.
struct WatermarkProbe {
    seen: Arc<Mutex<Vec<(i64, i64)>>>,
    max_ts: i64,
}

impl Operator<Row, Row> for WatermarkProbe {
    fn process(&mut self, r: Row, out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
        if let Value::Timestamp(t) = r.get(4) {
            self.max_ts = self.max_ts.max(t.millis);
        }
        out.collect(r)
    }

    fn on_watermark(
        &mut self,
        w: Watermark,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.seen.lock().unwrap().push((w.0, self.max_ts));
        out.emit_watermark(w)
    }
}

#[test]
fn watermarks_advance_as_flink_sql_computes_them_and_a_window_closes() {
    let Some(dir) = queries_dir() else { return };
    // 200 000 events at 10 000/s span 20 s of event time.
    let (events, tps) = (200_000, 10_000);
    let s = nexmark_session(&dir, events, tps);
    let def = table(&s, "datagen");
    let functions = FunctionRegistry::builtins();
    let settings = ScanSettings {
        watermark_interval: Duration::ZERO,
        idle_timeout: None,
    };
    let scan = TableScan::new(&def, &BindContext::new(&functions), settings).unwrap();
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let probe_seen = seen.clone();
    let rows = scan
        .stream(&env, &RowErrors::new())
        .transform("probe", move |_| WatermarkProbe {
            seen: probe_seen.clone(),
            max_ts: i64::MIN,
        });
    let rows = sluice_table::scan::with_rowtime(rows, 4);
    let windows = rows
        .key_by(|r: &Row| SqlKey(r.get(0).clone()))
        .window(WindowAssigner::tumbling(10_000).unwrap())
        .count()
        .collect();
    env.execute().unwrap();
    let results = windows.handle.take();
    let total: u64 = results.iter().map(|w| w.value).sum();
    assert_eq!(total, events);
    let starts: std::collections::BTreeSet<i64> = results.iter().map(|w| w.window.start).collect();
    assert!(starts.len() >= 2, "windows: {starts:?}");

    let seen = seen.lock().unwrap().clone();
    let progress: Vec<(i64, i64)> = seen
        .iter()
        .copied()
        .filter(|(w, _)| *w != i64::MAX)
        .collect();
    assert!(
        progress.len() >= 2,
        "watermarks before the end of input: {seen:?}"
    );
    for (w, max_ts) in &progress {
        // Flink SQL's watermark: max(dateTime - 4 s) over the rows before it, exactly.
        assert_eq!(*w, max_ts - 4_000, "{seen:?}");
    }
    assert!(
        progress.windows(2).all(|p| p[0].0 < p[1].0),
        "rising: {progress:?}"
    );
    assert_eq!(seen.last().map(|s| s.0), Some(i64::MAX));
}
