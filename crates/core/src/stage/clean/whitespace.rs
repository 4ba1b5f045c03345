//! `collapse_whitespace`: the whitespace a reader does not need.
//!
//! Outside fenced code blocks, line by line:
//! - trailing spaces and tabs are removed;
//! - inside a line, a run of two or more spaces and tabs becomes one space,
//!   except a run of tabs only, which stays (tab-separated columns keep
//!   their empty fields);
//! - leading indentation stays as it is: it carries structure (nested
//!   Markdown lists, YAML, code, tracebacks);
//! - a run of blank lines becomes one blank line; blank lines at the start
//!   and the end of the text go (a final line break stays).
//!
//! Fenced code blocks keep every byte. CommonMark 0.31 §4.5: an opening
//! fence is a line indented at most three spaces with at least three
//! backticks or tildes (a backtick fence's info string has no backtick); it
//! closes on a line indented at most three spaces with at least as many of
//! the same character and nothing after them but spaces and tabs, or at the
//! end of the document.
//!
//! Only ASCII space and tab count as horizontal whitespace; `\r\n` line
//! endings are kept as they are.

/// A fence that is open: its character and length.
#[derive(Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
}

/// Collapses whitespace; `None` when nothing changes.
pub(crate) fn collapse(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<Fence> = None;
    // The line ending of the first blank line of a pending run, if any.
    let mut pending_blank: Option<&str> = None;
    for raw in text.split_inclusive('\n') {
        let (line, ending) = split_ending(raw);
        if let Some(open) = fence {
            out.push_str(raw);
            if closes(line, open) {
                fence = None;
            }
            continue;
        }
        if let Some(open) = opens(line) {
            flush_blank(&mut out, &mut pending_blank);
            out.push_str(raw);
            fence = Some(open);
            continue;
        }
        let body = collapse_line(line);
        if body.is_empty() {
            if pending_blank.is_none() {
                pending_blank = Some(if ending.is_empty() { "\n" } else { ending });
            }
            continue;
        }
        flush_blank(&mut out, &mut pending_blank);
        out.push_str(&body);
        out.push_str(ending);
    }
    (out != text).then_some(out)
}

/// Writes one blank line for a pending run, unless nothing precedes it.
fn flush_blank(out: &mut String, pending: &mut Option<&str>) {
    if let Some(ending) = pending.take() {
        if !out.is_empty() {
            out.push_str(ending);
        }
    }
}

fn split_ending(raw: &str) -> (&str, &str) {
    if let Some(line) = raw.strip_suffix("\r\n") {
        (line, "\r\n")
    } else if let Some(line) = raw.strip_suffix('\n') {
        (line, "\n")
    } else {
        (raw, "")
    }
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// One line outside a fence: indentation kept, inner runs collapsed,
/// trailing run removed. A blank line becomes empty.
fn collapse_line(line: &str) -> String {
    let indent_len = line.bytes().take_while(|&b| is_blank(b)).count();
    let (indent, rest) = line.split_at(indent_len);
    let rest = rest.trim_end_matches([' ', '\t']);
    if rest.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(line.len());
    out.push_str(indent);
    let mut run_start: Option<usize> = None;
    for (i, c) in rest.char_indices() {
        if c == ' ' || c == '\t' {
            run_start.get_or_insert(i);
            continue;
        }
        if let Some(start) = run_start.take() {
            let run = rest.get(start..i).unwrap_or(" ");
            if run.len() >= 2 && run.contains(' ') {
                out.push(' ');
            } else {
                out.push_str(run);
            }
        }
        out.push(c);
    }
    out
}

/// Up to three spaces of indentation, then the rest of the line.
fn strip_fence_indent(line: &str) -> Option<&str> {
    let spaces = line.bytes().take_while(|&b| b == b' ').count();
    (spaces <= 3).then(|| line.get(spaces..)).flatten()
}

fn opens(line: &str) -> Option<Fence> {
    let rest = strip_fence_indent(line)?;
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    if len < 3 {
        return None;
    }
    let info = rest.get(len..).unwrap_or("");
    if ch == b'`' && info.contains('`') {
        return None;
    }
    Some(Fence { ch, len })
}

fn closes(line: &str, open: Fence) -> bool {
    let Some(rest) = strip_fence_indent(line) else {
        return false;
    };
    let len = rest.bytes().take_while(|&b| b == open.ch).count();
    len >= open.len && rest.bytes().skip(len).all(is_blank)
}

#[cfg(test)]
// A failed unwrap here is a failed test.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::collapse;

    #[test]
    fn shrinks_runs_of_spaces_and_blank_lines() {
        let text = "Title   here  \n\n\n\n  indented   text\t\n\nend\n\n\n";
        assert_eq!(
            collapse(text).as_deref(),
            Some("Title here\n\n  indented text\n\nend\n")
        );
    }

    #[test]
    fn keeps_indentation_and_tab_columns() {
        let text = "- a\n    - nested\ncol1\tcol2\t\tcol4";
        assert_eq!(collapse(text), None);
        assert_eq!(
            collapse("a \t b").as_deref(),
            Some("a b"),
            "a mixed run is a run of spaces"
        );
    }

    #[test]
    fn drops_leading_blank_lines_and_keeps_crlf() {
        assert_eq!(
            collapse("\n  \r\nline  one\r\n\r\n\r\nline two\r\n").as_deref(),
            Some("line one\r\n\r\nline two\r\n")
        );
    }

    #[test]
    fn fenced_code_keeps_its_layout() {
        let text = "intro    text\n```python\ndef f():\n    x  =  1   \n\n\n    return x\n```\nafter    fence\n";
        assert_eq!(
            collapse(text).as_deref(),
            Some("intro text\n```python\ndef f():\n    x  =  1   \n\n\n    return x\n```\nafter fence\n")
        );
    }

    #[test]
    fn tilde_fence_needs_a_long_enough_close() {
        // `~~~` does not close a `~~~~` fence; the text after it stays inside.
        let text = "~~~~\na    b\n~~~\nc    d\n~~~~\ne    f";
        assert_eq!(
            collapse(text).as_deref(),
            Some("~~~~\na    b\n~~~\nc    d\n~~~~\ne f")
        );
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let text = "x  y\n```\na    b\n\n\n";
        assert_eq!(collapse(text).as_deref(), Some("x y\n```\na    b\n\n\n"));
    }

    #[test]
    fn backtick_info_with_backtick_is_not_a_fence() {
        // CommonMark §4.5: such a line is inline code, not a fence.
        assert_eq!(collapse("``` a`b\nx    y").as_deref(), Some("``` a`b\nx y"));
    }

    #[test]
    fn four_space_indent_is_not_a_fence() {
        assert_eq!(collapse("    ```\nx    y").as_deref(), Some("    ```\nx y"));
    }

    #[test]
    fn unicode_survives() {
        assert_eq!(
            collapse("é   😀  ü  \n\n\nß").as_deref(),
            Some("é 😀 ü\n\nß")
        );
    }

    #[test]
    fn clean_text_is_left_alone() {
        assert_eq!(collapse("one two\n\nthree\n"), None);
        assert_eq!(collapse(""), None);
    }
}
