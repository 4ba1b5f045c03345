//! The §9.2.5/§9.2.6 rules one by one: line ends, BOM, fields, comments.

use super::*;

fn one_event(input: &[u8]) -> crate::sse::Event {
    let units = frame(input, BIG);
    let mut found = units.into_iter().filter_map(|u| match u {
        Unit::Event(e) => Some(e),
        Unit::Passthrough { .. } => None,
    });
    let event = found.next().expect("an event");
    assert!(found.next().is_none(), "exactly one event");
    event
}

fn data_of(input: &[u8]) -> String {
    one_event(input).data().unwrap().to_owned()
}

#[test]
fn lf_crlf_and_cr_end_lines_alike() {
    for eol in ["\n", "\r\n", "\r"] {
        let input = format!("event: update{eol}data: a{eol}data: b{eol}{eol}");
        let units = frame(input.as_bytes(), BIG);
        assert_eq!(units.len(), 1, "{eol:?}");
        let Unit::Event(e) = &units[0] else {
            panic!("{eol:?}: not an event")
        };
        assert_eq!(e.data(), Some("a\nb"));
        assert_eq!(e.event_type(), "update");
        assert_eq!(e.raw(), input.as_bytes());
        assert_chunking_invariant(&format!("{eol:?}"), input.as_bytes(), BIG, 50);
    }
}

#[test]
fn mixed_line_ends_in_one_stream() {
    let input = b"data: 1\r\ndata: 2\n\r: c\rdata: 3\r\n\ndata: 4\r\r\n\n";
    assert_eq!(
        events(&frame(input, BIG)),
        [
            ("message".into(), "1\n2".into()),
            ("message".into(), "3".into()),
            ("message".into(), "4".into()),
        ]
    );
    assert_eq!(events(&frame(input, BIG)), reference::dispatched(input));
    assert_chunking_invariant("mixed", input, BIG, 200);
}

/// "\r\r" is two line ends (a line and a blank line); "\r\n" is one.
#[test]
fn cr_cr_ends_an_event_and_cr_lf_does_not() {
    assert_eq!(
        events(&frame(b"data: x\r\rdata: y\r\r", BIG)),
        [
            ("message".into(), "x".into()),
            ("message".into(), "y".into())
        ]
    );
    assert_eq!(events(&frame(b"data: x\r\ndata: y\r\n\r\n", BIG)).len(), 1);
    assert_eq!(data_of(b"data: x\r\ndata: y\r\n\r\n"), "x\ny");
}

#[test]
fn split_inside_crlf_within_an_event() {
    let input = b"data: a\r\ndata: b\r\n\r\n";
    for k in [8, 17] {
        assert_eq!(input[k - 1], b'\r');
        let units = frame_chunks(input, &[k], BIG);
        assert_eq!(units.len(), 1, "split at {k}");
        assert_eq!(events(&units), [("message".into(), "a\nb".into())]);
    }
    assert_chunking_invariant("crlf", input, BIG, 100);
}

/// A CR that ends an event at the end of a chunk releases the event at
/// once; the LF that then starts the next chunk is a unit of its own.
#[test]
fn split_between_the_final_cr_and_lf() {
    let input = b"data: a\r\n\r\ndata: b\r\n\r\n";
    let mut framer = SseFramer::new(BIG);
    let first = framer.push(&input[..10]);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].bytes(), b"data: a\r\n\r");
    let second = framer.push(&input[10..]);
    assert_eq!(reasons(&second), [Some(PassReason::NoEvent), None]);
    assert_eq!(second[0].bytes(), b"\n");
    assert_eq!(second[1].bytes(), b"data: b\r\n\r\n");
    assert!(framer.finish().is_empty());
}

#[test]
fn leading_bom_is_its_own_unit() {
    let input = b"\xEF\xBB\xBFdata: x\n\n";
    let units = frame(input, BIG);
    assert_eq!(units[0].bytes(), b"\xEF\xBB\xBF");
    assert_eq!(reasons(&units), [Some(PassReason::NoEvent), None]);
    assert_eq!(events(&units), [("message".into(), "x".into())]);
    assert_chunking_invariant("bom", input, BIG, 50);
}

/// Without the BOM stripped, the first field would be named "\u{FEFF}data".
#[test]
fn bom_split_across_chunks() {
    let input = b"\xEF\xBB\xBFdata: x\n\n";
    for sizes in [&[1, 1, 1][..], &[2], &[1], &[3]] {
        let units = frame_chunks(input, sizes, BIG);
        assert_eq!(events(&units), [("message".into(), "x".into())]);
    }
}

#[test]
fn bom_only_at_stream_start() {
    // A second BOM is part of a field name: the field is ignored.
    let input = b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n";
    assert!(events(&frame(input, BIG)).is_empty());
    assert_eq!(reference::dispatched(input), []);
    // A BOM after the first line is likewise not stripped.
    let later = b"data: a\n\n\xEF\xBB\xBFdata: b\n\n";
    assert_eq!(events(&frame(later, BIG)).len(), 1);
}

#[test]
fn bom_prefix_that_is_not_a_bom() {
    // Starts like a BOM, then is not: those bytes are the first field's name.
    let input = b"\xEF\xBBdata: x\n\ndata: y\n\n";
    let units = frame_chunks(input, &[1, 1], BIG);
    assert_eq!(concat(&units), input);
    assert_eq!(events(&units), [("message".into(), "y".into())]);
    assert_chunking_invariant("not-bom", input, BIG, 50);
}

#[test]
fn stream_of_a_partial_bom_is_released_at_finish() {
    let mut framer = SseFramer::new(BIG);
    assert!(framer.push(b"\xEF\xBB").is_empty());
    assert_eq!(framer.held_bytes(), 2);
    let units = framer.finish();
    assert_eq!(reasons(&units), [Some(PassReason::Truncated)]);
    assert_eq!(units[0].bytes(), b"\xEF\xBB");
}

#[test]
fn space_after_colon_is_optional_and_only_one_is_removed() {
    assert_eq!(data_of(b"data:x\n\n"), "x");
    assert_eq!(data_of(b"data: x\n\n"), "x");
    assert_eq!(data_of(b"data:  x\n\n"), " x");
    assert_eq!(data_of(b"data:x:y: z\n\n"), "x:y: z");
}

#[test]
fn empty_data_values() {
    assert_eq!(data_of(b"data\n\n"), "");
    assert_eq!(data_of(b"data:\n\n"), "");
    assert_eq!(data_of(b"data: \n\n"), "");
    assert_eq!(data_of(b"data\ndata\n\n"), "\n");
    assert_eq!(data_of(b"data: a\ndata\n\n"), "a\n");
    assert_eq!(data_of(b"data\ndata: a\n\n"), "\na");
}

#[test]
fn fields_that_are_not_data() {
    let e = one_event(b"id: 42\nevent: e1\nretry: 1000\nfoo: bar\nnocolon\nevent: e2\ndata: d\n\n");
    assert_eq!(e.data(), Some("d"));
    assert_eq!(e.event_type(), "e2");
    assert_eq!(e.id(), Some("42"));
    // Field names are case-sensitive, and a name with no colon has an empty
    // value: "Data" and "data x" are unknown fields.
    assert!(events(&frame(b"Data: x\ndata x\n\n", BIG)).is_empty());
    // An empty event type means "message".
    assert_eq!(one_event(b"event:\ndata: x\n\n").event_type(), "message");
    // An id containing NUL is ignored.
    assert_eq!(one_event(b"id: 1\nid: a\0b\ndata: x\n\n").id(), Some("1"));
    assert_eq!(one_event(b"id\ndata: x\n\n").id(), Some(""));
    assert_eq!(one_event(b"data: x\n\n").id(), None);
}

#[test]
fn blocks_without_data_dispatch_nothing() {
    let input = b"id: 7\nretry: 10\n\nevent: x\n\n\n: c1\n: c2\n\nfoo\n\n";
    let units = frame(input, BIG);
    assert!(units.iter().all(|u| matches!(
        u,
        Unit::Passthrough {
            reason: PassReason::NoEvent,
            ..
        }
    )));
    assert_eq!(concat(&units), input);
    assert_eq!(
        units.iter().map(Unit::bytes).collect::<Vec<_>>(),
        [
            &b"id: 7\nretry: 10\n\n"[..],
            b"event: x\n\n",
            b"\n",
            b": c1\n",
            b": c2\n",
            b"\n",
            b"foo\n\n"
        ]
    );
}

/// A comment line with no field before it goes out at its end-of-line, so
/// keep-alives reach the client even if no blank line follows them.
#[test]
fn leading_comment_lines_flow_at_once() {
    let mut framer = SseFramer::new(BIG);
    let units = framer.push(b":\n: keep-alive\r\n:x");
    assert_eq!(
        units.iter().map(Unit::bytes).collect::<Vec<_>>(),
        [&b":\n"[..], b": keep-alive\r\n"]
    );
    assert_eq!(framer.held_bytes(), 2);
    let units = framer.push(b"\rdata: a\n: inside\ndata: b\n\n");
    assert_eq!(units[0].bytes(), b":x\r");
    let Unit::Event(e) = &units[1] else {
        panic!("event")
    };
    // A comment after a field stays inside its event.
    assert_eq!(e.raw(), b"data: a\n: inside\ndata: b\n\n");
    assert_eq!(e.data(), Some("a\nb"));
}

#[test]
fn event_is_released_as_soon_as_its_blank_line_arrives() {
    let mut framer = SseFramer::new(BIG);
    assert!(framer.push(b"data: {\"progress\":1}\n").is_empty());
    let units = framer.push(b"\ndata: {\"par");
    assert_eq!(
        events(&units),
        [("message".into(), "{\"progress\":1}".into())]
    );
    assert_eq!(framer.held_bytes(), b"data: {\"par".len());
}

#[test]
fn invalid_utf8_data_has_no_text_but_passes_exactly() {
    let input = b"data: \xFF\xFEok\n\n";
    let e = one_event(input);
    assert_eq!(e.data(), None);
    assert_eq!(e.data_bytes(), b"\xFF\xFEok");
    assert_eq!(e.raw(), input);
}

#[test]
fn multi_byte_characters_split_anywhere() {
    let input = "data: é€😀\n\n".as_bytes();
    for k in 0..=input.len() {
        let units = frame_chunks(input, &[k], BIG);
        assert_eq!(events(&units), [("message".into(), "é€😀".into())], "{k}");
    }
}

#[test]
fn looks_like_json() {
    assert!(one_event(b"data: {\"a\":1}\n\n").looks_like_json());
    assert!(one_event(b"data:  [1]\n\n").looks_like_json());
    assert!(one_event(b"data:\ndata: {}\n\n").looks_like_json());
    assert!(!one_event(b"data: hello\n\n").looks_like_json());
    assert!(!one_event(b"data\n\n").looks_like_json());
}

#[test]
fn empty_input_and_empty_chunks() {
    let mut framer = SseFramer::new(BIG);
    assert!(framer.push(b"").is_empty());
    assert!(framer.push(b"data: x\n").is_empty());
    assert!(framer.push(b"").is_empty());
    assert_eq!(framer.push(b"\n").len(), 1);
    assert!(framer.finish().is_empty());
    assert!(SseFramer::new(BIG).finish().is_empty());
}
