//! CSV export: header, layout and RFC 4180 quoting, checked with an independent parser.

use sluice_nexmark::{
    write_csv, Auction, Bid, Event, GeneratorConfig, NexmarkGenerator, Person, CSV_COLUMNS,
    CSV_HEADER,
};

/// A field as parsed: `None` for an empty unquoted field (NULL), `Some` otherwise.
type Field = Option<String>;

/// Minimal RFC 4180 parser (LF or CRLF records; `""` escapes a quote inside quotes).
fn parse(text: &str) -> Vec<Vec<Field>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut chars = text.chars().peekable();
    let mut field = String::new();
    let mut quoted = false;
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        if at_field_start && c == '"' {
            quoted = true;
            at_field_start = false;
            // Read until the closing quote.
            loop {
                match chars.next().expect("unterminated quoted field") {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    '"' => break,
                    other => field.push(other),
                }
            }
            continue;
        }
        at_field_start = false;
        match c {
            ',' | '\n' => {
                let value = std::mem::take(&mut field);
                row.push(if value.is_empty() && !quoted {
                    None
                } else {
                    Some(value)
                });
                quoted = false;
                at_field_start = true;
                if c == '\n' {
                    rows.push(std::mem::take(&mut row));
                }
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            other => {
                assert!(!quoted, "text after closing quote");
                field.push(other);
            }
        }
    }
    assert!(row.is_empty() && field.is_empty(), "missing final newline");
    rows
}

fn to_csv(events: Vec<(u64, Event)>) -> (u64, String) {
    let mut out = Vec::new();
    let n = write_csv(events, &mut out).unwrap();
    (n, String::from_utf8(out).unwrap())
}

fn s(v: &str) -> Field {
    Some(v.to_owned())
}

#[test]
fn header_line() {
    let (n, text) = to_csv(Vec::new());
    assert_eq!(n, 0);
    assert_eq!(text, format!("{CSV_HEADER}\n"));
    assert_eq!(
        CSV_HEADER,
        "event_id,event_type,ts,person_id,person_name,person_email,person_credit_card,\
         person_city,person_state,auction_id,auction_item_name,auction_description,\
         auction_initial_bid,auction_reserve,auction_expires,auction_seller,auction_category,\
         bid_auction,bid_bidder,bid_price,bid_channel,bid_url,extra"
    );
    assert_eq!(CSV_COLUMNS.len(), 23);
}

#[test]
fn quoting_round_trips() {
    let person = Person {
        id: 1000,
        name: "Doe, \"JD\" John".into(),
        email_address: "a@b.com".into(),
        credit_card: "0001 0002 0003 0004".into(),
        city: "Line\nBreak".into(),
        state: "".into(),
        date_time: -5,
        extra: " padded ".into(),
    };
    let auction = Auction {
        id: 1001,
        item_name: "\"".into(),
        description: "comma,separated".into(),
        initial_bid: 100,
        reserve: 250,
        date_time: 1_436_918_400_000,
        expires: 1_436_918_400_007,
        seller: 1000,
        category: 12,
        extra: "".into(),
    };
    let bid = Bid {
        auction: 1001,
        bidder: 1001,
        price: 99_999_999,
        channel: "Google".into(),
        url: "https://www.nexmark.com/a_b/cd/efg/item.htm?query=1&channel_id=-2147483648".into(),
        date_time: 1_436_918_400_001,
        extra: "xyz".into(),
    };
    let events = vec![
        (0, Event::Person(person)),
        (1, Event::Auction(auction)),
        (7, Event::Bid(bid)),
    ];
    let (n, text) = to_csv(events);
    assert_eq!(n, 3);
    let lines: Vec<&str> = text.split('\n').collect();
    // The person record spans two lines because of the quoted newline in `city`.
    assert_eq!(
        lines[1],
        "0,0,-5,1000,\"Doe, \"\"JD\"\" John\",a@b.com,0001 0002 0003 0004,\"Line"
    );
    assert_eq!(lines[2], "Break\",\"\",,,,,,,,,,,,,,\" padded \"");
    assert_eq!(
        lines[3],
        "1,1,1436918400000,,,,,,,1001,\"\"\"\",\"comma,separated\",100,250,1436918400007,1000,12,\
         ,,,,,\"\""
    );

    let rows = parse(&text);
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r.len() == 23));
    let header: Vec<Field> = CSV_COLUMNS.iter().map(|c| s(c)).collect();
    assert_eq!(rows[0], header);
    let none = |k: usize| vec![None; k];

    let mut want = vec![s("0"), s("0"), s("-5"), s("1000"), s("Doe, \"JD\" John")];
    want.extend([
        s("a@b.com"),
        s("0001 0002 0003 0004"),
        s("Line\nBreak"),
        s(""),
    ]);
    want.extend(none(13));
    want.push(s(" padded "));
    assert_eq!(rows[1], want);

    let mut want = vec![s("1"), s("1"), s("1436918400000")];
    want.extend(none(6));
    want.extend([s("1001"), s("\""), s("comma,separated"), s("100"), s("250")]);
    want.extend([s("1436918400007"), s("1000"), s("12")]);
    want.extend(none(5));
    want.push(s(""));
    assert_eq!(rows[2], want);

    let mut want = vec![s("7"), s("2"), s("1436918400001")];
    want.extend(none(14));
    want.extend([s("1001"), s("1001"), s("99999999"), s("Google")]);
    want.push(s(
        "https://www.nexmark.com/a_b/cd/efg/item.htm?query=1&channel_id=-2147483648",
    ));
    want.push(s("xyz"));
    assert_eq!(rows[3], want);
}

#[test]
fn generated_stream_round_trips() {
    let g = NexmarkGenerator::new(GeneratorConfig {
        events: 5_000,
        rate: 10_000,
        ..GeneratorConfig::default()
    })
    .unwrap();
    let events: Vec<(u64, Event)> = g.iter().collect();
    let (n, text) = to_csv(events.clone());
    assert_eq!(n, 5_000);
    let rows = parse(&text);
    assert_eq!(rows.len(), 5_001);
    for ((id, event), row) in events.iter().zip(&rows[1..]) {
        assert_eq!(row.len(), 23);
        let get =
            |col: &str| -> &Field { &row[CSV_COLUMNS.iter().position(|c| *c == col).unwrap()] };
        let int = |col: &str| -> i64 { get(col).as_deref().unwrap().parse().unwrap() };
        assert_eq!(int("event_id"), *id as i64);
        assert_eq!(int("event_type"), i64::from(event.event_type()));
        assert_eq!(int("ts"), event.timestamp());
        assert_eq!(get("extra").as_deref(), Some(event.extra()));
        let non_null = row.iter().filter(|f| f.is_some()).count();
        match event {
            Event::Person(p) => {
                assert_eq!(non_null, 3 + 6 + 1);
                assert_eq!(int("person_id"), p.id);
                assert_eq!(get("person_name").as_deref(), Some(p.name.as_str()));
                assert_eq!(get("person_state").as_deref(), Some(p.state.as_ref()));
            }
            Event::Auction(a) => {
                assert_eq!(non_null, 3 + 8 + 1);
                assert_eq!(int("auction_expires"), a.expires);
                assert_eq!(
                    get("auction_description").as_deref(),
                    Some(a.description.as_str())
                );
            }
            Event::Bid(b) => {
                assert_eq!(non_null, 3 + 5 + 1);
                assert_eq!(int("bid_price"), b.price);
                assert_eq!(get("bid_url").as_deref(), Some(b.url.as_ref()));
            }
        }
    }
}

#[test]
fn io_errors_propagate() {
    struct Failing;
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let g = NexmarkGenerator::new(GeneratorConfig::default()).unwrap();
    let err = write_csv(g.iter().take(10), Failing).unwrap_err();
    assert_eq!(err.to_string(), "disk full");
}
