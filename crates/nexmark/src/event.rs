//! The three Nexmark event kinds (docs/src/reference/nexmark-generator.md#event-kinds).

use std::borrow::Cow;

/// Text that usually comes verbatim from a process-wide table of the generator (the `extra`
/// buffer, the channel URL cache, the city and state lists). Generated events borrow it
/// (`Cow::Borrowed`, no allocation, free to clone); events built elsewhere may own their text.
pub type Text = Cow<'static, str>;

/// `event_type` of a [`Person`].
pub const PERSON_TYPE: u8 = 0;
/// `event_type` of an [`Auction`].
pub const AUCTION_TYPE: u8 = 1;
/// `event_type` of a [`Bid`].
pub const BID_TYPE: u8 = 2;

/// A new person (seller or bidder).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Person {
    /// Person id (dense, from 1000).
    pub id: i64,
    /// `"<first> <last>"`.
    pub name: String,
    /// `<s>@<s>.com`.
    pub email_address: String,
    /// Four space-separated groups of four digits.
    pub credit_card: String,
    /// One of ten US cities.
    pub city: Text,
    /// One of `AZ CA ID OR WA WY` (upper case).
    pub state: Text,
    /// Event time, ms since the Unix epoch (UTC).
    pub date_time: i64,
    /// Padding to the configured average size.
    pub extra: Text,
}

/// A new auction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Auction {
    /// Auction id (dense, from 1000).
    pub id: i64,
    /// Short random text (≤ 19 chars).
    pub item_name: String,
    /// Random text (≤ 99 chars).
    pub description: String,
    /// Opening price in cents.
    pub initial_bid: i64,
    /// Reserve price in cents (`> initial_bid`).
    pub reserve: i64,
    /// Event time, ms since the Unix epoch (UTC).
    pub date_time: i64,
    /// Closing time, ms since the Unix epoch (`> date_time`).
    pub expires: i64,
    /// Seller, a [`Person::id`].
    pub seller: i64,
    /// Category, 10..=14.
    pub category: i64,
    /// Padding to the configured average size.
    pub extra: Text,
}

/// A bid on an auction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bid {
    /// Target auction, an [`Auction::id`].
    pub auction: i64,
    /// Bidder, a [`Person::id`].
    pub bidder: i64,
    /// Price in cents, in `[100, 10^8)`.
    pub price: i64,
    /// `Google`, `Facebook`, `Baidu`, `Apple` or `channel-<k>`.
    pub channel: Text,
    /// `https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1[&channel_id=<n>]`.
    pub url: Text,
    /// Event time, ms since the Unix epoch (UTC).
    pub date_time: i64,
    /// Padding to the configured average size.
    pub extra: Text,
}

/// One Nexmark event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Event {
    /// `event_type` 0.
    Person(Person),
    /// `event_type` 1.
    Auction(Auction),
    /// `event_type` 2.
    Bid(Bid),
}

impl Event {
    /// The event time (`dateTime`), ms since the Unix epoch.
    #[inline]
    pub fn timestamp(&self) -> i64 {
        match self {
            Event::Person(p) => p.date_time,
            Event::Auction(a) => a.date_time,
            Event::Bid(b) => b.date_time,
        }
    }

    /// Flink's `event_type`: 0 = person, 1 = auction, 2 = bid.
    #[inline]
    pub fn event_type(&self) -> u8 {
        match self {
            Event::Person(_) => PERSON_TYPE,
            Event::Auction(_) => AUCTION_TYPE,
            Event::Bid(_) => BID_TYPE,
        }
    }

    /// The `extra` padding field of whichever kind this is.
    #[inline]
    pub fn extra(&self) -> &str {
        match self {
            Event::Person(p) => &p.extra,
            Event::Auction(a) => &a.extra,
            Event::Bid(b) => &b.extra,
        }
    }
}
