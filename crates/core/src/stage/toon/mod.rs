//! The TOON stage: re-encode a JSON text block as TOON (spec v4) when, and
//! only when, the complete emission is smaller and decodes back to the same
//! value.
//!
//! Two paths give the same answers: [`fast`] (a borrowed parse, toon-format's
//! forms written directly, verified by a strict decoder in one pass) runs
//! first; [`encode_generic`] (`serde_json::Value` through toon-format's own
//! encoder and decoder) decides whatever the fast path leaves to it.

mod classify;
pub(crate) mod fast;
mod number;

pub(crate) use classify::classify;
#[cfg(test)]
pub(crate) use classify::NotTable;

use serde_json::Value;
use toon_format::{DecodeOptions, EncodeOptions};

use crate::config::{Mode, ToonSettings};
use crate::json::{self, StrictError};
use crate::marker;
use crate::outcome::Reason;
use crate::stage::literal_len;

/// Bytes of text per response (per event stream) that the generic path may
/// encode.
///
/// The generic path (`serde_json::Value` → toon-format's encoder and
/// decoder) is linear but costs about 1–2 µs per byte natively, 50–100
/// times the fast path, mostly in toon-format's copies, maps and
/// allocations: 1 MiB of rows whose key sets differ (which TOON writes as
/// list items, rarely smaller than the JSON) takes a second. The fast path
/// decides every table whose rows share one key sequence; what it leaves to
/// the generic path is first checked by the generic path's cheap gates
/// (parse, classifier, exactness), and only then encoded, within this
/// budget (issue 13).
pub const GENERIC_BYTES: usize = 16 * 1024;

/// What is left of one response's generic-path work ([`GENERIC_BYTES`] of
/// input the generic encoder may read): an allowance of work, not a tool's
/// token budget (`config::Budget`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowance {
    generic_bytes: usize,
}

impl Allowance {
    /// A whole budget, for one response or one event stream.
    pub fn per_response() -> Self {
        Self {
            generic_bytes: GENERIC_BYTES,
        }
    }

    /// Takes `bytes` of generic-path work, if that much is left.
    fn take(&mut self, bytes: usize) -> bool {
        match self.generic_bytes.checked_sub(bytes) {
            Some(left) => {
                self.generic_bytes = left;
                true
            }
            None => false,
        }
    }
}

/// A block's TOON emission, marker included, and its size as a JSON
/// string literal: adaptive mode measures that to hold the never-larger
/// promise, and the pipeline sizes the block's write by it, so the
/// emission is measured once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emission {
    pub text: String,
    /// `literal_len(&text)`.
    pub wire: usize,
    /// The sizes of the block it replaces, as the stage measured them.
    pub replaced: Sizes,
}

/// Encodes one text block, or says why it stays as it is, with a budget
/// of its own ([`encode_within`] shares one across a response's blocks).
///
/// `wire_len` is the size of the block's JSON string literal on the wire;
/// adaptive mode never lets that grow either.
pub fn encode(text: &str, wire_len: usize, s: &ToonSettings) -> Result<String, Reason> {
    encode_within(
        text,
        Sizes::of(text, wire_len),
        s,
        &mut Allowance::per_response(),
    )
    .map(|e| e.text)
}

/// The sizes of the block an emission would replace, which every size
/// check of the stage compares against (`min_bytes`, `min_savings_pct`,
/// never larger on the wire, the generic path's budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Bytes of the block's text.
    pub len: usize,
    /// Bytes of its JSON string literal on the wire.
    pub(crate) wire: usize,
}

impl Sizes {
    /// The sizes of `text` itself, sent as a literal of `wire` bytes.
    pub fn of(text: &str, wire: usize) -> Self {
        Self {
            len: text.len(),
            wire,
        }
    }
}

/// [`encode`], drawing generic-path work from `budget`, with the
/// emission's size on the wire.
///
/// `sizes` may be those of another spelling of the same JSON value than
/// `text`: the pipeline hands a text with whitespace between its tokens
/// and the sizes of its compact form when compaction is all the clean
/// stage would have done to it (`clean::compact::Deferred`). Every
/// answer is then the compact text's: the emission and the refusals that
/// read the value depend on the value alone (RFC 8259 §2: whitespace
/// between tokens is insignificant), and the size checks read `sizes`.
pub fn encode_within(
    text: &str,
    sizes: Sizes,
    s: &ToonSettings,
    budget: &mut Allowance,
) -> Result<Emission, Reason> {
    if s.mode == Mode::Off {
        return Err(Reason::ModeOff);
    }
    if marker::is_encoded(text) {
        return Err(Reason::AlreadyEncoded);
    }
    if s.mode == Mode::Adaptive && sizes.len < s.min_bytes {
        return Err(Reason::BelowMinBytes);
    }
    match fast::encode(text, Some(sizes), s) {
        fast::Fast::Done(result) => result,
        // The generic path's gates would pass: refuse before running them
        // when the budget cannot pay for what follows.
        fast::Fast::Unwritten if sizes.len > budget.generic_bytes => Err(Reason::ToonBudget),
        fast::Fast::Fallback | fast::Fast::Unwritten => generic(text, sizes, s, Some(budget)),
    }
}

/// [`encode_within`] for a text with whitespace between its JSON tokens
/// that the clean stage would only compact (`clean::compact::deferrable`):
/// the emission when the fast path writes one, measured against the
/// text's compact form, whose sizes the parse counts as it reads the text
/// ([`Emission::replaced`]). Whitespace between tokens is insignificant
/// (RFC 8259 §2), so the emission and every check that reads the value
/// are the compact text's, and the size checks read its sizes: the answer
/// is the one [`encode_within`] gives on the compact text, without that
/// text being made. `None` for anything else — a refusal, a shape or
/// spelling the fast path leaves to the generic one, a `\u` escape (how
/// compaction spells it is compaction's business) — and the pipeline then
/// compacts the text and asks [`encode_within`]. Never draws on the
/// generic path's budget.
pub fn encode_compacted(text: &str, s: &ToonSettings) -> Option<Emission> {
    if s.mode == Mode::Off || marker::is_encoded(text) {
        return None;
    }
    // The compact form is shorter still.
    if s.mode == Mode::Adaptive && text.len() < s.min_bytes {
        return None;
    }
    match fast::encode(text, None, s) {
        fast::Fast::Done(Ok(e)) if e.replaced.len < text.len() => Some(e),
        _ => None,
    }
}

/// Why [`encode_within`] leaves a text of `len` bytes that is certainly
/// no JSON value (so it carries no marker, which opens with `[`): its
/// early checks, in its order, then `not_json`. The pipeline asks it for a
/// block the scan did not decode (`mcp::Texts::SkimNotJson`).
pub fn refusal_of_no_json(len: usize, s: &ToonSettings) -> Reason {
    if s.mode == Mode::Off {
        Reason::ModeOff
    } else if s.mode == Mode::Adaptive && len < s.min_bytes {
        Reason::BelowMinBytes
    } else {
        Reason::NotJson
    }
}

/// The generic path: [`encode`] through `serde_json::Value` and
/// toon-format's own encoder and decoder. The fast path falls back to it,
/// and the differential tests and benchmarks hold the two side by side.
pub fn encode_generic(text: &str, wire_len: usize, s: &ToonSettings) -> Result<String, Reason> {
    generic(text, Sizes::of(text, wire_len), s, None).map(|e| e.text)
}

/// The generic path; with a budget, the encoding step (the costly one)
/// runs only within it.
fn generic(
    text: &str,
    sizes: Sizes,
    s: &ToonSettings,
    budget: Option<&mut Allowance>,
) -> Result<Emission, Reason> {
    if s.mode == Mode::Off {
        return Err(Reason::ModeOff);
    }
    if marker::is_encoded(text) {
        return Err(Reason::AlreadyEncoded);
    }
    let adaptive = s.mode == Mode::Adaptive;
    if adaptive && sizes.len < s.min_bytes {
        return Err(Reason::BelowMinBytes);
    }
    let value: Value = serde_json::from_str(text).map_err(|_| Reason::NotJson)?;
    if adaptive {
        classify(&value, s.min_rows, s.key_presence_pct).map_err(|_| Reason::NotTabular)?;
    }
    exact(&value)?;
    if budget.is_some_and(|b| !b.take(sizes.len)) {
        return Err(Reason::ToonBudget);
    }
    let toon = to_toon(&value).ok_or(Reason::EncodeError)?;
    let emission = marker::wrap(&toon, s.header, &s.marker);
    if adaptive && !smaller_enough(sizes.len, emission.len(), s.min_savings_pct) {
        return Err(Reason::BelowThreshold);
    }
    let wire = literal_len(&emission);
    if adaptive && wire > sizes.wire {
        return Err(Reason::BelowThreshold);
    }
    // Duplicate keys parse, but a Value keeps one of them: a rewrite would
    // silently drop the other. Checked only for blocks about to change.
    if let Err(StrictError::DuplicateKey) = json::parse_strict(text) {
        return Err(Reason::DuplicateKeys);
    }
    if s.verify && !decodes_to(&toon, &value) {
        return Err(Reason::VerifyFailed);
    }
    Ok(Emission {
        text: emission,
        wire,
        replaced: sizes,
    })
}

/// `after` is at least `pct` % smaller than `before`, in exact integer
/// arithmetic so the boundary is where the configuration says it is.
pub(crate) fn smaller_enough(before: usize, after: usize, pct: u64) -> bool {
    (after as u128) * 100 <= (before as u128) * u128::from(100 - pct.min(100))
}

/// Plain TOON encoding of a JSON value with the spec's default options
/// (two-space indent, comma delimiter). `None` when the encoder refuses.
pub(crate) fn to_toon(value: &Value) -> Option<String> {
    to_toon_with(value, &EncodeOptions::default())
}

/// TOON encoding with explicit options (delimiter, indent), the same path
/// the plugin uses; the spec fixtures run through it.
pub fn to_toon_with(value: &Value, opts: &EncodeOptions) -> Option<String> {
    match value {
        Value::Array(_) => toon_format::encode_array(value, opts).ok(),
        Value::Object(_) => toon_format::encode_object(value, opts).ok(),
        _ => toon_format::encode(value, opts).ok(),
    }
}

/// Decodes a TOON text into JSON (strict mode, spec §14).
pub fn from_toon(toon: &str) -> Option<Value> {
    toon_format::decode::<Value>(toon, &DecodeOptions::default()).ok()
}

fn decodes_to(toon: &str, original: &Value) -> bool {
    from_toon(toon).is_some_and(|decoded| json::same_value(&decoded, original))
}

/// Checks that TOON can carry `value` exactly, independent of `verify`:
/// every number survives (see [`survives`]) and every group of objects that
/// TOON would write under one header (§9.3 tabular rows, §9.4 field groups,
/// §9.5 keyed entries) lists its keys in one order, since a header fixes
/// one order for all rows.
pub fn exact(value: &Value) -> Result<(), Reason> {
    if !json::all_numbers(value, &mut |n| survives(n)) {
        return Err(Reason::LossyNumber);
    }
    if !uniform_key_order(value, 0) {
        return Err(Reason::KeyOrder);
    }
    Ok(())
}

fn uniform_key_order(value: &Value, depth: usize) -> bool {
    // serde_json refuses nesting past 128 while parsing, so this bound is
    // never the one that stops a real input.
    if depth > 256 {
        return false;
    }
    let children: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(members) => members.values().collect(),
        _ => return true,
    };
    let objects: Vec<&serde_json::Map<String, Value>> =
        children.iter().filter_map(|v| v.as_object()).collect();
    if objects.len() == children.len() && objects.len() > 1 {
        if let Some(first) = objects.first() {
            let same_set = |o: &&serde_json::Map<String, Value>| {
                o.len() == first.len() && first.keys().all(|k| o.contains_key(k))
            };
            if objects.iter().all(same_set) && !objects.iter().all(|o| o.keys().eq(first.keys())) {
                return false;
            }
        }
    }
    children.iter().all(|c| uniform_key_order(c, depth + 1))
}

/// A number survives TOON when the canonical form the encoder writes for it
/// (TOON v4 §2: no exponent, no trailing zeros, `-0` as `0`) has exactly the
/// source's decimal value. Integers beyond 2^64 and floats with more digits
/// than an f64 holds do not.
fn survives(n: &serde_json::Number) -> bool {
    // One rule for both paths (number.rs says why it checks two spellings
    // of a double).
    number::exact_form(&n.to_string()).is_some()
}

#[cfg(test)]
mod tests;
