//! Shortening a tool description: its first sentence, and a byte limit.
//! Both are prefixes of the text (the limit adds `…`), found in one pass.

/// Words that end in a full stop without ending a sentence.
const ABBREVIATIONS: [&str; 14] = [
    "e.g", "eg", "i.e", "ie", "etc", "vs", "cf", "approx", "incl", "esp", "resp", "no", "fig", "ca",
];

/// The first sentence of `text`, its leading whitespace left out: up to a
/// `.`, `!` or `?` followed by the end or by whitespace and then no
/// lower-case letter (a full stop after an abbreviation or a single
/// letter does not count), or up to a blank line or a line that starts a
/// list or a heading. The whole text (trimmed) when it has no such end.
pub(crate) fn first_sentence(text: &str) -> &str {
    let t = text.trim_start();
    for (i, c) in t.char_indices() {
        match c {
            '\n' => {
                let rest = t.get(i + 1..).unwrap_or("");
                let line = rest.trim_start_matches([' ', '\t', '\r']);
                if starts_block(line) {
                    return t.get(..i).unwrap_or(t).trim_end();
                }
            }
            '.' | '!' | '?' | '。' => {
                let after = i + c.len_utf8();
                let rest = t.get(after..).unwrap_or("");
                let Some(next) = rest.chars().next() else {
                    return t;
                };
                if c == '。' || (next.is_whitespace() && !continues(rest)) {
                    if c == '.' && abbreviation(t.get(..i).unwrap_or("")) {
                        continue;
                    }
                    return t.get(..after).unwrap_or(t);
                }
            }
            _ => {}
        }
    }
    t.trim_end()
}

/// A line that opens a new block: blank, a list item or a heading.
fn starts_block(line: &str) -> bool {
    let mut c = line.chars();
    match c.next() {
        None | Some('\n') => true,
        Some('-' | '*' | '•' | '+') => c.next().is_some_and(char::is_whitespace),
        Some('#') => true,
        Some(d) if d.is_ascii_digit() => {
            let rest = line.trim_start_matches(|x: char| x.is_ascii_digit());
            rest.starts_with(". ") || rest.starts_with(") ")
        }
        _ => false,
    }
}

/// After a stop and whitespace, the text goes on in lower case (a stop
/// inside a sentence, as in `see foo. then`).
fn continues(rest: &str) -> bool {
    let next = rest.trim_start_matches([' ', '\t']);
    next.chars().next().is_some_and(|c| c.is_ascii_lowercase())
}

/// The word before a full stop is an abbreviation or a single letter.
fn abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    if word.chars().count() == 1 {
        return word.chars().all(|c| c.is_ascii_alphabetic());
    }
    ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a))
}

/// `text` cut to at most `max` bytes, at a character boundary, at a word
/// boundary where one is near, with `…` in place of the rest.
pub(crate) fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    const ELLIPSIS: &str = "…";
    let room = max.saturating_sub(ELLIPSIS.len());
    let mut end = room;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = text.get(..end).unwrap_or("");
    // Back to the last space when the cut splits a word and that space
    // is in the last fifth of the room.
    let splits = text
        .get(end..)
        .and_then(|r| r.chars().next())
        .is_some_and(|c| !c.is_whitespace());
    let head = match head.rfind(char::is_whitespace) {
        Some(space) if splits && space >= room - room / 5 => head.get(..space).unwrap_or(head),
        _ => head,
    };
    let mut out = String::with_capacity(head.len() + ELLIPSIS.len());
    out.push_str(head.trim_end());
    out.push_str(ELLIPSIS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences() {
        for (text, want) in [
            ("Read a file. Handles encodings.", "Read a file."),
            ("  Read a file.\nMore.", "Read a file."),
            ("No stop at all", "No stop at all"),
            ("Ends here.", "Ends here."),
            ("Use e.g. a path. Then more.", "Use e.g. a path."),
            ("Version 1.2 of it. More.", "Version 1.2 of it."),
            ("Search the web\n\nArgs: q", "Search the web"),
            ("Lists things:\n- one\n- two", "Lists things:"),
            ("Wrapped line\ngoes on. Next.", "Wrapped line\ngoes on."),
            ("Is it? Yes.", "Is it?"),
            ("see foo. then bar. Done.", "see foo. then bar."),
            ("Made by J. Smith. Fine.", "Made by J. Smith."),
            ("Step one\n1. first", "Step one"),
            ("# Title\nbody", "# Title\nbody"),
            ("", ""),
            ("日本語の説明。次の文。", "日本語の説明。"),
        ] {
            assert_eq!(first_sentence(text), want, "{text:?}");
        }
    }

    #[test]
    fn byte_cuts_stay_within_the_limit_at_char_boundaries() {
        let text = "Create a new issue in a repository with a title, a body and labels é€😀";
        for max in 3..text.len() + 2 {
            let cut = cut_bytes(text, max);
            assert!(cut.len() <= max.max(3), "{max}: {cut:?}");
            if text.len() <= max {
                assert_eq!(cut, text);
            } else {
                assert!(cut.ends_with('…'), "{cut}");
                let kept = cut.trim_end_matches('…');
                assert!(text.starts_with(kept), "{max}: {cut:?}");
            }
        }
        assert_eq!(
            cut_bytes("Create a new issue in a repository", 24),
            "Create a new issue in…"
        );
    }
}
