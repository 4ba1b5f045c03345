//! The scanner against the serde_json readers it stands in for
//! ([`parse_messages`], [`tool_result`], [`text_items`] for responses,
//! `RequestInfo::by_serde` for requests): the same messages, results,
//! items, calls and refusals, on hand-made bodies, the token corpus and
//! the fuzz seeds, every nesting depth around serde_json's limit, every
//! one-byte mutation of a few bodies, and generated bodies (`generated`).

use serde::de::IgnoredAny;

use super::{Text, Texts};
use crate::config::Limits;
use crate::mcp::request::by_serde::parse as by_serde_request;
use crate::mcp::{parse_messages, text_items, tool_result, Declared, QUERY_NOT_A_STRING};
use crate::outcome::Reason;

mod generated;

type ItemView = Option<(Option<String>, Option<String>)>;
type ToolView = Option<(Option<Vec<ItemView>>, Option<bool>, Option<String>)>;
type View = Vec<(Option<String>, bool, Option<String>, ToolView)>;

fn by_serde(text: &str) -> Option<View> {
    let messages = parse_messages(text)?;
    Some(
        messages
            .iter()
            .map(|m| {
                let tool = m.result.and_then(tool_result).map(|t| {
                    let content = t.content.map(|c| {
                        text_items(&c)
                            .into_iter()
                            .map(|i| {
                                i.map(|i| {
                                    (
                                        i.kind.map(|k| k.into_owned()),
                                        i.text.map(|t| t.get().to_string()),
                                    )
                                })
                            })
                            .collect()
                    });
                    let structured = t.structured_content.map(|s| s.get().to_string());
                    (content, t.is_error, structured)
                });
                (
                    m.id.clone(),
                    m.is_error_response,
                    m.result.map(|r| r.get().to_string()),
                    tool,
                )
            })
            .collect(),
    )
}

fn by_scan(text: &str, texts: Texts) -> Option<View> {
    Some(
        super::response_reading(text, texts)?
            .into_iter()
            .map(|m| {
                let tool = m.tool.map(|t| {
                    let content = t.content.map(|c| {
                        c.into_iter()
                            .map(|i| {
                                i.map(|mut i| {
                                    // The decoded text is serde_json's, and
                                    // its layout what compaction would find.
                                    let decoded =
                                        i.text.and_then(|t| serde_json::from_str::<String>(t).ok());
                                    match i.take_text() {
                                        Some(Text::Decoded {
                                            value,
                                            layout,
                                            escapes,
                                        }) => {
                                            assert_eq!(
                                                Some(&value),
                                                decoded.as_ref(),
                                                "{:?}",
                                                i.text
                                            );
                                            if serde_json::from_str::<IgnoredAny>(&value).is_ok() {
                                                assert_eq!(
                                                    layout,
                                                    crate::stage::clean::compact::has_layout(
                                                        &value
                                                    ),
                                                    "{value:?}"
                                                );
                                                assert_eq!(escapes, value.contains('\\'));
                                            }
                                        }
                                        // Skimmed: serde_json's value, of
                                        // that length, and no JSON text.
                                        Some(Text::NotJson { len }) => {
                                            assert_ne!(texts, Texts::Decode);
                                            let value = decoded.unwrap_or_default();
                                            if texts == Texts::SkimNotLiteral {
                                                assert_eq!(
                                                    crate::json::python::read(&value),
                                                    None,
                                                    "{value:?}"
                                                );
                                            }
                                            assert_eq!(len, value.len(), "{:?}", i.text);
                                            assert!(
                                                serde_json::from_str::<IgnoredAny>(&value).is_err(),
                                                "{value:?}"
                                            );
                                        }
                                        None => assert_eq!(decoded, None, "{:?}", i.text),
                                    }
                                    (i.kind.map(|k| k.into_owned()), i.text.map(str::to_string))
                                })
                            })
                            .collect()
                    });
                    let structured = t.structured_content.map(str::to_string);
                    (content, t.is_error, structured)
                });
                (
                    m.id,
                    m.is_error_response,
                    m.result.map(str::to_string),
                    tool,
                )
            })
            .collect(),
    )
}

/// The response scanner and the request scanner (with and without an
/// intent argument) each give serde_json's answer for `text`.
pub(super) fn same(text: &str) {
    let serde = by_serde(text);
    assert_eq!(by_scan(text, Texts::Decode), serde, "{text:?}");
    assert_eq!(by_scan(text, Texts::SkimNotJson), serde, "{text:?}");
    assert_eq!(by_scan(text, Texts::SkimNotLiteral), serde, "{text:?}");
    // Checked only: the same messages, results and items, no text read.
    let checked = super::response_reading(text, Texts::Check).map(|ms| {
        ms.into_iter()
            .map(|mut m| {
                let items = m.tool.as_mut().and_then(|t| t.content.as_mut());
                for item in items.into_iter().flatten().flatten() {
                    assert_eq!(item.take_text(), None, "{text:?}");
                }
                let items = m.tool.map(|t| {
                    t.content
                        .map(|c| c.iter().map(Option::is_some).collect::<Vec<_>>())
                });
                (
                    m.id,
                    m.is_error_response,
                    m.result.map(str::to_string),
                    items,
                )
            })
            .collect::<Vec<_>>()
    });
    let expected = serde.as_ref().map(|ms| {
        ms.iter()
            .map(|(id, e, r, t)| {
                let items = t.as_ref().map(|(c, _, _)| {
                    c.as_ref()
                        .map(|c| c.iter().map(Option::is_some).collect::<Vec<_>>())
                });
                (id.clone(), *e, r.clone(), items)
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(checked, expected, "{text:?}");
    let declared = [
        (None, None),
        (Some("expected_info"), None),
        (Some("expected_info"), Some("q")),
        (None, Some("expected_info")),
        (Some("expected_info"), Some("expected_info")),
    ];
    for (intent, query) in declared {
        let arg = Declared { intent, query };
        let scanned = super::request(text, arg, &Limits::NONE);
        let serde = by_serde_request(text.as_bytes(), arg, &Limits::NONE);
        assert_eq!(scanned, serde, "{arg:?} {text:?}");
    }
    // Ids, tool names and intents past limits small enough to meet: the
    // same calls skipped, for the same reasons (issue 13).
    let arg = Declared {
        intent: Some("expected_info"),
        query: Some("q"),
    };
    for limits in TIGHT {
        let scanned = super::request(text, arg, limits);
        let serde = by_serde_request(text.as_bytes(), arg, limits);
        assert_eq!(scanned, serde, "{limits:?} {text:?}");
    }
}

/// Limits the hand-made bodies meet: ids of one to four bytes of JSON
/// text, short tool names and intents.
const TIGHT: &[Limits] = &[
    Limits {
        id: 1,
        tool: 3,
        intent: 2,
    },
    Limits {
        id: 4,
        tool: 4,
        intent: 1,
    },
];

const BODIES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[{\"a\":1},{\"a\":2}]"}],"isError":false}}"#,
    r#" [ {"jsonrpc":"2.0","id":"a\u0062","result":{"content":[{"type":"image","data":"xx"},{"type":"text","text":"hi"}]}} , {"jsonrpc":"2.0","method":"notifications/progress","params":{}} ] "#,
    r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"no"}}"#,
    r#"{"id":null,"result":null,"error":null,"method":null}"#,
    r#"{"id":1.50e+2,"result":{"isError":true,"content":null,"structuredContent":{"k":[1,2,{"x":null}]}}}"#,
    r#"{"id":1,"result":{"content":[1,"two",null,{"type":3,"text":"x"},{"type":null,"text":null},{"text":{"a":[]}}]}}"#,
    r#"{"id":1,"result":{"content":{"type":"text"}}}"#,
    r#"{"id":1,"result":{"isError":"yes","content":[]}}"#,
    r#"{"id":1,"result":[1,2,3]}"#,
    r#"{"id":1,"result":{"content":[{"type":"text","type":"text","text":"a"}]}}"#,
    r#"{"id":1,"result":{"content":[],"content":[]}}"#,
    r#"{"id":1,"id":2,"result":{}}"#,
    r#"{"id":1,"x":1,"x":2,"result":{"y":1,"y":2,"content":[{"z":0,"z":1,"type":"text","text":""}]}}"#,
    r#"{"\u0069d":1,"res\u0075lt":{"cont\u0065nt":[{"typ\u0065":"t\u0065xt","t\u0065xt":"\u00e9\ud83d\ude00"}]}}"#,
    r#"{"id":1,"result":{"content":[{"type":"text","text":"\ud800"}]}}"#,
    r#"{"id":1,"result":{"content":[{"type":"\ud800","text":"a"}]}}"#,
    r#"{"id":1,"result":{"\ud800":1,"content":[]}}"#,
    r#"{"id":1,"result":{"content":[{"\udc00":1,"type":"text","text":"a"}]}}"#,
    r#"{"id":1,"\ud800":1,"result":{}}"#,
    r#"{"id":1,"result":{"deep":{"\ud800":[1]}}}"#,
    r#"{"id":"\ud800","result":{}}"#,
    r#"{"id":[1],"result":{}}"#,
    r#"{"id":true,"result":{}}"#,
    r#"[]"#,
    r#"[1]"#,
    r#"["a",{"id":1}]"#,
    r#"{}"#,
    r#""text""#,
    "",
    "   ",
    r#"{"id":1} {"id":2}"#,
    r#"{"id":1,}"#,
    r#"[{"id":1},]"#,
    r#"{"id":01}"#,
    r#"{"id":-}"#,
    r#"{"id":1.}"#,
    r#"{"id":1e}"#,
    r#"{"id":-0.0e-0}"#,
    r#"{"id":tru}"#,
    r#"{"id":nulls}"#,
    r#"{"id":"a\x"}"#,
    r#"{"id":"a\u12"}"#,
    "{\"id\":\"a\tb\"}",
    "{\"id\":\"\u{7f}\u{80}é\"}",
    "\u{a0}{\"id\":1}",
    "\u{feff}{\"id\":1}",
    "{\"id\":1}\u{a0}",
    "{\"id\":1}\n\r\t ",
    r#"{"id":1,"result":{"content":[{"type":"text","text":"a"}]},"result":{}}"#,
    r#"{"id":1,"method":"x","method":"y"}"#,
];

/// Requests: methods, tool names and intents, well and badly formed.
const REQUESTS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rows","arguments":{"q":1,"expected_info":"  ids  "}}}"#,
    r#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"id":"a\u0062","method":"tools/list"},{"id":2,"method":"tools/call","params":{"name":"t"}}]"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","_meta":{"expected_info":"m"},"arguments":{"expected_info":" "}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"expected_info":"a","expected_info":"b"},"_meta":{"expected_info":"m"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"x":1,"\u0078":2,"expected_info":"a"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"\ud800":1,"expected_info":"a"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"expected_info":"\ud800"},"_meta":{"expected_info":"m"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"expected_info":5},"_meta":{"expected_info":"m"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":[],"_meta":null}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{},"arguments":{"expected_info":"a"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","_meta":null,"_meta":{"expected_info":"a"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"a","name":"b","arguments":{"expected_info":"i"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":5,"arguments":{"expected_info":"i"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"\ud800","arguments":{"expected_info":"i"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t\u00e9","\udc00":0,"arguments":{"expected_info":"i"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":null,"arguments":null}}"#,
    r#"{"id":1,"method":"tools/call","params":"x"}"#,
    r#"{"id":1,"method":"tools/call","params":[{"name":"t"}]}"#,
    r#"{"id":1,"method":"tools/list","params":{"name":"t","arguments":{"expected_info":"i"}}}"#,
    r#"{"params":{"name":"t"},"method":"tools\/call","id":"\u0031"}"#,
    r#"{"id":1,"method":5}"#,
    r#"{"id":1,"method":"\ud800"}"#,
    r#"{"id":1,"method":null,"method":"x"}"#,
    r#"{"id":1,"params":{},"params":{}}"#,
    r#"{"id":{},"method":"tools/call"}"#,
    r#"{"id":1e400,"method":"tools/call"}"#,
    r#"{"id":-0,"method":"tools/call"}"#,
    r#"[{"id":1,"method":"tools/call"},2]"#,
    r#"[{"id":1,"method":"tools/call"},{"id":1,"method":"tools/call","params":{"name":"b"}}]"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":" [0].id ","expected_info":7},"_meta":{"q":"x","expected_info":"m"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":"a","q":"b"},"_meta":{"q":"m"}}}"#,
    // A query that is no string: kept, as its type, for the note (issue 37).
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":42,"expected_info":"m"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":{"a":[1]}},"_meta":{"q":"x"}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"x":1},"_meta":{"q":null}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":[true],"q":false}}}"#,
    r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":""},"_meta":{"q":true}}}"#,
];

/// Each call's `arguments` as written, for a page handle (issue 15): the
/// value's own text, none past `mcp::MAX_ARGUMENTS` bytes, none
/// where the name and the arguments cannot be read together.
#[test]
fn the_arguments_are_kept_as_written() {
    let max = crate::mcp::MAX_ARGUMENTS;
    // `{"s":"…"}` of exactly `len` bytes.
    let args = |len: usize| format!(r#"{{"s":"{}"}}"#, "x".repeat(len - 8));
    let call = |params: &str| format!(r#"{{"id":1,"method":"tools/call","params":{params}}}"#);
    let read = |body: &str| {
        same(body);
        super::request(body, Declared::default(), &Limits::NONE)
            .unwrap()
            .calls
            .into_iter()
            .next()
            .unwrap()
    };
    let spaced = call(r#"{"name":"t","arguments" : 	{ "a" : [1, 2] } , "_meta":{}}"#);
    let c = read(&spaced);
    assert_eq!(c.arguments.as_deref(), Some(r#"{ "a" : [1, 2] }"#));
    assert_eq!(c.tool.as_deref(), Some("t"));
    let at = call(&format!(r#"{{"name":"t","arguments":{}}}"#, args(max)));
    assert_eq!(read(&at).arguments, Some(args(max)));
    let past = call(&format!(r#"{{"name":"t","arguments":{}}}"#, args(max + 1)));
    let c = read(&past);
    assert_eq!((c.arguments, c.tool.as_deref()), (None, Some("t")));
    let twice = call(r#"{"name":"t","arguments":{},"arguments":{"a":1}}"#);
    let c = read(&twice);
    assert_eq!((c.arguments, c.tool), (None, None));
    let unnamed = call(r#"{"name":5,"arguments":{"a":1}}"#);
    assert_eq!(read(&unnamed).arguments, None);
    let null = call(r#"{"name":"t","arguments":null}"#);
    assert_eq!(read(&null).arguments, None);
    let listed = r#"{"id":1,"method":"tools/list","params":{"arguments":{"a":1}}}"#;
    assert_eq!(read(listed).arguments, None);
}

#[test]
fn hand_made_bodies() {
    for body in BODIES.iter().chain(REQUESTS) {
        same(body);
    }
}

/// The scanner finds what the serde reader found on a plain request (so
/// the comparisons above compare something).
#[test]
fn a_call_is_read() {
    let arg = Declared {
        intent: Some("expected_info"),
        query: Some("q"),
    };
    let calls = super::request(REQUESTS[0], arg, &Limits::NONE)
        .unwrap()
        .calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "7");
    assert_eq!(calls[0].tool.as_deref(), Some("rows"));
    assert_eq!(calls[0].intent.as_deref(), Some("ids"));
    let calls = super::request(REQUESTS[2], arg, &Limits::NONE)
        .unwrap()
        .calls;
    assert_eq!(calls[0].intent.as_deref(), Some("m"));
    let calls = super::request(REQUESTS[29], arg, &Limits::NONE)
        .unwrap()
        .calls;
    assert_eq!(calls[0].query.as_deref(), Some("[0].id"));
    assert_eq!(calls[0].intent.as_deref(), Some("m"));
    // A query that is no string is read as one that says so; the intent,
    // as before, is not read then.
    let query = |i: usize| {
        let calls = super::request(REQUESTS[i], arg, &Limits::NONE)
            .unwrap()
            .calls;
        (calls[0].query.clone(), calls[0].intent.clone())
    };
    let not = |kind: &str| Some(format!("{QUERY_NOT_A_STRING}{kind}"));
    assert_eq!(query(31), (not("a number"), Some("m".into())));
    assert_eq!(query(32), (not("an object"), None));
    assert_eq!(query(33), (not("null"), None));
    // Keys twice: nothing is declared there.
    assert_eq!(query(34), (None, None));
    // An empty string declares nothing: `_meta` is read next.
    assert_eq!(query(35), (not("a boolean"), None));
    let listed = super::request(REQUESTS[1], Declared::default(), &Limits::NONE)
        .unwrap()
        .calls;
    assert_eq!(listed[0].id, "\"ab\"");
    // And the tight limits are met: a call skipped for its id, one for its
    // tool name, an intent not used.
    let by_id = super::request(REQUESTS[1], Declared::default(), &TIGHT[0]).unwrap();
    assert!(by_id.skipped.contains(&Reason::IdTooLong), "{by_id:?}");
    let by_tool = super::request(REQUESTS[0], arg, &TIGHT[0]).unwrap();
    assert_eq!(by_tool.skipped, vec![Reason::ToolNameTooLong]);
    let by_intent = super::request(REQUESTS[0], arg, &TIGHT[1]).unwrap();
    assert_eq!(by_intent.calls[0].intent, None);
    assert!(by_intent.calls[0].intent_too_long);
}

#[test]
fn the_token_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/corpus");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            same(&std::fs::read_to_string(&path).unwrap());
            n += 1;
        }
    }
    assert!(n >= 8, "{n} corpus files");
}

/// The pipeline fuzz seeds: real requests and responses (captured and
/// hostile), split as the fuzz target splits them (five bytes of knobs,
/// the request's length in the last two).
#[test]
fn the_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/pipeline");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let [_, _, _, hi, lo, rest @ ..] = data.as_slice() else {
            continue;
        };
        let len = (usize::from(*hi) << 8 | usize::from(*lo)).min(rest.len());
        let (request, response) = rest.split_at(len);
        for part in [request, response] {
            if let Ok(text) = std::str::from_utf8(part) {
                same(text);
                n += 1;
            }
        }
    }
    assert!(n >= 40, "{n} seed parts");
}

/// serde_json's recursion limit (128) does not apply where it skips a
/// value (`RawValue`, ignored fields): neither does the scanner's.
#[test]
fn nesting_of_any_depth() {
    for depth in [1, 126, 127, 128, 129, 5000] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        for nested in [arrays, objects] {
            for body in [
                format!(r#"{{"id":1,"result":{nested}}}"#),
                format!(r#"[{{"id":1,"result":{nested}}}]"#),
                format!(r#"{{"id":1,"result":{{"content":[{{"type":"text","text":{nested}}}]}}}}"#),
                format!(r#"{{"x":{nested}}}"#),
                nested.clone(),
            ] {
                same(&body);
            }
        }
    }
}

/// Every byte of a few bodies deleted, doubled, or replaced by a byte that
/// matters to the grammar.
#[test]
fn every_one_byte_mutation() {
    let replacements: &[&str] = &[
        "", "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "0", "-", "n", "e", "\u{1}", "é",
    ];
    for body in BODIES.iter().take(14).chain(&REQUESTS[..6]) {
        for (at, c) in body.char_indices() {
            let end = at + c.len_utf8();
            for r in replacements.iter().copied().chain([&body[at..end]]) {
                let mutated = format!("{}{r}{}", &body[..at], &body[at..]);
                same(&mutated);
                let replaced = format!("{}{r}{}", &body[..at], &body[end..]);
                same(&replaced);
            }
        }
    }
}
