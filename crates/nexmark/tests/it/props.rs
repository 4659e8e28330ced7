//! Property tests: split-union independence and id bounds for arbitrary event numbers.

use proptest::prelude::*;
use sluice_nexmark::{Event, GeneratorConfig, NexmarkGenerator};

fn generator(events: u64, rate: u64) -> NexmarkGenerator {
    NexmarkGenerator::new(GeneratorConfig {
        events,
        rate,
        ..GeneratorConfig::default()
    })
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For any bound and parallelism, the splits partition the single stream exactly.
    #[test]
    fn split_union_matches_single_stream(events in 1u64..400, parts in 1usize..7, rate in 1u64..100_000) {
        let g = generator(events, rate);
        let single: Vec<(u64, Event)> = g.iter().collect();
        prop_assert_eq!(single.len() as u64, events);
        let mut union: Vec<(u64, Event)> = (0..parts).flat_map(|k| g.split(k, parts)).collect();
        union.sort_by_key(|(n, _)| *n);
        prop_assert_eq!(union, single);
    }

    /// Ids, references and values stay within the bounds of docs/src/reference/nexmark-generator.md
    /// for any event number.
    #[test]
    fn ids_within_bounds(n in 0u64..1_000_000_000_000) {
        let g = generator(0, 10_000_000);
        let event = g.event(n);
        prop_assert_eq!(&event, &g.event(n));
        let lp = g.last_person0(n);
        let la = g.last_auction0(n);
        prop_assert_eq!(lp, (n / 50) as i64);
        // Random persons: [np − min(np, 1000), np + 10), np = lp + 1; hot ids lie inside.
        let np = lp + 1;
        let person_range = (np - np.min(1000) + 1000)..(np + 10 + 1000);
        match event {
            Event::Person(p) => {
                prop_assert_eq!(n % 50, 0);
                prop_assert_eq!(p.id, lp + 1000);
            }
            Event::Auction(a) => {
                prop_assert!((1..4).contains(&(n % 50)));
                prop_assert_eq!(a.id, la + 1000);
                prop_assert_eq!(la, (n / 50 * 3 + n % 50 - 1) as i64);
                prop_assert!(person_range.contains(&a.seller) || a.seller == lp / 100 * 100 + 1000);
                prop_assert!((10..15).contains(&a.category));
                prop_assert!(a.reserve > a.initial_bid && a.initial_bid >= 100);
                prop_assert!(a.expires > a.date_time);
            }
            Event::Bid(b) => {
                prop_assert!(n % 50 >= 4);
                prop_assert_eq!(la, (n / 50 * 3 + 2) as i64);
                let auction_range = ((la - 100).max(0) + 1000)..=(la + 10 + 1000);
                prop_assert!(auction_range.contains(&b.auction), "{:?}", b);
                prop_assert!(person_range.contains(&b.bidder), "{:?}", b);
                prop_assert!((100..100_000_000).contains(&b.price));
                prop_assert!((54..=81).contains(&b.extra.len()));
            }
        }
    }
}
