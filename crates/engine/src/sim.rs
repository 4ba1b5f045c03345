//! A scripted host: plays one exchange against a [`Driver`] the way Envoy
//! would (request, response headers, the body in chunks, trailers, callout
//! replies), on the in-memory host, so tests, fuzz targets and benchmarks
//! exercise the whole stream logic — the driver included — without a
//! proxy. Host calls can be refused on demand ([`Script::refuse`]). A
//! request the driver answers itself (a local reply: the page tool), or
//! closes, never reaches the server, and no response is played.
//! Compiled for tests and with the `sim` feature.

use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use crate::callout::{LlmReply, LlmRequest};
use crate::config::Settings;
use crate::driver::{Driver, Vm};
use crate::driver::{HostCall, LocalReply, MemoryHost};
use crate::host::Direction;
use crate::report::Report;
use crate::shared::SharedMemory;

/// What the client and the server saw.
#[derive(Debug)]
pub struct Transcript {
    /// The request body as it reached the server.
    pub request_sent: Vec<u8>,
    /// The response body as it reached the client.
    pub response_sent: Vec<u8>,
    /// The response headers were held until the body was rewritten.
    pub held_headers: bool,
    /// The response's `content-length` as it went out, if any.
    pub content_length: Option<usize>,
    /// The trailers reached the client.
    pub trailers_sent: bool,
    /// The request or the response was still stopped after its end: a
    /// real stream would stall until a timeout.
    pub stalled: bool,
    /// The response the driver sent itself instead of the server's.
    pub local_reply: Option<LocalReply>,
    pub callouts: Vec<LlmRequest>,
    pub report: Report,
    /// The host, for its counters, properties and logs.
    pub host: MemoryHost,
}

/// One exchange to play.
#[derive(Debug, Clone)]
pub struct Script<'a> {
    pub request: &'a [u8],
    pub request_chunks: &'a [usize],
    pub status: u16,
    pub content_type: &'a str,
    pub response: &'a [u8],
    pub response_chunks: &'a [usize],
    /// The server announces the body's length.
    pub content_length: bool,
    /// Trailers end the request body (instead of its last chunk).
    pub request_trailers: bool,
    /// Trailers end the response body.
    pub response_trailers: bool,
    /// The stream is reset after this many response chunks.
    pub reset_after: Option<usize>,
    /// Host calls to refuse (see [`MemoryHost::refuse`]).
    pub refuse: HashSet<(HostCall, usize)>,
    /// More request headers (`mcp-session-id`, `:authority`…).
    pub request_headers: &'a [(&'a str, &'a str)],
    /// Stream properties (`xds.cluster_name`…), as `(path joined by '.',
    /// value)`.
    pub properties: &'a [(&'a str, &'a str)],
    /// The host's shared data when the exchange starts (pages of earlier
    /// exchanges); the transcript's host has it after.
    pub shared: SharedMemory,
}

impl<'a> Script<'a> {
    /// A JSON POST answered 200 with `content_type`, each body in one chunk.
    pub fn new(request: &'a [u8], content_type: &'a str, response: &'a [u8]) -> Self {
        Script {
            request,
            request_chunks: &[],
            status: 200,
            content_type,
            response,
            response_chunks: &[],
            content_length: true,
            request_trailers: false,
            response_trailers: false,
            reset_after: None,
            refuse: HashSet::new(),
            request_headers: &[],
            properties: &[],
            shared: SharedMemory::default(),
        }
    }

    /// Plays the exchange; `reply` answers callouts, each after the
    /// callback that made it returned.
    pub fn play(
        &self,
        settings: Arc<Settings>,
        reply: &mut dyn FnMut(&LlmRequest) -> LlmReply,
    ) -> Transcript {
        let max_body = settings.max_body_bytes;
        let mut host = MemoryHost::post(&[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ]);
        host.callouts_allowed = true;
        host.refuse = self.refuse.clone();
        for (name, value) in self.request_headers {
            host.set_request_header(name, value);
        }
        for (path, value) in self.properties {
            host.properties
                .insert(path.to_string(), value.as_bytes().to_vec());
        }
        host.shared = self.shared.clone();
        host.set_now_ms(self.shared.now_ms);
        let mut driver = Driver::new(settings, Rc::new(Vm::default()));
        let mut answered = 0;
        let req = Direction::Request;
        let resp = Direction::Response;
        host.headers(&mut driver, req, self.request.is_empty());
        if !self.request.is_empty() {
            let chunks = split(self.request, self.request_chunks);
            for (chunk, end) in &chunks {
                host.body(&mut driver, req, chunk, *end && !self.request_trailers);
            }
            if self.request_trailers {
                host.trailers(&mut driver, req);
            }
        }
        // A call the request made (a page call's re-issued tool call).
        answer(&mut host, &mut driver, &mut answered, reply);
        // Answered, or closed (a page call the host would not let the
        // plugin answer): nothing reaches the server.
        if host.local_reply.is_some() || host.closed.is_some() {
            host.end(&mut driver);
            return self.transcript(host, driver, false);
        }
        let length = self.response.len().to_string();
        let mut headers = vec![
            (":status", self.status.to_string()),
            ("content-type", self.content_type.to_string()),
        ];
        if self.content_length && self.response.len() <= max_body {
            headers.push(("content-length", length));
        }
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        host.respond(&headers);
        host.headers(&mut driver, resp, self.response.is_empty());
        let mut reset = false;
        if !self.response.is_empty() {
            for (i, (chunk, end)) in split(self.response, self.response_chunks)
                .into_iter()
                .enumerate()
            {
                if self.reset_after == Some(i) {
                    reset = true;
                    break;
                }
                host.body(&mut driver, resp, chunk, end && !self.response_trailers);
                answer(&mut host, &mut driver, &mut answered, reply);
            }
            if self.response_trailers && !reset {
                host.trailers(&mut driver, resp);
                answer(&mut host, &mut driver, &mut answered, reply);
            }
        }
        host.end(&mut driver);
        self.transcript(host, driver, reset)
    }

    fn transcript(&self, host: MemoryHost, driver: Driver, reset: bool) -> Transcript {
        let (req, resp) = (Direction::Request, Direction::Response);
        Transcript {
            stalled: !reset && (host.stopped(resp) || host.stopped(req)),
            request_sent: host.sent(req).to_vec(),
            response_sent: host.sent(resp).to_vec(),
            held_headers: host.headers_held(resp),
            content_length: host
                .header_value(resp, "content-length")
                .and_then(|v| v.parse().ok()),
            trailers_sent: host.trailers_sent(resp),
            local_reply: host.local_reply.clone(),
            callouts: host.callouts.clone(),
            report: driver.report().clone(),
            host,
        }
    }
}

/// Answers the callouts made since the last call, in order.
fn answer(
    host: &mut MemoryHost,
    driver: &mut Driver,
    answered: &mut usize,
    reply: &mut dyn FnMut(&LlmRequest) -> LlmReply,
) {
    while let Some(request) = host.callouts.get(*answered).cloned() {
        *answered += 1;
        let answer = reply(&request);
        host.reply(driver, &answer);
    }
}

#[allow(clippy::panic)] // the simulator's own check, never on the request path
fn assert_no_stall(t: &Transcript) {
    if t.stalled {
        panic!("the response is still stopped after its end: the stream would stall");
    }
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
) -> Transcript {
    let script = Script {
        request_chunks,
        response_chunks,
        ..Script::new(request, content_type, response)
    };
    let t = script.play(settings, reply);
    assert_no_stall(&t);
    t
}

/// `bytes` cut into chunks of the given sizes (cycled; zero sizes become
/// one), each with its end-of-stream flag. An empty body is one empty chunk.
pub(crate) fn split<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<(&'a [u8], bool)> {
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
        assert!(out.held_headers);
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
