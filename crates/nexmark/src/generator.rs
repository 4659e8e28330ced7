//! Id assignment, timestamps, event assembly and parallel splits
//! (docs/src/reference/nexmark-generator.md#numbering to #field-values).

use std::fmt;
use std::iter::FusedIterator;

use crate::config::{ConfigError, GeneratorConfig};
use crate::event::{Auction, Bid, Event, Person, Text, AUCTION_TYPE, BID_TYPE, PERSON_TYPE};
use crate::rng::Rng;
use crate::values::{
    next_extra, next_string, price, push_string, tables, Tables, CHANNELS_NUMBER, HOT_CHANNELS,
};

/// First person id (added to every base-0 person id).
pub const FIRST_PERSON_ID: i64 = 1000;
/// First auction id (added to every base-0 auction id).
pub const FIRST_AUCTION_ID: i64 = 1000;
/// First category id; categories are `10..10 + NUM_CATEGORIES`.
pub const FIRST_CATEGORY_ID: i64 = 10;
/// Number of categories.
pub const NUM_CATEGORIES: u64 = 5;
/// How far past the newest person a random person reference may point.
pub const PERSON_ID_LEAD: u64 = 10;
/// How far past the newest auction a random auction reference may point.
pub const AUCTION_ID_LEAD: u64 = 10;
/// Hot ids are the first id (seller, auction) or the first + 1 (bidder) of the current block of
/// this many base-0 ids.
pub const HOT_BLOCK: i64 = 100;
/// A bid uses a hot channel with probability `1 − 1/HOT_CHANNELS_RATIO`.
pub const HOT_CHANNELS_RATIO: u64 = 2;

/// Flink's `maxEvents` for an unbounded source: `Long.MAX_VALUE / (total · max avg bytes)`.
fn flink_unbounded_max(config: &GeneratorConfig) -> u64 {
    let avg = config
        .avg_person_bytes
        .max(config.avg_auction_bytes)
        .max(config.avg_bid_bytes);
    i64::MAX as u64 / (config.total_proportion() * avg).max(1)
}

const PERSON_FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const PERSON_LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];

/// Where an event id falls in its block of `total_proportion` ids.
#[derive(Debug, Clone, Copy)]
struct Slot {
    kind: u8,
    last_person0: i64,
    last_auction0: i64,
}

/// How event numbers map to timestamps.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Timeline {
    /// Reference mode: `base + ⌊n·1000 / rate⌋`, integer arithmetic.
    Exact { base: i64, rate: u64 },
    /// Flink: `base + ⌊(long)(n · d) / 1000⌋` with `d = 10^6 / rate · splits` µs (a double).
    Flink { base: i64, delay_us: f64 },
}

impl Timeline {
    #[inline]
    fn ts(self, number: u64) -> i64 {
        match self {
            Timeline::Exact { base, rate } => {
                let ms = match number.checked_mul(1000) {
                    Some(x) => x / rate,
                    None => (u128::from(number) * 1000 / u128::from(rate)) as u64,
                };
                base.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
            }
            // `as i64` truncates toward zero (saturating), like Java's `(long)` cast.
            Timeline::Flink { base, delay_us } => {
                base.saturating_add(((number as f64 * delay_us) as i64) / 1000)
            }
        }
    }
}

/// The Nexmark generator: every event is a pure function of (configuration, event number).
///
/// Cheap to clone (the fixed tables are process-wide and shared). See the crate docs for the
/// numbering in reference and Flink-compatible mode.
#[derive(Clone)]
pub struct NexmarkGenerator {
    config: GeneratorConfig,
    tables: &'static Tables,
    person_proportion: u64,
    auction_proportion: u64,
    total_proportion: u64,
    /// `⌊num_in_flight_auctions · total / auction_proportion⌋` (1666 by default).
    events_for_auctions: u64,
    /// 1000 (reference) or 2000 (Flink's double offset).
    bidder_offset: i64,
    /// `firstEventId` / `firstEventNumber`: 0 (reference) or 1 (Flink).
    first: u64,
}

impl fmt::Debug for NexmarkGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NexmarkGenerator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl NexmarkGenerator {
    /// Validates `config` and builds the generator (the fixed tables are built once per process,
    /// on first use).
    pub fn new(config: GeneratorConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let total = config.total_proportion();
        Ok(NexmarkGenerator {
            tables: tables(),
            person_proportion: config.person_proportion,
            auction_proportion: config.auction_proportion,
            total_proportion: total,
            events_for_auctions: config.num_in_flight_auctions * total / config.auction_proportion,
            bidder_offset: if config.flink_compat {
                2 * FIRST_PERSON_ID
            } else {
                FIRST_PERSON_ID
            },
            first: u64::from(config.flink_compat),
            config,
        })
    }

    /// The (validated) configuration.
    pub fn config(&self) -> &GeneratorConfig {
        &self.config
    }

    /// Number of events in the whole stream, `None` when unbounded (`events == 0`).
    pub fn total_events(&self) -> Option<u64> {
        (self.config.events != 0).then_some(self.config.events)
    }

    /// The event id of stream position `n` (single-generator stream): `n` in reference mode,
    /// `n + 2` with `flink_compat` (`firstEventId + firstEventNumber + n`).
    #[inline]
    pub fn event_id(&self, n: u64) -> u64 {
        n.wrapping_add(2 * self.first)
    }

    /// The timestamp of stream position `n` (single-generator stream): reference mode
    /// `base + ⌊n·1000/rate⌋`; with `flink_compat` Flink's formula for event number `n + 1`.
    #[inline]
    pub fn timestamp_ms(&self, n: u64) -> i64 {
        self.timeline(1).ts(n.wrapping_add(self.first))
    }

    /// The event at stream position `n` of the single-generator stream, a pure function of
    /// (config, n). In reference mode `n` is the event number and the event id. Positions at or
    /// past `config.events` are generated all the same.
    #[inline]
    pub fn event(&self, n: u64) -> Event {
        let number = n.wrapping_add(self.first);
        self.make(self.first.wrapping_add(number), number, self.timeline(1))
    }

    /// Generator `k` of `n` parallel generators.
    ///
    /// * Reference mode: yields the events numbered `≡ k (mod n)` in increasing order, bounded
    ///   by `config.events`. The union over `k` is the single-generator stream for every `n`.
    /// * `flink_compat`: Flink's `GeneratorConfig.split(n)`: split `k` gets a contiguous id range
    ///   (of `⌊max/n⌋` events, the last one the remainder; `max` = `events`, or Flink's huge
    ///   default when unbounded) and its own timeline starting at event number 1 with
    ///   `n`-times the inter-event delay. Ids are disjoint and their union independent of `n`,
    ///   but timestamps depend on `n`, as in Flink.
    ///
    /// Items are `(event_id, event)`.
    ///
    /// # Panics
    /// If `n == 0` or `k >= n`.
    pub fn split(&self, k: usize, n: usize) -> Split {
        assert!(n > 0 && k < n, "split({k}, {n}): need 0 <= k < n");
        let (k, n) = (k as u64, n as u64);
        if self.config.flink_compat {
            let max = match self.config.events {
                0 => flink_unbounded_max(&self.config),
                e => e,
            };
            let sub = max / n;
            let count = if k == n - 1 { max - sub * (n - 1) } else { sub };
            let first_event_id = 1 + k * sub;
            Split {
                gen: self.clone(),
                timeline: self.timeline(n),
                next_number: 1,
                id_minus_number: first_event_id,
                step: 1,
                remaining: Some(count),
            }
        } else {
            let remaining = match self.config.events {
                0 => None,
                e => Some(e.saturating_sub(k).div_ceil(n)),
            };
            Split {
                gen: self.clone(),
                timeline: self.timeline(1),
                next_number: k,
                id_minus_number: 0,
                step: n,
                remaining,
            }
        }
    }

    /// The whole stream as one generator: `split(0, 1)`.
    pub fn iter(&self) -> Split {
        self.split(0, 1)
    }

    /// `lastPerson0(e)` of docs/src/reference/nexmark-generator.md#id-assignment: the newest base-0
    /// person id at event id `e`.
    #[inline]
    pub fn last_person0(&self, e: u64) -> i64 {
        self.slot(e).last_person0
    }

    /// `lastAuction0(e)` of docs/src/reference/nexmark-generator.md#id-assignment: the newest
    /// base-0 auction id at event id `e` (−1 before
    /// the first auction).
    #[inline]
    pub fn last_auction0(&self, e: u64) -> i64 {
        self.slot(e).last_auction0
    }

    /// `event_type` (0/1/2) of the event with id `e`: `e mod total` below `person_proportion`
    /// is a person, below `person + auction` an auction, otherwise a bid.
    #[inline]
    pub fn event_type_for_id(&self, e: u64) -> u8 {
        self.slot(e).kind
    }

    /// Kind, `lastPerson0` and `lastAuction0` of event id `e`, from one division.
    #[inline]
    fn slot(&self, e: u64) -> Slot {
        let (epoch, offset) = (e / self.total_proportion, e % self.total_proportion);
        let (p, a) = (self.person_proportion, self.auction_proportion);
        let persons = epoch.wrapping_mul(p) as i64;
        let auctions = epoch.wrapping_mul(a) as i64;
        if offset < p {
            Slot {
                kind: PERSON_TYPE,
                last_person0: persons.wrapping_add(offset as i64),
                last_auction0: auctions.wrapping_sub(1),
            }
        } else if offset < p + a {
            Slot {
                kind: AUCTION_TYPE,
                last_person0: persons.wrapping_add(p as i64 - 1),
                last_auction0: auctions.wrapping_add((offset - p) as i64),
            }
        } else {
            Slot {
                kind: BID_TYPE,
                last_person0: persons.wrapping_add(p as i64 - 1),
                last_auction0: auctions.wrapping_add(a as i64 - 1),
            }
        }
    }

    fn timeline(&self, splits: u64) -> Timeline {
        if self.config.flink_compat {
            Timeline::Flink {
                base: self.config.base_time_ms,
                delay_us: 1_000_000.0 / self.config.rate as f64 * splits as f64,
            }
        } else {
            Timeline::Exact {
                base: self.config.base_time_ms,
                rate: self.config.rate,
            }
        }
    }

    /// Builds the event with id `e`, whose event number (for timestamps) is `number`.
    #[inline]
    fn make(&self, e: u64, number: u64, timeline: Timeline) -> Event {
        let ts = timeline.ts(number);
        let slot = self.slot(e);
        let mut rng = Rng::for_event(e);
        match slot.kind {
            PERSON_TYPE => Event::Person(self.person(slot, ts, &mut rng)),
            AUCTION_TYPE => Event::Auction(self.auction(slot, number, ts, timeline, &mut rng)),
            _ => Event::Bid(self.bid(slot, ts, &mut rng)),
        }
    }

    /// Random base-0 person: one of the newest `num_active_people` plus a lead of 10.
    #[inline]
    fn random_person0(&self, slot: Slot, rng: &mut Rng) -> i64 {
        let np = slot.last_person0.wrapping_add(1);
        let active = (np.max(0) as u64).min(self.config.num_active_people);
        np.wrapping_sub(active as i64)
            .wrapping_add(rng.below(active + PERSON_ID_LEAD) as i64)
    }

    /// Random base-0 auction: one of the newest `num_in_flight_auctions + 1` plus a lead of 10.
    #[inline]
    fn random_auction0(&self, slot: Slot, rng: &mut Rng) -> i64 {
        let hi = slot.last_auction0;
        let lo = hi
            .saturating_sub(self.config.num_in_flight_auctions as i64)
            .max(0);
        let span = (hi.wrapping_sub(lo).max(-1) + 1) as u64 + AUCTION_ID_LEAD;
        lo.wrapping_add(rng.below(span) as i64)
    }

    /// Draw order: name (2), email, card (4), city, state, extra.
    fn person(&self, slot: Slot, ts: i64, rng: &mut Rng) -> Person {
        let id = slot.last_person0.wrapping_add(FIRST_PERSON_ID);

        let first = PERSON_FIRST_NAMES[rng.below(PERSON_FIRST_NAMES.len() as u64) as usize];
        let last = PERSON_LAST_NAMES[rng.below(PERSON_LAST_NAMES.len() as u64) as usize];
        let mut name = String::with_capacity(first.len() + 1 + last.len());
        name.push_str(first);
        name.push(' ');
        name.push_str(last);

        let mut email_address = String::with_capacity(16);
        push_string(rng, &mut email_address, 7, b' ');
        email_address.push('@');
        push_string(rng, &mut email_address, 5, b' ');
        email_address.push_str(".com");

        let mut card = [b' '; 19];
        for group in 0..4 {
            let mut v = rng.below(10_000) as u16;
            for i in (0..4).rev() {
                card[group * 5 + i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        }
        let credit_card = String::from_utf8_lossy(&card).into_owned();

        let city = Text::Borrowed(US_CITIES[rng.below(US_CITIES.len() as u64) as usize]);
        let state = Text::Borrowed(US_STATES[rng.below(US_STATES.len() as u64) as usize]);

        let cur =
            8 + name.len() + email_address.len() + credit_card.len() + city.len() + state.len();
        let extra = next_extra(rng, self.tables, cur as u64, self.config.avg_person_bytes);
        Person {
            id,
            name,
            email_address,
            credit_card,
            city,
            state,
            date_time: ts,
            extra,
        }
    }

    /// Draw order: hot-seller coin [+ person draw], category, initialBid, expires, name, desc,
    /// reserve, extra.
    fn auction(
        &self,
        slot: Slot,
        number: u64,
        ts: i64,
        timeline: Timeline,
        rng: &mut Rng,
    ) -> Auction {
        let id = slot.last_auction0.wrapping_add(FIRST_AUCTION_ID);

        let seller0 = if rng.below(self.config.hot_sellers_ratio) > 0 {
            (slot.last_person0 / HOT_BLOCK) * HOT_BLOCK
        } else {
            self.random_person0(slot, rng)
        };
        let seller = seller0.wrapping_add(FIRST_PERSON_ID);
        let category = FIRST_CATEGORY_ID + rng.below(NUM_CATEGORIES) as i64;
        let initial_bid = price(rng, self.tables);

        let horizon = timeline
            .ts(number.saturating_add(self.events_for_auctions))
            .saturating_sub(ts);
        let span = horizon.saturating_mul(2).max(1) as u64;
        let expires = ts.saturating_add(1 + rng.below(span) as i64);

        let item_name = next_string(rng, 20);
        let description = next_string(rng, 100);
        let reserve = initial_bid + price(rng, self.tables);
        let cur = 8 + item_name.len() + description.len() + 40;
        let extra = next_extra(rng, self.tables, cur as u64, self.config.avg_auction_bytes);
        Auction {
            id,
            item_name,
            description,
            initial_bid,
            reserve,
            date_time: ts,
            expires,
            seller,
            category,
            extra,
        }
    }

    /// Draw order: hot-auction coin [+ auction draw], hot-bidder coin [+ person draw], price,
    /// channel coin, hot index | channel number, extra.
    #[inline]
    fn bid(&self, slot: Slot, ts: i64, rng: &mut Rng) -> Bid {
        let auction0 = if rng.below(self.config.hot_auction_ratio) > 0 {
            (slot.last_auction0 / HOT_BLOCK) * HOT_BLOCK
        } else {
            self.random_auction0(slot, rng)
        };
        let bidder0 = if rng.below(self.config.hot_bidders_ratio) > 0 {
            (slot.last_person0 / HOT_BLOCK) * HOT_BLOCK + 1
        } else {
            self.random_person0(slot, rng)
        };
        let price = price(rng, self.tables);
        let (channel, url) = if rng.below(HOT_CHANNELS_RATIO) > 0 {
            let i = rng.below(HOT_CHANNELS.len() as u64) as usize;
            (HOT_CHANNELS[i], self.tables.hot_urls[i].as_str())
        } else {
            let k = rng.below(CHANNELS_NUMBER as u64) as usize;
            (
                self.tables.channel_names[k].as_str(),
                self.tables.channel_urls[k].as_str(),
            )
        };
        let extra = next_extra(rng, self.tables, 32, self.config.avg_bid_bytes);
        Bid {
            auction: auction0.wrapping_add(FIRST_AUCTION_ID),
            bidder: bidder0.wrapping_add(self.bidder_offset),
            price,
            channel: Text::Borrowed(channel),
            url: Text::Borrowed(url),
            date_time: ts,
            extra,
        }
    }
}

/// One of `n` parallel generators (see [`NexmarkGenerator::split`]); yields `(event_id, event)`.
///
/// Owns a clone of the generator, so it is `Send + 'static` and can be moved to a worker thread.
#[derive(Debug, Clone)]
pub struct Split {
    gen: NexmarkGenerator,
    timeline: Timeline,
    /// Event number of the next event.
    next_number: u64,
    /// `event_id − event_number` (0 in reference mode, Flink's split `firstEventId` otherwise).
    id_minus_number: u64,
    step: u64,
    /// Events left; `None` = unbounded.
    remaining: Option<u64>,
}

impl Split {
    /// Event id of the next event this split will yield (if any remain).
    pub fn peek_id(&self) -> u64 {
        self.id_minus_number.wrapping_add(self.next_number)
    }

    /// Skips the next `n` events without generating them (O(1)): where a restored source
    /// resumes.
    pub fn skip_events(&mut self, n: u64) {
        let n = match self.remaining {
            Some(r) => n.min(r),
            None => n,
        };
        if let Some(r) = &mut self.remaining {
            *r -= n;
        }
        self.next_number = self.next_number.saturating_add(n.saturating_mul(self.step));
    }
}

impl Iterator for Split {
    type Item = (u64, Event);

    #[inline]
    fn next(&mut self) -> Option<(u64, Event)> {
        match &mut self.remaining {
            Some(0) => return None,
            Some(r) => *r -= 1,
            None => {}
        }
        let number = self.next_number;
        let id = self.id_minus_number.wrapping_add(number);
        match number.checked_add(self.step) {
            Some(next) => self.next_number = next,
            // Unbounded reference stream reached u64::MAX: stop after this event.
            None => self.remaining = Some(0),
        }
        Some((id, self.gen.make(id, number, self.timeline)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.remaining {
            Some(r) => {
                let r = usize::try_from(r).unwrap_or(usize::MAX);
                (r, Some(r))
            }
            None => (usize::MAX, None),
        }
    }
}

impl FusedIterator for Split {}

#[cfg(test)]
mod skip_tests {
    use super::*;

    #[test]
    fn skipping_equals_consuming() {
        let g = NexmarkGenerator::new(GeneratorConfig {
            events: 1_000,
            ..GeneratorConfig::default()
        })
        .unwrap();
        let mut a = g.split(1, 3);
        let mut b = g.split(1, 3);
        a.skip_events(40);
        for _ in 0..40 {
            b.next();
        }
        assert_eq!(a.collect::<Vec<_>>(), b.collect::<Vec<_>>());
        let mut c = g.split(0, 1);
        c.skip_events(5_000);
        assert_eq!(c.next(), None);
    }
}
