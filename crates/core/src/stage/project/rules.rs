//! The operator's rules on a JSON text: `keep` only the members its paths
//! reach (with their ancestors), then `drop` the members its paths reach.
//!
//! One pass over the text, like the clean stage's rewrite
//! (`stage::clean::rewrite`), and for the same reason: everything that is
//! kept goes out byte for byte — key order, duplicate keys, number
//! spellings (`1e400`, `1.50`, integers beyond 2^64) and string escapes —
//! only the whitespace between tokens goes. No `serde_json::Value` is built.
//! The walk keeps its own stack, so depth costs no recursion.
//!
//! `keep`: a member a keep path ends at is kept whole; a member on the way
//! to one is kept when it is an object or array (with only what the paths
//! reach inside it), and left out when it is a scalar, which no path can
//! go through. Array elements follow `[]` (or `**`) the same way.

use super::path::{Edge, States};
use crate::config::Rules;
use crate::json::lex::{is_ws, skip_ws, string_end};
use crate::outcome::Reason;
use crate::stage::clean::rewrite::decode;

/// What the keep rules say about a value.
#[derive(Debug, Clone)]
enum Keep {
    /// Kept whole (no keep rule, or a keep path ended above).
    All,
    /// Kept only where these live keep states lead.
    Partial(States),
}

#[derive(Debug)]
struct Frame {
    object: bool,
    written: usize,
    drop: States,
    keep: Keep,
}

/// The projected text, or why the block stays as it is: `NotJson`,
/// `ProjectNoMatch` (no rule removed anything), `ProjectEmpty` (nothing
/// would be left).
pub fn apply(text: &str, rules: &Rules) -> Result<String, Reason> {
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return Err(Reason::NotJson);
    }
    let keep = if rules.keep.is_empty() {
        Keep::All
    } else {
        Keep::Partial(States::start(&rules.keep))
    };
    let drop = States::start(&rules.drop);
    walk(text, rules, drop, keep).ok_or(Reason::NotJson)?
}

/// Whether the member or element reached by `edge` goes out, and with
/// which states.
fn decide(
    rules: &Rules,
    parent: &Frame,
    edge: Edge<'_>,
    container: bool,
) -> Option<(States, Keep)> {
    let drop = parent.drop.step(&rules.drop, edge);
    if drop.matched(&rules.drop) {
        return None;
    }
    let keep = match &parent.keep {
        Keep::All => Keep::All,
        Keep::Partial(states) => {
            let next = states.step(&rules.keep, edge);
            if next.matched(&rules.keep) {
                Keep::All
            } else if !next.is_empty() && container {
                Keep::Partial(next)
            } else {
                return None;
            }
        }
    };
    Some((drop, keep))
}

fn walk(text: &str, rules: &Rules, drop: States, keep: Keep) -> Option<Result<String, Reason>> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut removed = 0usize;
    let mut i = skip_ws(b, 0);
    match b.get(i)? {
        c @ (b'{' | b'[') => {
            stack.push(Frame {
                object: *c == b'{',
                written: 0,
                drop,
                keep,
            });
            out.push(char::from(*c));
            i += 1;
        }
        // A scalar: no path (each has a step) reaches inside it.
        _ => {
            return Some(Err(match keep {
                Keep::All => Reason::ProjectNoMatch,
                Keep::Partial(_) => Reason::ProjectEmpty,
            }))
        }
    }
    while let Some(frame) = stack.last() {
        i = skip_ws(b, i);
        let c = *b.get(i)?;
        match c {
            b',' => {
                i += 1;
                continue;
            }
            b'}' | b']' => {
                stack.pop();
                out.push(char::from(c));
                i += 1;
                continue;
            }
            _ => {}
        }
        // A member (key, colon, value) or an element (value).
        let (key_literal, value_at) = if frame.object {
            let end = string_end(b, i)?;
            let colon = skip_ws(b, end);
            if b.get(colon) != Some(&b':') {
                return None;
            }
            (Some(text.get(i..end)?), skip_ws(b, colon + 1))
        } else {
            (None, i)
        };
        let key = match key_literal {
            Some(l) => Some(decode(l)?),
            None => None,
        };
        let edge = match &key {
            Some(k) => Edge::Key(k),
            None => Edge::Element,
        };
        let container = matches!(b.get(value_at), Some(b'{' | b'['));
        let Some((drop, keep)) = decide(rules, frame, edge, container) else {
            removed += 1;
            i = skip_value(b, value_at)?;
            continue;
        };
        let frame = stack.last_mut()?;
        if frame.written > 0 {
            out.push(',');
        }
        frame.written += 1;
        if let Some(literal) = key_literal {
            out.push_str(literal);
            out.push(':');
        }
        if container {
            let open = *b.get(value_at)?;
            stack.push(Frame {
                object: open == b'{',
                written: 0,
                drop,
                keep,
            });
            out.push(char::from(open));
            i = value_at + 1;
        } else {
            let end = skip_value(b, value_at)?;
            out.push_str(text.get(value_at..end)?);
            i = end;
        }
    }
    if skip_ws(b, i) != b.len() {
        return None;
    }
    Some(if removed == 0 {
        Err(Reason::ProjectNoMatch)
    } else if out == "{}" || out == "[]" {
        Err(Reason::ProjectEmpty)
    } else {
        Ok(out)
    })
}

/// Index just past the JSON value starting at `i` (the text is known to
/// be valid JSON); iterative, strings skipped whole.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        // A number, `true`, `false` or `null`.
        _ => Some(
            b.get(i..)?
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']') || is_ws(c))
                .map_or(b.len(), |n| i + n),
        ),
    }
}

#[cfg(test)]
// A failed unwrap here is a failed test.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::project::{Path, Paths};

    fn rules(keep: &[&str], drop: &[&str]) -> Rules {
        let parse = |v: &[&str]| -> Paths {
            v.iter()
                .map(|s| Path::parse(s).unwrap())
                .collect::<Vec<_>>()
                .into()
        };
        Rules {
            keep: parse(keep),
            drop: parse(drop),
        }
    }

    fn run(text: &str, keep: &[&str], drop: &[&str]) -> Result<String, Reason> {
        apply(text, &rules(keep, drop))
    }

    const USERS: &str = r#"[
      {"id": 1, "login": "a", "node_id": "MDQ", "avatar_url": "u1", "html_url": "h1", "score": 1.50e3},
      {"id": 12345678901234567890123, "login": "b\u00e9", "node_id": "MDR", "avatar_url": null, "html_url": "h2", "score": -0}
    ]"#;

    #[test]
    fn drop_keeps_every_other_token_byte_for_byte() {
        assert_eq!(
            run(USERS, &[], &["[].node_id", "[].*_url"]).unwrap(),
            r#"[{"id":1,"login":"a","score":1.50e3},{"id":12345678901234567890123,"login":"b\u00e9","score":-0}]"#
        );
    }

    #[test]
    fn keep_keeps_the_paths_and_their_ancestors() {
        assert_eq!(
            run(USERS, &["[].id", "[].login"], &[]).unwrap(),
            r#"[{"id":1,"login":"a"},{"id":12345678901234567890123,"login":"b\u00e9"}]"#
        );
        let page = r#"{"total": 2, "items": [{"id": 1, "tags": ["x"], "meta": {"a": 1, "b": 2}}], "next": "c"}"#;
        assert_eq!(
            run(page, &["total", "items[].meta.b"], &[]).unwrap(),
            r#"{"total":2,"items":[{"meta":{"b":2}}]}"#
        );
        // A scalar on the way to a path is left out; a container kept.
        assert_eq!(
            run(r#"{"a": 1, "b": {"c": 2}}"#, &["a.x", "b.c"], &[]).unwrap(),
            r#"{"b":{"c":2}}"#
        );
    }

    #[test]
    fn keep_then_drop() {
        assert_eq!(
            run(USERS, &["[]"], &["**.*_url", "**.node_id"]).unwrap(),
            r#"[{"id":1,"login":"a","score":1.50e3},{"id":12345678901234567890123,"login":"b\u00e9","score":-0}]"#
        );
    }

    #[test]
    fn any_depth_reaches_every_level() {
        let text = r#"{"node_id": 1, "a": [{"node_id": 2, "b": {"node_id": 3, "c": [[{"node_id": 4, "d": 5}]]}}]}"#;
        assert_eq!(
            run(text, &[], &["**.node_id"]).unwrap(),
            r#"{"a":[{"b":{"c":[[{"d":5}]]}}]}"#
        );
    }

    #[test]
    fn duplicate_keys_and_escaped_keys() {
        assert_eq!(
            run(r#"{"a": 1, "a": 2, "x\"y": 3, "b": 4}"#, &[], &["b"]).unwrap(),
            r#"{"a":1,"a":2,"x\"y":3}"#
        );
        assert_eq!(
            run(r#"{"a.b": 1, "c": 2}"#, &[], &[r#""a.b""#]).unwrap(),
            r#"{"c":2}"#
        );
        // Keys compare decoded: `\u0061` is `a`.
        assert_eq!(
            run(r#"{"\u0061": 1, "c": 2}"#, &[], &["a"]).unwrap(),
            r#"{"c":2}"#
        );
    }

    #[test]
    fn passthrough_reasons() {
        assert_eq!(run("not json", &[], &["a"]), Err(Reason::NotJson));
        assert_eq!(run("[1] x", &[], &["a"]), Err(Reason::NotJson));
        assert_eq!(run(r#"{"a": 1}"#, &[], &["b"]), Err(Reason::ProjectNoMatch));
        assert_eq!(run("42", &[], &["b"]), Err(Reason::ProjectNoMatch));
        assert_eq!(run("42", &["b"], &[]), Err(Reason::ProjectEmpty));
        assert_eq!(run(r#"{"a": 1}"#, &["b"], &[]), Err(Reason::ProjectEmpty));
        assert_eq!(run(r#"{"a": 1}"#, &[], &["a"]), Err(Reason::ProjectEmpty));
        assert_eq!(run(r#"[1, 2]"#, &[], &["[]"]), Err(Reason::ProjectEmpty));
    }

    #[test]
    fn projection_equals_the_value_computed_on_a_tree() {
        // The same rules applied to a serde_json tree, for comparison.
        fn tree(v: &serde_json::Value) -> serde_json::Value {
            use serde_json::Value;
            match v {
                Value::Array(a) => Value::Array(a.iter().map(tree).collect()),
                Value::Object(o) => Value::Object(
                    o.iter()
                        .filter(|(k, _)| !k.ends_with("_url") && k.as_str() != "node_id")
                        .map(|(k, x)| (k.clone(), tree(x)))
                        .collect(),
                ),
                x => x.clone(),
            }
        }
        let text = r#"{"items": [{"id": 1, "html_url": "x", "owner": {"login": "o", "avatar_url": "y", "node_id": "n"}, "labels": [{"name": "bug", "url": "z", "node_id": "m"}]}], "total_count": 1}"#;
        let out = run(text, &[], &["**.*_url", "**.node_id"]).unwrap();
        let want = tree(&serde_json::from_str(text).unwrap());
        assert!(
            crate::json::same_value(&serde_json::from_str(&out).unwrap(), &want),
            "{out}"
        );
    }
}
