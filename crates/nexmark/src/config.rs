//! Generator configuration (docs/src/reference/nexmark-generator.md#configuration) and its
//! validation.

use std::fmt;

/// Beam's and RisingWave's fixed base time: 2015-07-15T00:00:00Z, in ms since the Unix epoch.
pub const DEFAULT_BASE_TIME_MS: i64 = 1_436_918_400_000;

/// The benchmark's event rate (V1): 10 M events per second of event time.
pub const DEFAULT_RATE: u64 = 10_000_000;

/// Largest accepted `avg_*_bytes`. The `extra` field is sliced from a 1 MiB buffer and is at most
/// ~1.2 × its average long, so averages are capped at half the buffer.
pub const MAX_AVG_BYTES: u64 = 512 * 1024;

/// Largest accepted sum of the three proportions.
pub const MAX_TOTAL_PROPORTION: u64 = 1_000_000;

/// Largest accepted `num_in_flight_auctions` / `num_active_people`.
pub const MAX_POOL_SIZE: u64 = u32::MAX as u64;

/// Parameters of the generator (docs/src/reference/nexmark-generator.md#configuration). [`Default`]
/// gives the benchmark defaults with the
/// reference-mode base time and a 10 M ev/s rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Number of events to generate in total (over all splits); `0` means unbounded.
    pub events: u64,
    /// Events per second of *event time* (sets timestamp spacing only; emission is as fast as
    /// possible). Must be ≥ 1.
    pub rate: u64,
    /// Timestamp of event number 0 (reference mode), in ms since the Unix epoch.
    pub base_time_ms: i64,
    /// Persons per block of `total_proportion()` events (≥ 1).
    pub person_proportion: u64,
    /// Auctions per block (≥ 1).
    pub auction_proportion: u64,
    /// Bids per block (may be 0).
    pub bid_proportion: u64,
    /// A bid targets the hot auction with probability `1 − 1/hot_auction_ratio` (≥ 1).
    pub hot_auction_ratio: u64,
    /// A bid comes from the hot bidder with probability `1 − 1/hot_bidders_ratio` (≥ 1).
    pub hot_bidders_ratio: u64,
    /// An auction is sold by the hot seller with probability `1 − 1/hot_sellers_ratio` (≥ 1).
    pub hot_sellers_ratio: u64,
    /// How many recent auctions a random bid target is drawn from (plus a lead of 10).
    pub num_in_flight_auctions: u64,
    /// How many recent persons a random seller/bidder is drawn from (plus a lead of 10).
    pub num_active_people: u64,
    /// Average person size in bytes (sizes `extra`).
    pub avg_person_bytes: u64,
    /// Average auction size in bytes (sizes `extra`).
    pub avg_auction_bytes: u64,
    /// Average bid size in bytes (sizes `extra`).
    pub avg_bid_bytes: u64,
    /// Flink compatibility (docs/src/reference/nexmark-generator.md#reference-mode): `firstEventId
    /// = firstEventNumber = 1`,
    /// bidder ids offset by 2000 instead of 1000, Flink's id-range split with per-split
    /// timelines and Flink's floating-point timestamp formula. Values stay seeded by event id.
    pub flink_compat: bool,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            events: 0,
            rate: DEFAULT_RATE,
            base_time_ms: DEFAULT_BASE_TIME_MS,
            person_proportion: 1,
            auction_proportion: 3,
            bid_proportion: 46,
            hot_auction_ratio: 2,
            hot_bidders_ratio: 4,
            hot_sellers_ratio: 4,
            num_in_flight_auctions: 100,
            num_active_people: 1000,
            avg_person_bytes: 200,
            avg_auction_bytes: 500,
            avg_bid_bytes: 100,
            flink_compat: false,
        }
    }
}

impl GeneratorConfig {
    /// `person_proportion + auction_proportion + bid_proportion` (50 by default). Saturates;
    /// [`validate`](Self::validate) rejects totals above [`MAX_TOTAL_PROPORTION`].
    pub fn total_proportion(&self) -> u64 {
        self.person_proportion
            .saturating_add(self.auction_proportion)
            .saturating_add(self.bid_proportion)
    }

    /// Checks every parameter; the generator only accepts a configuration that passes.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn nonzero(field: &'static str, value: u64) -> Result<(), ConfigError> {
            if value == 0 {
                Err(ConfigError::Zero { field })
            } else {
                Ok(())
            }
        }
        fn at_most(field: &'static str, value: u64, max: u64) -> Result<(), ConfigError> {
            if value > max {
                Err(ConfigError::TooLarge { field, value, max })
            } else {
                Ok(())
            }
        }
        nonzero("rate", self.rate)?;
        nonzero("person_proportion", self.person_proportion)?;
        nonzero("auction_proportion", self.auction_proportion)?;
        at_most(
            "total_proportion",
            self.total_proportion(),
            MAX_TOTAL_PROPORTION,
        )?;
        nonzero("hot_auction_ratio", self.hot_auction_ratio)?;
        nonzero("hot_bidders_ratio", self.hot_bidders_ratio)?;
        nonzero("hot_sellers_ratio", self.hot_sellers_ratio)?;
        at_most("hot_auction_ratio", self.hot_auction_ratio, MAX_POOL_SIZE)?;
        at_most("hot_bidders_ratio", self.hot_bidders_ratio, MAX_POOL_SIZE)?;
        at_most("hot_sellers_ratio", self.hot_sellers_ratio, MAX_POOL_SIZE)?;
        at_most(
            "num_in_flight_auctions",
            self.num_in_flight_auctions,
            MAX_POOL_SIZE,
        )?;
        at_most("num_active_people", self.num_active_people, MAX_POOL_SIZE)?;
        at_most("avg_person_bytes", self.avg_person_bytes, MAX_AVG_BYTES)?;
        at_most("avg_auction_bytes", self.avg_auction_bytes, MAX_AVG_BYTES)?;
        at_most("avg_bid_bytes", self.avg_bid_bytes, MAX_AVG_BYTES)?;
        Ok(())
    }
}

/// Why a [`GeneratorConfig`] was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A parameter that must be at least 1 is 0.
    Zero {
        /// The offending field.
        field: &'static str,
    },
    /// A parameter exceeds its supported maximum.
    TooLarge {
        /// The offending field (`total_proportion` for the sum of the proportions).
        field: &'static str,
        /// Its value.
        value: u64,
        /// The largest accepted value.
        max: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Zero { field } => {
                write!(
                    f,
                    "invalid Nexmark generator config: `{field}` must be at least 1"
                )
            }
            ConfigError::TooLarge { field, value, max } => write!(
                f,
                "invalid Nexmark generator config: `{field}` = {value} exceeds the maximum {max}"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
