use std::sync::Arc;

use serde_json::{json, Value};

use super::super::{Exchange, Flow, Out, RequestHead, ResponseHead, Step};
use crate::config::{Settings, StreamInfo};
use crate::outcome::{Outcome, Reason, Stage};
use crate::shared::SharedMemory;

use crate::testkit::{request_head, shared};

fn settings(listings: &str, extra: &str) -> Arc<Settings> {
    Arc::new(
        Settings::from_json(&format!(
            r#"{{"hold_headers":true{extra},"listings":{listings}}}"#
        ))
        .unwrap(),
    )
}

fn stream(cluster: &str) -> StreamInfo {
    StreamInfo {
        route: Some("mcp".into()),
        cluster: Some(cluster.into()),
        authority: Some("localhost".into()),
    }
}

const LONG: &str = "Read the complete contents of a file from the file system. Handles various text encodings and provides detailed error messages if the file cannot be read.";

fn tools() -> Vec<Value> {
    vec![
        json!({"name": "read_file", "description": LONG, "inputSchema": {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#", "additionalProperties": false, "properties": {"path": {"type": "string", "description": "Where the file is."}}, "required": ["path"]}, "annotations": {"readOnlyHint": true}}),
        json!({"name": "write_file", "description": "Create a new file or completely overwrite an existing file with new content. Use with caution.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "Where."}, "content": {"type": "string", "description": "What."}}, "required": ["path", "content"]}}),
        json!({"name": "list_directory", "description": "Get a detailed listing of all files and directories in a specified path. Results distinguish files and directories.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}),
    ]
}

/// One request through the exchange, whole; its step.
fn request(
    e: &mut Exchange,
    body: &[u8],
    cluster: &str,
    modern: bool,
    shared: &mut SharedMemory,
) -> Step {
    let stream = stream(cluster);
    let v: Value = serde_json::from_slice(body).unwrap();
    let method = v["method"].as_str().map(str::to_string);
    let name = v["params"]["name"].as_str().map(str::to_string);
    let headers = if modern {
        vec![("mcp-protocol-version".to_string(), "2026-07-28".to_string())]
    } else {
        Vec::new()
    };
    let plan = e.request_headers(RequestHead {
        headers: &headers,
        mcp_method: method.as_deref().filter(|_| modern),
        mcp_name: name.as_deref().filter(|_| modern),
        ..request_head(&stream, "POST", Some("application/json"))
    });
    assert!(plan.read_body);
    e.request_chunk(body, true, shared)
}

fn list_request(id: u32, cursor: Option<&str>) -> Vec<u8> {
    let mut r = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    if let Some(c) = cursor {
        r["params"] = json!({"cursor": c});
    }
    r.to_string().into_bytes()
}

fn sent(step: Step, input: &[u8]) -> Vec<u8> {
    match step.out {
        Out::Input => input.to_vec(),
        Out::Bytes { bytes, .. } => bytes,
    }
}

/// A `tools/list` exchange; the body the client gets.
fn list(
    s: &Arc<Settings>,
    cluster: &str,
    result: Value,
    cursor: Option<&str>,
    sse: bool,
    shared: &mut SharedMemory,
) -> (Vec<u8>, Exchange) {
    let mut e = Exchange::new(Arc::clone(s));
    let req = list_request(1, cursor);
    let step = request(&mut e, &req, cluster, false, shared);
    assert_eq!(step.flow, Flow::Continue);
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
    let body = if sse {
        format!("event: message\ndata: {message}\n\n").into_bytes()
    } else {
        message.into_bytes()
    };
    e.response_headers(
        ResponseHead {
            status: Some(200),
            content_type: Some(if sse {
                "text/event-stream"
            } else {
                "application/json"
            }),
            content_encoding: None,
            content_length: (!sse).then_some(body.len()),
            end_of_stream: false,
        },
        shared,
    );
    let mut out = Vec::new();
    // In two chunks: the exchange collects.
    let (a, b) = body.split_at(body.len() / 2);
    out.extend(sent(e.response_chunk(a, false, shared), a));
    out.extend(sent(e.response_chunk(b, true, shared), b));
    (out, e)
}

fn result_of(body: &[u8], sse: bool) -> Value {
    let text = String::from_utf8(body.to_vec()).unwrap();
    let json = if sse {
        text.lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap()
            .to_string()
    } else {
        text
    };
    serde_json::from_str::<Value>(&json).unwrap()["result"].clone()
}

fn names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn outcomes(e: &Exchange) -> Vec<Outcome> {
    e.report()
        .decisions
        .iter()
        .filter(|d| d.stage == Stage::Listing)
        .map(|d| d.outcome)
        .collect()
}

/// A call of an added tool: the local reply's result, or the step.
fn call(
    s: &Arc<Settings>,
    tool: &str,
    args: Value,
    modern: bool,
    shared: &mut SharedMemory,
) -> (Step, Exchange) {
    let mut e = Exchange::new(Arc::clone(s));
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        .to_string()
        .into_bytes();
    let step = request(&mut e, &body, "fs", modern, shared);
    (step, e)
}

fn reply_result(step: &Step) -> Value {
    let reply = step.reply.as_ref().expect("a local reply");
    assert_eq!(reply.status, 200);
    let v: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(v["id"], 9);
    v["result"].clone()
}

/// A describe call of `read_file` on cluster `fs` is answered from the
/// kept list.
fn described(s: &Arc<Settings>, m: &mut SharedMemory) -> bool {
    let (step, _) = call(
        s,
        "mcp_toon_describe",
        json!({"name": "read_file"}),
        false,
        m,
    );
    reply_result(&step).get("isError").is_none()
}

/// A describe call on cluster `fs` is told to list the tools again: the
/// kept list is gone.
fn assert_list_again(s: &Arc<Settings>, m: &mut SharedMemory) {
    let (step, e) = call(
        s,
        "mcp_toon_describe",
        json!({"name": "read_file"}),
        false,
        m,
    );
    let result = reply_result(&step);
    assert_eq!(result["isError"], true);
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("list the tools again"));
    assert_eq!(outcomes(&e), [Outcome::Passthrough(Reason::CatalogMissing)]);
}

/// The head of a 200 event stream of unknown length.
fn event_stream() -> ResponseHead<'static> {
    ResponseHead {
        status: Some(200),
        content_type: Some("text/event-stream"),
        content_encoding: None,
        content_length: None,
        end_of_stream: false,
    }
}

#[test]
fn off_by_default_a_listing_passes_byte_identical() {
    // annotate_tools reads listings; no `listings` mode is set.
    let s = Arc::new(Settings::from_json(r#"{"hold_headers":true}"#).unwrap());
    let mut m = shared();
    let result = json!({"tools": tools()});
    let mut e = Exchange::new(Arc::clone(&s));
    let req = list_request(1, None);
    let step = request(&mut e, &req, "fs", false, &mut m);
    assert_eq!(step.out, Out::Input);
    assert!(e.is_done(), "a listing no stage changes is not read");
    // Compact in another server scope: this one's listing is untouched.
    let s = settings(
        r#"{"mode":"off"}"#,
        r#","servers":[{"match":{"cluster":"other"},"listings":{"mode":"compact"}}]"#,
    );
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
    let (out, e) = list(&s, "fs", result, None, false, &mut m);
    assert_eq!(out, message.as_bytes());
    assert!(outcomes(&e).is_empty());
    assert_eq!(m.keys(), 0, "nothing kept");
}

#[test]
fn compact_rewrites_json_and_sse_listings_and_adds_describe() {
    for sse in [false, true] {
        let s = settings(r#"{"mode":"compact"}"#, "");
        let mut m = shared();
        let (out, e) = list(&s, "fs", json!({"tools": tools()}), None, sse, &mut m);
        let result = result_of(&out, sse);
        assert_eq!(
            names(&result),
            [
                "read_file",
                "write_file",
                "list_directory",
                "mcp_toon_describe"
            ]
        );
        let read = &result["tools"][0];
        assert_eq!(
            read["description"],
            "Read the complete contents of a file from the file system."
        );
        assert_eq!(read["annotations"]["readOnlyHint"], true);
        assert_eq!(read["inputSchema"]["required"], json!(["path"]));
        assert!(read["inputSchema"]["properties"]["path"]
            .get("description")
            .is_none());
        assert!(read["inputSchema"].get("$schema").is_none());
        assert_eq!(outcomes(&e), [Outcome::Compacted]);
        let d = e
            .report()
            .decisions
            .iter()
            .find(|d| d.stage == Stage::Listing)
            .unwrap();
        assert!(d.bytes_after < d.bytes_before, "{d:?}");
        assert_eq!(m.keys(), 1, "the catalog is kept");
    }
}

#[test]
fn compaction_runs_before_the_decode_hint() {
    let s = settings(r#"{"mode":"compact"}"#, r#","annotate_tools":true"#);
    let mut m = shared();
    let (out, _) = list(&s, "fs", json!({"tools": tools()}), None, false, &mut m);
    let result = result_of(&out, false);
    let description = result["tools"][0]["description"].as_str().unwrap();
    assert!(
        description.starts_with("Read the complete contents of a file from the file system.")
            && description.ends_with(crate::pipeline::DECODE_HINT),
        "{description}"
    );
    assert!(!description.contains("Handles various"), "{description}");
}

#[test]
fn describe_answers_the_definition_as_sent_until_it_expires() {
    let s = settings(r#"{"mode":"compact","ttl_s":60}"#, "");
    let mut m = shared();
    list(&s, "fs", json!({"tools": tools()}), None, false, &mut m);
    for modern in [false, true] {
        let (step, e) = call(
            &s,
            "mcp_toon_describe",
            json!({"name": "read_file"}),
            modern,
            &mut m,
        );
        let result = reply_result(&step);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), tools()[0]);
        assert!(result.get("isError").is_none());
        assert_eq!(result.get("resultType").is_some(), modern);
        assert_eq!(outcomes(&e), [Outcome::Answered]);
        // Should the host refuse the reply, the call goes on as it came.
        assert!(matches!(
            &step.out,
            Out::Bytes {
                original: Some(_),
                ..
            }
        ));
    }
    let (step, e) = call(
        &s,
        "mcp_toon_describe",
        json!({"name": "nope"}),
        false,
        &mut m,
    );
    let result = reply_result(&step);
    assert_eq!(result["isError"], true);
    assert_eq!(
        outcomes(&e),
        [Outcome::Passthrough(Reason::ListingCallRefused)]
    );
    // Past ttl_s the kept list is gone.
    m.now_ms += 61_000;
    assert_list_again(&s, &mut m);
    // Another cluster's streams never see this one's list.
    m.now_ms -= 61_000;
    let mut e = Exchange::new(Arc::clone(&s));
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "mcp_toon_describe", "arguments": {"name": "read_file"}}}).to_string();
    let step = request(&mut e, body.as_bytes(), "other", false, &mut m);
    assert_eq!(reply_result(&step)["isError"], true);
}

#[test]
fn a_ttl_ms_shorter_than_ttl_s_ends_the_kept_list_sooner_but_not_at_once() {
    let s = settings(r#"{"mode":"compact","ttl_s":600}"#, "");
    let describe = |m: &mut SharedMemory| described(&s, m);
    let mut m = shared();
    let hinted = json!({"tools": tools(), "ttlMs": 120_000});
    list(&s, "fs", hinted, None, false, &mut m);
    m.now_ms += 119_000;
    assert!(describe(&mut m));
    m.now_ms += 2000;
    assert!(!describe(&mut m), "ttlMs ended it");
    // `ttlMs: 0` (mcp-server-git): kept MIN_KEEP_MS all the same.
    let mut m = shared();
    list(
        &s,
        "fs",
        json!({"tools": tools(), "ttlMs": 0}),
        None,
        false,
        &mut m,
    );
    m.now_ms += super::MIN_KEEP_MS - 1;
    assert!(describe(&mut m));
    m.now_ms += 2;
    assert!(!describe(&mut m));
}

#[test]
fn a_server_tool_named_like_an_added_one_leaves_the_listing_alone() {
    let s = settings(r#"{"mode":"compact"}"#, "");
    let mut m = shared();
    let mut t = tools();
    t.push(json!({"name": "mcp_toon_describe", "inputSchema": {"type": "object"}}));
    let result = json!({"tools": t});
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
    let (out, e) = list(&s, "fs", result, None, false, &mut m);
    assert_eq!(out, message.as_bytes());
    assert_eq!(
        outcomes(&e),
        [Outcome::Passthrough(Reason::ListingShadowed)]
    );
}

#[test]
fn disclose_gathers_every_page_then_lists_hot_and_added_tools() {
    let s = settings(r#"{"mode":"disclose","hot":["write_file"]}"#, "");
    let mut m = shared();
    let t = tools();
    let first = json!({"tools": [t[0].clone(), t[1].clone()], "nextCursor": "p2"});
    let (out, _) = list(&s, "fs", first, None, false, &mut m);
    let page = result_of(&out, false);
    assert_eq!(page, json!({"tools": [], "nextCursor": "p2"}));
    let last = json!({"tools": [t[2].clone()], "ttlMs": 60000});
    let (out, e) = list(&s, "fs", last, Some("p2"), true, &mut m);
    let result = result_of(&out, true);
    assert_eq!(
        names(&result),
        [
            "write_file",
            "mcp_toon_search_tools",
            "mcp_toon_call_tool",
            "mcp_toon_describe"
        ]
    );
    assert_eq!(result["tools"][0], t[1], "a hot tool in full");
    assert_eq!(result["ttlMs"], 60000);
    assert!(result["tools"][1]["description"]
        .as_str()
        .unwrap()
        .contains("2 other tools"));
    assert_eq!(outcomes(&e), [Outcome::Disclosed]);

    // Search, answered here.
    let (step, e) = call(
        &s,
        "mcp_toon_search_tools",
        json!({"query": "read a file", "limit": 1}),
        false,
        &mut m,
    );
    let result = reply_result(&step);
    let found: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(found[0]["name"], "read_file");
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(outcomes(&e), [Outcome::Answered]);

    // Call, rewritten into the real call.
    for modern in [false, true] {
        let (step, e) = call(
            &s,
            "mcp_toon_call_tool",
            json!({"name": "read_file", "arguments": {"path": "/a"}}),
            modern,
            &mut m,
        );
        assert!(step.reply.is_none());
        assert_eq!(step.flow, Flow::Continue);
        let Out::Bytes { bytes, original } = &step.out else {
            panic!("{step:?}")
        };
        assert!(original.is_some());
        let sent: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "/a"}}})
        );
        assert_eq!(
            step.request_header,
            modern.then(|| ("mcp-name", "read_file".to_string()))
        );
        assert_eq!(outcomes(&e), [Outcome::Rewritten]);
    }
    // A tool the kept list does not have: a tool error, not a call.
    let (step, e) = call(
        &s,
        "mcp_toon_call_tool",
        json!({"name": "nope"}),
        false,
        &mut m,
    );
    assert_eq!(reply_result(&step)["isError"], true);
    assert_eq!(
        outcomes(&e),
        [Outcome::Passthrough(Reason::ListingCallRefused)]
    );
}

#[test]
fn disclose_without_a_kept_list_says_so() {
    let s = settings(r#"{"mode":"disclose"}"#, "");
    let mut m = shared();
    let (step, e) = call(
        &s,
        "mcp_toon_search_tools",
        json!({"query": "x"}),
        false,
        &mut m,
    );
    let result = reply_result(&step);
    assert_eq!(result["isError"], true);
    assert_eq!(outcomes(&e), [Outcome::Passthrough(Reason::CatalogMissing)]);
    // The call tool still reaches the server, which knows its tools.
    let (step, _) = call(
        &s,
        "mcp_toon_call_tool",
        json!({"name": "read_file"}),
        false,
        &mut m,
    );
    assert!(step.reply.is_none());
    let Out::Bytes { bytes, .. } = &step.out else {
        panic!("{step:?}")
    };
    assert!(String::from_utf8_lossy(bytes).contains(r#""name":"read_file""#));
}

#[test]
fn a_real_tool_called_by_name_goes_on_as_it_came() {
    let s = settings(r#"{"mode":"disclose"}"#, "");
    let mut m = shared();
    let (step, e) = call(&s, "read_file", json!({"path": "/a"}), false, &mut m);
    assert!(step.reply.is_none());
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "/a"}}}).to_string();
    assert_eq!(sent(step, body.as_bytes()), body.as_bytes());
    assert!(outcomes(&e).is_empty());
}

/// A client's GET event stream on `cluster` carrying `events`; the bytes
/// the client gets.
fn get_stream(
    s: &Arc<Settings>,
    cluster: &str,
    events: &str,
    shared: &mut SharedMemory,
) -> Vec<u8> {
    let mut e = Exchange::new(Arc::clone(s));
    let info = stream(cluster);
    e.request_headers(RequestHead {
        accept: Some("text/event-stream"),
        end_of_stream: true,
        ..request_head(&info, "GET", None)
    });
    e.response_headers(event_stream(), shared);
    let body = events.as_bytes();
    sent(e.response_chunk(body, true, shared), body)
}

#[test]
fn a_list_changed_notification_ends_the_kept_list() {
    let s = settings(r#"{"mode":"compact","ttl_s":600}"#, "");
    let mut m = shared();
    list(&s, "fs", json!({"tools": tools()}), None, false, &mut m);
    assert!(described(&s, &mut m));
    // Look-alikes leave it: a request named so (it has an id), the text in
    // another member, another list's notification, and the notification on
    // another cluster's stream.
    let others = [
        r#"{"jsonrpc":"2.0","id":4,"method":"notifications/tools/list_changed"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"notifications/tools/list_changed"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#,
    ];
    for data in others {
        let events = format!("event: message\ndata: {data}\n\n");
        assert_eq!(get_stream(&s, "fs", &events, &mut m), events.as_bytes());
        assert!(described(&s, &mut m), "{data}");
    }
    let changed = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
    get_stream(&s, "other", changed, &mut m);
    assert!(described(&s, &mut m));
    // On this cluster's stream, in a batch or alone: passed as it came, and
    // the kept list is gone until the client lists again.
    for data in [
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        r#"[{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}]"#,
    ] {
        let events = format!(": keep-alive\n\nid: 7\ndata: {data}\n\n");
        assert_eq!(get_stream(&s, "fs", &events, &mut m), events.as_bytes());
        assert_list_again(&s, &mut m);
        list(&s, "fs", json!({"tools": tools()}), None, false, &mut m);
        assert!(described(&s, &mut m));
    }
}

#[test]
fn a_2026_listen_stream_is_read_only_where_lists_are_kept() {
    let listen = json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": true}}}).to_string();
    let events = concat!(
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":3}}}\n\n",
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":3}}}\n\n",
    );
    let open = |s: &Arc<Settings>, modern: bool, m: &mut SharedMemory| {
        let mut e = Exchange::new(Arc::clone(s));
        let step = request(&mut e, listen.as_bytes(), "fs", modern, m);
        (e, step)
    };
    // Without listings its answer is not read (the body is, for TOON's
    // sake, when no `Mcp-Method` header says what it is).
    let off = settings(r#"{"mode":"off"}"#, "");
    let mut m = shared();
    let (e, _) = open(&off, false, &mut m);
    assert!(e.is_done());
    // With them: read, passed as it came, and the kept list is gone.
    let s = settings(r#"{"mode":"compact","ttl_s":600}"#, "");
    list(&s, "fs", json!({"tools": tools()}), None, false, &mut m);
    let (mut e, step) = open(&s, true, &mut m);
    assert_eq!(step.flow, Flow::Continue);
    assert!(!e.is_done());
    e.response_headers(event_stream(), &mut m);
    let mut out = Vec::new();
    for piece in events.as_bytes().chunks(17) {
        out.extend(sent(e.response_chunk(piece, false, &mut m), piece));
    }
    out.extend(sent(e.response_chunk(b"", true, &mut m), b""));
    assert_eq!(out, events.as_bytes());
    assert!(
        e.report().decisions.is_empty(),
        "{:?}",
        e.report().decisions
    );
    assert_list_again(&s, &mut m);
}
