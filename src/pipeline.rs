//! The one place that orders the stages. A response body goes in; the body
//! to send (or `None`: send the original bytes) and the decisions come out.
//!
//! Data path: body → JSON-RPC messages → for each response to a
//! `tools/call` of the request: each `content[]` text item → TOON stage →
//! span replacement. Responses to `tools/list` get the optional decode hint.
//! Everything else is never touched.

use serde_json::value::RawValue;

use crate::config::{Mode, ServerScope, Settings, MARKER_PREFIX};
use crate::mcp::{self, Call, Edits, RequestInfo};
use crate::outcome::{Outcome, Reason, Stage};
use crate::report::{Decision, Report};
use crate::stage;

/// Sentence appended to tool descriptions with `annotate_tools`.
pub const DECODE_HINT: &str = "Results of this tool may arrive as TOON (Token-Oriented Object Notation, toonformat.dev) after a first line starting with [mcp-toon/v1]: decode them to JSON before reuse; tool arguments must still be sent as JSON.";

/// Runs the stages over one response body (one JSON-RPC message or a batch).
/// Returns the new body when anything changed.
pub fn process_response(
    settings: &Settings,
    scope: ServerScope,
    request: &RequestInfo,
    body: &[u8],
    report: &mut Report,
) -> Option<Vec<u8>> {
    let Ok(text) = std::str::from_utf8(body) else {
        report.push(Decision::response(Reason::InvalidUtf8));
        return None;
    };
    let Some(messages) = mcp::parse_messages(text) else {
        report.push(Decision::response(Reason::MalformedResponse));
        return None;
    };
    let mut edits = Edits::default();
    for message in &messages {
        let Some(call) = message.id.as_deref().and_then(|id| request.call(id)) else {
            continue;
        };
        if call.method == mcp::TOOLS_CALL {
            tool_call(settings, scope, text, call, message, &mut edits, report);
        } else if call.method == mcp::TOOLS_LIST && settings.annotate_tools {
            if let Some(result) = message.result {
                annotate(settings, scope, text, call, result, &mut edits, report);
            }
        }
    }
    if edits.is_empty() {
        return None;
    }
    edits.apply(text).map(String::into_bytes)
}

fn tool_call(
    settings: &Settings,
    scope: ServerScope,
    base: &str,
    call: &Call,
    message: &mcp::Message<'_>,
    edits: &mut Edits,
    report: &mut Report,
) {
    let at = |reason: Reason| Decision {
        id: Some(call.id.clone()),
        tool: call.tool.clone(),
        ..Decision::response(reason)
    };
    if message.is_error_response {
        report.push(at(Reason::JsonRpcError));
        return;
    }
    let Some(result) = message.result.and_then(mcp::tool_result) else {
        report.push(at(Reason::MalformedResponse));
        return;
    };
    if result.is_error == Some(true) {
        report.push(at(Reason::IsError));
        return;
    }
    let Some(content) = result.content else {
        report.push(at(Reason::NoContent));
        return;
    };
    let policy = settings.policy(scope, call.tool.as_deref());
    for (index, item) in mcp::text_items(&content).into_iter().enumerate() {
        let Some(item) = item else {
            report.push(Decision {
                block: Some(index),
                ..at(Reason::MalformedContent)
            });
            continue;
        };
        if item.kind.as_deref() != Some("text") {
            continue;
        }
        let Some(literal) = item.text else {
            report.push(Decision {
                block: Some(index),
                ..at(Reason::MalformedContent)
            });
            continue;
        };
        let Ok(text) = serde_json::from_str::<String>(literal.get()) else {
            report.push(Decision {
                block: Some(index),
                ..at(Reason::MalformedContent)
            });
            continue;
        };
        let decision = |outcome: Outcome, after: usize| Decision {
            stage: Stage::Toon,
            outcome,
            id: Some(call.id.clone()),
            tool: call.tool.clone(),
            block: Some(index),
            bytes_before: text.len(),
            bytes_after: after,
            lossless: true,
        };
        match stage::toon::encode(&text, literal.get().len(), &policy.toon) {
            Ok(emission) => {
                let replaced = serde_json::to_string(&emission)
                    .is_ok_and(|new_literal| edits.replace(base, literal, new_literal));
                if replaced {
                    report.push(decision(Outcome::Encoded, emission.len()));
                } else {
                    report.push(decision(
                        Outcome::Passthrough(Reason::EncodeError),
                        text.len(),
                    ));
                }
            }
            Err(reason) => report.push(decision(Outcome::Passthrough(reason), text.len())),
        }
    }
}

fn annotate(
    settings: &Settings,
    scope: ServerScope,
    base: &str,
    call: &Call,
    result: &RawValue,
    edits: &mut Edits,
    report: &mut Report,
) {
    let Some(tools) = mcp::tool_entries(result) else {
        return;
    };
    for (index, tool) in tools.iter().enumerate() {
        let Some(name) = tool.name.as_deref() else {
            continue;
        };
        if settings.policy(scope, Some(name)).toon.mode == Mode::Off {
            continue;
        }
        let (changed, before, after) = match tool.description {
            Some(raw) => {
                let Ok(old) = serde_json::from_str::<String>(raw.get()) else {
                    continue;
                };
                if old.contains(MARKER_PREFIX) {
                    continue;
                }
                let new = if old.is_empty() {
                    DECODE_HINT.to_string()
                } else {
                    format!("{old} {DECODE_HINT}")
                };
                let Ok(literal) = serde_json::to_string(&new) else {
                    continue;
                };
                (edits.replace(base, raw, literal), old.len(), new.len())
            }
            None => {
                // No description: add one just before the object's closing
                // brace (an MCP Tool always has `name`, so a comma fits).
                let Some(span) = Edits::span_of(base, tool.raw) else {
                    continue;
                };
                let Ok(literal) = serde_json::to_string(DECODE_HINT) else {
                    continue;
                };
                edits.insert(
                    span.end.saturating_sub(1),
                    format!(",\"description\":{literal}"),
                );
                (true, 0, DECODE_HINT.len())
            }
        };
        if changed {
            report.push(Decision {
                stage: Stage::Annotate,
                outcome: Outcome::Annotated,
                id: Some(call.id.clone()),
                tool: Some(name.to_string()),
                block: Some(index),
                bytes_before: before,
                bytes_after: after,
                lossless: false,
            });
        }
    }
}

#[cfg(test)]
mod tests;
