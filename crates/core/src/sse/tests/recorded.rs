//! Streams recorded from the official MCP Python SDK (see
//! `testdata/README.md`), split every way.

use super::*;
use crate::sse::Event;

const PRIMING: &[u8] = include_bytes!("../testdata/priming-progress-result.sse");
const LONG: &[u8] = include_bytes!("../testdata/progress-long-result.sse");

fn only_events(units: &[Unit]) -> Vec<&Event> {
    units
        .iter()
        .filter_map(|u| match u {
            Unit::Event(e) => Some(e),
            Unit::Passthrough { .. } => None,
        })
        .collect()
}

#[test]
fn priming_stream_has_the_expected_units() {
    let units = frame(PRIMING, BIG);
    assert_eq!(concat(&units), PRIMING);
    // priming, 3 progress, ping comment line, its blank line, progress, result
    assert_eq!(
        reasons(&units),
        [
            None,
            None,
            None,
            None,
            Some(PassReason::NoEvent),
            Some(PassReason::NoEvent),
            None,
            None
        ]
    );
    let ping = units[4].bytes();
    assert!(ping.starts_with(b": ping - ") && ping.ends_with(b"\r\n"));
    assert_eq!(units[5].bytes(), b"\r\n");

    let events = only_events(&units);
    // The priming event: "data:" with an empty value still dispatches.
    assert_eq!(events[0].data(), Some(""));
    assert_eq!(events[0].id(), Some("2_9"));
    assert_eq!(events[0].event_type(), "message");
    assert!(!events[0].looks_like_json());
    for (n, e) in events[1..5].iter().enumerate() {
        assert_eq!(e.id(), Some(format!("2_{}", 10 + n).as_str()));
        let data = e.data().unwrap();
        assert!(
            data.contains("\"method\":\"notifications/progress\""),
            "{data}"
        );
        assert!(e.looks_like_json());
    }
    assert!(events[1].data().unwrap().contains("shelf 1 — ok"));
    let result = events[5];
    assert_eq!(result.id(), Some("2_14"));
    let data = result.data().unwrap();
    assert!(data.starts_with("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":"));
    assert!(data.contains("Café 2 €") && data.contains("😀") && data.contains("naïve"));
    let value: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(value["id"], 2);
}

#[test]
fn long_stream_has_the_expected_units() {
    let units = frame(LONG, BIG);
    assert_eq!(concat(&units), LONG);
    let events = only_events(&units);
    assert_eq!(events.len(), 5);
    let ids: Vec<_> = events.iter().map(|e| e.id().unwrap()).collect();
    assert_eq!(ids, ["2_2", "2_3", "2_4", "2_5", "2_6"]);
    let result = events[4].data().unwrap();
    assert!(result.len() > 8000 && result.contains("Café 39 €"));
    serde_json::from_str::<serde_json::Value>(result).unwrap();
}

#[test]
fn recorded_streams_dispatch_what_the_spec_reading_does() {
    for input in [PRIMING, LONG] {
        assert_eq!(events(&frame(input, BIG)), reference::dispatched(input));
    }
}

#[test]
fn priming_stream_any_chunking() {
    assert_chunking_invariant("priming", PRIMING, BIG, 2000);
}

#[test]
fn long_stream_any_chunking() {
    assert_chunking_invariant("long", LONG, BIG, 300);
}

/// With LF line ends nothing in the units depends on where chunks split:
/// not even the normalisation of CR endings is needed.
#[test]
fn lf_variant_units_are_identical_for_every_split() {
    let lf: Vec<u8> = String::from_utf8(PRIMING.to_vec())
        .unwrap()
        .replace("\r\n", "\n")
        .into_bytes();
    let whole = frame(&lf, BIG);
    for k in 0..=lf.len() {
        assert_eq!(frame_chunks(&lf, &[k], BIG), whole, "split at {k}");
    }
    let mut rng = Rng::new(7);
    for _ in 0..500 {
        let sizes = rng.chunks(lf.len(), 40);
        assert_eq!(frame_chunks(&lf, &sizes, BIG), whole, "chunks {sizes:?}");
    }
}

/// Every event comes out of the very `push` that delivers its last byte
/// (the CR or LF of its blank line): a progress notification is never held
/// waiting for later input.
#[test]
fn events_are_released_by_the_push_that_completes_them() {
    for input in [PRIMING, LONG] {
        // Where each event of the unsplit run is complete: after its final
        // CR or LF (the LF of a closing CRLF is not needed).
        let mut ends = Vec::new();
        let mut offset = 0;
        for unit in frame(input, BIG) {
            offset += unit.bytes().len();
            if matches!(unit, Unit::Event(_)) {
                ends.push(offset - usize::from(unit.bytes().ends_with(b"\r\n")));
            }
        }
        for k in 0..=input.len() {
            let mut framer = SseFramer::new(BIG);
            let first = framer.push(&input[..k]);
            let got = first.iter().filter(|u| matches!(u, Unit::Event(_))).count();
            let due = ends.iter().filter(|&&end| end <= k).count();
            assert_eq!(got, due, "split at {k}");
        }
    }
}

/// A cut inside a multi-byte character of the result's data decodes the
/// same text: nothing is decoded before the event is complete.
#[test]
fn cuts_inside_utf8_characters_keep_the_data() {
    let whole = frame(PRIMING, BIG);
    let expected = events(&whole);
    let inside: Vec<usize> = (1..PRIMING.len())
        .filter(|&k| PRIMING[k] & 0xC0 == 0x80)
        .collect();
    assert!(inside.len() > 30, "the fixture has multi-byte characters");
    for k in inside {
        assert_eq!(events(&frame_chunks(PRIMING, &[k], BIG)), expected);
    }
}
