//! `tools/list` results: the decode hint on tool descriptions, the
//! plugin's arguments advertised in input schemas, and which tools declare
//! those arguments themselves. (The page tool's entry is the budget step's,
//! [`super::budget`].)

use serde_json::value::RawValue;

use super::Listed;
use crate::config::{Mode, ServerScope, Settings};
use crate::intent;
use crate::marker::MARKER_PREFIX;
use crate::mcp::{self, Call, Edits};
use crate::outcome::{Outcome, Stage};
use crate::report::{Decision, Report};

/// Sentence appended to tool descriptions with `annotate_tools`.
pub(crate) const DECODE_HINT: &str = "Results of this tool may arrive as TOON (Token-Oriented Object Notation, toonformat.dev) after a first line starting with [mcp-toon/v1]: decode them to JSON before reuse; tool arguments must still be sent as JSON.";

/// `tools/list`: the decode hint (`annotate_tools`), the intent argument
/// (`trim.advertise_intent`) and the query argument (`project.queries`),
/// per tool as its policy says.
pub(super) fn listing(
    settings: &Settings,
    scope: ServerScope,
    base: &str,
    call: &Call,
    result: &RawValue,
    edits: &mut Edits,
    report: &mut Report,
) {
    if settings.annotate_tools {
        annotate(settings, scope, base, call, result, edits, report);
    }
    if settings.stripped_arguments().is_empty() {
        return;
    }
    let Some(tools) = mcp::tool_entries(result) else {
        return;
    };
    for (index, tool) in tools.iter().enumerate() {
        let Some(name) = tool.name.as_deref() else {
            continue;
        };
        let args = intent::advertised(settings, &settings.policy(scope, Some(name)));
        if args.is_empty() {
            continue;
        }
        for _ in intent::advertise(base, tool, &args, edits) {
            report.push(Decision {
                stage: Stage::Advertise,
                outcome: Outcome::Annotated,
                id: Some(call.id.clone()),
                tool: Some(name.to_string()),
                block: Some(index),
                bytes_before: 0,
                bytes_after: 0,
                lossless: false,
                transform: None,
            });
        }
    }
}

/// The tools of a listing the plugin takes an argument from (those that
/// trim, and every tool where queries are on anywhere: the query argument
/// is taken from every call), with the plugin's arguments their own schema
/// declares.
pub(super) fn declaring(settings: &Settings, scope: ServerScope, result: &RawValue) -> Vec<Listed> {
    let intent = (settings.trim_anywhere() && settings.trim.advertise_intent)
        .then_some(settings.trim.intent_argument.as_str());
    let query = settings
        .queries_anywhere()
        .then_some(settings.project.query_argument.as_str());
    if intent.is_none() && query.is_none() {
        return Vec::new();
    }
    mcp::tool_entries(result)
        .unwrap_or_default()
        .iter()
        .filter_map(|tool| {
            let name = tool.name.as_deref()?;
            let intent = intent.filter(|_| settings.policy(scope, Some(name)).trim);
            if intent.is_none() && query.is_none() {
                return None;
            }
            let own = [intent, query]
                .into_iter()
                .flatten()
                .filter(|arg| intent::declares(tool, arg))
                .map(str::to_string)
                .collect();
            Some((name.to_string(), own))
        })
        .collect()
}

/// The decode hint (`annotate_tools`) on each tool whose TOON mode is not
/// off, appended to its description or as one.
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
                transform: None,
            });
        }
    }
}
