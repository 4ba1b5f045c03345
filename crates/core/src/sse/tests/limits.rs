//! The size limit, truncated streams and bounded memory.

use super::*;

fn event_of_len(len: usize, eol: &str) -> Vec<u8> {
    // "data: " + payload + eol + eol
    let payload = len - 6 - 2 * eol.len();
    format!("data: {}{eol}{eol}", "x".repeat(payload)).into_bytes()
}

#[test]
fn limit_is_inclusive_and_ignores_the_lf_of_a_closing_crlf() {
    for eol in ["\n", "\r", "\r\n"] {
        let at = event_of_len(100, eol);
        assert_eq!(at.len(), 100);
        // The LF that may follow a closing CR is not counted.
        let max = 100 - usize::from(eol == "\r\n");
        assert_eq!(reasons(&frame(&at, max)), [None], "{eol:?} at the limit");
        assert_eq!(
            reasons(&frame(&at, max - 1)),
            [Some(PassReason::TooLarge)],
            "{eol:?} one over"
        );
        for m in [max - 1, max] {
            assert_chunking_invariant(&format!("{eol:?}/{m}"), &at, m, 100);
        }
    }
}

#[test]
fn oversize_event_passes_unmodified_and_the_stream_goes_on() {
    let big = event_of_len(5000, "\n");
    let mut input = b"data: before\n\n".to_vec();
    input.extend_from_slice(&big);
    input.extend_from_slice(b": ping\n\ndata: after\n\n");
    let max = 1024;

    let whole = frame(&input, max);
    assert_eq!(
        reasons(&whole),
        [
            None,
            Some(PassReason::TooLarge),
            Some(PassReason::NoEvent),
            Some(PassReason::NoEvent),
            None
        ]
    );
    assert_eq!(whole[1].bytes(), &big[..]);
    assert_eq!(
        events(&whole),
        [
            ("message".into(), "before".into()),
            ("message".into(), "after".into())
        ]
    );

    // In 100-byte chunks the oversize event streams out as it arrives.
    let mut framer = SseFramer::new(max);
    let mut units = Vec::new();
    for chunk in input.chunks(100) {
        units.extend(framer.push(chunk));
        assert!(framer.held_bytes() <= max);
    }
    units.extend(framer.finish());
    assert_eq!(concat(&units), input);
    let counted = reasons(&units)
        .iter()
        .filter(|r| **r == Some(PassReason::TooLarge))
        .count();
    assert_eq!(counted, 1, "one oversize event, counted once");
    assert!(reasons(&units).contains(&Some(PassReason::Continued)));
    assert_eq!(normalize(&units), normalize(&whole));
    assert_chunking_invariant("oversize", &input, max, 200);
}

#[test]
fn oversize_comment_line_streams_out_too() {
    let mut input = b":".to_vec();
    input.extend(std::iter::repeat_n(b'c', 300));
    input.extend_from_slice(b"\r\ndata: x\r\n\r\n");
    let units = frame(&input, 64);
    assert_eq!(reasons(&units), [Some(PassReason::TooLarge), None]);
    assert_chunking_invariant("long comment", &input, 64, 200);
}

#[test]
fn ten_megabyte_event_keeps_memory_bounded() {
    let max = 64 * 1024;
    let mut framer = SseFramer::new(max);
    let mut out_len = 0;
    let mut peak = 0;
    let mut pieces = Vec::new();
    framer.push(b"data: ");
    let chunk = vec![b'y'; 4096];
    for _ in 0..(10 << 20) / chunk.len() {
        for unit in framer.push(&chunk) {
            out_len += unit.bytes().len();
            pieces.extend(reasons(&[unit]));
        }
        peak = peak.max(framer.held_capacity());
    }
    let tail = framer.push(b"\n\ndata: next\n\n");
    assert_eq!(events(&tail), [("message".into(), "next".into())]);
    out_len += concat(&tail).len();
    assert_eq!(out_len, 6 + (10 << 20) + 14);
    assert!(peak <= 2 * max, "peak hold capacity {peak}");
    assert_eq!(pieces[0], Some(PassReason::TooLarge));
    assert!(pieces[1..]
        .iter()
        .all(|r| *r == Some(PassReason::Continued)));
}

#[test]
fn stream_cut_mid_event_releases_what_is_held_unchanged() {
    let input = b"data: done\n\nid: 9\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"res";
    for k in 0..=input.len() {
        let units = frame_chunks(input, &[k], BIG);
        assert_eq!(concat(&units), input, "split at {k}");
        assert_eq!(reasons(&units), [None, Some(PassReason::Truncated)]);
        assert_eq!(units[1].bytes(), &input[12..]);
    }
    // Cut after the data line but before the blank line: still not an event.
    let units = frame(b"data: x\r\n", BIG);
    assert_eq!(reasons(&units), [Some(PassReason::Truncated)]);
    // Cut inside an oversize event: its bytes already went out, counted once.
    let units = frame_chunks(&event_of_len(500, "\n")[..400], &[100], 50);
    assert_eq!(
        reasons(&units),
        [Some(PassReason::TooLarge), Some(PassReason::Continued)]
    );
}

#[test]
fn finish_resets_for_a_new_stream() {
    let mut framer = SseFramer::new(BIG);
    framer.push(b"\xEF\xBB\xBFdata: a\n");
    assert_eq!(reasons(&framer.finish()), [Some(PassReason::Truncated)]);
    assert_eq!(framer.held_bytes(), 0);
    let units = framer.push(b"\xEF\xBB\xBFdata: b\n\n");
    assert_eq!(reasons(&units), [Some(PassReason::NoEvent), None]);
}

/// 100 000 small events in random chunks: every event comes out, and the
/// hold buffer never grows past about two events' worth.
#[test]
fn long_stream_of_small_events_keeps_memory_bounded() {
    let mut input = Vec::new();
    let mut longest = 0;
    for n in 0..100_000u32 {
        let start = input.len();
        let eol: &[u8] = [&b"\n"[..], b"\r\n", b"\r"][(n % 3) as usize];
        if n % 1000 == 0 {
            input.extend_from_slice(b": ping");
            input.extend_from_slice(eol);
        }
        input.extend_from_slice(format!("id: {n}").as_bytes());
        input.extend_from_slice(eol);
        input.extend_from_slice(
            format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progress\":{n}}}}}").as_bytes(),
        );
        input.extend_from_slice(eol);
        input.extend_from_slice(eol);
        longest = longest.max(input.len() - start);
    }
    let max = 64 * 1024;
    let mut framer = SseFramer::new(max);
    let mut rng = Rng::new(100_000);
    let (mut count, mut out_len, mut peak, mut rest) = (0, 0, 0, &input[..]);
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rng.size(3000).min(rest.len()));
        rest = tail;
        for unit in framer.push(chunk) {
            out_len += unit.bytes().len();
            if let Unit::Event(e) = unit {
                assert_eq!(e.id(), Some(count.to_string().as_str()));
                count += 1;
            }
        }
        peak = peak.max(framer.held_capacity());
    }
    out_len += concat(&framer.finish()).len();
    assert_eq!(count, 100_000);
    assert_eq!(out_len, input.len());
    assert!(peak <= 2 * longest, "peak {peak}, longest event {longest}");
}
