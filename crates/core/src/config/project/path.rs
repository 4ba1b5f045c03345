//! The path syntax of the operator's `project.drop` / `project.keep` rules,
//! parsed once when the configuration is read.
//!
//! ```text
//! path  = [ "." ] first { "." key | "[]" }
//! first = key | "[]"
//! key   = glob | quoted | "**"
//! glob  = 1*( any character but . [ ] " and whitespace )   ; `*` matches any run
//! quoted = a JSON string literal (RFC 8259 §7), matched exactly
//! ```
//!
//! - `name` is an object member; `*` in it matches any run of characters
//!   (`*_url`, `avatar*`, `*`), nothing else is special;
//! - `[]` is every element of an array (jq's `.[]`);
//! - `**` is any number of levels, none included, through objects and
//!   arrays alike (`**.node_id` is `node_id` at any depth);
//! - a key with `.`, `[`, `]`, `"`, `*` or whitespace in it is written as a
//!   JSON string: `"a.b"`, `"*"` (the star itself).
//!
//! Paths start at the JSON value of the text block; the project stage
//! (`stage::project::path`) matches them as it walks the text.

use std::ops::Deref;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer};

/// Most paths in one `keep` or `drop` list.
pub const MAX_PATHS: usize = 32;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object member whose key matches the glob (`*` any run).
    Key(String),
    /// An object member with exactly this key.
    Exact(String),
    /// Every element of an array.
    Elements,
    /// Any number of levels (objects and arrays), none included.
    AnyDepth,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    pub(crate) steps: Vec<Step>,
}

/// Longest path text accepted, in bytes.
pub(crate) const MAX_PATH_BYTES: usize = 256;
/// Most steps in one path.
pub(crate) const MAX_STEPS: usize = 16;

impl Path {
    /// Parses one rule; the error says what is wrong, for a config message.
    pub fn parse(text: &str) -> Result<Path, String> {
        if text.is_empty() {
            return Err("a path must not be empty".into());
        }
        if text.len() > MAX_PATH_BYTES {
            return Err(format!("a path must be at most {MAX_PATH_BYTES} bytes"));
        }
        let b = text.as_bytes();
        let mut i = usize::from(b.first() == Some(&b'.'));
        let mut steps = Vec::new();
        // Whether the next step must be introduced by `.` or `[]`.
        let mut need_separator = false;
        while i < b.len() {
            if b.get(i..i + 2) == Some(b"[]") {
                steps.push(Step::Elements);
                i += 2;
                need_separator = true;
                continue;
            }
            if need_separator {
                if b.get(i) != Some(&b'.') {
                    return Err(format!("expected `.` or `[]` at byte {i}"));
                }
                i += 1;
            }
            let (step, next) = key_step(text, i)?;
            steps.push(step);
            i = next;
            need_separator = true;
        }
        if steps.is_empty() {
            return Err("a path needs at least one step".into());
        }
        if steps.last() == Some(&Step::AnyDepth) {
            return Err("a path must not end with `**`".into());
        }
        if steps.len() > MAX_STEPS {
            return Err(format!("a path must have at most {MAX_STEPS} steps"));
        }
        Ok(Path { steps })
    }
}

/// A key step starting at `i`: quoted, `**`, or a glob.
fn key_step(text: &str, i: usize) -> Result<(Step, usize), String> {
    let b = text.as_bytes();
    if b.get(i) == Some(&b'"') {
        let mut j = i + 1;
        loop {
            match b.get(j) {
                Some(b'\\') => j += 2,
                Some(b'"') => break,
                Some(_) => j += 1,
                None => return Err(format!("unterminated quoted key at byte {i}")),
            }
        }
        let literal = text.get(i..=j).ok_or("bad quoted key")?;
        let key: String = serde_json::from_str(literal)
            .map_err(|_| format!("the quoted key at byte {i} is not a JSON string"))?;
        return Ok((Step::Exact(key), j + 1));
    }
    let end = b
        .get(i..)
        .and_then(|rest| {
            rest.iter()
                .position(|&c| matches!(c, b'.' | b'[' | b']' | b'"') || c.is_ascii_whitespace())
        })
        .map_or(b.len(), |n| i + n);
    let glob = text.get(i..end).unwrap_or_default();
    if glob.is_empty() {
        return Err(format!("expected a key at byte {i}"));
    }
    let step = match glob {
        "**" => Step::AnyDepth,
        g if g.contains('*') => Step::Key(g.to_string()),
        g => Step::Exact(g.to_string()),
    };
    Ok((step, end))
}

/// What a configuration error about a path adds after what is wrong.
const ALLOWED: &str = "allowed: keys (`*` matches any run), `[]` for array elements, `**` for any depth, joined by `.`, e.g. `items[].*_url`, `**.node_id`";

impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Path::parse(&text).map_err(|e| de::Error::custom(format!("{e}; {ALLOWED}")))
    }
}

/// A `keep` or `drop` list, parsed when the configuration is read and
/// shared by every policy that inherits it (resolving a policy copies no
/// path).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paths(Arc<[Path]>);

impl Deref for Paths {
    type Target = [Path];
    fn deref(&self) -> &[Path] {
        &self.0
    }
}

impl From<Vec<Path>> for Paths {
    fn from(paths: Vec<Path>) -> Self {
        Paths(paths.into())
    }
}

impl<'de> Deserialize<'de> for Paths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let paths = Vec::<Path>::deserialize(d)?;
        if paths.len() > MAX_PATHS {
            return Err(de::Error::custom(format!(
                "has {} paths; allowed: at most {MAX_PATHS}",
                paths.len()
            )));
        }
        Ok(paths.into())
    }
}

#[cfg(test)]
// A failed unwrap here is a failed test.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn p(s: &str) -> Path {
        Path::parse(s).unwrap()
    }

    #[test]
    fn parses_the_documented_forms() {
        use Step::*;
        assert_eq!(p("node_id").steps, vec![Exact("node_id".into())]);
        assert_eq!(p(".a.b").steps, vec![Exact("a".into()), Exact("b".into())]);
        assert_eq!(
            p("items[].*_url").steps,
            vec![Exact("items".into()), Elements, Key("*_url".into())]
        );
        assert_eq!(p("[][]").steps, vec![Elements, Elements]);
        assert_eq!(p("**.id").steps, vec![AnyDepth, Exact("id".into())]);
        assert_eq!(
            p(r#""a.b"."*""#).steps,
            vec![Exact("a.b".into()), Exact("*".into())]
        );
        assert_eq!(p(".[].x").steps, vec![Elements, Exact("x".into())]);
    }

    #[test]
    fn refuses_what_is_not_a_path() {
        for bad in [
            "", ".", "a..b", "a.", "a[", "a]", "a b", "**", "a.**", r#""a"#, "a[]b", "[0]",
        ] {
            assert!(Path::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Path::parse("a.".repeat(16).trim_end_matches('.')).is_ok());
        assert!(Path::parse("a.".repeat(17).trim_end_matches('.')).is_err());
        assert!(Path::parse(&"k".repeat(257)).is_err());
    }
}
