//! SQL inside a Rust program (Flink's `StreamTableEnvironment`):
//! `cargo run -p sluice-examples --example sql`.
//!
//! A DataStream source of page views (a Rust struct, with event time) becomes a table; SQL
//! counts each site's views per 10-second tumbling window, the site read from the URL by a
//! scalar function written in Rust; the result comes back as a DataStream and ends in a
//! DataStream sink. It is all one job, run by `sluice::run` (so `--checkpoint-interval`, `-p`,
//! the REST API and the doctor apply, with the SQL operators named as Flink names them).

use sluice::table::{DataType, ScalarUdf, Schema, TableEnv, Value};
use sluice::{row, RunOptions, SluiceError, WatermarkStrategy};

/// A page view: who, which URL, and when (milliseconds of event time).
#[derive(Clone, Debug)]
pub struct View {
    pub user: u32,
    pub url: String,
    pub ts: i64,
}

/// The `i`-th view of the demo input: one every 100 ms, out of order by up to 0.6 s.
pub fn view(i: u64) -> View {
    let sites = [
        "https://rust-lang.org",
        "https://flink.apache.org",
        "http://example.com",
    ];
    View {
        user: (i.wrapping_mul(7_919) % 13) as u32,
        url: format!("{}/page/{}", sites[(i * 31 % 7 % 3) as usize], i % 5),
        ts: i as i64 * 100 + (i as i64 * 37 % 7) * 100,
    }
}

/// `site(url)`: the host of a URL (`flink.apache.org`), NULL for something else.
pub fn site_udf() -> ScalarUdf {
    ScalarUdf::new(
        "site",
        vec![DataType::string()],
        DataType::string(),
        |args: &[Value]| {
            let url = args[0].as_str().unwrap_or("");
            let host = url
                .split_once("://")
                .map(|(_, rest)| rest.split('/').next().unwrap_or(""));
            Ok(host.map_or(Value::Null, Value::str))
        },
    )
}

/// One site's views in one window: `(window start ms, site, views)`.
pub type SiteViews = (i64, String, i64);

/// Every window's views per site over the first `n` page views, sorted.
pub fn views_per_site(n: u64, options: &RunOptions) -> Result<Vec<SiteViews>, SluiceError> {
    let env = options.stream_env()?;
    let views = env.generate(n, view).assign_timestamps_and_watermarks(
        WatermarkStrategy::for_bounded_out_of_orderness(1_000, |v: &View| v.ts),
    );
    let tenv = TableEnv::create(&env);
    // The stream as a table: its columns, its record timestamps as `rowtime`, its watermarks.
    let schema = Schema::new()
        .column("user_id", "INT")
        .column("url", "STRING")
        .column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
        .watermark("rowtime", "SOURCE_WATERMARK()");
    let table = tenv.from_data_stream(&views, schema, |v: View| row![v.user, v.url])?;
    tenv.create_temporary_view("page_views", &table)?;
    tenv.create_temporary_function("site", site_udf())?;
    let counts = tenv.sql_query(
        "SELECT window_start, site(url) AS site, COUNT(*) AS views
         FROM TABLE(TUMBLE(TABLE page_views, DESCRIPTOR(rowtime), INTERVAL '10' SECOND))
         GROUP BY window_start, window_end, site(url)",
    )?;
    // The table's rows back as a stream of Rust values, into a DataStream sink.
    let out = tenv
        .to_data_stream(&counts)?
        .map(|r| {
            let start = match r.get(0) {
                Value::Timestamp(t) => t.millis,
                _ => i64::MIN,
            };
            let site = r.get(1).as_str().unwrap_or("?").to_string();
            (start, site, r.get(2).as_i64().unwrap_or(0))
        })
        .collect();
    sluice::run(env, options)?; // REST API, dashboard and doctor while the job runs
    let mut rows = out.handle.take();
    rows.sort();
    Ok(rows)
}

#[allow(dead_code)] // the test compiles this file as a module
fn main() -> Result<(), SluiceError> {
    for (start, site, views) in views_per_site(1_000, &RunOptions::from_args())? {
        println!("[{start:>6} ms, +10 s)  {site:<18} {views} views");
    }
    Ok(())
}
