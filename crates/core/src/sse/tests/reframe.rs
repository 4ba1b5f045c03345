//! `Event::with_data`: other lines and line ends kept, the result reads back
//! as the new data.

use super::*;
use crate::sse::Event;

fn event(input: &[u8]) -> Event {
    match frame(input, BIG).into_iter().next() {
        Some(Unit::Event(e)) => e,
        other => panic!("not an event: {other:?}"),
    }
}

/// Parses re-framed bytes: exactly one event, nothing else.
fn reparse(bytes: &[u8]) -> Event {
    let units = frame(bytes, BIG);
    assert_eq!(units.len(), 1, "{:?}", String::from_utf8_lossy(bytes));
    event(bytes)
}

#[test]
fn recorded_result_event_keeps_id_event_and_crlf() {
    let stream = include_bytes!("../testdata/priming-progress-result.sse");
    let result = frame(stream, BIG)
        .into_iter()
        .filter_map(|u| match u {
            Unit::Event(e) => Some(e),
            Unit::Passthrough { .. } => None,
        })
        .next_back()
        .unwrap();
    let new = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"[mcp-toon/v1]\\n[3]{id,name}:\\n  0,Café 0 €\"}]}}";
    let out = result.with_data(new);
    assert_eq!(
        out,
        format!("id: 2_14\r\nevent: message\r\ndata: {new}\r\n\r\n").into_bytes()
    );
    let back = reparse(&out);
    assert_eq!(back.data(), Some(new));
    assert_eq!(back.id(), Some("2_14"));
    assert_eq!(back.event_type(), "message");
}

#[test]
fn same_data_gives_the_same_bytes() {
    for input in [
        &b"data: x\n\n"[..],
        b"data:x\r\n\r\n",
        b"id: 1\rdata: {\"a\":1}\rretry: 5\r\r",
        b"data: \xC3\xA9\n: c\n\n",
    ] {
        let e = event(input);
        assert_eq!(e.with_data(e.data().unwrap()), input);
    }
}

#[test]
fn new_lines_become_data_lines_in_the_first_ones_place() {
    let e = event(b"id: 5\r\ndata: old\r\n: note\r\nretry: 9\r\n\r\n");
    let out = e.with_data("a\nb\n\nc");
    assert_eq!(
        out,
        b"id: 5\r\ndata: a\r\ndata: b\r\ndata: \r\ndata: c\r\n: note\r\nretry: 9\r\n\r\n"
    );
    assert_eq!(reparse(&out).data(), Some("a\nb\n\nc"));
}

#[test]
fn several_data_lines_become_one() {
    let e = event(b"data: {\"a\":\ndata: 1}\nid: 3\ndata: tail\n\n");
    assert_eq!(e.data(), Some("{\"a\":\n1}\ntail"));
    let out = e.with_data("{\"a\":1}");
    assert_eq!(out, b"data: {\"a\":1}\nid: 3\n\n");
    let back = reparse(&out);
    assert_eq!(back.data(), Some("{\"a\":1}"));
    assert_eq!(back.id(), Some("3"));
}

#[test]
fn empty_new_data_is_still_an_event() {
    let e = event(b"data: a\ndata: b\n\n");
    let out = e.with_data("");
    assert_eq!(out, b"data: \n\n");
    assert_eq!(reparse(&out).data(), Some(""));
    // Trailing line break kept: "a\n" needs a second, empty data line.
    let out = e.with_data("a\n");
    assert_eq!(reparse(&out).data(), Some("a\n"));
}

#[test]
fn spelling_without_space_is_kept_unless_the_line_starts_with_one() {
    let e = event(b"data:x\n\n");
    assert_eq!(e.with_data("y"), b"data:y\n\n");
    // Without the extra space the parser would strip the data's own.
    let out = e.with_data(" y");
    assert_eq!(out, b"data:  y\n\n");
    assert_eq!(reparse(&out).data(), Some(" y"));
    // A data line without a colon at all.
    let e = event(b"data\n\n");
    assert_eq!(e.with_data("z"), b"data:z\n\n");
}

#[test]
fn cr_and_crlf_in_new_data_break_lines() {
    let e = event(b"data: x\n\n");
    let out = e.with_data("a\rb\r\nc");
    assert_eq!(out, b"data: a\ndata: b\ndata: c\n\n");
    assert_eq!(reparse(&out).data(), Some("a\nb\nc"));
}

#[test]
fn cr_only_event_round_trips() {
    let e = event(b"event: message\rdata: 1\r\r");
    let out = e.with_data("x\ny");
    assert_eq!(out, b"event: message\rdata: x\rdata: y\r\r");
    assert_eq!(reparse(&out).data(), Some("x\ny"));
}

/// Mixed line ends: dropping the second data line would put a bare-CR line
/// end right before a bare-LF blank line, which would read as one CRLF and
/// leave the event unterminated; the blank line gets its own CR.
#[test]
fn dropped_data_lines_never_merge_cr_with_the_blank_lf() {
    let e = event(b"data: a\rdata: b\n\n");
    let out = e.with_data("z");
    assert_eq!(out, b"data: z\r\r\n");
    assert_eq!(reparse(&out).data(), Some("z"));

    let e = event(b"data: a\nid: 1\rdata: b\n\n");
    let out = e.with_data("z");
    assert_eq!(out, b"data: z\nid: 1\r\r\n");
    assert_eq!(reparse(&out).data(), Some("z"));
}

/// An event released at a CR at the end of a chunk: the re-framed bytes end
/// with the same CR, so the LF that follows in the stream still joins it.
#[test]
fn event_released_before_its_lf_reframes_consistently() {
    let input = b"data: a\r\n\r\n";
    let mut framer = SseFramer::new(BIG);
    let units = framer.push(&input[..10]);
    let Unit::Event(e) = &units[0] else {
        panic!("event")
    };
    let mut out = e.with_data("b");
    assert_eq!(out, b"data: b\r\n\r");
    out.extend(
        framer
            .push(&input[10..])
            .into_iter()
            .flat_map(Unit::into_bytes),
    );
    assert_eq!(out, b"data: b\r\n\r\n");
    assert_eq!(reparse(&out).data(), Some("b"));
}
