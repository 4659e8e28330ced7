//! One-table CSV export (docs/src/reference/nexmark-generator.md#correctness, step 1), the ground
//! truth DuckDB reads.
//!
//! # Format
//!
//! * UTF-8 (in practice ASCII), `,` as delimiter, `\n` (LF) as record terminator, one header
//!   line ([`CSV_HEADER`]) followed by one record per event, in the order given.
//! * 23 columns ([`CSV_COLUMNS`]): `event_id`, `event_type` (0 person, 1 auction, 2 bid), `ts`
//!   (event time in integer ms since the Unix epoch, UTC), then the person, auction and bid
//!   columns, and the shared `extra`. All timestamps (`ts`, `auction_expires`) are integer ms.
//! * Columns that do not belong to the record's kind are **empty and unquoted** (read as NULL).
//! * String fields follow Sluice's one CSV rule (`sluice_csv`, RFC 4180): a field is enclosed in
//!   double quotes when it is empty, contains `,`, `"`, CR or LF, or starts or ends with a space
//!   or tab; a `"` inside a quoted field is doubled. So an **empty string** is written as `""`
//!   and stays distinguishable from NULL.
//!   Generated values never need quotes except that rare empty string (a `nextString` of only
//!   spaces trims to "").
//!
//! # Reading with DuckDB
//!
//! Pass the dialect and the schema explicitly: DuckDB's sniffer may pick no quote character
//! when its sample contains none, and may mistype the sparse per-kind columns. Keep
//! `allow_quoted_nulls = false` so that `""` is read as an empty string rather than NULL:
//!
//! ```sql
//! CREATE TABLE events AS SELECT * FROM read_csv('events.csv',
//!     header = true, delim = ',', quote = '"', escape = '"', allow_quoted_nulls = false,
//!     columns = {
//!       'event_id': 'UBIGINT', 'event_type': 'INTEGER', 'ts': 'BIGINT',
//!       'person_id': 'BIGINT', 'person_name': 'VARCHAR', 'person_email': 'VARCHAR',
//!       'person_credit_card': 'VARCHAR', 'person_city': 'VARCHAR', 'person_state': 'VARCHAR',
//!       'auction_id': 'BIGINT', 'auction_item_name': 'VARCHAR',
//!       'auction_description': 'VARCHAR', 'auction_initial_bid': 'BIGINT',
//!       'auction_reserve': 'BIGINT', 'auction_expires': 'BIGINT', 'auction_seller': 'BIGINT',
//!       'auction_category': 'BIGINT', 'bid_auction': 'BIGINT', 'bid_bidder': 'BIGINT',
//!       'bid_price': 'BIGINT', 'bid_channel': 'VARCHAR', 'bid_url': 'VARCHAR',
//!       'extra': 'VARCHAR'});
//! -- event time as TIMESTAMP (UTC): epoch_ms(ts)
//! ```

use std::io::{self, Write};

use crate::event::Event;

/// The column names, in file order.
pub const CSV_COLUMNS: [&str; 23] = [
    "event_id",
    "event_type",
    "ts",
    "person_id",
    "person_name",
    "person_email",
    "person_credit_card",
    "person_city",
    "person_state",
    "auction_id",
    "auction_item_name",
    "auction_description",
    "auction_initial_bid",
    "auction_reserve",
    "auction_expires",
    "auction_seller",
    "auction_category",
    "bid_auction",
    "bid_bidder",
    "bid_price",
    "bid_channel",
    "bid_url",
    "extra",
];

/// The header line (without its `\n`): [`CSV_COLUMNS`] joined with commas.
pub const CSV_HEADER: &str = "event_id,event_type,ts,person_id,person_name,person_email,\
person_credit_card,person_city,person_state,auction_id,auction_item_name,auction_description,\
auction_initial_bid,auction_reserve,auction_expires,auction_seller,auction_category,\
bid_auction,bid_bidder,bid_price,bid_channel,bid_url,extra";

/// Bytes buffered before they are handed to the writer.
const FLUSH_AT: usize = 1 << 16;

/// Writes the header and one record per `(event_id, event)` to `w` (see the module docs for the
/// format) and flushes it. Output is buffered internally, so `w` need not be a `BufWriter`.
/// Returns the number of records written (excluding the header).
pub fn write_csv<W: Write>(
    events: impl IntoIterator<Item = (u64, Event)>,
    mut w: W,
) -> io::Result<u64> {
    let mut buf = Vec::with_capacity(FLUSH_AT + 4096);
    buf.extend_from_slice(CSV_HEADER.as_bytes());
    buf.push(b'\n');
    let mut rows = 0u64;
    for (id, event) in events {
        push_record(&mut buf, id, &event);
        rows += 1;
        if buf.len() >= FLUSH_AT {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    w.write_all(&buf)?;
    w.flush()?;
    Ok(rows)
}

/// Appends one record (with its `\n`) for `event` with id `id` to `buf`.
pub fn push_record(buf: &mut Vec<u8>, id: u64, event: &Event) {
    push_u64(buf, id);
    buf.push(b',');
    push_u64(buf, u64::from(event.event_type()));
    buf.push(b',');
    push_i64(buf, event.timestamp());
    match event {
        Event::Person(p) => {
            buf.push(b',');
            push_i64(buf, p.id);
            for s in [
                p.name.as_str(),
                &p.email_address,
                &p.credit_card,
                &p.city,
                &p.state,
            ] {
                buf.push(b',');
                push_str(buf, s);
            }
            buf.extend_from_slice(b",,,,,,,,"); // 8 auction columns
            buf.extend_from_slice(b",,,,,"); // 5 bid columns
        }
        Event::Auction(a) => {
            buf.extend_from_slice(b",,,,,,"); // 6 person columns
            buf.push(b',');
            push_i64(buf, a.id);
            buf.push(b',');
            push_str(buf, &a.item_name);
            buf.push(b',');
            push_str(buf, &a.description);
            for v in [a.initial_bid, a.reserve, a.expires, a.seller, a.category] {
                buf.push(b',');
                push_i64(buf, v);
            }
            buf.extend_from_slice(b",,,,,"); // 5 bid columns
        }
        Event::Bid(b) => {
            buf.extend_from_slice(b",,,,,,"); // 6 person columns
            buf.extend_from_slice(b",,,,,,,,"); // 8 auction columns
            for v in [b.auction, b.bidder, b.price] {
                buf.push(b',');
                push_i64(buf, v);
            }
            buf.push(b',');
            push_str(buf, &b.channel);
            buf.push(b',');
            push_str(buf, &b.url);
        }
    }
    buf.push(b',');
    push_str(buf, event.extra());
    buf.push(b'\n');
}

/// Appends `s` as one field under Sluice's CSV rule ([`sluice_csv`]: RFC 4180, quoted only
/// when needed, `""` for the empty string).
#[inline]
fn push_str(buf: &mut Vec<u8>, s: &str) {
    sluice_csv::push_field_bytes(buf, s)
}

fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

fn push_i64(buf: &mut Vec<u8>, v: i64) {
    if v < 0 {
        buf.push(b'-');
    }
    push_u64(buf, v.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_matches_columns() {
        assert_eq!(CSV_HEADER, CSV_COLUMNS.join(","));
    }

    #[test]
    fn integers() {
        let mut b = Vec::new();
        for v in [0i64, 7, -7, 1_436_918_400_000, i64::MIN, i64::MAX] {
            b.clear();
            push_i64(&mut b, v);
            assert_eq!(String::from_utf8(b.clone()).unwrap(), v.to_string());
        }
        b.clear();
        push_u64(&mut b, u64::MAX);
        assert_eq!(String::from_utf8(b).unwrap(), u64::MAX.to_string());
    }

    #[test]
    fn quoting() {
        let q = |s: &str| {
            let mut b = Vec::new();
            push_str(&mut b, s);
            String::from_utf8(b).unwrap()
        };
        assert_eq!(q("plain text"), "plain text");
        assert_eq!(q(""), "\"\"");
        assert_eq!(q("a,b"), "\"a,b\"");
        assert_eq!(q("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(q("two\nlines"), "\"two\nlines\"");
        assert_eq!(q("cr\r"), "\"cr\r\"");
        assert_eq!(q(" lead"), "\" lead\"");
        assert_eq!(q("trail\t"), "\"trail\t\"");
    }
}
