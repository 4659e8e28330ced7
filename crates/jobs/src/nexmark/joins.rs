//! Join queries: q3 (regular join), q4 and q9 (auction ⋈ bids within the auction's lifetime).

use sluice_datastream::{
    Collector, DataStream, KeyedCoProcessFunction, KeyedProcessFunction, OnTimerContext,
    OperatorError, ProcessContext,
};
use sluice_nexmark::{Event, Text};

use super::rows::{Field, Row};

/// q3, local item suggestion: `auction A ⋈ person P ON A.seller = P.id WHERE A.category = 10
/// AND P.state IN ('OR','ID','CA')` → `(name, city, state, auction id)`. A regular join of the
/// two filtered, keyed inputs (`connect` + a co-process function): a person is kept once,
/// auctions wait until their seller shows up.
pub fn q3(events: &DataStream<Event>) -> DataStream<Q3Row> {
    let auctions = events
        .flat_map(|e: Event| match e {
            Event::Auction(a) if a.category == 10 => Some((a.id, a.seller)),
            _ => None,
        })
        .name("q3 auctions")
        .key_by(|a: &(i64, i64)| a.1);
    let persons = events
        .flat_map(|e: Event| match e {
            Event::Person(p) if matches!(&*p.state, "OR" | "ID" | "CA") => {
                Some((p.id, p.name, p.city, p.state))
            }
            _ => None,
        })
        .name("q3 persons")
        .key_by(|p: &(i64, String, Text, Text)| p.0);
    auctions
        .connect(&persons)
        .process(LocalItemJoin)
        .name("q3 join")
}

type Q3Row = (String, Text, Text, i64);

#[derive(Clone)]
struct LocalItemJoin;

impl KeyedCoProcessFunction<i64, (i64, i64), (i64, String, Text, Text), Q3Row> for LocalItemJoin {
    fn process_left(
        &mut self,
        (id, _seller): (i64, i64),
        ctx: &mut ProcessContext<'_, i64>,
        out: &mut dyn Collector<Q3Row>,
    ) -> Result<(), OperatorError> {
        match ctx.value_state::<(String, Text, Text)>("person").value()? {
            Some((name, city, state)) => out.collect((name, city, state, id)),
            None => ctx.list_state::<i64>("auctions").add(id),
        }
    }

    fn process_right(
        &mut self,
        (_, name, city, state): (i64, String, Text, Text),
        ctx: &mut ProcessContext<'_, i64>,
        out: &mut dyn Collector<Q3Row>,
    ) -> Result<(), OperatorError> {
        for id in ctx.list_state::<i64>("auctions").get()? {
            out.collect((name.clone(), city.clone(), state.clone(), id))?;
        }
        ctx.list_state::<i64>("auctions").clear()?;
        ctx.value_state::<(String, Text, Text)>("person")
            .update((name, city, state))
    }
}

/// An auction's columns (q9 outputs all of them).
pub type AuctionRow = (i64, String, String, i64, i64, i64, i64, i64, i64, Text);
/// `(auction, bidder, price, dateTime, extra)`.
pub type BidRow = (i64, i64, i64, i64, Text);

#[derive(Clone)]
enum AuctionOrBid {
    Auction(AuctionRow),
    Bid(BidRow),
}

/// The winning bid of an auction: the highest price; among equal prices the earliest; then
/// (the tie-break for equal price and millisecond,
/// docs/src/reference/nexmark-generator.md#correctness, mirrored by the oracle) the lowest
/// bidder, then the smallest `extra`.
fn better(a: &BidRow, b: &BidRow) -> bool {
    use std::cmp::Reverse;
    (Reverse(a.2), a.3, a.1, &a.4) < (Reverse(b.2), b.3, b.1, &b.4)
}

fn in_lifetime(a: &AuctionRow, b: &BidRow) -> bool {
    a.5 <= b.3 && b.3 <= a.6
}

/// Keyed by auction id: the auction's winning bid among bids with
/// `dateTime BETWEEN A.dateTime AND A.expires`, emitted once the watermark passes `expires`
/// (then no valid bid can still arrive). Bids that arrive before their auction wait in state;
/// bids after the auction closed are ignored (a `closed` marker remembers it).
#[derive(Clone)]
struct WinningBid;

impl KeyedProcessFunction<i64, AuctionOrBid, (AuctionRow, BidRow)> for WinningBid {
    fn process_element(
        &mut self,
        item: AuctionOrBid,
        ctx: &mut ProcessContext<'_, i64>,
        _out: &mut dyn Collector<(AuctionRow, BidRow)>,
    ) -> Result<(), OperatorError> {
        if ctx.value_state::<bool>("closed").value()?.is_some() {
            return Ok(());
        }
        match item {
            AuctionOrBid::Auction(a) => {
                let mut best: Option<BidRow> = None;
                for b in ctx.list_state::<BidRow>("early").get()? {
                    if in_lifetime(&a, &b) && best.as_ref().is_none_or(|x| better(&b, x)) {
                        best = Some(b);
                    }
                }
                ctx.list_state::<BidRow>("early").clear()?;
                if let Some(b) = best {
                    ctx.value_state::<BidRow>("best").update(b)?;
                }
                ctx.timer_service().register_event_time_timer(a.6);
                ctx.value_state::<AuctionRow>("auction").update(a)
            }
            AuctionOrBid::Bid(b) => match ctx.value_state::<AuctionRow>("auction").value()? {
                Some(a) => {
                    if in_lifetime(&a, &b) {
                        let mut best = ctx.value_state::<BidRow>("best");
                        if best.value()?.as_ref().is_none_or(|x| better(&b, x)) {
                            best.update(b)?;
                        }
                    }
                    Ok(())
                }
                None => ctx.list_state::<BidRow>("early").add(b),
            },
        }
    }

    fn on_timer(
        &mut self,
        _ts: i64,
        ctx: &mut OnTimerContext<'_, i64>,
        out: &mut dyn Collector<(AuctionRow, BidRow)>,
    ) -> Result<(), OperatorError> {
        let auction = ctx.value_state::<AuctionRow>("auction").value()?;
        let best = ctx.value_state::<BidRow>("best").value()?;
        ctx.value_state::<AuctionRow>("auction").clear()?;
        ctx.value_state::<BidRow>("best").clear()?;
        ctx.value_state::<bool>("closed").update(true)?;
        match (auction, best) {
            (Some(a), Some(b)) => out.collect((a, b)),
            _ => Ok(()),
        }
    }
}

fn winning_bids(events: &DataStream<Event>) -> DataStream<(AuctionRow, BidRow)> {
    events
        .flat_map(|e: Event| match e {
            Event::Auction(a) => Some(AuctionOrBid::Auction((
                a.id,
                a.item_name,
                a.description,
                a.initial_bid,
                a.reserve,
                a.date_time,
                a.expires,
                a.seller,
                a.category,
                a.extra,
            ))),
            Event::Bid(b) => Some(AuctionOrBid::Bid((
                b.auction,
                b.bidder,
                b.price,
                b.date_time,
                b.extra,
            ))),
            Event::Person(_) => None,
        })
        .name("Auctions and bids")
        .with_timestamps(|i: &AuctionOrBid| match i {
            AuctionOrBid::Auction(a) => a.5,
            AuctionOrBid::Bid(b) => b.3,
        })
        .key_by(|i: &AuctionOrBid| match i {
            AuctionOrBid::Auction(a) => a.0,
            AuctionOrBid::Bid(b) => b.0,
        })
        .process_event_time(WinningBid)
        .name("Winning bid")
}

/// q4, average winning price per category (updating): per auction the highest bid within its
/// lifetime, then per category the running average (integer, truncated as Flink's
/// `AVG(BIGINT)`). Emits `(category, average)` upserts; the last one per category is the
/// final table.
pub fn q4(events: &DataStream<Event>) -> DataStream<(i64, i64)> {
    winning_bids(events)
        .map(|(a, b): (AuctionRow, BidRow)| (a.8, b.2))
        .name("Winning price")
        .key_by(|r: &(i64, i64)| r.0)
        .process(AveragePerCategory)
        .name("q4 average")
}

#[derive(Clone)]
struct AveragePerCategory;

impl KeyedProcessFunction<i64, (i64, i64), (i64, i64)> for AveragePerCategory {
    fn process_element(
        &mut self,
        (category, price): (i64, i64),
        ctx: &mut ProcessContext<'_, i64>,
        out: &mut dyn Collector<(i64, i64)>,
    ) -> Result<(), OperatorError> {
        let mut st = ctx.value_state::<(i64, i64)>("sum-count");
        let (sum, count) = st.value()?.unwrap_or((0, 0));
        let (sum, count) = (sum + price, count + 1);
        st.update((sum, count))?;
        out.collect((category, sum / count))
    }
}

/// q9's output: the auction's columns, then the winning bid's.
#[derive(Clone)]
pub struct WinningBidRow(pub AuctionRow, pub BidRow);

impl Row for WinningBidRow {
    fn write_csv(&self, out: &mut String) {
        let a = &self.0;
        let b = &self.1;
        let fields: [&dyn Field; 15] = [
            &a.0, &a.1, &a.2, &a.3, &a.4, &a.5, &a.6, &a.7, &a.8, &a.9, &b.0, &b.1, &b.2, &b.3,
            &b.4,
        ];
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            f.write_field(out);
        }
    }
}

/// q9, winning bid per auction: every auction with at least one bid in its lifetime, with
/// that winning bid (highest price, then earliest, then the documented tie-break).
pub fn q9(events: &DataStream<Event>) -> DataStream<WinningBidRow> {
    winning_bids(events)
        .map(|(a, b): (AuctionRow, BidRow)| WinningBidRow(a, b))
        .name("q9")
}
