//! Stage 3, trim, as the pipeline runs it: which blocks the one callout of
//! a response covers, and what its reply does to them. The request, the
//! reply and their checks are the stage's ([`crate::stage::trim`]).

use super::Block;
use crate::config::Settings;
use crate::outcome::{Outcome, Reason, Stage};
use crate::report::Report;
use crate::stage::trim;

/// The one callout of a response: the blocks it covers and its request.
#[derive(Debug)]
pub(super) struct TrimPlan {
    /// Positions in `Job::blocks`.
    pub(super) blocks: Vec<usize>,
    pub(super) request: trim::LlmRequest,
    /// The caller's intent, for the trimmed blocks' note.
    pub(super) intent: String,
}

/// Stage 3 planning, trim: which blocks the one callout covers.
pub(super) fn plan_trim(
    settings: &Settings,
    blocks: &[Block],
    intents: &[Option<String>],
    report: &mut Report,
    random: &mut dyn FnMut(&mut [u8]) -> bool,
) -> Option<TrimPlan> {
    let t = &settings.trim;
    let mut eligible = Vec::new();
    for (i, (block, intent)) in blocks.iter().zip(intents).enumerate() {
        if !block.origin.policy.trim
            || (t.blocks == crate::config::TrimBlocks::First && block.origin.index != 0)
        {
            continue;
        }
        let reason = if block.is_queried() {
            Some(Reason::TrimQueryApplied)
        } else if intent.is_none() && block.origin.intent_too_long {
            Some(Reason::TrimIntentTooLong)
        } else if intent.is_none() {
            Some(Reason::TrimNoIntent)
        } else if block.text.len() <= t.threshold_bytes {
            Some(Reason::TrimBelowThreshold)
        } else if block.origin.structured {
            // Trimming `content` alone would leave it contradicting
            // `structuredContent`, and trimming that would break the
            // tool's `outputSchema` (MCP 2025-06-18 "Structured Content").
            Some(Reason::TrimStructuredContent)
        } else {
            None
        };
        match reason {
            Some(r) => report.push(block.passthrough(Stage::Trim, r)),
            None => eligible.push(i),
        }
    }
    // One callout per response, for one call's blocks.
    let first = *eligible.first()?;
    let id = &blocks.get(first)?.origin.id;
    let same_call: Vec<usize> = eligible
        .into_iter()
        .filter(|&i| blocks.get(i).is_some_and(|b| &b.origin.id == id))
        .collect();
    let chosen = trim::select(t.blocks, &same_call);
    let intent = intents.get(first)?.as_deref()?;
    let mut bytes = [0u8; trim::BOUNDARY_BYTES];
    if !random(&mut bytes) {
        // Without unguessable boundaries the output could forge a part.
        for &i in &chosen {
            if let Some(block) = blocks.get(i) {
                report.push(block.passthrough(Stage::Trim, Reason::TrimUnavailable));
            }
        }
        return None;
    }
    let texts: Vec<&str> = chosen
        .iter()
        .filter_map(|&i| blocks.get(i).map(|b| b.text.as_str()))
        .collect();
    Some(TrimPlan {
        request: trim::build_request(t, intent, &texts, &trim::boundary(&bytes)),
        intent: intent.to_string(),
        blocks: chosen,
    })
}

/// Stage 3, trim: the callout's reply (or its absence) applied to the
/// blocks it covers; each is trimmed or passes, counted.
pub(super) fn apply_trim(
    settings: &Settings,
    blocks: &mut [Block],
    plan: &TrimPlan,
    reply: Option<&trim::LlmReply>,
    report: &mut Report,
) {
    let parsed = match reply {
        Some(r) => trim::parse_reply(r, settings.trim.timeout_ms, plan.blocks.len()),
        None => Err(Reason::TrimUnavailable),
    };
    let mut note = trim::header(&plan.intent, &settings.trim.intent_argument);
    if !settings.marker_key.is_empty() {
        note.push_str(&crate::tag::placeholder());
    }
    for (k, &i) in plan.blocks.iter().enumerate() {
        let Some(block) = blocks.get_mut(i) else {
            continue;
        };
        let extracted = match &parsed {
            Ok(parts) => parts
                .get(k)
                .map(String::as_str)
                .ok_or(Reason::TrimMalformed),
            Err(r) => Err(*r),
        };
        match extracted.and_then(|e| trim::guard(&block.text, e, &note).map(|()| e)) {
            Ok(e) => {
                // Recorded with its note: the size it reaches the agent at
                // unless TOON encodes it.
                let after = note.len() + 1 + e.len();
                report.push(block.decision(
                    Stage::Trim,
                    Outcome::Trimmed,
                    block.text.len(),
                    after,
                    false,
                ));
                block.trimmed_to(e.to_string(), note.clone());
            }
            Err(reason) => report.push(block.passthrough(Stage::Trim, reason)),
        }
    }
}
