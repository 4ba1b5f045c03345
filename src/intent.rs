//! The caller's declared intent: what the agent needs from a tool result.
//!
//! Agents declare it as an extra tool argument (`expected_info` by default)
//! or in `params._meta`. With `trim.advertise_intent` the plugin offers that
//! argument in every trimmed tool's `inputSchema` (so agents learn it from
//! `tools/list`) and takes it out of `tools/call` arguments before the
//! request reaches the server, so servers with strict schemas never see it
//! — only for calls whose tool trims and does not declare an argument of
//! that name itself (the exchange decides per call, [`strip`] obeys).

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::json::{members, object};
use crate::mcp::{messages, Edits, ToolEntry, TOOLS_CALL};

/// The description agents see for the advertised argument.
pub const ARGUMENT_DESCRIPTION: &str = "Optional. In one sentence, what you need from this tool's result (for example: the ids and prices of items under 10 EUR). A gateway uses it to return only the relevant part of a large result; leave it out to get the full result.";

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
}

/// The non-empty intent in `params.arguments.<arg>` or `params._meta.<arg>`.
/// Arguments with a key twice declare none (and keep it: [`strip`] reads
/// them the same way).
pub fn declared(params: &RawValue, arg: &str) -> Option<String> {
    let p: Params = object(params)?;
    [p.arguments, p.meta].into_iter().flatten().find_map(|raw| {
        let members = members(raw)?;
        let (_, value) = members.iter().find(|(k, _)| k == arg)?;
        let text: String = serde_json::from_str(value.get()).ok()?;
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    })
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// Removes `<arg>` from the arguments of each `tools/call` in a request
/// body (one message or a batch) whose tool `strips(name)` says. Returns
/// the new body when it changed; the other arguments keep their exact value
/// text.
pub fn strip(body: &str, arg: &str, strips: &dyn Fn(Option<&str>) -> bool) -> Option<String> {
    let mut edits = Edits::default();
    for raw in messages(body)? {
        let Some(req) = object::<Request>(raw) else {
            continue;
        };
        if req.method.as_deref() != Some(TOOLS_CALL) {
            continue;
        }
        let Some(params) = req.params.and_then(object::<Named>) else {
            continue;
        };
        if !strips(params.name.as_deref()) {
            continue;
        }
        let Some(arguments) = params.arguments else {
            continue;
        };
        let Some(mut map) = members(arguments) else {
            continue;
        };
        let Some(at) = map.iter().position(|(k, _)| k == arg) else {
            continue;
        };
        map.remove(at);
        let mut out = String::with_capacity(arguments.get().len());
        out.push('{');
        for (i, (k, v)) in map.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(k).ok()?);
            out.push(':');
            out.push_str(v.get());
        }
        out.push('}');
        edits.replace(body, arguments, out);
    }
    if edits.is_empty() {
        None
    } else {
        edits.apply(body)
    }
}

#[derive(Deserialize)]
struct Schema<'a> {
    #[serde(borrow)]
    properties: Option<&'a RawValue>,
}

/// Whether a tool's own `inputSchema` has a property named `arg`: then the
/// argument is the tool's, never the plugin's to take out.
pub fn declares(tool: &ToolEntry<'_>, arg: &str) -> bool {
    tool.input_schema
        .and_then(object::<Schema>)
        .and_then(|s| s.properties)
        .and_then(members)
        .is_some_and(|m| m.iter().any(|(k, _)| k == arg))
}

/// Adds the optional `<arg>` string property to a tool's `inputSchema`
/// (MCP 2025-06-18: a JSON Schema object with `properties`). Leaves tools
/// that already have it, or have no object schema, alone.
pub fn advertise(base: &str, tool: &ToolEntry<'_>, arg: &str, edits: &mut Edits) -> bool {
    let Some(schema_raw) = tool.input_schema else {
        return false;
    };
    let Some(schema) = object::<Schema>(schema_raw) else {
        return false;
    };
    let Ok(key) = serde_json::to_string(arg) else {
        return false;
    };
    let property =
        serde_json::json!({"type": "string", "description": ARGUMENT_DESCRIPTION}).to_string();
    match schema.properties {
        Some(props) => {
            let Some(map) = members(props) else {
                return false;
            };
            if map.iter().any(|(k, _)| k == arg) {
                return false;
            }
            let Some(span) = Edits::span_of(base, props) else {
                return false;
            };
            let sep = if map.is_empty() { "" } else { "," };
            edits.insert(span.start + 1, format!("{key}:{property}{sep}"));
        }
        None => {
            let Some(span) = Edits::span_of(base, schema_raw) else {
                return false;
            };
            let empty = schema_raw
                .get()
                .get(1..)
                .is_some_and(|rest| rest.trim_start().starts_with('}'));
            let sep = if empty { "" } else { "," };
            edits.insert(
                span.start + 1,
                format!("\"properties\":{{{key}:{property}}}{sep}"),
            );
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::mcp::tool_entries;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn intent_from_arguments_or_meta() {
        let a = raw(r#"{"name":"t","arguments":{"q":1,"expected_info":"  prices  "}}"#);
        assert_eq!(declared(&a, "expected_info").as_deref(), Some("prices"));
        let m = raw(r#"{"name":"t","arguments":{},"_meta":{"expected_info":"ids"}}"#);
        assert_eq!(declared(&m, "expected_info").as_deref(), Some("ids"));
        for none in [
            r#"{"name":"t","arguments":{"expected_info":""}}"#,
            r#"{"name":"t","arguments":{"expected_info":5}}"#,
            r#"{"name":"t","arguments":{"other":"x"}}"#,
            r#"{"name":"t"}"#,
            r#"["t"]"#,
        ] {
            assert_eq!(declared(&raw(none), "expected_info"), None, "{none}");
        }
        assert_eq!(declared(&a, "intent"), None);
    }

    #[test]
    fn strip_removes_only_the_intent_argument() {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1.50e3,"expected_info":"x","z":"\u00e9"}}}"#;
        let out = strip(body, "expected_info", &|_| true).unwrap();
        assert_eq!(
            out,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1.50e3,"z":"\u00e9"}}}"#
        );
        let only = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"expected_info":"x"}}}"#;
        assert!(strip(only, "expected_info", &|_| true)
            .unwrap()
            .contains(r#""arguments":{}"#));
        // Nothing to strip, or not a tools/call: no change at all.
        assert_eq!(
            strip(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1}}}"#,
                "expected_info",
                &|_| true
            ),
            None
        );
        assert_eq!(
            strip(
                r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"t","arguments":{"expected_info":"x"}}}"#,
                "expected_info",
                &|_| true
            ),
            None
        );
        let batch = format!("[{body},{body}]");
        assert_eq!(
            strip(&batch, "expected_info", &|_| true)
                .unwrap()
                .matches("expected_info")
                .count(),
            0
        );
        // Arguments with a key twice: no intent read, nothing taken out (a
        // rebuilt object would drop one of them).
        let twice = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1,"q":2,"expected_info":"x"}}}"#;
        assert_eq!(strip(twice, "expected_info", &|_| true), None);
        let params = raw(r#"{"arguments":{"q":1,"q":2,"expected_info":"x"}}"#);
        assert_eq!(declared(&params, "expected_info"), None);
    }

    #[test]
    fn strip_follows_the_per_tool_answer() {
        let body = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ours","arguments":{"expected_info":"x"}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"theirs","arguments":{"expected_info":"y"}}}]"#;
        let out = strip(body, "expected_info", &|tool| tool == Some("ours")).unwrap();
        assert!(out.contains(r#""name":"ours","arguments":{}"#), "{out}");
        assert!(
            out.contains(r#""name":"theirs","arguments":{"expected_info":"y"}"#),
            "{out}"
        );
        assert_eq!(strip(body, "expected_info", &|_| false), None);
    }

    #[test]
    fn declares_reads_the_tool_schema() {
        let body = r#"{"tools":[
            {"name":"a","inputSchema":{"type":"object","properties":{"expected_info":{"type":"string"}}}},
            {"name":"b","inputSchema":{"type":"object","properties":{"q":{}}}},
            {"name":"c"}
        ]}"#;
        let base = RawValue::from_string(body.to_string()).unwrap();
        let tools = tool_entries(&base).unwrap();
        let d: Vec<bool> = tools.iter().map(|t| declares(t, "expected_info")).collect();
        assert_eq!(d, vec![true, false, false]);
    }

    #[test]
    fn advertise_adds_an_optional_string_property() {
        let body = r#"{"tools":[
            {"name":"a","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}},
            {"name":"b","inputSchema":{"type":"object"}},
            {"name":"c","inputSchema":{}},
            {"name":"d","inputSchema":{"type":"object","properties":{}}},
            {"name":"e","inputSchema":{"type":"object","properties":{"expected_info":{"type":"string"}}}}
        ]}"#;
        let base = RawValue::from_string(body.to_string()).unwrap();
        let tools = tool_entries(&base).unwrap();
        let mut edits = Edits::default();
        let added: Vec<bool> = tools
            .iter()
            .map(|t| advertise(base.get(), t, "expected_info", &mut edits))
            .collect();
        assert_eq!(added, vec![true, true, true, true, false]);
        let out: Value = serde_json::from_str(&edits.apply(base.get()).unwrap()).unwrap();
        for t in out["tools"].as_array().unwrap() {
            assert_eq!(
                t["inputSchema"]["properties"]["expected_info"]["type"], "string",
                "{t}"
            );
        }
        assert_eq!(out["tools"][0]["inputSchema"]["required"], json!(["q"]));
        assert_eq!(
            out["tools"][0]["inputSchema"]["properties"]["q"],
            json!({"type": "string"})
        );
    }
}
