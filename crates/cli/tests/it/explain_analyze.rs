//! `sluice explain-analyze` (a real process) against a live `sluice sql` job: the plan as
//! `EXPLAIN` prints it, each operator's line with its live figures; a job not planned from SQL
//! is refused with the server's reason.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;

const SQL: &str = "CREATE TABLE datagen (
    event_type int,
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
        state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT,
        reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT,
        category BIGINT, extra VARCHAR>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
        `dateTime` TIMESTAMP(3), extra VARCHAR>,
    `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime`
        WHEN event_type = 1 THEN auction.`dateTime` ELSE bid.`dateTime` END,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'first-event.rate' = '100000', 'next-event.rate' = '100000',
        'events.num' = '100000000000');
CREATE TABLE counts (auction BIGINT, num BIGINT, window_end TIMESTAMP(3))
    WITH ('connector' = 'blackhole');
INSERT INTO counts
SELECT bid.auction, COUNT(*), window_end
FROM TABLE(TUMBLE(TABLE datagen, DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND))
WHERE event_type = 2
GROUP BY bid.auction, window_start, window_end;";

fn explain(url: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["explain-analyze", "--url", url])
        .output()
        .unwrap()
}

#[test]
fn explain_analyze_prints_a_live_sql_jobs_plan_with_figures() {
    let dir = std::env::temp_dir().join(format!("sluice-cli-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("counts.sql");
    std::fs::write(&file, SQL).unwrap();
    let (job, url) = common::start_live(&["sql", "-f", file.to_str().unwrap(), "-p", "2"]);
    // Polled until the window aggregate's line shows records (the job starts on its own time).
    let deadline = Instant::now() + Duration::from_secs(90);
    let out = loop {
        let o = explain(&url);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let moving = out
            .lines()
            .find(|l| l.contains("GlobalWindowAggregate("))
            .is_some_and(|l| l.contains("; in ") && !l.contains("; in 0,"));
        if o.status.success() && moving {
            break out;
        }
        assert!(
            Instant::now() < deadline,
            "no figures in time:\n{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("job "), "{out}");
    assert_eq!(
        lines[1], "== Optimized Physical Plan (EXPLAIN ANALYZE) ==",
        "{out}"
    );
    assert!(lines[2].starts_with("Sink(table=[default_catalog.default_database.counts]"));
    assert!(lines[2].contains(" [busy "), "{out}");
    let exchange = lines.iter().find(|l| l.contains("Exchange(")).unwrap();
    assert!(exchange.contains("[an exchange"), "{out}");
    assert!(
        lines.last().unwrap().contains("TableSourceScan(")
            && lines.last().unwrap().contains("ms/s"),
        "{out}"
    );
    drop(job);

    // A DataStream job has no plan to analyze: the server's 404 reason, and a failure status.
    let (job, url) = common::start_live(&["skew", "--records", "100000000000", "-p", "2"]);
    let o = explain(&url);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("not planned from SQL"), "{err}");
    drop(job);
    let _ = std::fs::remove_dir_all(&dir);
}
