//! Requests for the tools the plugin adds: which one a `tools/call`
//! calls, with its arguments, and the rewrite of a call of the call tool
//! into the real `tools/call` the server then sees.
//!
//! A request is one JSON-RPC message (JSON-RPC 2.0 §4; a batch, which only
//! MCP 2025-03-26 allowed, is not read), `method: "tools/call"`, with
//! `params.name` and `params.arguments` (MCP 2025-06-18 "Calling Tools").
//! Everything else in it — the id, `params._meta` (a progress token, MCP
//! 2026-07-28's protocol version and client capabilities), any member a
//! later revision adds — is kept byte for byte. A message with a member
//! the reader reads written twice is not understood (crate::json::object)
//! and passes as it came.

use serde_json::value::RawValue;

use super::Names;
use crate::json::members;
use crate::mcp::{id_key, Edits, TOOLS_CALL};

/// Which added tool a request calls, with what it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Called {
    /// `query` and `limit` as sent (`None` when absent or of another
    /// type: the answer says what is wrong).
    Search {
        query: Option<String>,
        limit: Option<u64>,
    },
    /// `name` of the tool to describe.
    Describe { name: Option<String> },
    /// The call tool: rewritten by [`rewrite_call`], not answered.
    Call,
}

/// A call of an added tool, read from a request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectedCall {
    pub called: Called,
    /// The request's id as its JSON text (the reply's id).
    pub id: String,
    /// The request speaks MCP 2026-07-28 or later (`params._meta`'s
    /// protocol version): a reply carries `resultType`.
    pub modern: bool,
}

/// The first MCP revision whose results carry `resultType`.
const MODERN: &str = "2026-07-28";

struct Request<'a> {
    id: &'a RawValue,
    params: Vec<(String, &'a RawValue)>,
    name: String,
    name_raw: &'a RawValue,
}

/// The `tools/call` request in `body`, when it is one.
fn request(body: &[u8]) -> Option<Request<'_>> {
    let text = std::str::from_utf8(body).ok()?;
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let message: &RawValue = serde_json::from_str(text).ok()?;
    let message = members(message)?;
    let get = |k: &str| message.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
    let method: String = serde_json::from_str(get("method")?.get()).ok()?;
    if method != TOOLS_CALL {
        return None;
    }
    let params = members(get("params")?)?;
    let name_raw = params.iter().find(|(k, _)| k == "name").map(|(_, v)| *v)?;
    let name: String = serde_json::from_str(name_raw.get()).ok()?;
    Some(Request {
        id: get("id")?,
        params,
        name,
        name_raw,
    })
}

fn field<'a>(members: &[(String, &'a RawValue)], key: &str) -> Option<&'a RawValue> {
    members.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// The call of an added tool in `body`, if it is one.
pub fn parse_call(body: &[u8], names: Names<'_>) -> Option<InjectedCall> {
    let r = request(body)?;
    let args = field(&r.params, "arguments").and_then(members);
    let arg = |k: &str| args.as_ref().and_then(|a| field(a, k));
    let string = |k: &str| arg(k).and_then(|v| serde_json::from_str::<String>(v.get()).ok());
    let called = if r.name == names.search {
        Called::Search {
            query: string("query"),
            limit: arg("limit").and_then(|v| serde_json::from_str::<u64>(v.get()).ok()),
        }
    } else if r.name == names.describe {
        Called::Describe {
            name: string("name"),
        }
    } else if r.name == names.call {
        Called::Call
    } else {
        return None;
    };
    let version = field(&r.params, "_meta")
        .and_then(members)
        .and_then(|m| field(&m, "io.modelcontextprotocol/protocolVersion"))
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok());
    Some(InjectedCall {
        called,
        id: id_key(r.id)?,
        modern: version.is_some_and(|v| v.as_str() >= MODERN),
    })
}

/// What becomes of a request that may call the call tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewrite {
    /// Not a call of the call tool, or one the reader does not understand:
    /// it goes on as it came.
    Pass,
    /// The real call: `body` names `tool` and carries its arguments.
    Rewritten { body: Vec<u8>, tool: String },
    /// A call the server cannot be given; the agent gets this message as a
    /// tool error.
    Refused(String),
}

/// A call of `names.call` rewritten into the call of the tool it names:
/// `params.name` becomes the inner `name` and `params.arguments` the
/// inner `arguments` (an object, passed as written; `{}` when absent),
/// every other byte as it came.
pub fn rewrite_call(body: &[u8], names: Names<'_>) -> Rewrite {
    let Some(r) = request(body) else {
        return Rewrite::Pass;
    };
    if r.name != names.call {
        return Rewrite::Pass;
    }
    let Some(text) = std::str::from_utf8(body).ok() else {
        return Rewrite::Pass;
    };
    let usage = format!(
        "{} takes `name`, the exact name of a tool {} found, and `arguments`, an object that fits that tool's inputSchema.",
        names.call, names.search
    );
    let Some(outer) = field(&r.params, "arguments") else {
        return Rewrite::Refused(usage);
    };
    if !outer.get().starts_with('{') {
        return Rewrite::Refused(usage);
    }
    let Some(inner) = members(outer) else {
        return Rewrite::Pass;
    };
    let Some(name_raw) = field(&inner, "name") else {
        return Rewrite::Refused(usage);
    };
    let Ok(tool) = serde_json::from_str::<String>(name_raw.get()) else {
        return Rewrite::Refused(usage);
    };
    if [names.search, names.call, names.describe].contains(&tool.as_str()) {
        return Rewrite::Refused(format!(
            "{} runs this server's tools; call {tool} directly.",
            names.call
        ));
    }
    let arguments = match field(&inner, "arguments") {
        Some(a) if a.get().starts_with('{') => a.get(),
        None => "{}",
        Some(a) if a.get() == "null" => "{}",
        Some(_) => return Rewrite::Refused(usage),
    };
    let mut edits = Edits::default();
    let placed = edits.replace(text, r.name_raw, name_raw.get().to_string())
        && edits.replace(text, outer, arguments.to_string());
    match edits.apply(text).filter(|_| placed) {
        Some(out) => Rewrite::Rewritten {
            body: out.into_bytes(),
            tool,
        },
        None => Rewrite::Pass,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: Names<'static> = Names {
        search: "mcp_toon_search_tools",
        call: "mcp_toon_call_tool",
        describe: "mcp_toon_describe",
    };

    fn rewritten(body: &str) -> (String, String) {
        match rewrite_call(body.as_bytes(), NAMES) {
            Rewrite::Rewritten { body, tool } => (String::from_utf8(body).unwrap(), tool),
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn the_real_call_keeps_every_other_byte() {
        // MCP 2025-11-25: a progress token in `_meta`.
        let (body, tool) = rewritten(
            r#"{"jsonrpc":"2.0", "id":"a\u0062" ,"method":"tools/call","params":{"name":"mcp_toon_call_tool","arguments":{"name":"read_file","arguments":{"path":"/x","n":1.50}},"_meta":{"progressToken":7}}}"#,
        );
        assert_eq!(tool, "read_file");
        assert_eq!(
            body,
            r#"{"jsonrpc":"2.0", "id":"a\u0062" ,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/x","n":1.50},"_meta":{"progressToken":7}}}"#
        );
        // MCP 2026-07-28: the revision and capabilities in `_meta`, before
        // the arguments; the inner name written with an escape.
        let (body, tool) = rewritten(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"mcp_toon_call_tool","arguments":{"arguments":{},"name":"get_\u0074ime"}}}"#,
        );
        assert_eq!(tool, "get_time");
        assert_eq!(
            body,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"get_\u0074ime","arguments":{}}}"#
        );
        let (body, _) = rewritten(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_toon_call_tool","arguments":{"name":"ping"}}}"#,
        );
        assert_eq!(
            body,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{}}}"#
        );
    }

    #[test]
    fn other_requests_pass_and_bad_calls_are_refused() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_toon_call_tool","arguments":{"name":"a"}}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_toon_call_tool","name":"x","arguments":{"name":"a"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_toon_call_tool","arguments":{"name":"a","name":"b"}}}"#,
            "not json",
        ] {
            assert_eq!(
                rewrite_call(body.as_bytes(), NAMES),
                Rewrite::Pass,
                "{body}"
            );
        }
        for (args, needle) in [
            ("", "takes `name`"),
            (r#","arguments":[1]"#, "takes `name`"),
            (r#","arguments":{}"#, "takes `name`"),
            (r#","arguments":{"name":5}"#, "takes `name`"),
            (
                r#","arguments":{"name":"a","arguments":"{\"x\":1}"}"#,
                "an object",
            ),
            (
                r#","arguments":{"name":"mcp_toon_describe"}"#,
                "call mcp_toon_describe directly",
            ),
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"mcp_toon_call_tool"{args}}}}}"#
            );
            match rewrite_call(body.as_bytes(), NAMES) {
                Rewrite::Refused(m) => assert!(m.contains(needle), "{body}: {m}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn calls_of_the_added_tools_are_told_apart() {
        let call = |params: &str| {
            parse_call(
                format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{params}}}"#)
                    .as_bytes(),
                NAMES,
            )
        };
        let c = call(
            r#"{"name":"mcp_toon_search_tools","arguments":{"query":"read a file","limit":3}}"#,
        )
        .unwrap();
        assert_eq!(
            c.called,
            Called::Search {
                query: Some("read a file".into()),
                limit: Some(3)
            }
        );
        assert_eq!((c.id.as_str(), c.modern), ("9", false));
        let c =
            call(r#"{"name":"mcp_toon_search_tools","arguments":{"query":7,"limit":-1}}"#).unwrap();
        assert_eq!(
            c.called,
            Called::Search {
                query: None,
                limit: None
            }
        );
        let c = call(r#"{"name":"mcp_toon_describe","arguments":{"name":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#).unwrap();
        assert_eq!(
            (c.called, c.modern),
            (
                Called::Describe {
                    name: Some("x".into())
                },
                true
            )
        );
        assert_eq!(
            call(r#"{"name":"mcp_toon_call_tool"}"#).unwrap().called,
            Called::Call
        );
        assert_eq!(call(r#"{"name":"read_file"}"#), None);
    }
}
