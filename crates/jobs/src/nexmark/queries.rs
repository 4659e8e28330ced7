//! Stateless and windowed queries: q0, q1, q2, q5, q7, q8, q11, q14, q21, q22.

use sluice_datastream::{
    Collector, DataStream, KeyedProcessFunction, OnTimerContext, OperatorError, ProcessContext,
    TimeWindow, WindowAssigner,
};
use sluice_nexmark::{Bid, Event, Text};
use sluice_runtime::state::{KeyedStateStore, ListOf, StateHandle, ValueOf};

use super::rows::Milli;

fn bids(events: &DataStream<Event>) -> DataStream<Bid> {
    events
        .flat_map(|e: Event| match e {
            Event::Bid(b) => Some(b),
            _ => None,
        })
        .name("Bids")
        .with_timestamps(|b: &Bid| b.date_time)
}

/// The bids as `(column, dateTime)` pairs (projected before any exchange), timestamped by
/// their `dateTime`.
fn bid_columns(
    events: &DataStream<Event>,
    columns: fn(&Bid) -> (i64, i64),
) -> DataStream<(i64, i64)> {
    events
        .flat_map(move |e: Event| match e {
            Event::Bid(b) => Some(columns(&b)),
            _ => None,
        })
        .name("Bids")
        .with_timestamps(|b: &(i64, i64)| b.1)
}

/// q0, pass-through: `SELECT auction, bidder, price, dateTime, extra FROM bid`.
pub fn q0(events: &DataStream<Event>) -> DataStream<(i64, i64, i64, i64, Text)> {
    events
        .flat_map(|e: Event| match e {
            Event::Bid(b) => Some((b.auction, b.bidder, b.price, b.date_time, b.extra)),
            _ => None,
        })
        .name("q0")
}

/// q1, currency conversion: q0 with `price := 0.908 * price` (exact, DECIMAL(23,3)).
pub fn q1(events: &DataStream<Event>) -> DataStream<(i64, i64, Milli, i64, Text)> {
    events
        .flat_map(|e: Event| match e {
            Event::Bid(b) => Some((
                b.auction,
                b.bidder,
                Milli(b.price * 908),
                b.date_time,
                b.extra,
            )),
            _ => None,
        })
        .name("q1")
}

/// q2, selection: `SELECT auction, price FROM bid WHERE auction % 123 = 0`.
pub fn q2(events: &DataStream<Event>) -> DataStream<(i64, i64)> {
    events
        .flat_map(|e: Event| match e {
            Event::Bid(b) if b.auction % 123 == 0 => Some((b.auction, b.price)),
            _ => None,
        })
        .name("q2")
}

/// q5, hot items: bids per auction in 10 s windows sliding by 2 s; per window, every auction
/// whose count is the window's maximum (ties all emitted) → `(auction, num)`.
///
/// The window only counts, so only `(auction, dateTime)` crosses the exchange and is copied
/// into each of an element's five windows (Flink's planner prunes the columns the same way).
#[allow(
    clippy::expect_used,
    reason = "a constant, positive window size (and slide) is always a valid window"
)]
pub fn q5(events: &DataStream<Event>) -> DataStream<(i64, u64)> {
    bid_columns(events, |b| (b.auction, b.date_time))
        .key_by(|b: &(i64, i64)| b.0)
        .window(WindowAssigner::sliding(10_000, 2_000).expect("valid window"))
        .count()
        .key_by(|r: &sluice_datastream::WindowResult<i64, u64>| r.window.start)
        .process_event_time(HottestPerWindow::default())
        .name("q5 max per window")
}

/// Keyed by window start: collects `(auction, count)` of the window, and when the watermark
/// passes the window's end, emits those with the maximal count.
#[derive(Clone, Default)]
struct HottestPerWindow {
    /// Registered at open.
    states: Option<HottestStates>,
}

#[derive(Clone, Copy)]
struct HottestStates {
    max: StateHandle<ValueOf<u64>>,
    top: StateHandle<ListOf<(i64, u64)>>,
}

fn not_registered() -> OperatorError {
    OperatorError::failed("state used before register_states")
}

impl KeyedProcessFunction<i64, sluice_datastream::WindowResult<i64, u64>, (i64, u64)>
    for HottestPerWindow
{
    fn register_states(&mut self, states: &mut KeyedStateStore<i64>) -> Result<(), OperatorError> {
        self.states = Some(HottestStates {
            max: states.register_value("max")?,
            top: states.register_list("top")?,
        });
        Ok(())
    }

    fn process_element(
        &mut self,
        r: sluice_datastream::WindowResult<i64, u64>,
        ctx: &mut ProcessContext<'_, i64>,
        _out: &mut dyn Collector<(i64, u64)>,
    ) -> Result<(), OperatorError> {
        let s = self.states.ok_or_else(not_registered)?;
        let mut max = ctx.value(&s.max);
        let m = max.value()?.unwrap_or(0);
        if r.value >= m {
            if r.value > m {
                max.update(r.value)?;
                ctx.list(&s.top).clear()?;
            }
            ctx.list(&s.top).add((r.key, r.value))?;
        }
        ctx.timer_service()
            .register_event_time_timer(r.window.max_timestamp());
        Ok(())
    }

    fn on_timer(
        &mut self,
        _ts: i64,
        ctx: &mut OnTimerContext<'_, i64>,
        out: &mut dyn Collector<(i64, u64)>,
    ) -> Result<(), OperatorError> {
        let s = self.states.ok_or_else(not_registered)?;
        for row in ctx.list(&s.top).get()? {
            out.collect(row)?;
        }
        ctx.list(&s.top).clear()?;
        ctx.value(&s.max).clear()
    }
}

type Q7Row = (i64, i64, i64, i64, Text);

/// q7, highest bid per period: `B1 = max(price), window_end dt per TUMBLE(10 s)`; the bids with
/// `price = B1.maxprice` and `dateTime BETWEEN dt − 10 s AND dt` (both ends inclusive) →
/// `(auction, price, bidder, dateTime, extra)`.
///
/// Keyed by the 10 s window: each bid goes to its window; a bid exactly at a window start also
/// goes to the previous window as a boundary candidate (the inclusive upper end). When the
/// watermark passes `dt`, the window emits its maximal bids.
pub fn q7(events: &DataStream<Event>) -> DataStream<Q7Row> {
    bids(events)
        .flat_map(|b: Bid| {
            let w = b.date_time.div_euclid(10_000);
            let boundary = b.date_time.rem_euclid(10_000) == 0;
            let row = (b.auction, b.price, b.bidder, b.date_time, b.extra);
            let mut v = Vec::with_capacity(1 + boundary as usize);
            if boundary {
                v.push((w - 1, true, row.clone()));
            }
            v.push((w, false, row));
            v
        })
        .name("q7 assign window")
        .with_timestamps(|t: &(i64, bool, Q7Row)| t.2 .3)
        .key_by(|t: &(i64, bool, Q7Row)| t.0)
        .process_event_time(HighestBid::default())
        .name("q7 highest bid")
}

#[derive(Clone, Default)]
struct HighestBid {
    /// Registered at open.
    states: Option<HighestStates>,
}

#[derive(Clone, Copy)]
struct HighestStates {
    max: StateHandle<ValueOf<i64>>,
    top: StateHandle<ListOf<Q7Row>>,
    boundary: StateHandle<ListOf<Q7Row>>,
}

impl KeyedProcessFunction<i64, (i64, bool, Q7Row), Q7Row> for HighestBid {
    fn register_states(&mut self, states: &mut KeyedStateStore<i64>) -> Result<(), OperatorError> {
        self.states = Some(HighestStates {
            max: states.register_value("max")?,
            top: states.register_list("top")?,
            boundary: states.register_list("boundary")?,
        });
        Ok(())
    }

    fn process_element(
        &mut self,
        (window, boundary, row): (i64, bool, Q7Row),
        ctx: &mut ProcessContext<'_, i64>,
        _out: &mut dyn Collector<Q7Row>,
    ) -> Result<(), OperatorError> {
        let s = self.states.ok_or_else(not_registered)?;
        if boundary {
            ctx.list(&s.boundary).add(row)?;
        } else {
            let mut max = ctx.value(&s.max);
            let m = max.value()?;
            if m.is_none_or(|m| row.1 >= m) {
                if m.is_none_or(|m| row.1 > m) {
                    max.update(row.1)?;
                    ctx.list(&s.top).clear()?;
                }
                ctx.list(&s.top).add(row)?;
            }
        }
        ctx.timer_service()
            .register_event_time_timer((window + 1) * 10_000);
        Ok(())
    }

    fn on_timer(
        &mut self,
        _ts: i64,
        ctx: &mut OnTimerContext<'_, i64>,
        out: &mut dyn Collector<Q7Row>,
    ) -> Result<(), OperatorError> {
        let s = self.states.ok_or_else(not_registered)?;
        if let Some(max) = ctx.value(&s.max).value()? {
            for row in ctx.list(&s.top).get()? {
                out.collect(row)?;
            }
            for row in ctx.list(&s.boundary).get()? {
                if row.1 == max {
                    out.collect(row)?;
                }
            }
        }
        ctx.list(&s.top).clear()?;
        ctx.list(&s.boundary).clear()?;
        ctx.value(&s.max).clear()
    }
}

/// q8, monitor new users: persons who joined and opened an auction in the same 10 s tumbling
/// window → `(id, name, window start)`. A windowed co-group (Flink's window join of the two
/// grouped inputs) of persons by id and auctions by seller.
#[allow(
    clippy::expect_used,
    reason = "a constant, positive window size (and slide) is always a valid window"
)]
pub fn q8(events: &DataStream<Event>) -> DataStream<(i64, String, i64)> {
    let persons = events
        .flat_map(|e: Event| match e {
            Event::Person(p) => Some((p.id, p.name, p.date_time)),
            _ => None,
        })
        .name("q8 persons")
        .with_timestamps(|p: &(i64, String, i64)| p.2)
        .key_by(|p: &(i64, String, i64)| p.0);
    let sellers = events
        .flat_map(|e: Event| match e {
            Event::Auction(a) => Some((a.seller, a.date_time)),
            _ => None,
        })
        .name("q8 sellers")
        .with_timestamps(|a: &(i64, i64)| a.1)
        .key_by(|a: &(i64, i64)| a.0);
    persons
        .co_group(
            &sellers,
            WindowAssigner::tumbling(10_000).expect("valid window"),
        )
        .apply(
            |id: &i64,
             w: &TimeWindow,
             persons: Vec<(i64, String, i64)>,
             auctions: Vec<(i64, i64)>,
             out: &mut dyn Collector<(i64, String, i64)>| {
                if auctions.is_empty() {
                    return Ok(());
                }
                let mut names: Vec<String> = persons.into_iter().map(|p| p.1).collect();
                names.sort();
                names.dedup();
                for name in names {
                    out.collect((*id, name, w.start))?;
                }
                Ok(())
            },
        )
        .name("q8")
}

/// q11, user sessions: bids per bidder in session windows with a 10 s gap →
/// `(bidder, count, session start, session end)`.
///
/// Only `(bidder, dateTime)` crosses the exchange (the session only counts).
#[allow(
    clippy::expect_used,
    reason = "a constant, positive window size (and slide) is always a valid window"
)]
pub fn q11(events: &DataStream<Event>) -> DataStream<(i64, u64, i64, i64)> {
    bid_columns(events, |b| (b.bidder, b.date_time))
        .key_by(|b: &(i64, i64)| b.0)
        .window(WindowAssigner::session(10_000).expect("valid window"))
        .count()
        .map(|r: sluice_datastream::WindowResult<i64, u64>| {
            (r.key, r.value, r.window.start, r.window.end)
        })
        .name("q11")
}

/// q14, calculation: `price' = 0.908·price` kept when `10^6 < price' < 5·10^7`, the time of
/// day of the bid (UTC hour: 8..=18 `dayTime`, ≤ 6 or ≥ 20 `nightTime`, else `otherTime`) and
/// the number of `c` in `extra`.
pub fn q14(
    events: &DataStream<Event>,
) -> DataStream<(i64, i64, Milli, &'static str, i64, Text, i64)> {
    events
        .flat_map(|e: Event| match e {
            Event::Bid(b) => {
                let price = b.price * 908;
                if price <= 1_000_000_000 || price >= 50_000_000_000 {
                    return None;
                }
                let hour = b.date_time.div_euclid(3_600_000).rem_euclid(24);
                let kind = if (8..=18).contains(&hour) {
                    "dayTime"
                } else if hour <= 6 || hour >= 20 {
                    "nightTime"
                } else {
                    "otherTime"
                };
                let c = b.extra.bytes().filter(|&c| c == b'c').count() as i64;
                Some((
                    b.auction,
                    b.bidder,
                    Milli(price),
                    kind,
                    b.date_time,
                    b.extra,
                    c,
                ))
            }
            _ => None,
        })
        .name("q14")
}

/// Flink's `REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)`: the value of the first
/// `channel_id=` parameter at the start or after `&`, `None` when there is none.
pub fn channel_id_of(url: &str) -> Option<&str> {
    let needle = "channel_id=";
    let mut from = 0;
    while let Some(i) = url[from..].find(needle) {
        let at = from + i;
        if at == 0 || url.as_bytes()[at - 1] == b'&' {
            let rest = &url[at + needle.len()..];
            return Some(rest.split('&').next().unwrap_or(""));
        }
        from = at + 1;
    }
    None
}

/// q21, add channel id: the four hot channels map to 0..3, the others take the `channel_id`
/// URL parameter; rows with neither are dropped → `(auction, bidder, price, channel, id)`.
pub fn q21(events: &DataStream<Event>) -> DataStream<(i64, i64, i64, Text, String)> {
    events
        .flat_map(|e: Event| match e {
            Event::Bid(b) => {
                let id = match b.channel.to_ascii_lowercase().as_str() {
                    "apple" => Some("0".to_string()),
                    "google" => Some("1".to_string()),
                    "facebook" => Some("2".to_string()),
                    "baidu" => Some("3".to_string()),
                    _ => channel_id_of(&b.url).map(str::to_string),
                };
                id.map(|id| (b.auction, b.bidder, b.price, b.channel, id))
            }
            _ => None,
        })
        .name("q21")
}

/// q22, URL directories: `SPLIT_INDEX(url, '/', 3..=5)` (empty when missing) →
/// `(auction, bidder, price, channel, dir1, dir2, dir3)`.
pub fn q22(
    events: &DataStream<Event>,
) -> DataStream<(i64, i64, i64, Text, String, String, String)> {
    events
        .flat_map(|e: Event| match e {
            Event::Bid(b) => {
                let mut parts = b.url.split('/').skip(3);
                let mut next = || parts.next().unwrap_or("").to_string();
                let (d1, d2, d3) = (next(), next(), next());
                Some((b.auction, b.bidder, b.price, b.channel, d1, d2, d3))
            }
            _ => None,
        })
        .name("q22")
}

#[cfg(test)]
mod tests {
    use super::channel_id_of;

    #[test]
    fn channel_id_follows_flinks_regex() {
        assert_eq!(
            channel_id_of("https://x/a?query=1&channel_id=42"),
            Some("42")
        );
        assert_eq!(channel_id_of("channel_id=7&x=1"), Some("7"));
        assert_eq!(channel_id_of("https://x/a?query=1"), None);
        assert_eq!(channel_id_of("https://x/a?xchannel_id=3"), None);
        assert_eq!(channel_id_of("a?xchannel_id=3&channel_id=&b"), Some(""));
    }
}
