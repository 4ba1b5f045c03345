//! The fast TOON path: the same decisions and the same bytes as the generic
//! path (`serde_json::Value` → toon-format's `JsonValue` → `normalize` →
//! `encode`, then `toon_format::decode` to verify), from one borrowed parse.
//!
//! A root table of flat rows that share one key sequence (alone or in an
//! envelope of primitive fields) is written row by row as it is read
//! ([`stream`]), holding one row at a time; everything else, and any such
//! table that turns out otherwise, goes the tree's way:
//!
//! ```text
//! text ─► parse (borrowed tree, duplicate keys refused; a table of flat
//!         rows where TOON writes tables kept as its rows' lines, lines.rs)
//!      ─► classify (adaptive: a table anywhere) ─► exact (numbers, key order)
//!      ─► emit (toon-format's forms and helpers) ─► header, size checks
//!      ─► verify: decode the emitted text, comparing as it goes
//! ```
//!
//! `verify: true` keeps its meaning: the emitted text is decoded on its own
//! terms (`decode.rs`, strict, sharing no state with the emitter) and must
//! read back as exactly the parsed JSON value, or the block goes to the
//! generic path, whose verification is `toon_format::decode`. A table kept
//! as lines was decoded line by line as it was written.
//!
//! Both ways read whitespace between tokens as they go (RFC 8259 §2), and
//! count it: a text measured as its compact form (`sizes: None`, for the
//! pipeline's blocks the clean stage would only compact) gets that form's
//! sizes from its own reading, and the compact text is never made.
//!
//! Every step either gives the generic path's answer or says
//! `Fast::Fallback` (or `Fast::Unwritten`, past the gates), and then the
//! generic path runs from the start. It
//! falls back on: text its parser leaves to serde_json (invalid JSON, lone
//! surrogate escapes, nesting past 100, duplicate keys), a root primitive,
//! and any emission its own decoder does not read back as the same value
//! (field groups whose rows list their keys in different orders, which
//! toon-format writes in the first row's order). Every other form is
//! written here: tables wherever they sit (§9.3), objects (§8), keyed
//! tables (§9.5), inline arrays and the list forms (§9.2, §9.4, §10). The
//! differential tests hold both paths to identical results — emissions and
//! refusals — over the spec fixtures and generated documents.

mod check;
mod counts;
mod decode;
mod emit;
mod key;
mod lines;
mod number;

mod parse;
mod row;
mod stream;
mod tree;

use toon_format::EncodeOptions;

use crate::config::{Mode, ToonSettings};
use crate::marker;
use crate::outcome::Reason;

use super::{smaller_enough, Emission, Sizes};

/// What the fast path made of a block.
#[derive(Debug, PartialEq)]
pub(super) enum Fast {
    /// The generic path's answer, reached without it.
    Done(Result<Emission, Reason>),
    /// Outside the fast path's forms: run the generic path.
    Fallback,
    /// Past the gates (the classifier and the exactness checks, whose
    /// answers are the generic path's), but not written or not read back:
    /// the generic path would pass its gates too and go on to encode.
    Unwritten,
}

/// [`super::encode`] after its cheap early checks (mode, marker, minimum
/// size), which the caller has already made.
///
/// `sizes: None` measures the text as its compact form (RFC 8259 §2: the
/// text without the whitespace between its tokens), from what the parse
/// counted as it read the text ([`counts::Counts`]); the size checks then
/// come last, `min_bytes` first among them, and a text the parse did not
/// read whole is `Fallback`.
pub(super) fn encode(text: &str, sizes: Option<Sizes>, s: &ToonSettings) -> Fast {
    let options = EncodeOptions::default();
    if let stream::Streamed::Done(result) = stream::encode(text, sizes, s, &options) {
        return Fast::Done(result);
    }
    encode_on_tree(text, sizes, s, &options)
}

/// [`encode`] without the streamed path: the whole text parsed into one
/// tree first (its tables of flat rows as their lines, [`tree::Table`]).
fn encode_on_tree(
    text: &str,
    sizes: Option<Sizes>,
    s: &ToonSettings,
    options: &EncodeOptions,
) -> Fast {
    let adaptive = s.mode == Mode::Adaptive;
    if adaptive && parse::certainly_not_tabular(text, s.min_rows) {
        return Fast::Done(Err(Reason::NotTabular));
    }
    let Some((doc, counts)) = parse::parse_with(text, lines::Rows::new(options, s.verify)) else {
        return Fast::Fallback;
    };
    let sizes = match sizes {
        Some(sizes) => sizes,
        None => match counts.sizes(text) {
            Some(sizes) if adaptive && sizes.len < s.min_bytes => {
                return Fast::Done(Err(Reason::BelowMinBytes))
            }
            Some(sizes) => sizes,
            None => return Fast::Fallback,
        },
    };
    if adaptive {
        match check::classify(&doc, s.min_rows, s.key_presence_pct) {
            Some(true) => {}
            Some(false) => return Fast::Done(Err(Reason::NotTabular)),
            None => return Fast::Fallback,
        }
    }
    if let Err(reason) = check::exact(&doc) {
        return Fast::Done(Err(reason));
    }
    let Some(toon) = emit::emit(&doc, options) else {
        return Fast::Unwritten;
    };
    let emission = marker::wrap(&toon, s.header, &s.marker);
    if adaptive && !smaller_enough(sizes.len, emission.len(), s.min_savings_pct) {
        return Fast::Done(Err(Reason::BelowThreshold));
    }
    let wire = wire_size(&emission);
    if adaptive && wire > sizes.wire {
        return Fast::Done(Err(Reason::BelowThreshold));
    }
    // Duplicate keys: the parser refused them, so the generic path counts
    // them.
    if s.verify && !decodes_to(&toon, &doc, options) {
        return Fast::Unwritten;
    }
    Fast::Done(Ok(Emission {
        text: emission,
        wire,
        replaced: sizes,
    }))
}

/// `stage::literal_len` (the emission's size as a JSON string literal):
/// eight bytes at a time, looking closer only at words that may hold a
/// byte JSON escapes.
fn wire_size(s: &str) -> usize {
    let extra = |b: &u8| match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
        0..=0x1f => 5,
        _ => 0,
    };
    let mut chunks = s.as_bytes().chunks_exact(8);
    let mut escapes: usize = 0;
    for chunk in &mut chunks {
        let word = <[u8; 8]>::try_from(chunk).map_or(u64::MAX, u64::from_le_bytes);
        if parse::may_stop(word) {
            escapes += chunk.iter().map(extra).sum::<usize>();
        }
    }
    escapes += chunks.remainder().iter().map(extra).sum::<usize>();
    2 + s.len() + escapes
}

/// The emitted text, decoded on its own, is the parsed JSON value.
fn decodes_to(toon: &str, json: &tree::Doc<'_>, options: &EncodeOptions) -> bool {
    decode::decodes_to(toon, options, json)
}

#[cfg(test)]
/// The TOON text the fast path writes for a JSON text with `options`, or
/// `None` where it would fall back (not JSON it reads, a form it does not
/// write, a number TOON cannot carry). No exactness gate on key order: this
/// is the encoder alone, for differential tests and benchmarks.
pub(crate) fn to_toon(text: &str, options: &EncodeOptions) -> Option<String> {
    let (doc, _) = parse::parse_with(text, lines::Rows::new(options, false))?;
    if doc
        .all_values()
        .any(|v| matches!(v, tree::Node::Num(raw) if number::canonical(raw).is_none()))
    {
        return None;
    }
    emit::emit(&doc, options)
}

#[cfg(test)]
/// Whether the fast decoder reads `toon` back as the JSON `text` (`None`
/// when the fast parser leaves `text` to serde_json). For tests and
/// benchmarks.
pub(crate) fn verifies(text: &str, toon: &str, options: &EncodeOptions) -> Option<bool> {
    let (doc, _) = parse::parse_with(text, lines::Rows::new(options, true))?;
    Some(decodes_to(toon, &doc, options))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[test]
fn wire_size_is_literal_len() {
    for s in [
        "",
        "plain",
        "q\"b\\",
        "n\nr\rt\t\u{8}\u{c}",
        "\u{1}\u{1f}",
        "é€😀\u{7f}",
    ] {
        assert_eq!(wire_size(s), crate::stage::literal_len(s), "{s:?}");
    }
}
