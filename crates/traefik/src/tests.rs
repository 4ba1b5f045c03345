//! The adapter on a scripted http-wasm host that behaves as
//! http-wasm-host-go 0.7 does under Traefik 3.7 (`handler/middleware.go`,
//! `handler/nethttp`): bodies buffered whole and read in pieces, the first
//! write replacing a body, a request body read but not written back
//! reaching the server cut short, and a trap (here: a panic) for a response
//! header or status touched after the next handler without
//! `buffer_response`.

use std::cell::{Cell, RefCell};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::config;
use super::flow::{self, Pending};
use super::instance::Instance;
use super::io::{BodyKind, HeaderKind, HttpWasm, Level, BUFFER_REQUEST, BUFFER_RESPONSE};

#[derive(Default)]
struct Message {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    read: usize,
    /// What the guest wrote, if it wrote.
    written: Option<Vec<u8>>,
    /// The reads that ended the body (the only ones the host keeps).
    kept: Vec<u8>,
}

impl Message {
    fn get(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .collect()
    }
}

#[derive(Default)]
struct Fake {
    config: Vec<u8>,
    method: String,
    uri: String,
    request: Message,
    response: Message,
    status: u16,
    features: u32,
    after_next: bool,
    reply_status: Option<u16>,
    logs: RefCell<Vec<String>>,
    clock: Cell<u64>,
}

impl Fake {
    fn new(config: &str) -> Self {
        Fake {
            config: config.as_bytes().to_vec(),
            clock: Cell::new(1_800_000_000_000),
            ..Fake::default()
        }
    }

    fn post(&mut self, body: &[u8]) {
        self.method = "POST".into();
        self.uri = "/mcp".into();
        self.request = Message {
            headers: vec![
                ("host".into(), "127.0.0.1:1".into()),
                ("content-type".into(), "application/json".into()),
                (
                    "accept".into(),
                    "application/json, text/event-stream".into(),
                ),
                ("content-length".into(), body.len().to_string()),
            ],
            body: body.to_vec(),
            ..Message::default()
        };
        self.response = Message::default();
        self.features = 0;
        self.after_next = false;
        self.reply_status = None;
    }

    /// What reached the server.
    fn forwarded(&self) -> Vec<u8> {
        let m = &self.request;
        match (&m.written, m.read) {
            (Some(w), _) => w.clone(),
            (None, 0) => m.body.clone(),
            (None, _) => m.kept.clone(),
        }
    }

    /// The server answers; returns what the client got.
    fn answer(&mut self, content_type: &str, body: &[u8]) {
        self.after_next = true;
        self.status = 200;
        self.response.headers = vec![
            ("content-type".into(), content_type.into()),
            ("content-length".into(), body.len().to_string()),
        ];
        self.response.body = body.to_vec();
    }

    fn client_body(&self) -> Vec<u8> {
        self.response
            .written
            .clone()
            .unwrap_or_else(|| self.response.body.clone())
    }

    fn message(&mut self, kind: HeaderKind) -> &mut Message {
        match kind {
            HeaderKind::Request => &mut self.request,
            HeaderKind::Response => &mut self.response,
        }
    }

    fn check_writable(&self, kind: HeaderKind) {
        match kind {
            HeaderKind::Request => assert!(!self.after_next, "request header after next: trap"),
            HeaderKind::Response => assert!(
                !self.after_next || self.features & BUFFER_RESPONSE != 0,
                "response header after next without buffer_response: trap"
            ),
        }
    }
}

impl HttpWasm for Fake {
    fn enable_features(&mut self, features: u32) -> u32 {
        self.features |= features;
        self.features
    }
    fn config(&self) -> Vec<u8> {
        self.config.clone()
    }
    fn log(&self, level: Level, message: &str) {
        self.logs.borrow_mut().push(format!("{level:?} {message}"));
    }
    fn method(&self) -> String {
        self.method.clone()
    }
    fn uri(&self) -> String {
        self.uri.clone()
    }
    fn header_names(&self, kind: HeaderKind) -> Vec<String> {
        let m = match kind {
            HeaderKind::Request => &self.request,
            HeaderKind::Response => &self.response,
        };
        let mut names: Vec<String> = m.headers.iter().map(|(n, _)| n.to_lowercase()).collect();
        names.sort();
        names.dedup();
        names
    }
    fn header_values(&self, kind: HeaderKind, name: &str) -> Vec<String> {
        match kind {
            HeaderKind::Request => self.request.get(name),
            HeaderKind::Response => self.response.get(name),
        }
    }
    fn set_header(&mut self, kind: HeaderKind, name: &str, value: &str) {
        self.check_writable(kind);
        let m = self.message(kind);
        m.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        m.headers.push((name.to_string(), value.to_string()));
    }
    fn remove_header(&mut self, kind: HeaderKind, name: &str) {
        self.check_writable(kind);
        self.message(kind)
            .headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }
    fn read_body(&mut self, kind: BodyKind, max: usize) -> (Vec<u8>, bool) {
        assert!(max > 0, "a zero limit traps");
        let m = match kind {
            BodyKind::Request => {
                assert!(self.features & BUFFER_REQUEST != 0 || !self.after_next);
                &mut self.request
            }
            BodyKind::Response => {
                assert!(
                    self.features & BUFFER_RESPONSE != 0,
                    "response read unbuffered"
                );
                &mut self.response
            }
        };
        let end = m.read.saturating_add(max).min(m.body.len());
        let piece = m.body[m.read..end].to_vec();
        m.read = end;
        let eof = end == m.body.len();
        if eof {
            m.kept = piece.clone();
        }
        (piece, eof)
    }
    fn write_body(&mut self, kind: BodyKind, bytes: &[u8]) {
        let m = match kind {
            BodyKind::Request => &mut self.request,
            BodyKind::Response => {
                self.check_writable(HeaderKind::Response);
                &mut self.response
            }
        };
        m.written
            .get_or_insert_with(Vec::new)
            .extend_from_slice(bytes);
    }
    fn status(&self) -> u16 {
        assert!(
            self.features & BUFFER_RESPONSE != 0,
            "status unbuffered: trap"
        );
        self.status
    }
    fn set_status(&mut self, status: u16) {
        assert!(!self.after_next);
        self.reply_status = Some(status);
    }
    fn random(&self, out: &mut [u8]) -> bool {
        out.fill(7);
        true
    }
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.clock.get())
    }
    fn memory_bytes(&self) -> usize {
        0
    }
}

fn instance(fake: &mut Fake) -> Instance {
    let loaded = config::load(&fake.config.clone()).unwrap();
    let mut i = Instance::new(loaded, fake);
    flow::configured(&mut i, fake);
    i
}

fn call(tool: &str, args: Value) -> Vec<u8> {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":args}})
        .to_string()
        .into_bytes()
}

fn result(text: &str) -> Vec<u8> {
    json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":text}]}})
        .to_string()
        .into_bytes()
}

fn table(rows: usize) -> String {
    let rows: Vec<Value> = (0..rows)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "ok": i % 2 == 0}))
        .collect();
    serde_json::to_string_pretty(&Value::Array(rows)).unwrap()
}

/// One exchange: the request, then (if it went on) the server's answer.
fn exchange(
    i: &mut Instance,
    fake: &mut Fake,
    request: &[u8],
    content_type: &str,
    response: &[u8],
) -> Option<()> {
    fake.post(request);
    let pending: Pending = flow::handle_request(i, fake)?;
    fake.answer(content_type, response);
    flow::handle_response(i, fake, pending);
    Some(())
}

#[test]
fn a_table_result_is_encoded_with_held_headers() {
    let mut fake = Fake::new(r#"{"config":"{\"hold_headers\":true}"}"#);
    let mut i = instance(&mut fake);
    let request = call("rows", json!({}));
    let response = result(&table(30));
    exchange(&mut i, &mut fake, &request, "application/json", &response).unwrap();
    assert_eq!(fake.features, BUFFER_REQUEST | BUFFER_RESPONSE);
    // The request reached the server whole, though it was read.
    assert_eq!(fake.forwarded(), request);
    let body = fake.client_body();
    assert!(body.len() < response.len());
    let text = serde_json::from_slice::<Value>(&body).unwrap()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.starts_with("[mcp-toon/v1]"), "{text}");
    assert_eq!(
        fake.response.get("content-length"),
        vec![body.len().to_string()]
    );
    let summary = fake.response.get("x-mcp-toon");
    assert!(summary[0].starts_with("cleaned=1 encoded=1"), "{summary:?}");
    assert_eq!(i.counters.get("mcp_toon_encoded"), Some(&1));
}

/// A request of many pieces goes to the server as it came, and a result
/// that no stage changes is never written.
#[test]
fn what_nothing_changes_passes_untouched() {
    let mut fake = Fake::new("");
    let mut i = instance(&mut fake);
    let prose = "word ".repeat(60_000);
    let request = call("echo", json!({ "text": prose }));
    assert!(request.len() > 4 * super::pump::PIECE);
    let response = result("just prose, no JSON");
    exchange(&mut i, &mut fake, &request, "application/json", &response).unwrap();
    assert_eq!(fake.forwarded(), request);
    assert_eq!(fake.response.written, None);
    assert_eq!(fake.client_body(), response);
}

/// A listing nothing rewrites and a GET are not buffered: their responses
/// are never touched after the next handler (the host would trap).
#[test]
fn responses_worth_nothing_are_not_buffered() {
    let mut fake = Fake::new("");
    let mut i = instance(&mut fake);
    let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    exchange(&mut i, &mut fake, list, "application/json", b"{}").unwrap();
    assert_eq!(fake.features & BUFFER_RESPONSE, 0);
    fake.post(b"");
    fake.method = "GET".into();
    fake.request.headers.retain(|(n, _)| n != "content-length");
    fake.request.headers.retain(|(n, _)| n != "content-type");
    fake.request.headers[1].1 = "text/event-stream".into();
    let pending = flow::handle_request(&mut i, &mut fake).unwrap();
    assert_eq!(fake.features & BUFFER_RESPONSE, 0);
    fake.answer("text/event-stream", b"data: {}\n\n");
    flow::handle_response(&mut i, &mut fake, pending);
    assert_eq!(fake.response.written, None);
}

/// A result past `max_response_bytes` that nothing changed is left in the
/// host: not read past the limit (its first piece shows it).
#[test]
fn a_result_past_the_limit_is_not_read_to_its_end() {
    let mut fake = Fake::new(r#"{"config":"{\"max_response_bytes\":1024}"}"#);
    let mut i = instance(&mut fake);
    let response = result(&table(20_000));
    fake.post(&call("rows", json!({})));
    let pending = flow::handle_request(&mut i, &mut fake).unwrap();
    fake.answer("application/json", &response);
    // Chunked by the server: the limit shows only as the body comes.
    fake.response.headers.retain(|(n, _)| n != "content-length");
    flow::handle_response(&mut i, &mut fake, pending);
    assert!(
        fake.response.read <= super::pump::PIECE,
        "{}",
        fake.response.read
    );
    assert_eq!(fake.client_body(), response);
    assert_eq!(
        i.counters.get("mcp_toon_passthrough_response_too_large"),
        Some(&1)
    );
}

/// The VM's memory budget holds in a Traefik instance too (its streams
/// share the instance's `Vm`): a result whose stages' working memory would
/// pass `max_vm_held_bytes` is read no further, left as the server sent
/// it, and counted.
#[test]
fn a_result_past_the_memory_budget_is_left_as_it_came() {
    let mut fake = Fake::new(r#"{"config":"{\"max_vm_held_bytes\":1048576}"}"#);
    let mut i = instance(&mut fake);
    let response = result(&table(20_000));
    // Its stages' working memory alone is past the budget.
    assert!(response.len() * mcp_toon_engine::config::VM_WORK_FACTOR > 1 << 20);
    fake.post(&call("rows", json!({})));
    let pending = flow::handle_request(&mut i, &mut fake).unwrap();
    fake.answer("application/json", &response);
    fake.response.headers.retain(|(n, _)| n != "content-length");
    flow::handle_response(&mut i, &mut fake, pending);
    assert!(
        fake.response.read < response.len(),
        "{} of {}",
        fake.response.read,
        response.len()
    );
    assert_eq!(fake.client_body(), response);
    assert_eq!(
        i.counters.get("mcp_toon_passthrough_vm_memory_budget"),
        Some(&1)
    );
    // What the stream held went back to the instance's ledger.
    assert_eq!(i.vm.reserved(), 0);
}

/// Events of a POST's stream are rewritten; the stream is written once.
#[test]
fn an_event_stream_is_rewritten() {
    let mut fake = Fake::new("");
    let mut i = instance(&mut fake);
    let mut sse = b"event: message\ndata: ".to_vec();
    sse.extend(result(&table(30)));
    sse.extend(b"\n\n");
    exchange(
        &mut i,
        &mut fake,
        &call("rows", json!({})),
        "text/event-stream",
        &sse,
    )
    .unwrap();
    let out = String::from_utf8(fake.client_body()).unwrap();
    assert!(
        out.starts_with("event: message\ndata: {") && out.ends_with("\n\n"),
        "{out}"
    );
    assert!(out.contains("[mcp-toon/v1]"), "{out}");
    // The body may change size: its length went.
    assert!(fake.response.get("content-length").is_empty());
}

/// A page call is answered by the instance that cut the result, without
/// the server; another instance does not hold the page.
#[test]
fn a_page_is_served_by_the_instance_that_holds_it() {
    let key = "k".repeat(32);
    let cfg = json!({"config": json!({
        "hold_headers": true,
        "budget": {"bytes": 2048},
        "paging": {"enabled": true, "key": key, "reissue": "never"},
    }).to_string()});
    let mut fake = Fake::new(&cfg.to_string());
    let mut i = instance(&mut fake);
    exchange(
        &mut i,
        &mut fake,
        &call("rows", json!({})),
        "application/json",
        &result(&table(400)),
    )
    .unwrap();
    let body: Value = serde_json::from_slice(&fake.client_body()).unwrap();
    let texts: Vec<&str> = body["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    let all = texts.join("\n");
    let handle = all
        .split('"')
        .find(|s| s.len() > 40 && !s.contains(' '))
        .unwrap_or_else(|| panic!("no handle in {all}"))
        .to_string();
    let page = call("mcp_toon_page", json!({ "handle": handle }));
    fake.post(&page);
    assert!(
        flow::handle_request(&mut i, &mut fake).is_none(),
        "answered here"
    );
    assert_eq!(fake.reply_status, Some(200));
    let reply: Value = serde_json::from_slice(&fake.response.written.clone().unwrap()).unwrap();
    assert_eq!(reply["result"]["isError"], Value::Null, "{reply}");
    // A second instance holds no page: the page tool's error, still local.
    let mut other = instance(&mut fake);
    fake.post(&page);
    assert!(flow::handle_request(&mut other, &mut fake).is_none());
    let reply: Value = serde_json::from_slice(&fake.response.written.clone().unwrap()).unwrap();
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
}

/// Issue 37 on this host: a page is served only to the caller it was cut
/// for (by default the digest of `authorization` and `cookie`; here also a
/// header the authentication middleware sets), and a refused page call is
/// answered here too, never passed to the server.
#[test]
fn a_page_is_served_only_to_its_owner() {
    let key = "k".repeat(32);
    for (owner, name) in [
        (json!({"from": "credentials"}), "authorization"),
        (json!({"from": "header", "name": "x-user"}), "x-user"),
    ] {
        let cfg = json!({"config": json!({
            "hold_headers": true,
            "budget": {"bytes": 2048},
            "paging": {"enabled": true, "key": key, "reissue": "never", "owner": owner},
        }).to_string()});
        let mut fake = Fake::new(&cfg.to_string());
        let mut i = instance(&mut fake);
        let as_caller = |fake: &mut Fake, body: &[u8], who: Option<&str>| {
            fake.post(body);
            if let Some(who) = who {
                fake.request.headers.push((name.into(), who.into()));
            }
        };
        as_caller(&mut fake, &call("rows", json!({})), Some("alice"));
        let pending = flow::handle_request(&mut i, &mut fake).unwrap();
        fake.answer("application/json", &result(&table(400)));
        flow::handle_response(&mut i, &mut fake, pending);
        let body: Value = serde_json::from_slice(&fake.client_body()).unwrap();
        let notice = body["result"]["content"][1]["text"].as_str().unwrap();
        let start = notice.find(r#"{"handle":""#).unwrap() + 11;
        let handle = notice[start..start + notice[start..].find('"').unwrap()].to_string();
        let page = call("mcp_toon_page", json!({ "handle": handle }));
        for who in [Some("mallory"), None, Some("alice")] {
            as_caller(&mut fake, &page, who);
            assert!(
                flow::handle_request(&mut i, &mut fake).is_none(),
                "{who:?}: answered here, never passed on"
            );
            let reply: Value =
                serde_json::from_slice(&fake.response.written.clone().unwrap()).unwrap();
            let served = reply["result"].get("isError").is_none();
            assert_eq!(served, who == Some("alice"), "{name} {who:?}: {reply}");
        }
        assert_eq!(
            i.counters.get("mcp_toon_passthrough_page_foreign"),
            Some(&2),
            "{name}: {:?}",
            i.counters
        );
    }
}

/// A request the core shortens (the agent's query taken out) keeps its
/// `content-length`, which Go's transport keeps for the server: it is
/// padded with JSON whitespace, and parses as the shortened request.
#[test]
fn a_shortened_request_is_padded_to_its_length() {
    let mut fake = Fake::new(r#"{"config":"{\"project\":{\"queries\":true}}"}"#);
    let mut i = instance(&mut fake);
    let request = call("rows", json!({"jmespath": "[?id < `3`]", "limit": 5}));
    exchange(
        &mut i,
        &mut fake,
        &request,
        "application/json",
        &result(&table(30)),
    )
    .unwrap();
    let forwarded = fake.forwarded();
    assert_eq!(forwarded.len(), request.len());
    let value: Value = serde_json::from_slice(&forwarded).unwrap();
    assert_eq!(value["params"]["arguments"], json!({"limit": 5}));
    assert!(forwarded.ends_with(b" "));
}

/// `log_level: debug`: each exchange's record; `info`: the instance's
/// counters at the first request a minute after the last line.
#[test]
fn decisions_and_counters_reach_the_log_at_their_levels() {
    let mut fake = Fake::new(r#"{"log_level":"debug"}"#);
    let mut i = instance(&mut fake);
    let request = call("rows", json!({}));
    exchange(
        &mut i,
        &mut fake,
        &request,
        "application/json",
        &result(&table(30)),
    )
    .unwrap();
    let record = fake.logs.borrow().iter().any(|l| {
        l.starts_with("Debug mcp-toon: cleaned=1 encoded=1") && l.contains(r#""tool":"rows""#)
    });
    assert!(record, "{:?}", fake.logs.borrow());
    assert!(!fake.logs.borrow().iter().any(|l| l.contains("counters")));
    fake.clock.set(fake.clock.get() + 61_000);
    exchange(
        &mut i,
        &mut fake,
        &request,
        "application/json",
        &result(&table(30)),
    )
    .unwrap();
    let counters: Vec<String> = fake
        .logs
        .borrow()
        .iter()
        .filter(|l| l.starts_with("Info mcp-toon: this instance's counters"))
        .cloned()
        .collect();
    assert_eq!(counters.len(), 1, "{counters:?}");
    assert!(
        counters[0].contains(" mcp_toon_encoded=1"),
        "{}",
        counters[0]
    );
    // `warn` (the default) writes neither.
    let mut quiet = Fake::new("");
    let mut q = instance(&mut quiet);
    exchange(
        &mut q,
        &mut quiet,
        &request,
        "application/json",
        &result(&table(30)),
    )
    .unwrap();
    assert!(quiet.logs.borrow().is_empty(), "{:?}", quiet.logs.borrow());
}

/// `close` before the next handler answers the request with an empty 502
/// (the request never goes on); after it, nothing can stop the request.
#[test]
fn a_closed_request_never_goes_on() {
    use super::host::{Request, Traefik, GONE};
    use mcp_toon_engine::host::{Direction, Host};
    let mut fake = Fake::new("");
    let mut i = instance(&mut fake);
    let mut request = Request::default();
    let mut host = Traefik {
        io: &mut fake,
        instance: &mut i,
        request: &mut request,
    };
    assert_eq!(host.close(Direction::Request), Ok(()));
    let reply = request.reply.clone().unwrap();
    assert_eq!((reply.status, reply.body.len()), (502, 0));
    request.after_next = true;
    let mut host = Traefik {
        io: &mut fake,
        instance: &mut i,
        request: &mut request,
    };
    assert_eq!(host.close(Direction::Response), Err(GONE));
}
