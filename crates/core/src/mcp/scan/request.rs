//! A request body: each call's id, method, and for a `tools/call` its
//! tool name (`params.name`), its `params.arguments` as sent (a page
//! handle carries them to call the tool again), declared intent and query
//! (`params.arguments.<arg>` or `params._meta.<arg>`, see
//! [`crate::intent`]; the two arguments are read alike, but for a query
//! that is no string, kept as [`crate::mcp::QUERY_NOT_A_STRING`] so that the project
//! stage answers it).
//!
//! The readers it stands in for read `params` twice over, as two structs:
//! the tool name's (a `name` that is no string, or written twice, names no
//! tool and no arguments, as does an `arguments` written twice) and the
//! intent's (an `arguments` or `_meta` written twice declares
//! none; within either, a key written twice declares none from it). Both
//! refuse a key they cannot decode. `params` is read before its message's
//! `method` may be known, so it is read for every message and kept for a
//! `tools/call`.
//!
//! A call whose id or tool name is past its [`Limits`] is not followed but
//! counted (`RequestInfo::skipped`), as the serde reference does (issue 13):
//! the id is measured as its JSON text, before a copy of it is made.

use std::borrow::Cow;
use std::collections::HashSet;

use super::{Field, Scanner};
use crate::config::Limits;
use crate::mcp::{id_key, query_not_a_string, Call, Declared, RequestInfo, TOOLS_CALL};
use crate::outcome::Reason;

/// A request body's constructors: the model (`mcp::request`) is built
/// by this reader and does not name it.
impl RequestInfo {
    /// Parses a JSON-RPC request body; `None` when it is not one.
    pub fn parse(body: &[u8]) -> Option<RequestInfo> {
        Self::parse_with_intent(body, None)
    }

    /// Like [`RequestInfo::parse`], also reading each call's declared intent
    /// from the argument named `intent_argument`.
    pub fn parse_with_intent(body: &[u8], intent_argument: Option<&str>) -> Option<RequestInfo> {
        Self::parse_declared(
            body,
            Declared {
                intent: intent_argument,
                query: None,
            },
        )
    }

    /// Like [`RequestInfo::parse`], also reading each call's declared
    /// intent and query from the arguments `declared` names.
    pub fn parse_declared(body: &[u8], declared: Declared<'_>) -> Option<RequestInfo> {
        Self::read(body, declared, &Limits::NONE)
    }

    /// Like [`RequestInfo::parse_declared`], following only the calls whose
    /// id and tool name are within `limits`.
    pub fn read(body: &[u8], declared: Declared<'_>, limits: &Limits) -> Option<RequestInfo> {
        let text = std::str::from_utf8(body).ok()?;
        // One pass over the body (`mcp::scan`).
        request(text, declared, limits)
    }
}

/// The calls of a request body (notifications, with no id, and messages
/// with no method are skipped; calls past `limits` are counted in
/// `skipped`), or `None` when it is not one JSON object or an array of
/// objects, or a message has a field twice, or a `method` that is not a
/// string.
pub(crate) fn request(text: &str, declared: Declared<'_>, limits: &Limits) -> Option<RequestInfo> {
    let read = Scanner::body(text, super::Texts::Decode, |s| s.call(declared, limits))?;
    let mut info = RequestInfo::default();
    for call in read {
        match call {
            Ok(call) => info.calls.push(call),
            Err(reason) => info.skipped.push(reason),
        }
    }
    info.complete = info.skipped.is_empty();
    Some(info)
}

/// What `params` says, read as both structs.
#[derive(Default)]
struct Params {
    tool: Option<String>,
    /// `params.arguments` as written, when at most
    /// [`crate::mcp::MAX_ARGUMENTS`] bytes.
    arguments: Option<String>,
    intent: Option<String>,
    query: Option<String>,
}

/// The declared arguments one `arguments` or `_meta` object holds.
#[derive(Default)]
struct Found {
    intent: Option<String>,
    query: Option<String>,
}

impl<'a> Scanner<'a> {
    /// One message: `Some(None)` when it is no call, `Err` for a call past
    /// `limits`.
    fn call(&mut self, arg: Declared<'_>, limits: &Limits) -> Option<Option<Result<Call, Reason>>> {
        if self.peek()? != b'{' {
            return None;
        }
        let mut id = Field::default();
        let mut method = Field::default();
        let mut params = Field::default();
        self.object(|s, key| match key?.as_ref() {
            "id" => {
                let v = if s.null()? { None } else { Some(s.raw()?) };
                id.set(v)
            }
            "method" => {
                let v = match s.peek()? {
                    b'"' => Some(s.string()??),
                    b'n' if s.null()? => None,
                    // Not a string: serde's `Cow<str>` refuses the body.
                    _ => return None,
                };
                method.set(v)
            }
            "params" => {
                let v = if s.null()? {
                    None
                } else {
                    Some(s.params(arg)?)
                };
                params.set(v)
            }
            _ => s.value(),
        })?;
        let (Some(raw_id), Some(method)) = (id.value, method.value) else {
            return Some(None);
        };
        // Measured before the canonical copy is made.
        if raw_id.len() > limits.id {
            return Some(Some(Err(Reason::IdTooLong)));
        }
        let id = serde_json::from_str(raw_id)
            .ok()
            .and_then(id_key)
            .filter(|id| id.len() <= limits.id);
        let Some(id) = id else {
            return Some(None);
        };
        let params = if method == TOOLS_CALL {
            params.value.unwrap_or_default()
        } else {
            Params::default()
        };
        if params.tool.as_ref().is_some_and(|t| t.len() > limits.tool) {
            return Some(Some(Err(Reason::ToolNameTooLong)));
        }
        let intent_too_long = params
            .intent
            .as_ref()
            .is_some_and(|i| i.len() > limits.intent);
        Some(Some(Ok(Call {
            id,
            method: method.into_owned(),
            tool: params.tool,
            intent: params.intent.filter(|_| !intent_too_long),
            arguments: params.arguments,
            intent_too_long,
            query: params.query,
        })))
    }

    /// A `params` value (skipped whole).
    fn params(&mut self, arg: Declared<'_>) -> Option<Params> {
        if self.peek()? != b'{' {
            self.value()?;
            return Some(Params::default());
        }
        let mut keys_decode = true;
        let mut name: Field<String> = Field::default();
        let mut named = true;
        let mut arguments: Field<Found> = Field::default();
        let mut meta: Field<Found> = Field::default();
        let mut arguments_text: Option<&'a str> = None;
        let mut arguments_once = true;
        let mut declares = true;
        self.object(|s, key| match key.as_deref() {
            None => {
                keys_decode = false;
                s.value()
            }
            Some("name") => {
                let v = match s.peek()? {
                    b'"' => match s.string()? {
                        Some(v) => Some(v),
                        None => {
                            named = false;
                            return Some(());
                        }
                    },
                    b'n' if s.null()? => None,
                    _ => {
                        named = false;
                        return s.value();
                    }
                };
                named &= name.set(v.map(Cow::into_owned)).is_some();
                Some(())
            }
            Some(field @ ("arguments" | "_meta")) => {
                let start = s.i;
                let v = if s.null()? {
                    None
                } else {
                    Some(s.declared_in(arg)?)
                };
                let once = if field == "arguments" {
                    if v.is_some() {
                        arguments_text = s.text.get(start..s.i);
                    }
                    let once = arguments.set(v).is_some();
                    arguments_once &= once;
                    once
                } else {
                    meta.set(v).is_some()
                };
                declares &= once;
                Some(())
            }
            _ => s.value(),
        })?;
        let declares = keys_decode && declares;
        // The tool name's struct reads `arguments` too: the name and the
        // arguments are read together or not at all.
        let read = keys_decode && named && arguments_once;
        let (arguments, meta) = (arguments.value, meta.value);
        // The arguments first, then `_meta` (crate::intent).
        let first = |pick: fn(&Found) -> &Option<String>| {
            [&arguments, &meta]
                .into_iter()
                .flatten()
                .find_map(|found| pick(found).clone())
                .filter(|_| declares)
        };
        Some(Params {
            tool: name.value.filter(|_| read),
            arguments: arguments_text
                .filter(|a| read && a.len() <= crate::mcp::MAX_ARGUMENTS)
                .map(str::to_string),
            intent: first(|f| &f.intent),
            query: first(|f| &f.query),
        })
    }

    /// The non-empty, trimmed strings the declared arguments hold in an
    /// `arguments` or `_meta` value (skipped whole), and a query argument
    /// that is no string as [`crate::mcp::QUERY_NOT_A_STRING`]; none when the object
    /// names a key twice.
    fn declared_in(&mut self, arg: Declared<'_>) -> Option<Found> {
        let wanted = arg.intent.is_some() || arg.query.is_some();
        if !wanted || self.peek()? != b'{' {
            self.value()?;
            return Some(Found::default());
        }
        let mut keys: HashSet<Cow<'a, str>> = HashSet::new();
        let mut unique = true;
        let mut found = Found::default();
        self.object(|s, key| {
            let Some(key) = key else {
                unique = false;
                return s.value();
            };
            let is = |name: Option<&str>| name == Some(key.as_ref());
            let (intent, query) = (is(arg.intent), is(arg.query));
            let first = s.peek()?;
            if (intent || query) && first == b'"' {
                let text = s.string()?.map(|t| t.trim().to_string());
                let text = text.filter(|t| !t.is_empty());
                if intent {
                    found.intent.clone_from(&text);
                }
                if query {
                    found.query = text;
                }
            } else {
                s.value()?;
                // A query that is no string still reaches the project
                // stage, which says so in its note.
                if query {
                    found.query = Some(query_not_a_string(first));
                }
            }
            unique &= keys.insert(key);
            Some(())
        })?;
        Some(if unique { found } else { Found::default() })
    }
}
