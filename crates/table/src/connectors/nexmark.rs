//! `'connector' = 'nexmark'`: the Nexmark generator (sluice-nexmark) as a table, with the
//! official `NexmarkSourceOptions` names, producing the official `datagen` table's rows:
//! `event_type INT`, `person ROW<…>`, `auction ROW<…>`, `bid ROW<…>`, the rows of the other two
//! kinds NULL. Columns (and ROW fields) are matched by name and type-checked, so a DDL may
//! declare them in any order or leave some out.
//!
//! Options (Flink's defaults): `first-event.rate` / `next-event.rate` (10000; events per second
//! of event time: they space the timestamps; the two must be equal, Sluice's generator has one
//! rate), `events.num` (0 = unbounded), `person.proportion` (1), `auction.proportion` (3),
//! `bid.proportion` (46), `bid.hot-ratio.auctions` (2), `bid.hot-ratio.bidders` (4),
//! `auction.hot-ratio.sellers` (4), `person.avg-size` (200b), `auction.avg-size` (500b),
//! `bid.avg-size` (100b); `rate.shape`, `rate.period`, `rate.limited` (only `false`),
//! `keep-alive` (only `false`), `stop-at` (only `-1`) and `max-emit-speed` (only `true`) are
//! accepted at the values Sluice runs. Sluice's own: `sluice.base-time` (the first event's time,
//! ms since the epoch; default 2015-07-15T00:00:00Z, so runs are reproducible, where Flink's
//! generator starts at the wall clock) and `sluice.flink-compat` (Flink's id and timestamp
//! numbering, default `false`: the numbering of Sluice's hand-written Nexmark queries).
//!
//! In a SQL job the rows hold only what the operators above read ([`NexmarkSpec::pruned`]: the
//! rest NULL) and, when the translator flattens the scan ([`crate::layout`]), a `ROW` read by
//! field only is one column per read field ([`NexmarkSpec::flattened`]); rows are allocated
//! once, with room for the columns the operators above add. The scan's chain up to its first
//! `Calc` may run in the source itself ([`NexmarkSpec::fused_stream`], [`crate::fused`]).

#[path = "nexmark_fused.rs"]
mod fused;

use std::sync::Arc;

use sluice_datastream::{DataStream, OperatorError, StreamEnv};
use sluice_nexmark::{Event, GeneratorConfig, NexmarkGenerator, Split};
use sluice_runtime::sources::{SourceContext, SourceFunction, SOURCE_BATCH};
use sluice_sql::{DataType, LogicalType, Result, Row, SqlError, Timestamp, Value};
use sluice_types::Collector;

use crate::demand::Demand;
use crate::layout::{Col, Layout};
use crate::options::{parse_memory_size, Options};
use crate::schema::PhysicalSchema;

const KNOWN: &[&str] = &[
    "connector",
    "first-event.rate",
    "next-event.rate",
    "events.num",
    "person.proportion",
    "auction.proportion",
    "bid.proportion",
    "bid.hot-ratio.auctions",
    "bid.hot-ratio.bidders",
    "auction.hot-ratio.sellers",
    "person.avg-size",
    "auction.avg-size",
    "bid.avg-size",
    "rate.shape",
    "rate.period",
    "rate.limited",
    "keep-alive",
    "stop-at",
    "max-emit-speed",
    "sluice.base-time",
    "sluice.flink-compat",
];

/// The official table's person fields.
const PERSON: &[&str] = &[
    "id",
    "name",
    "emailAddress",
    "creditCard",
    "city",
    "state",
    "dateTime",
    "extra",
];
/// The official table's auction fields.
const AUCTION: &[&str] = &[
    "id",
    "itemName",
    "description",
    "initialBid",
    "reserve",
    "dateTime",
    "expires",
    "seller",
    "category",
    "extra",
];
/// The official table's bid fields.
const BID: &[&str] = &[
    "auction", "bidder", "price", "channel", "url", "dateTime", "extra",
];

/// The type of an official field (by its name; all BIGINT, VARCHAR or TIMESTAMP(3)).
fn field_type(name: &str) -> DataType {
    match name {
        "dateTime" | "expires" => DataType::timestamp(3),
        "name" | "emailAddress" | "creditCard" | "city" | "state" | "extra" | "itemName"
        | "description" | "channel" | "url" => DataType::string(),
        _ => DataType::bigint(),
    }
}

/// In a `ROW` pick, a field no operator reads: built as NULL (see [`NexmarkSpec::pruned`]).
const UNREAD: usize = usize::MAX;

/// What one column of the table takes from an event.
#[derive(Clone, Debug, PartialEq)]
enum Pick {
    /// A column no operator reads: NULL.
    Unread,
    /// `event_type`.
    EventType,
    /// `person`, with the official field index of each of the declared fields.
    Person(Vec<usize>),
    /// `auction`, likewise.
    Auction(Vec<usize>),
    /// `bid`, likewise.
    Bid(Vec<usize>),
    /// One field of `person` (its official index) as a column of its own: a flat scan
    /// ([`crate::layout`]).
    PersonField(usize),
    /// One field of `auction`, likewise.
    AuctionField(usize),
    /// One field of `bid`, likewise.
    BidField(usize),
}

/// Whether a declared type holds what the official type produces (lengths and nullability
/// aside).
fn compatible(declared: &LogicalType, official: &LogicalType) -> bool {
    use LogicalType as L;
    match (declared, official) {
        (L::Varchar { .. } | L::Char { .. }, L::Varchar { .. }) => true,
        (L::Timestamp { precision: a, .. }, L::Timestamp { precision: b, .. }) => a == b,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// The field picks of a declared `ROW` column against the official field names.
fn row_picks(schema: &PhysicalSchema, column: usize, official: &[&str]) -> Result<Vec<usize>> {
    let name = &schema.names[column];
    let LogicalType::Row(fields) = &schema.types[column].logical else {
        return Err(SqlError::validation(
            None,
            format!(
                "column '{name}' of nexmark table '{}' must be a ROW of the official fields, not {}",
                schema.table, schema.types[column]
            ),
        ));
    };
    fields
        .iter()
        .map(|f| {
            let i = official.iter().position(|o| *o == f.name).ok_or_else(|| {
                SqlError::UnknownName {
                    pos: None,
                    kind: "Nexmark field",
                    name: format!("{name}.{}", f.name),
                    nearest_names: sluice_sql::catalog::nearest(&f.name, official.iter().copied()),
                }
            })?;
            let want = field_type(official[i]);
            if !compatible(&f.ty.logical, &want.logical) {
                return Err(SqlError::validation(
                    None,
                    format!(
                        "field '{name}.{}' of nexmark table '{}' is declared {} but the generator produces {}",
                        f.name, schema.table, f.ty, want
                    ),
                ));
            }
            Ok(i)
        })
        .collect()
}

/// A `nexmark` table's generator configuration and column picks.
#[derive(Clone, Debug)]
pub struct NexmarkSpec {
    /// The generator's configuration, from the options.
    pub config: GeneratorConfig,
    /// What each column of the rows takes from an event.
    picks: Vec<Pick>,
    /// Room each row is allocated with (at least one per column): a flat scan's rows are
    /// widened by the computed columns above without reallocating.
    capacity: usize,
}

impl NexmarkSpec {
    /// Reads and checks the options and the table's columns.
    pub fn new(options: &Options, schema: &PhysicalSchema) -> Result<NexmarkSpec> {
        options.check_known("nexmark", KNOWN)?;
        let count = "a whole number";
        let mut config = GeneratorConfig::default();
        let first: u64 = options.parse("first-event.rate", count)?.unwrap_or(10_000);
        let next: u64 = options.parse("next-event.rate", count)?.unwrap_or(first);
        if next != first {
            return Err(options.bad(
                "next-event.rate",
                format!("must equal 'first-event.rate' ({first}): Sluice's generator has one rate"),
            ));
        }
        config.rate = first;
        config.events = options.parse("events.num", count)?.unwrap_or(0);
        let set = |key: &str, field: &mut u64| -> Result<()> {
            if let Some(v) = options.parse(key, count)? {
                *field = v;
            }
            Ok(())
        };
        set("person.proportion", &mut config.person_proportion)?;
        set("auction.proportion", &mut config.auction_proportion)?;
        set("bid.proportion", &mut config.bid_proportion)?;
        set("bid.hot-ratio.auctions", &mut config.hot_auction_ratio)?;
        set("bid.hot-ratio.bidders", &mut config.hot_bidders_ratio)?;
        set("auction.hot-ratio.sellers", &mut config.hot_sellers_ratio)?;
        for (key, field) in [
            ("person.avg-size", &mut config.avg_person_bytes),
            ("auction.avg-size", &mut config.avg_auction_bytes),
            ("bid.avg-size", &mut config.avg_bid_bytes),
        ] {
            if let Some(v) = options.get(key) {
                *field = parse_memory_size(v).ok_or_else(|| {
                    options.bad(
                        key,
                        format!("expected a memory size like '200b', found '{v}'"),
                    )
                })?;
            }
        }
        let fixed = |key: &str, ok: &str| -> Result<()> {
            match options.get(key) {
                Some(v) if !v.trim().eq_ignore_ascii_case(ok) => Err(options.bad(
                    key,
                    format!("only '{ok}' is supported (Sluice generates as fast as it can), found '{v}'"),
                )),
                _ => Ok(()),
            }
        };
        fixed("rate.limited", "false")?;
        fixed("keep-alive", "false")?;
        fixed("stop-at", "-1")?;
        fixed("max-emit-speed", "true")?;
        options.one_of("rate.shape", &["SQUARE", "SINE"])?;
        if let Some(t) = options.parse::<i64>("sluice.base-time", "milliseconds since the epoch")? {
            config.base_time_ms = t;
        }
        config.flink_compat = options.bool("sluice.flink-compat")?.unwrap_or(false);
        config
            .validate()
            .map_err(|e| options.bad("connector", format!("invalid generator settings: {e}")))?;
        let picks = schema
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| match name.as_str() {
                "event_type" => {
                    if schema.types[i].is_integer() {
                        Ok(Pick::EventType)
                    } else {
                        Err(SqlError::validation(
                            None,
                            format!(
                                "column 'event_type' of nexmark table '{}' must be INT",
                                schema.table
                            ),
                        ))
                    }
                }
                "person" => row_picks(schema, i, PERSON).map(Pick::Person),
                "auction" => row_picks(schema, i, AUCTION).map(Pick::Auction),
                "bid" => row_picks(schema, i, BID).map(Pick::Bid),
                other => Err(SqlError::UnknownName {
                    pos: None,
                    kind: "Nexmark column",
                    name: other.to_string(),
                    nearest_names: sluice_sql::catalog::nearest(
                        other,
                        ["event_type", "person", "auction", "bid"],
                    ),
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(NexmarkSpec {
            config,
            capacity: picks.len(),
            picks,
        })
    }

    /// The same table building only what `read` says is read of each column (the fields and
    /// columns nobody reads are NULL, and their strings never copied).
    pub fn pruned(&self, read: &[Demand]) -> NexmarkSpec {
        let fields = |f: &[usize], d: &Demand| -> Vec<usize> {
            f.iter()
                .enumerate()
                .map(|(k, &i)| if d.reads_field(k) { i } else { UNREAD })
                .collect()
        };
        let picks = self
            .picks
            .iter()
            .zip(read)
            .map(|(p, d)| match (p, d) {
                (_, Demand::Unread) => Pick::Unread,
                (Pick::Person(f), d) => Pick::Person(fields(f, d)),
                (Pick::Auction(f), d) => Pick::Auction(fields(f, d)),
                (Pick::Bid(f), d) => Pick::Bid(fields(f, d)),
                (p, _) => p.clone(),
            })
            .collect();
        NexmarkSpec {
            config: self.config.clone(),
            picks,
            capacity: self.capacity,
        }
    }

    /// The same table emitting its rows in `layout` ([`crate::layout`]: a `ROW` column read
    /// by field only becomes one column per read field, an unread column none).
    pub fn flattened(&self, layout: &Layout) -> NexmarkSpec {
        let mut picks = Vec::with_capacity(layout.width());
        for (pick, col) in self.picks.iter().zip(&layout.cols) {
            match col {
                Col::Gone => {}
                Col::At(_) => picks.push(pick.clone()),
                Col::Flat(fields) => {
                    for (k, at) in fields.iter().enumerate() {
                        if at.is_none() {
                            continue;
                        }
                        picks.push(match pick {
                            Pick::Person(f) => {
                                f.get(k).map_or(Pick::Unread, |&i| Pick::PersonField(i))
                            }
                            Pick::Auction(f) => {
                                f.get(k).map_or(Pick::Unread, |&i| Pick::AuctionField(i))
                            }
                            Pick::Bid(f) => f.get(k).map_or(Pick::Unread, |&i| Pick::BidField(i)),
                            _ => Pick::Unread,
                        });
                    }
                }
            }
        }
        NexmarkSpec {
            config: self.config.clone(),
            capacity: picks.len(),
            picks,
        }
    }

    /// The same table, each row allocated with room for `width` columns (or its own, if more).
    pub fn with_capacity(mut self, width: usize) -> NexmarkSpec {
        self.capacity = width.max(self.picks.len());
        self
    }

    /// The table's rows: subtask `k` of `n` runs generator split `k` of `n`.
    pub fn stream(&self, env: &StreamEnv) -> DataStream<Row> {
        let config = self.config.clone();
        let picks: Arc<[Pick]> = self.picks.clone().into();
        let capacity = self.capacity;
        env.add_source("nexmark", move |k, n| {
            let picks = picks.clone();
            NexmarkSplitSource::new(&config, k, n, move |e: Event| {
                event_row(&picks, capacity, &e)
            })
        })
    }

    /// How many columns its rows have.
    pub fn width(&self) -> usize {
        self.picks.len()
    }

    /// Whether column `c` of its rows is `event_type`.
    pub fn is_event_type(&self, c: usize) -> bool {
        self.picks.get(c) == Some(&Pick::EventType)
    }

    /// One event as the table's row (what the source emits for it).
    pub fn row_of(&self, event: &Event) -> Row {
        event_row(&self.picks, self.capacity, event)
    }
}

fn ts(ms: i64) -> Value {
    Value::Timestamp(Timestamp::from_millis(ms))
}

/// A string field of the generator's: its text borrowed when it is a slice of the generator's
/// process-wide tables (a static `SqlStr`: no allocation, no copy per event), copied otherwise.
fn text(t: &sluice_nexmark::Text) -> Value {
    match t {
        std::borrow::Cow::Borrowed(s) => Value::static_str(s),
        std::borrow::Cow::Owned(s) => Value::str(s),
    }
}

fn person_field(p: &sluice_nexmark::Person, i: usize) -> Value {
    match i {
        UNREAD => Value::Null,
        0 => Value::Int(p.id),
        1 => Value::str(&p.name),
        2 => Value::str(&p.email_address),
        3 => Value::str(&p.credit_card),
        4 => text(&p.city),
        5 => text(&p.state),
        6 => ts(p.date_time),
        _ => text(&p.extra),
    }
}

fn auction_field(a: &sluice_nexmark::Auction, i: usize) -> Value {
    match i {
        UNREAD => Value::Null,
        0 => Value::Int(a.id),
        1 => Value::str(&a.item_name),
        2 => Value::str(&a.description),
        3 => Value::Int(a.initial_bid),
        4 => Value::Int(a.reserve),
        5 => ts(a.date_time),
        6 => ts(a.expires),
        7 => Value::Int(a.seller),
        8 => Value::Int(a.category),
        _ => text(&a.extra),
    }
}

fn bid_field(b: &sluice_nexmark::Bid, i: usize) -> Value {
    match i {
        UNREAD => Value::Null,
        0 => Value::Int(b.auction),
        1 => Value::Int(b.bidder),
        2 => Value::Int(b.price),
        3 => text(&b.channel),
        4 => text(&b.url),
        5 => ts(b.date_time),
        _ => text(&b.extra),
    }
}

fn event_row(picks: &[Pick], capacity: usize, event: &Event) -> Row {
    let mut values = Vec::with_capacity(capacity);
    values.extend(picks.iter().map(|pick| match (pick, event) {
        (Pick::Unread, _) => Value::Null,
        (Pick::EventType, e) => Value::Int(i64::from(e.event_type())),
        (Pick::Person(f), Event::Person(p)) => {
            Value::Row(f.iter().map(|i| person_field(p, *i)).collect())
        }
        (Pick::Auction(f), Event::Auction(a)) => {
            Value::Row(f.iter().map(|i| auction_field(a, *i)).collect())
        }
        (Pick::Bid(f), Event::Bid(b)) => Value::Row(f.iter().map(|i| bid_field(b, *i)).collect()),
        (Pick::PersonField(i), Event::Person(p)) => person_field(p, *i),
        (Pick::AuctionField(i), Event::Auction(a)) => auction_field(a, *i),
        (Pick::BidField(i), Event::Bid(b)) => bid_field(b, *i),
        _ => Value::Null,
    }));
    Row(values)
}

/// One generator split, each event mapped by `map` (the table's row here; the event itself for the
/// hand-written Nexmark queries of `sluice-jobs`). Its checkpoint position is the number of events
/// emitted; a restore at the same parallelism skips them (another parallelism is refused: the
/// splits are `n ≡ k mod p`).
pub struct NexmarkSplitSource<F> {
    split: Split,
    emitted: u64,
    map: F,
}

impl<F> NexmarkSplitSource<F> {
    /// Subtask `k` of `n`: generator split `k` of `n` of `config`'s events.
    pub fn new(
        config: &GeneratorConfig,
        k: usize,
        n: usize,
        map: F,
    ) -> Result<Self, OperatorError> {
        Ok(NexmarkSplitSource {
            split: open_split(config, k, n)?,
            emitted: 0,
            map,
        })
    }
}

impl<T, F> SourceFunction<T> for NexmarkSplitSource<F>
where
    T: Send + 'static,
    F: FnMut(Event) -> T + Send + 'static,
{
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        let map = &mut self.map;
        run_split(&mut self.split, &mut self.emitted, ctx, out, |e, out| {
            out.collect(map(e))
        })
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        restore_split(&mut self.split, &mut self.emitted, parts, op)
    }
}

/// Generator split `k` of `n` of `config`'s events (shared by the plain and the fused source).
pub(super) fn open_split(
    config: &GeneratorConfig,
    k: usize,
    n: usize,
) -> Result<Split, OperatorError> {
    let generator = NexmarkGenerator::new(config.clone())
        .map_err(|e| OperatorError::failed(format!("nexmark generator: {e}")))?;
    Ok(generator.split(k, n))
}

/// Runs `split` to its end (or until the job is cancelled), `emit` giving each event to `out`;
/// `emitted` counts the events, the position a checkpoint records (shared by the plain and the
/// fused source).
pub(super) fn run_split<T>(
    split: &mut Split,
    emitted: &mut u64,
    ctx: &SourceContext,
    out: &mut dyn Collector<T>,
    mut emit: impl FnMut(Event, &mut dyn Collector<T>) -> Result<(), OperatorError>,
) -> Result<(), OperatorError> {
    loop {
        if ctx.should_stop() {
            return Err(OperatorError::Cancelled);
        }
        let at = *emitted;
        ctx.checkpoint_if_due(out, || sluice_runtime::state::layout::encode(&at))?;
        let mut n = 0;
        for (_, e) in split.by_ref().take(SOURCE_BATCH as usize) {
            emit(e, out)?;
            n += 1;
        }
        *emitted += n;
        ctx.add_emitted(n);
        if n < SOURCE_BATCH {
            let at = *emitted;
            return ctx.await_final_checkpoint(out, || sluice_runtime::state::layout::encode(&at));
        }
    }
}

/// A split restored to the position `parts` hold for this subtask (the events emitted).
fn restore_split(
    split: &mut Split,
    emitted: &mut u64,
    parts: &[(usize, Vec<u8>)],
    op: &sluice_types::OperatorContext,
) -> Result<(), OperatorError> {
    if parts.len() != op.parallelism {
        return Err(OperatorError::failed(format!(
            "the Nexmark source was checkpointed at parallelism {} and cannot resume at {}",
            parts.len(),
            op.parallelism
        )));
    }
    for (i, bytes) in parts {
        if *i == op.subtask_index {
            let n: u64 = sluice_runtime::state::layout::decode(bytes)?;
            split.skip_events(n);
            *emitted = n;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_sql::RowField;

    #[test]
    fn columns_and_fields_are_matched_by_name_in_any_order() {
        let bid = DataType::new(LogicalType::Row(vec![
            RowField {
                name: "price".into(),
                ty: DataType::bigint(),
            },
            RowField {
                name: "auction".into(),
                ty: DataType::bigint(),
            },
        ]));
        let schema = PhysicalSchema::new(
            "t",
            vec![("bid".into(), bid), ("event_type".into(), DataType::int())],
        );
        let given = vec![
            ("connector".to_string(), "nexmark".to_string()),
            ("events.num".to_string(), "100".to_string()),
        ];
        let spec = NexmarkSpec::new(&Options::new("t", &given), &schema).unwrap();
        let g = NexmarkGenerator::new(spec.config.clone()).unwrap();
        let (_, event) = g.iter().find(|(_, e)| matches!(e, Event::Bid(_))).unwrap();
        let Event::Bid(b) = &event else {
            unreachable!()
        };
        assert_eq!(
            spec.row_of(&event),
            Row(vec![
                Value::Row(vec![Value::Int(b.price), Value::Int(b.auction)].into()),
                Value::Int(2)
            ])
        );
        let wrong = PhysicalSchema::new("t", vec![("bids".into(), DataType::bigint())]);
        let e = NexmarkSpec::new(&Options::new("t", &given), &wrong).unwrap_err();
        assert!(e.to_string().contains("Did you mean 'bid'"), "{e}");
        let typed = PhysicalSchema::new(
            "t",
            vec![(
                "bid".into(),
                DataType::new(LogicalType::Row(vec![RowField {
                    name: "price".into(),
                    ty: DataType::string(),
                }])),
            )],
        );
        assert!(NexmarkSpec::new(&Options::new("t", &given), &typed).is_err());
    }
}
