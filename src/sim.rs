//! A scripted host: drives an [`Exchange`] the way Envoy drives the plugin
//! (chunks in, steps out, bytes kept while paused, callouts answered), so
//! tests, fuzz targets and benchmarks exercise the whole stream logic
//! without a proxy. Compiled for tests and with the `sim` feature.

use std::sync::Arc;

use crate::config::{Settings, StreamInfo};
use crate::exchange::{Exchange, Flow, NoSessions, RequestHead, ResponseHead, ResponsePlan, Step};
use crate::report::Report;
use crate::stage::trim::{LlmReply, LlmRequest};

/// What the client and the server saw.
#[derive(Debug)]
pub struct Outcome {
    /// The request body as it reached the server.
    pub request_sent: Vec<u8>,
    /// The response body as it reached the client.
    pub response_sent: Vec<u8>,
    /// The plan for the response headers.
    pub plan: ResponsePlan,
    /// The `content-length` set on held headers, if any.
    pub content_length: Option<usize>,
    pub callouts: Vec<LlmRequest>,
    pub report: Report,
}

/// One exchange: a JSON POST `request` (in chunks of the given sizes) and a
/// 200 response of `content_type` (in chunks); `reply` answers callouts.
pub fn run(
    settings: Arc<Settings>,
    request: &[u8],
    request_chunks: &[usize],
    content_type: &str,
    response: &[u8],
    response_chunks: &[usize],
    reply: &mut dyn FnMut(&LlmRequest) -> LlmReply,
) -> Outcome {
    let max_body = settings.max_body_bytes;
    let mut e = Exchange::new(settings);
    let stream = StreamInfo::default();
    let plan = e.request_headers(RequestHead {
        stream: &stream,
        method: "POST",
        path: "/mcp",
        content_type: Some("application/json"),
        accept: Some("application/json, text/event-stream"),
        headers: &[],
        end_of_stream: request.is_empty(),
    });
    let mut request_sent = Vec::new();
    if plan.read_body {
        for (chunk, end) in split(request, request_chunks) {
            let step = e.request_chunk(chunk, end, &mut NoSessions);
            match step.body {
                Some(b) => request_sent.extend(b),
                None => request_sent.extend_from_slice(chunk),
            }
        }
    } else {
        request_sent.extend_from_slice(request);
    }
    let plan = e.response_headers(ResponseHead {
        status: Some(200),
        content_type: Some(content_type),
        content_encoding: None,
        content_length: Some(response.len()).filter(|n| *n <= max_body),
        end_of_stream: response.is_empty(),
    });
    let mut host = Host {
        response_sent: Vec::new(),
        content_length: None,
        callouts: Vec::new(),
    };
    // What Envoy holds for a paused body: the next callback sees it again,
    // with the new chunk appended.
    let mut envoy: Vec<u8> = Vec::new();
    for (chunk, end) in split(response, response_chunks) {
        envoy.extend_from_slice(chunk);
        let buffer = std::mem::take(&mut envoy);
        if !e.reads_response() {
            host.response_sent.extend(buffer);
            continue;
        }
        let step = e.response_chunk(&buffer, end, &mut NoSessions);
        envoy = host.perform(&mut e, step, buffer, end, reply);
    }
    Outcome {
        request_sent,
        response_sent: host.response_sent,
        plan,
        content_length: host.content_length,
        callouts: host.callouts,
        report: e.report().clone(),
    }
}

struct Host {
    response_sent: Vec<u8>,
    content_length: Option<usize>,
    callouts: Vec<LlmRequest>,
}

impl Host {
    /// Performs a step on the bytes of the current callback. A callout is
    /// answered at once, after the callback returns (as Envoy would, later).
    /// Returns what Envoy keeps buffered for the next callback.
    fn perform(
        &mut self,
        e: &mut Exchange,
        mut step: Step,
        mut held: Vec<u8>,
        end: bool,
        reply: &mut dyn FnMut(&LlmRequest) -> LlmReply,
    ) -> Vec<u8> {
        loop {
            if let Some(b) = step.body.take() {
                held = b;
            }
            if step.content_length.is_some() {
                self.content_length = step.content_length;
            }
            let paused = step.flow == Flow::Pause;
            // Envoy appends the next chunk to what a paused callback kept
            // and counts it against its buffer limit: the core keeps at
            // most one byte there mid-body.
            assert!(
                !paused || end || held.len() <= 1,
                "paused mid-body on {} kept bytes",
                held.len()
            );
            match step.callout.take() {
                Some(request) => {
                    let answer = reply(&request);
                    self.callouts.push(request);
                    let next = e.callout_reply(&answer, &mut NoSessions);
                    if !paused {
                        self.response_sent.extend(std::mem::take(&mut held));
                        assert!(
                            next.body.is_none(),
                            "a reply cannot replace bytes the host no longer holds"
                        );
                    }
                    step = next;
                }
                None if paused && end => {
                    unreachable_pause();
                    return Vec::new();
                }
                None if paused => return held,
                None => {
                    self.response_sent.extend(held);
                    return Vec::new();
                }
            }
        }
    }
}

#[allow(clippy::panic)] // the simulator's own check, never on the request path
fn unreachable_pause() {
    panic!("the core paused on the last chunk without a callout: the stream would stall")
}

/// `bytes` cut into chunks of the given sizes (cycled; zero sizes become
/// one), each with its end-of-stream flag. An empty body is one empty chunk.
pub fn split<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<(&'a [u8], bool)> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(rest.len())
            .max(1)
            .min(rest.len());
        let (a, b) = rest.split_at(n);
        out.push((a, b.is_empty()));
        rest = b;
        i += 1;
    }
    if out.is_empty() {
        out.push((bytes, true));
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;

    const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rows","arguments":{"expected_info":"ids"}}}"#;

    fn body() -> Vec<u8> {
        let rows: Vec<Value> = (0..40)
            .map(|i| json!({"id": i, "name": format!("é{i}€")}))
            .collect();
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": Value::Array(rows).to_string()}]}})
            .to_string()
            .into_bytes()
    }

    fn sse() -> Vec<u8> {
        let mut s = b": hi\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\ndata: ".to_vec();
        s.extend(body());
        s.extend(b"\r\n\r\n");
        s
    }

    fn settings(config: &str) -> Arc<Settings> {
        Arc::new(Settings::from_json(config).unwrap())
    }

    fn no_call(_: &LlmRequest) -> LlmReply {
        LlmReply::NotSent
    }

    fn trimmed(_: &LlmRequest) -> LlmReply {
        let content = json!([{"id": 1, "name": "é1€"}]).to_string();
        LlmReply::Response {
            status: 200,
            body: json!({"choices": [{"message": {"content": content}}]})
                .to_string()
                .into_bytes(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// However Envoy cuts the bodies, the client and server receive the
        /// same bytes as with one chunk each.
        #[test]
        fn chunking_never_changes_what_arrives(
            req_chunks in prop::collection::vec(1usize..64, 1..6),
            resp_chunks in prop::collection::vec(1usize..700, 1..8),
            config in prop::sample::select(vec!["{}", r#"{"hold_headers":true}"#, r#"{"trim":{"enabled":true,"threshold_bytes":10}}"#, r#"{"toon":{"mode":"off"}}"#]),
            sse_body in any::<bool>(),
        ) {
            let (ct, resp) = if sse_body { ("text/event-stream", sse()) } else { ("application/json", body()) };
            let whole = run(settings(config), CALL, &[CALL.len()], ct, &resp, &[resp.len()], &mut trimmed);
            let cut = run(settings(config), CALL, &req_chunks, ct, &resp, &resp_chunks, &mut trimmed);
            prop_assert_eq!(&cut.request_sent, &whole.request_sent);
            prop_assert_eq!(&cut.response_sent, &whole.response_sent);
            if config.contains("\"off\"") {
                prop_assert_eq!(&cut.response_sent, &resp);
            } else {
                prop_assert_ne!(&cut.response_sent, &resp);
            }
        }
    }

    #[test]
    fn held_headers_length_matches_the_body() {
        let out = run(
            settings(r#"{"hold_headers":true}"#),
            CALL,
            &[7],
            "application/json",
            &body(),
            &[100],
            &mut no_call,
        );
        assert_eq!(out.content_length, Some(out.response_sent.len()));
        assert_eq!(out.plan, ResponsePlan::Rewrite { hold_headers: true });
    }

    #[test]
    fn trim_reaches_the_client_through_json_and_sse() {
        for (ct, resp) in [("application/json", body()), ("text/event-stream", sse())] {
            let out = run(
                settings(r#"{"trim":{"enabled":true,"threshold_bytes":10}}"#),
                CALL,
                &[5],
                ct,
                &resp,
                &[33],
                &mut trimmed,
            );
            assert_eq!(out.callouts.len(), 1, "{ct}");
            assert!(!String::from_utf8_lossy(&out.request_sent).contains("expected_info"));
            assert!(
                String::from_utf8_lossy(&out.response_sent)
                    .contains(r#"[{\"id\":1,\"name\":\"é1€\"}]"#),
                "{ct}"
            );
        }
    }
}
