//! `html_to_markdown`: a text that is an HTML document or fragment becomes
//! Markdown, which carries the same reading for a fraction of the tokens.
//!
//! Conversion is mdka's (html5ever's WHATWG parser, then a non-recursive
//! walk: no stack overflow however deep the nesting, which matters in a wasm
//! VM where a trap fails every stream). `<script>`, `<style>`, `<noscript>`
//! and `<template>` content is dropped; `id` anchors are not kept.
//!
//! Detection decides what "is HTML", because HTML-looking text is common in
//! tool results that are not HTML: prose that mentions `<b>`, generic types
//! (`Vec<T>`), XML, autolinks (`<https://…>`), an HTML snippet quoted in a
//! string. A text is HTML when, after leading whitespace, a byte-order mark
//! and comments:
//! - it starts with `<!doctype html` or `<html` (any case): a document; or
//! - it starts with a tag of a known HTML element, ends with `>`, and holds
//!   at least [`MIN_FRAGMENT_TAGS`] tags of known elements, one of them a
//!   closing tag: a fragment (`<p>…</p><ul>…</ul>`).
//!
//! So `Use <b>bold</b> here` (starts with text), `<b>x</b>` (two tags),
//! `<note><to>Tove</to></note>` (not HTML elements), `<T> and <U>` (no
//! closing tag) all stay. A conversion that is not shorter is dropped.

/// Fewest known-element tags a fragment needs (`<p>a <b>b</b></p>` has 4).
const MIN_FRAGMENT_TAGS: usize = 3;

/// Tag names longer than this are not looked up.
const MAX_TAG_NAME: usize = 10;

/// HTML elements (WHATWG HTML, "elements" index) that detection counts.
/// `svg` and `math` are left out: a document of foreign content converts to
/// nothing useful.
#[rustfmt::skip]
const ELEMENTS: &[&str] = &[
    "a", "abbr", "address", "article", "aside", "audio", "b", "bdi", "bdo", "blockquote", "body",
    "br", "button", "caption", "cite", "code", "col", "colgroup", "dd", "del", "details", "dfn",
    "dialog", "div", "dl", "dt", "em", "embed", "fieldset", "figcaption", "figure", "footer",
    "form", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html", "i",
    "iframe", "img", "input", "ins", "kbd", "label", "legend", "li", "link", "main", "mark",
    "meta", "meter", "nav", "noscript", "object", "ol", "optgroup", "option", "output", "p",
    "picture", "pre", "progress", "q", "rp", "rt", "ruby", "s", "samp", "script", "section",
    "select", "small", "source", "span", "strong", "style", "sub", "summary", "sup", "table",
    "tbody", "td", "template", "textarea", "tfoot", "th", "thead", "time", "title", "tr", "track",
    "u", "ul", "var", "video", "wbr",
];

/// What [`to_markdown`] made of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Converted {
    /// The Markdown, shorter than the text.
    Markdown(String),
    /// Not HTML, or the Markdown would not be shorter.
    Unchanged,
    /// HTML whose conversion would pass the work budget
    /// ([`guard`]): the text stays as it is.
    OverBudget,
}

/// Converts `text` to Markdown when it is HTML, the conversion stays within
/// the work budget, and the Markdown is shorter.
pub(crate) fn to_markdown(text: &str) -> Converted {
    if !SUPPORTED || !is_html(text) {
        return Converted::Unchanged;
    }
    if !within_budget(text) {
        return Converted::OverBudget;
    }
    let Some(markdown) = convert(text) else {
        return Converted::Unchanged;
    };
    let markdown = markdown.trim_matches('\n');
    if markdown.len() < text.len() {
        Converted::Markdown(markdown.to_string())
    } else {
        Converted::Unchanged
    }
}

#[cfg(feature = "html")]
fn within_budget(text: &str) -> bool {
    let _quiet = quiet::Quiet::new();
    guard::check(text).is_ok()
}

#[cfg(not(feature = "html"))]
fn within_budget(_text: &str) -> bool {
    true
}

#[cfg(feature = "html")]
fn convert(text: &str) -> Option<String> {
    // mdka drops script, style, noscript and template content itself.
    let opts = mdka::ConversionOptions::default().preserve_ids(false);
    let _quiet = quiet::Quiet::new();
    Some(mdka::html_to_markdown_with(text, &opts))
}

/// html5ever logs every character at trace level and every token at debug
/// level, formatting each; under a logger that lets them through (the
/// proxy-wasm adapter lets Debug through, and every record is a host call)
/// conversion runs about ten times slower. While any conversion runs, the
/// `log` crate's global level is held at Info at most; the last one to
/// finish puts the level back. A mutex keeps concurrent conversions (a
/// native multi-threaded host) from restoring the lowered level.
#[cfg(feature = "html")]
mod quiet {
    use std::sync::{Mutex, PoisonError};

    use log::LevelFilter;

    /// Conversions running, and the level to restore after the last.
    static STATE: Mutex<(usize, LevelFilter)> = Mutex::new((0, LevelFilter::Off));

    pub(crate) struct Quiet;

    impl Quiet {
        pub(crate) fn new() -> Self {
            let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
            if state.0 == 0 {
                state.1 = log::max_level();
                log::set_max_level(state.1.min(LevelFilter::Info));
            }
            state.0 += 1;
            Quiet
        }
    }

    impl Drop for Quiet {
        fn drop(&mut self) {
            let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
            state.0 = state.0.saturating_sub(1);
            if state.0 == 0 {
                log::set_max_level(state.1);
            }
        }
    }
}

/// Built without the `html` feature: nothing is converted.
#[cfg(not(feature = "html"))]
fn convert(_text: &str) -> Option<String> {
    None
}

/// Whether this build converts HTML at all (the `html` cargo feature).
pub(crate) const SUPPORTED: bool = cfg!(feature = "html");

/// The detection rule in the module docs.
pub(crate) fn is_html(text: &str) -> bool {
    let head = skip_preamble(text);
    if starts_with_ci(head, "<!doctype html")
        || tag_at(head, 0).is_some_and(|t| !t.closing && t.name.eq_ignore_ascii_case("html"))
    {
        return true;
    }
    let Some(first) = tag_at(head, 0) else {
        return false;
    };
    if first.closing || !is_element(first.name) || !head.trim_end().ends_with('>') {
        return false;
    }
    let (mut tags, mut closing) = (0usize, false);
    let mut i = 0;
    while let Some(off) = head.get(i..).and_then(|rest| rest.find('<')) {
        let at = i + off;
        match tag_at(head, at) {
            Some(t) => {
                if is_element(t.name) {
                    tags += 1;
                    closing |= t.closing;
                    if tags >= MIN_FRAGMENT_TAGS && closing {
                        return true;
                    }
                }
                i = t.end;
            }
            None => i = at + 1,
        }
    }
    false
}

/// Skips whitespace, a byte-order mark and leading comments.
fn skip_preamble(text: &str) -> &str {
    let mut rest = text.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    while let Some(after) = rest.strip_prefix("<!--") {
        match after.find("-->") {
            Some(end) => rest = after.get(end + 3..).unwrap_or("").trim_start(),
            None => return rest,
        }
    }
    rest
}

fn starts_with_ci(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

fn is_element(name: &str) -> bool {
    ELEMENTS.iter().any(|e| e.eq_ignore_ascii_case(name))
}

struct Tag<'a> {
    name: &'a str,
    closing: bool,
    /// Index just past the closing `>`.
    end: usize,
}

/// A start or end tag at `at` (WHATWG HTML §13.1.2: `<`, an optional `/`,
/// an ASCII letter, alphanumerics, then whitespace, `/` or `>`), ending at
/// the first `>` before any other `<`.
fn tag_at(text: &str, at: usize) -> Option<Tag<'_>> {
    let rest = text.get(at..)?.strip_prefix('<')?;
    let (closing, rest) = match rest.strip_prefix('/') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let name_len = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
    if name_len == 0 || name_len > MAX_TAG_NAME || !rest.as_bytes().first()?.is_ascii_alphabetic() {
        return None;
    }
    let name = rest.get(..name_len)?;
    let after = rest.get(name_len..)?;
    let next = *after.as_bytes().first()?;
    if !(next == b'>' || next == b'/' || next.is_ascii_whitespace()) {
        return None;
    }
    let close = after.find(['>', '<'])?;
    if after.as_bytes().get(close) != Some(&b'>') {
        return None;
    }
    let consumed = 1 + usize::from(closing) + name_len + close + 1;
    Some(Tag {
        name,
        closing,
        end: at + consumed,
    })
}

#[cfg(feature = "html")]
pub(crate) mod guard;

#[cfg(test)]
mod tests;
