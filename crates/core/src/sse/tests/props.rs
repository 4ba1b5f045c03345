//! Properties over generated streams, with a fixed seed so every run tries
//! the same cases.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::RngSeed;

use super::*;

/// Pieces that, concatenated at random, make every interesting shape:
/// every line end, split CRLFs, fields with and without values and spaces,
/// comments, BOMs in and out of place, multi-byte characters.
const FRAGMENTS: &[&str] = &[
    "data",
    "data:",
    "data: ",
    "data:  ",
    "event:",
    "event: x",
    "id: 7",
    "id",
    "retry: 10",
    ":",
    ": ping",
    " ",
    "x",
    "{\"a\":[1]}",
    "é",
    "€",
    "😀",
    "\r",
    "\n",
    "\r\n",
    "\r\n\r\n",
    "\n\n",
    "\r\r",
    "\u{FEFF}",
    "foo",
    "data:é€😀",
    "data: {\"jsonrpc\":\"2.0\"}\n\n",
];

fn stream() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..50)
        .prop_map(|parts| parts.concat().into_bytes())
}

/// Chunk sizes from up to seven cut points.
fn chunk_sizes(len: usize, cuts: &[Index]) -> Vec<usize> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(len + 1)).collect();
    at.sort_unstable();
    let mut prev = 0;
    at.iter()
        .map(|&a| {
            let n = a - prev;
            prev = a;
            n
        })
        .collect()
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2000,
        rng_seed: RngSeed::Fixed(0x5_5E5E),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_chunking_gives_the_same_units_bytes_and_events(
        input in stream(),
        cuts in prop::collection::vec(any::<Index>(), 0..8),
    ) {
        let whole = frame(&input, BIG);
        prop_assert_eq!(events(&whole), reference::dispatched(&input));
        let units = frame_chunks(&input, &chunk_sizes(input.len(), &cuts), BIG);
        prop_assert_eq!(concat(&units), input);
        prop_assert_eq!(normalize(&units), normalize(&whole));
    }

    #[test]
    fn small_limits_stay_exact_and_bounded(
        input in stream(),
        cuts in prop::collection::vec(any::<Index>(), 0..8),
        max in 0usize..40,
    ) {
        let whole = frame(&input, max);
        let mut framer = SseFramer::new(max);
        let mut units = Vec::new();
        let mut rest = &input[..];
        for n in chunk_sizes(input.len(), &cuts) {
            let (head, tail) = rest.split_at(n);
            rest = tail;
            units.extend(framer.push(head));
            // A possible BOM's first two bytes may wait on top of the limit.
            prop_assert!(framer.held_bytes() <= max + 2);
        }
        units.extend(framer.push(rest));
        units.extend(framer.finish());
        prop_assert_eq!(concat(&units), input);
        prop_assert_eq!(normalize(&units), normalize(&whole));
    }

    #[test]
    fn reframed_events_read_back_as_the_new_data(
        input in stream(),
        new_data in any::<String>(),
    ) {
        let expected = new_data.replace("\r\n", "\n").replace('\r', "\n");
        for unit in frame(&input, BIG) {
            let Unit::Event(e) = unit else { continue };
            // Read back where the event stood: at a line start after the
            // stream's start, where a BOM is no longer stripped.
            let out = [&b"\n"[..], &e.with_data(&new_data)].concat();
            let back = frame(&out, BIG);
            prop_assert_eq!(back.len(), 2);
            let Some(Unit::Event(b)) = back.get(1) else {
                return Err(TestCaseError::fail("not an event"));
            };
            prop_assert_eq!(b.data(), Some(expected.as_str()));
            prop_assert_eq!(b.event_type(), e.event_type());
            prop_assert_eq!(b.id(), e.id());
            // Re-framing with the event's own data changes only data lines.
            let same = [&b"\n"[..], &e.with_data(&String::from_utf8_lossy(e.data_bytes()))].concat();
            prop_assert_eq!(events(&frame(&same, BIG)), events(&[Unit::Event(e.clone())]));
        }
    }
}
