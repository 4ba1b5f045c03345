//! What a request body asks: JSON-RPC 2.0 §4 (a request object) or §6 (a
//! batch, an array of them; MCP 2025-03-26 allowed batches, 2025-06-18
//! removed them, servers in the field still accept both).

use std::collections::HashMap;

use crate::outcome::Reason;

/// One request (not a notification: those have no id and no response).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    pub id: String,
    pub method: String,
    /// `params.name` of a `tools/call`.
    pub tool: Option<String>,
    /// The declared intent of a `tools/call` (see [`crate::intent`]).
    pub intent: Option<String>,
    /// `params.arguments` of a `tools/call` as sent, when at most
    /// [`crate::mcp::MAX_ARGUMENTS`] bytes: a signed page handle
    /// carries them to call the tool again.
    pub arguments: Option<String>,
    /// An intent was declared but is longer than the limit: none is used.
    pub intent_too_long: bool,
    /// The agent's JMESPath query of a `tools/call` (the project stage).
    pub query: Option<String>,
}

/// [`Call::query`] of a call whose query argument is there but is no JSON
/// string (`{"jmespath": 42}`): this prefix, then the JSON type it has
/// (`a number`, `an object`, …). The argument is the plugin's all the same
/// (taken out of the request like a string one), and the project stage
/// answers it with its note (`query_invalid`) rather than let it vanish.
/// No JMESPath expression starts with a NUL character, so a string that
/// does is refused by the same note.
pub const QUERY_NOT_A_STRING: &str = "\u{0}not a string: ";

/// [`QUERY_NOT_A_STRING`] for a value whose JSON text starts with `first`.
pub fn query_not_a_string(first: u8) -> String {
    let kind = match first {
        b'{' => "an object",
        b'[' => "an array",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => "a number",
    };
    format!("{QUERY_NOT_A_STRING}{kind}")
}

/// Which declared arguments to read from `tools/call` requests.
#[derive(Debug, Clone, Copy, Default)]
pub struct Declared<'a> {
    pub intent: Option<&'a str>,
    pub query: Option<&'a str>,
}

/// The requests of one body, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    pub calls: Vec<Call>,
    /// Requests the body carries that are not followed, and why (an id or
    /// tool name past its limit): their responses pass unchanged.
    pub skipped: Vec<Reason>,
    /// Every request of a body is here (none skipped): a response whose id
    /// is none of theirs answers nothing this client sent (`unknown_id`).
    /// False where the calls are learnt otherwise (2024-11-05 records).
    pub complete: bool,
    /// Each call's position by id, built at the first
    /// [`RequestInfo::index`] and kept: an event stream answering a batch
    /// asks it once per event.
    pub positions: Positions,
}

/// Call positions by id, once built. Not part of what a request is: two
/// requests with the same calls are equal whether or not either was
/// indexed yet.
#[derive(Debug, Clone, Default)]
pub struct Positions(std::cell::OnceCell<HashMap<String, usize>>);

impl PartialEq for Positions {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Positions {}

/// [`RequestInfo::index`]: the calls of a request by id.
#[derive(Debug)]
pub struct CallIndex<'a> {
    calls: &'a [Call],
    by_id: &'a HashMap<String, usize>,
}

impl<'a> CallIndex<'a> {
    #[cfg(test)]
    /// The request a response id answers.
    pub(crate) fn call(&self, id: &str) -> Option<&'a Call> {
        self.by_id.get(id).and_then(|&i| self.calls.get(i))
    }

    /// [`CallIndex::call`], with its place among the body's calls.
    pub fn position(&self, id: &str) -> Option<(usize, &'a Call)> {
        let &i = self.by_id.get(id)?;
        Some((i, self.calls.get(i)?))
    }
}

impl RequestInfo {
    /// The calls by id, for answering many lookups: a batch of `n`
    /// responses to a batch of `n` calls would cost `n²` comparisons with
    /// [`RequestInfo::call`], and so would building the index again for
    /// each of `n` events answering it (issue 13). The first call of an id
    /// wins, as with `call`. Built once; the calls' ids and order must not
    /// change after (the exchange only clears a call's query).
    pub fn index(&self) -> CallIndex<'_> {
        let by_id = self.positions.0.get_or_init(|| {
            let mut by_id = HashMap::with_capacity(self.calls.len());
            for (i, c) in self.calls.iter().enumerate() {
                by_id.entry(c.id.clone()).or_insert(i);
            }
            by_id
        });
        CallIndex {
            calls: &self.calls,
            by_id,
        }
    }

    #[cfg(test)]
    /// The request a response id answers.
    pub(crate) fn call(&self, id: &str) -> Option<&Call> {
        self.calls.iter().find(|c| c.id == id)
    }

    pub fn has_method(&self, method: &str) -> bool {
        self.calls.iter().any(|c| c.method == method)
    }
}

/// [`RequestInfo::read`] by serde_json, reading each level again: the
/// reference the scanner is compared with (with the same
/// [`crate::config::Limits`]).
#[cfg(test)]
pub(crate) mod by_serde {
    use std::borrow::Cow;

    use serde::Deserialize;
    use serde_json::value::RawValue;

    use super::{Call, Declared, RequestInfo};
    use crate::config::Limits;
    use crate::json::{members, object};
    use crate::mcp::{id_key, messages, TOOLS_CALL};
    use crate::outcome::Reason;

    #[derive(Deserialize)]
    struct RawRequest<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow)]
        params: Option<&'a RawValue>,
    }

    /// `params` as [`declared`] reads it.
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a RawValue>,
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }

    /// The non-empty string in `params.arguments.<arg>` or `params._meta.<arg>`.
    /// Arguments with a key twice declare none (and keep it: [`strip`] reads
    /// them the same way). Requests are read by `crate::mcp::scan` in one
    /// pass; this is the reference it is compared with.
    pub(crate) fn declared(params: &RawValue, arg: &str) -> Option<String> {
        let p: Params = object(params)?;
        [p.arguments, p.meta].into_iter().flatten().find_map(|raw| {
            let members = members(raw)?;
            let (_, value) = members.iter().find(|(k, _)| k == arg)?;
            let text: String = serde_json::from_str(value.get()).ok()?;
            let text = text.trim();
            (!text.is_empty()).then(|| text.to_string())
        })
    }

    /// [`declared`] for the query argument: a value there that is no string is
    /// kept as [`super::QUERY_NOT_A_STRING`] and its JSON type, so the
    /// project stage can say so.
    pub(crate) fn declared_query(params: &RawValue, arg: &str) -> Option<String> {
        let p: Params = object(params)?;
        [p.arguments, p.meta].into_iter().flatten().find_map(|raw| {
            let members = members(raw)?;
            let (_, value) = members.iter().find(|(k, _)| k == arg)?;
            let first = *value.get().as_bytes().first()?;
            if first != b'"' {
                return Some(super::query_not_a_string(first));
            }
            let text: String = serde_json::from_str(value.get()).ok()?;
            let text = text.trim();
            (!text.is_empty()).then(|| text.to_string())
        })
    }

    #[derive(Deserialize)]
    struct CallParams<'a> {
        name: Option<String>,
        #[serde(borrow)]
        arguments: Option<&'a RawValue>,
    }

    pub(crate) fn parse(
        body: &[u8],
        declared: Declared<'_>,
        limits: &Limits,
    ) -> Option<RequestInfo> {
        let text = std::str::from_utf8(body).ok()?;
        let mut info = RequestInfo::default();
        // A message that is no object, or has a field twice, is not
        // understood: the body is left alone (crate::json::object).
        for raw in messages(text)? {
            let req: RawRequest = object(raw)?;
            let (Some(raw_id), Some(method)) = (req.id, req.method) else {
                continue;
            };
            // Measured before the canonical copy is made.
            if raw_id.get().len() > limits.id {
                info.skipped.push(Reason::IdTooLong);
                continue;
            }
            let Some(id) = id_key(raw_id).filter(|id| id.len() <= limits.id) else {
                continue;
            };
            let params = req.params.filter(|p| p.get().starts_with('{'));
            let (tool, arguments, intent, query) = match params {
                Some(p) if method == TOOLS_CALL => {
                    let parsed = object::<CallParams>(p);
                    let arguments = parsed
                        .as_ref()
                        .and_then(|c| c.arguments)
                        .map(|a| a.get())
                        .filter(|a| a.len() <= crate::mcp::MAX_ARGUMENTS)
                        .map(str::to_string);
                    (
                        parsed.and_then(|c| c.name),
                        arguments,
                        declared.intent.and_then(|arg| self::declared(p, arg)),
                        declared.query.and_then(|arg| declared_query(p, arg)),
                    )
                }
                _ => (None, None, None, None),
            };
            if tool.as_ref().is_some_and(|t| t.len() > limits.tool) {
                info.skipped.push(Reason::ToolNameTooLong);
                continue;
            }
            let intent_too_long = intent.as_ref().is_some_and(|i| i.len() > limits.intent);
            info.calls.push(Call {
                id,
                method: method.into_owned(),
                tool,
                intent: intent.filter(|_| !intent_too_long),
                arguments,
                intent_too_long,
                query,
            });
        }
        info.complete = info.skipped.is_empty();
        Some(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;

    #[test]
    fn single_call_with_tool() {
        let r = RequestInfo::parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rows","arguments":{}}}"#);
        let r = r.unwrap_or_default();
        assert_eq!(
            r.calls,
            vec![Call {
                id: "7".into(),
                method: "tools/call".into(),
                tool: Some("rows".into()),
                intent: None,
                arguments: Some("{}".into()),
                intent_too_long: false,
                query: None,
            }]
        );
    }

    #[test]
    fn batch_skips_notifications_and_keeps_order() {
        let r = RequestInfo::parse(
            br#"[{"jsonrpc":"2.0","method":"notifications/initialized"},
                {"jsonrpc":"2.0","id":"a\u0062","method":"tools/list"},
                {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}]"#,
        )
        .unwrap_or_default();
        assert_eq!(r.calls.len(), 2);
        assert_eq!(
            r.call("\"ab\"").map(|c| c.method.as_str()),
            Some("tools/list")
        );
        assert_eq!(r.call("2").and_then(|c| c.tool.as_deref()), Some("t"));
    }

    #[test]
    fn index_answers_like_call_and_keeps_the_first_of_an_id() {
        let r = RequestInfo::parse(
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},
                {"jsonrpc":"2.0","id":"x","method":"tools/list"},
                {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b"}}]"#,
        )
        .unwrap_or_default();
        let index = r.index();
        for id in ["1", "\"x\"", "2"] {
            assert_eq!(index.call(id), r.call(id), "{id}");
        }
        assert_eq!(index.call("1").and_then(|c| c.tool.as_deref()), Some("a"));
    }

    #[test]
    fn not_json_rpc() {
        assert_eq!(RequestInfo::parse(b"hello"), None);
        assert_eq!(RequestInfo::parse(&[0xff, 0xfe]), None);
    }

    /// One rule for every reader (crate::json::object): a field read twice
    /// leaves the body alone, as a response with one does.
    #[test]
    fn a_field_written_twice_is_not_understood() {
        let twice =
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"t"}}"#;
        assert_eq!(RequestInfo::parse(twice), None);
        let tool =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#;
        assert_eq!(RequestInfo::parse(tool).unwrap().calls[0].tool, None);
        let response = r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#;
        assert!(crate::mcp::parse_messages(response).is_none());
    }

    #[test]
    fn ids_tool_names_and_intents_past_their_limits() {
        let limits = Limits {
            id: 16,
            tool: 16,
            intent: 16,
        };
        let call = |id: &str, tool: &str, intent: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"i":"{intent}"}}}}}}"#
            )
        };
        // At the limit: followed.
        let id16 = format!("\"{}\"", "a".repeat(14));
        let at = call(&id16, &"t".repeat(16), &"x".repeat(16));
        let r = RequestInfo::read(
            at.as_bytes(),
            Declared {
                intent: Some("i"),
                query: None,
            },
            &limits,
        )
        .unwrap();
        assert_eq!(r.skipped, vec![]);
        assert_eq!(r.calls[0].id, id16);
        assert_eq!(r.calls[0].intent.as_deref(), Some("x".repeat(16).as_str()));
        // One byte past: the call is skipped (id, tool) or its intent is
        // not used.
        let id17 = format!("\"{}\"", "a".repeat(15));
        let past_id = call(&id17, "t", "x");
        let r = RequestInfo::read(
            past_id.as_bytes(),
            Declared {
                intent: Some("i"),
                query: None,
            },
            &limits,
        )
        .unwrap();
        assert_eq!((r.calls.len(), r.skipped), (0, vec![Reason::IdTooLong]));
        let past_tool = call("1", &"t".repeat(17), "x");
        let r = RequestInfo::read(
            past_tool.as_bytes(),
            Declared {
                intent: Some("i"),
                query: None,
            },
            &limits,
        )
        .unwrap();
        assert_eq!(
            (r.calls.len(), r.skipped),
            (0, vec![Reason::ToolNameTooLong])
        );
        let past_intent = call("1", "t", &"x".repeat(17));
        let r = RequestInfo::read(
            past_intent.as_bytes(),
            Declared {
                intent: Some("i"),
                query: None,
            },
            &limits,
        )
        .unwrap();
        assert_eq!(r.calls[0].intent, None);
        assert!(r.calls[0].intent_too_long);
    }
}
