//! Extra tool arguments the gateway reads and the server never sees: the
//! caller's declared intent (what the agent needs from a tool result, for
//! the trim stage) and its JMESPath query (for the project stage).
//!
//! Agents send them as extra tool arguments (`expected_info` and `jmespath`
//! by default) or in `params._meta`. The plugin offers them in the
//! `inputSchema` of every tool their stage is on for (so agents learn them
//! from `tools/list`) and takes them out of `tools/call` arguments before
//! the request reaches the server, so servers with strict schemas never see
//! them — only for calls whose tool's policy has the argument's stage on
//! and whose own schema does not declare an argument of that name (the
//! exchange decides per call and argument, [`strip`] obeys).

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::config::{Policy, Settings};
use crate::json::{members, object};
use crate::mcp::{messages, Edits, ToolEntry, TOOLS_CALL};

/// The description agents see for the advertised intent argument.
pub(crate) const ARGUMENT_DESCRIPTION: &str = "Optional. In one sentence, what you need from this tool's result (for example: the ids and prices of items under 10 EUR). A gateway uses it to return only the relevant part of a large result; leave it out to get the full result.";

/// The description agents see for the advertised query argument.
pub const QUERY_DESCRIPTION: &str = "Optional. A JMESPath expression (jmespath.org) applied to this tool's JSON result before you receive it, so you get only what you need, e.g. `items[?state=='open'].{id: id, title: title}` or `entities[*].name`. Objects in the answer list their keys in sorted order. If the expression is invalid, selects nothing or the result is not JSON, you get the full result with a note on its last line. Leave it out to get the full result.";

/// The arguments to add to one tool's `inputSchema`, `(name, description)`:
/// the intent where trim is on for the tool and `trim.advertise_intent`
/// holds, the query where the tool takes queries. Every name given here is
/// in [`Settings::stripped_arguments`], which [`strip`] takes out of
/// requests: an argument agents learn from a listing never reaches a server.
pub fn advertised<'s>(settings: &'s Settings, policy: &Policy) -> Vec<(&'s str, &'static str)> {
    let mut args = Vec::new();
    let stripped = |name: &str| settings.stripped_arguments().iter().any(|a| a == name);
    let intent = settings.trim.intent_argument.as_str();
    if policy.trim && settings.trim.advertise_intent && stripped(intent) {
        args.push((intent, ARGUMENT_DESCRIPTION));
    }
    let query = settings.project.query_argument.as_str();
    if policy.project.queries && stripped(query) {
        args.push((query, QUERY_DESCRIPTION));
    }
    args
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

/// Removes from the arguments of each `tools/call` in a request body (one
/// message or a batch) every argument named in `args` that
/// `strips(tool name, argument)` says is the plugin's. Returns the new body
/// when it changed; the other arguments keep their exact value text.
pub fn strip(
    body: &str,
    args: &[impl AsRef<str>],
    strips: &dyn Fn(Option<&str>, &str) -> bool,
) -> Option<String> {
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
        let Some(arguments) = params.arguments else {
            continue;
        };
        let Some(mut map) = members(arguments) else {
            continue;
        };
        let before = map.len();
        let tool = params.name.as_deref();
        map.retain(|(k, _)| !args.iter().any(|a| a.as_ref() == k && strips(tool, k)));
        if map.len() == before {
            continue;
        }
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

/// Adds optional string properties `(name, description)` to a tool's
/// `inputSchema` (MCP 2025-06-18: a JSON Schema object with `properties`),
/// in one edit. Leaves out names the schema already has; leaves tools
/// without an object schema alone. Returns the names added.
pub fn advertise<'n>(
    base: &str,
    tool: &ToolEntry<'_>,
    args: &[(&'n str, &str)],
    edits: &mut Edits,
) -> Vec<&'n str> {
    let Some(schema_raw) = tool.input_schema else {
        return Vec::new();
    };
    let Some(schema) = object::<Schema>(schema_raw) else {
        return Vec::new();
    };
    // Properties with a key twice are not understood (crate::json::object).
    let existing = match schema.properties {
        Some(props) => match members(props) {
            Some(map) => Some((props, map)),
            None => return Vec::new(),
        },
        None => None,
    };
    let mut added = Vec::new();
    let mut new_members = Vec::new();
    for &(name, description) in args {
        if existing
            .as_ref()
            .is_some_and(|(_, map)| map.iter().any(|(k, _)| k == name))
        {
            continue;
        }
        let Ok(key) = serde_json::to_string(name) else {
            continue;
        };
        let property =
            serde_json::json!({"type": "string", "description": description}).to_string();
        new_members.push(format!("{key}:{property}"));
        added.push(name);
    }
    if new_members.is_empty() {
        return Vec::new();
    }
    let inserted = new_members.join(",");
    match existing {
        Some((props, map)) => {
            let Some(span) = Edits::span_of(base, props) else {
                return Vec::new();
            };
            let sep = if map.is_empty() { "" } else { "," };
            edits.insert(span.start + 1, format!("{inserted}{sep}"));
        }
        None => {
            let Some(span) = Edits::span_of(base, schema_raw) else {
                return Vec::new();
            };
            let empty = schema_raw
                .get()
                .get(1..)
                .is_some_and(|rest| rest.trim_start().starts_with('}'));
            let sep = if empty { "" } else { "," };
            edits.insert(
                span.start + 1,
                format!("\"properties\":{{{inserted}}}{sep}"),
            );
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::mcp::request::by_serde::declared;
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
        let out = strip(body, &["expected_info"], &|_, _| true).unwrap();
        assert_eq!(
            out,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1.50e3,"z":"\u00e9"}}}"#
        );
        let only = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"expected_info":"x"}}}"#;
        assert!(strip(only, &["expected_info"], &|_, _| true)
            .unwrap()
            .contains(r#""arguments":{}"#));
        // A query argument that is no string is the plugin's all the same.
        let number = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"jmespath":{"a":[42]},"q":1}}}"#;
        assert_eq!(
            strip(number, &["jmespath"], &|_, _| true).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1}}}"#
        );
        // Several names at once: the intent and the query.
        let both = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"jmespath":"a","q":1,"expected_info":"x"}}}"#;
        assert_eq!(
            strip(both, &["expected_info", "jmespath"], &|_, _| true).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1}}}"#
        );
        // Nothing to strip, or not a tools/call: no change at all.
        assert_eq!(
            strip(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1}}}"#,
                &["expected_info"],
                &|_, _| true
            ),
            None
        );
        assert_eq!(
            strip(
                r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"t","arguments":{"expected_info":"x"}}}"#,
                &["expected_info"],
                &|_, _| true
            ),
            None
        );
        let batch = format!("[{body},{body}]");
        assert_eq!(
            strip(&batch, &["expected_info"], &|_, _| true)
                .unwrap()
                .matches("expected_info")
                .count(),
            0
        );
        // Arguments with a key twice: no intent read, nothing taken out (a
        // rebuilt object would drop one of them).
        let twice = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1,"q":2,"expected_info":"x"}}}"#;
        assert_eq!(strip(twice, &["expected_info"], &|_, _| true), None);
        let params = raw(r#"{"arguments":{"q":1,"q":2,"expected_info":"x"}}"#);
        assert_eq!(declared(&params, "expected_info"), None);
    }

    #[test]
    fn strip_follows_the_per_tool_answer() {
        let body = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ours","arguments":{"expected_info":"x"}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"theirs","arguments":{"expected_info":"y"}}}]"#;
        let out = strip(body, &["expected_info"], &|tool, _| tool == Some("ours")).unwrap();
        assert!(out.contains(r#""name":"ours","arguments":{}"#), "{out}");
        assert!(
            out.contains(r#""name":"theirs","arguments":{"expected_info":"y"}"#),
            "{out}"
        );
        assert_eq!(strip(body, &["expected_info"], &|_, _| false), None);
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
        let args = [("expected_info", ARGUMENT_DESCRIPTION), ("jmespath", "q")];
        let added: Vec<Vec<&str>> = tools
            .iter()
            .map(|t| advertise(base.get(), t, &args, &mut edits))
            .collect();
        let both = vec!["expected_info", "jmespath"];
        assert_eq!(
            added,
            vec![
                both.clone(),
                both.clone(),
                both.clone(),
                both,
                vec!["jmespath"]
            ]
        );
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
        for t in out["tools"].as_array().unwrap() {
            assert_eq!(
                t["inputSchema"]["properties"]["jmespath"],
                json!({"type": "string", "description": "q"}),
                "{t}"
            );
        }
    }
}
