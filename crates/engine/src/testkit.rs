//! What the engine's unit tests share: an exchange from a configuration,
//! the heads a client and a server send, the shared data of one Envoy, and
//! readings of what a step sent and what a record says. It is a module of
//! the engine behind `cfg(test)`, not a crate, because it reads the
//! engine's crate-private parts (the exchange's report); the scripted host
//! that drives whole streams for every crate's tests is [`crate::sim`].

use std::sync::Arc;

use crate::config::{Settings, StreamInfo};
use crate::exchange::{Exchange, Out, RequestHead, ResponseHead, Services, Step};
use crate::outcome::{Outcome, Reason};
use crate::report::Report;
use crate::shared::{Entropy, SharedMemory};

pub(crate) fn exchange(config: &str) -> Exchange {
    Exchange::new(Arc::new(Settings::from_json(config).unwrap()))
}

/// A client's request head on `stream`: `/mcp`, accepting JSON and event
/// streams, no header the plugin reads. Other fields by struct update.
pub(crate) fn request_head<'a>(
    stream: &'a StreamInfo,
    method: &'a str,
    content_type: Option<&'a str>,
) -> RequestHead<'a> {
    RequestHead {
        stream,
        method,
        path: "/mcp",
        content_type,
        accept: Some("application/json, text/event-stream"),
        end_of_stream: false,
        headers: &[],
        mcp_method: None,
        mcp_name: None,
        owner_metadata: None,
        reissue_mark: None,
        now_ms: 0,
    }
}

/// A JSON POST of `body` on `stream`, in one chunk.
pub(crate) fn post_on(
    e: &mut Exchange,
    stream: &StreamInfo,
    body: &[u8],
    store: &mut dyn Services,
) -> Step {
    e.request_headers(request_head(stream, "POST", Some("application/json")));
    e.request_chunk(body, true, store)
}

pub(crate) fn post(e: &mut Exchange, body: &[u8], store: &mut dyn Services) -> Step {
    post_on(e, &StreamInfo::default(), body, store)
}

/// A server's `200` head of `media`, announcing `length` or not.
pub(crate) fn response_head(media: &'static str, length: Option<usize>) -> ResponseHead<'static> {
    ResponseHead {
        status: Some(200),
        content_type: Some(media),
        content_length: length,
        ..ResponseHead::default()
    }
}

/// Shared data of one Envoy (pages, listings, legacy records), at a fixed
/// time, with repeatable random bytes.
pub(crate) fn shared() -> SharedMemory {
    let mut m = SharedMemory::with(Entropy::Seeded(7));
    m.now_ms = 1_700_000_000_000;
    m
}

/// The bytes a step sends on, given the bytes handed in.
pub(crate) fn sent(step: &Step, input: &[u8]) -> Vec<u8> {
    match &step.out {
        Out::Input => input.to_vec(),
        Out::Bytes { bytes, .. } => bytes.clone(),
    }
}

/// Why each passthrough in a record passed, in order.
pub(crate) fn passthroughs(report: &Report) -> Vec<Reason> {
    report
        .decisions
        .iter()
        .filter_map(|d| match d.outcome {
            Outcome::Passthrough(r) => Some(r),
            _ => None,
        })
        .collect()
}
