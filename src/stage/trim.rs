//! The trim stage: ask an OpenAI-compatible `/chat/completions` endpoint to
//! keep only what serves the caller's declared intent. The core builds the
//! request and judges the reply; the driver has the host make the HTTP call
//! ([`crate::callout`]).
//!
//! Fail-open: every failure (timeout, transport error, non-2xx, a reply that
//! is not the expected JSON, an empty or larger extraction) leaves the
//! cleaned block as it was, counted under its own reason.

use serde::Deserialize;
use serde_json::json;

pub use crate::callout::{LlmReply, LlmRequest};
use crate::config::{TrimBlocks, TrimSettings};
use crate::outcome::Reason;

/// The instruction the model gets. It asks for extraction, not summary, so
/// ids, numbers and names the agent will reuse stay exact.
pub const SYSTEM_PROMPT: &str = "You reduce tool results for an AI agent. You receive the agent's intent and the output of a tool. Return only the parts of the tool output that serve the intent, copied exactly: keep numbers, ids, names, dates, URLs and quoted values character for character, keep the original format (if the output is JSON, return valid JSON of the same structure with the irrelevant items or fields left out). Do not summarise, explain, add commentary or wrap the answer in code fences. If everything is relevant, return the output unchanged.";

const ALL_BLOCKS_RULE: &str = "The tool output has several numbered parts. Answer with a JSON array of strings, one per part in the same order, each holding the reduced part (an empty string for a part with nothing relevant), and nothing else.";

/// Builds the chat-completions request for `blocks` (one, or all of a
/// response's text blocks) and the caller's intent.
pub fn build_request(s: &TrimSettings, intent: &str, blocks: &[&str]) -> LlmRequest {
    let user = match (s.blocks, blocks) {
        (_, [one]) => format!("Intent: {intent}\n\nTool output:\n{one}"),
        _ => {
            let mut text = format!("Intent: {intent}\n\n{ALL_BLOCKS_RULE}\n");
            for (i, b) in blocks.iter().enumerate() {
                text.push_str(&format!("\n--- part {} ---\n{b}\n", i + 1));
            }
            text
        }
    };
    let mut body = json!({
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user}
        ],
        "temperature": 0
    });
    if !s.model.is_empty() {
        if let Some(o) = body.as_object_mut() {
            o.insert("model".into(), json!(s.model));
        }
    }
    let mut headers = vec![
        (":method".to_string(), "POST".to_string()),
        (":path".to_string(), s.path.clone()),
        (":authority".to_string(), s.authority.clone()),
        ("content-type".to_string(), "application/json".to_string()),
    ];
    if !s.client_id.is_empty() {
        headers.push(("client_id".to_string(), s.client_id.clone()));
        headers.push(("client_secret".to_string(), s.client_secret.clone()));
    }
    LlmRequest {
        cluster: s.cluster.clone(),
        headers,
        body: body.to_string().into_bytes(),
        timeout_ms: s.timeout_ms,
    }
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
}

/// Reads the reply into one text per requested block, or the fail-open
/// reason.
pub fn parse_reply(reply: &LlmReply, timeout_ms: u64, count: usize) -> Result<Vec<String>, Reason> {
    let body = match reply {
        LlmReply::NotSent => return Err(Reason::TrimUnavailable),
        // No response at all: a reset, or a timeout some host reports so;
        // the time taken tells them apart.
        LlmReply::Failed { elapsed_ms } if *elapsed_ms >= timeout_ms.saturating_mul(9) / 10 => {
            return Err(Reason::TrimTimeout)
        }
        LlmReply::Failed { .. } => return Err(Reason::TrimUnavailable),
        LlmReply::Response { status, body } if !(200..300).contains(status) => {
            return Err(proxy_failure(*status, body).unwrap_or(Reason::TrimStatus))
        }
        LlmReply::Response { body, .. } => body,
    };
    let completion: Completion = serde_json::from_slice(body).map_err(|_| Reason::TrimMalformed)?;
    let content = completion
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message.content)
        .ok_or(Reason::TrimMalformed)?;
    if count == 1 {
        return Ok(vec![strip_fence(&content).to_string()]);
    }
    let parts: Vec<String> =
        serde_json::from_str(strip_fence(&content)).map_err(|_| Reason::TrimMalformed)?;
    if parts.len() != count {
        return Err(Reason::TrimMalformed);
    }
    Ok(parts)
}

/// Envoy answers a callout it could not complete with a local reply of its
/// own router, not with a failure: 504 `upstream request timeout` when
/// `timeout_ms` passed, 503 `upstream connect error or disconnect/reset
/// before headers. ...` when the connection was refused or reset, 503 `no
/// healthy upstream` when the cluster has no host. These texts name the
/// failure whichever Envoy (ours, or one inside the LLM gateway) wrote them.
fn proxy_failure(status: u16, body: &[u8]) -> Option<Reason> {
    match status {
        504 if body == b"upstream request timeout" => Some(Reason::TrimTimeout),
        503 if body.starts_with(b"upstream connect error or disconnect/reset before headers")
            || body == b"no healthy upstream" =>
        {
            Some(Reason::TrimUnavailable)
        }
        _ => None,
    }
}

/// Models wrap answers in a code fence despite being told not to; a fence
/// around the whole answer is not part of it.
fn strip_fence(s: &str) -> &str {
    let t = s.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some((_lang, body)) = rest.split_once('\n') else {
        return t;
    };
    body.trim_end().strip_suffix("```").map_or(t, str::trim)
}

/// The output guard: an extraction replaces the block only when it is
/// non-empty and smaller.
pub fn guard(cleaned: &str, extracted: &str) -> Result<(), Reason> {
    if extracted.trim().is_empty() {
        return Err(Reason::TrimMalformed);
    }
    if extracted.len() >= cleaned.len() {
        return Err(Reason::TrimLarger);
    }
    Ok(())
}

/// Which block positions a callout covers, given the eligible positions of
/// a response's text blocks in order.
pub fn select(blocks: TrimBlocks, eligible: &[usize]) -> Vec<usize> {
    match blocks {
        TrimBlocks::First => eligible.first().copied().into_iter().collect(),
        TrimBlocks::All => eligible.to_vec(),
    }
}

#[cfg(test)]
mod tests;
