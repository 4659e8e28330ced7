//! A deterministic Nexmark event generator: the *reference mode* of the Nexmark specification
//! (docs/src/reference/nexmark-generator.md#reference-mode), plus a one-table CSV export for
//! checking query results
//! against DuckDB (#correctness there).
//!
//! # The stream
//!
//! Nexmark models an online auction site as one stream of three event kinds ([`Event`]):
//! new users ([`Person`]), new auctions ([`Auction`]) and [`Bid`]s. Events are numbered
//! `n = 0, 1, 2, …`. In every block of 50 event ids the first is a person, the next three are
//! auctions and the remaining 46 are bids (proportions 1/3/46 of [`GeneratorConfig`]). Person and
//! auction ids are dense and start at 1000; bids refer to recent auctions and persons, with
//! strong skew: about half of all bids target the current *hot* auction, three quarters come
//! from the hot bidder, three quarters of auctions are sold by the hot seller, and four hot
//! channels carry half of the bids.
//!
//! # Determinism (reference mode)
//!
//! [`NexmarkGenerator::event`] is a pure function of the configuration and the event number:
//!
//! * event id = event number (`firstEventId = firstEventNumber = 0`, no out-of-order groups);
//! * ids follow the closed formulas `lastPerson0` / `lastAuction0`
//!   (docs/src/reference/nexmark-generator.md#id-assignment);
//! * every random field comes from a small PRNG seeded with the event id and a fixed salt
//!   (SplitMix64 seeding, wyrand draws; see the `rng` module source) in the documented draw order;
//!   the hot URLs, the 10 000-entry channel URL cache and the 1 MiB buffer `extra` is cut from
//!   are built once from fixed seeds; prices use a libm-free `10^x`, so output is bit-identical
//!   on every platform;
//! * timestamps follow one global timeline, `ts(n) = base_time_ms + ⌊n·1000 / rate⌋`, computed
//!   in integer arithmetic (default base 2015-07-15T00:00:00Z, rate 10 M events/s).
//!
//! Parallel sources use [`NexmarkGenerator::split`]: generator `k` of `N` yields the event
//! numbers `≡ k (mod N)`, so the union over all `k` is the same stream for every `N` and the hot
//! keys are global. Each [`Split`] owns what it needs and can move to its own thread.
//!
//! With [`GeneratorConfig::flink_compat`] the generator instead mimics the Flink suite's id
//! layout: event ids start at 2 (`firstEventId = firstEventNumber = 1`), bidder ids carry
//! Flink's double offset (+2000), timestamps use Flink's floating-point formula, and `split`
//! hands out contiguous id ranges with per-split timelines. Field values are still seeded by
//! event id (Flink itself is not reproducible).
//!
//! # Cost
//!
//! Text that comes verbatim from a fixed table (bid channel and URL, person city and state, and
//! every `extra`, cut from the 1 MiB buffer) is a [`Text`] (`Cow<'static, str>`) that borrows
//! the table. A bid therefore costs no heap allocation at all and clones for free; only the
//! per-event random strings of persons and auctions are owned `String`s. No formatting
//! machinery runs per event. `examples/gen_speed.rs` measures the throughput.
//!
//! # CSV
//!
//! [`write_csv`] writes any `(event_id, event)` iterator as one RFC 4180 table with the columns
//! [`CSV_COLUMNS`]; see the [`csv`] module for the exact dialect and a DuckDB `read_csv` call.
//!
//! # Example
//!
//! ```
//! use sluice_nexmark::{write_csv, Event, GeneratorConfig, NexmarkGenerator};
//!
//! let config = GeneratorConfig { events: 1_000, rate: 10_000, ..GeneratorConfig::default() };
//! let generator = NexmarkGenerator::new(config).unwrap();
//!
//! // Event 0 is person 1000, event 1 is auction 1000, event 4 the first bid.
//! match generator.event(0) {
//!     Event::Person(p) => assert_eq!(p.id, 1000),
//!     other => panic!("expected a person, got {other:?}"),
//! }
//! assert_eq!(generator.event(1).event_type(), 1);
//! assert_eq!(generator.event(4).event_type(), 2);
//! // 10 000 events per second of event time: event 5 000 is 500 ms after the base time.
//! assert_eq!(generator.event(5_000).timestamp(), 1_436_918_400_000 + 500);
//!
//! // Two parallel generators together yield exactly the single-generator stream.
//! let mut merged: Vec<(u64, Event)> =
//!     generator.split(0, 2).chain(generator.split(1, 2)).collect();
//! merged.sort_by_key(|(id, _)| *id);
//! assert!(merged.iter().cloned().eq(generator.iter()));
//!
//! // Export as CSV.
//! let mut out = Vec::new();
//! let rows = write_csv(generator.iter().take(3), &mut out).unwrap();
//! assert_eq!(rows, 3);
//! assert!(String::from_utf8(out).unwrap().starts_with("event_id,event_type,ts,person_id,"));
//! ```
#![warn(missing_docs)]

mod config;
pub mod csv;
mod event;
mod generator;
mod rng;
mod values;

pub use config::{
    ConfigError, GeneratorConfig, DEFAULT_BASE_TIME_MS, DEFAULT_RATE, MAX_AVG_BYTES, MAX_POOL_SIZE,
    MAX_TOTAL_PROPORTION,
};
pub use csv::{write_csv, CSV_COLUMNS, CSV_HEADER};
pub use event::{Auction, Bid, Event, Person, Text, AUCTION_TYPE, BID_TYPE, PERSON_TYPE};
pub use generator::{
    NexmarkGenerator, Split, AUCTION_ID_LEAD, FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID,
    HOT_BLOCK, HOT_CHANNELS_RATIO, NUM_CATEGORIES, PERSON_ID_LEAD,
};
pub use values::{CHANNELS_NUMBER, HOT_CHANNELS};
