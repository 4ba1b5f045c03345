//! The path syntax of the operator's `project.drop` / `project.keep` rules,
//! and matching it one level at a time as a JSON text is walked.
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
//! Paths start at the JSON value of the text block. Matching is a small
//! NFA: each rule position is a state, `**` loops on itself, and a walker
//! carries the set of live states from a value to its members, so each
//! member costs at most the total number of steps of the rules.

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
    pub steps: Vec<Step>,
}

/// Longest path text accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 256;
/// Most steps in one path.
pub const MAX_STEPS: usize = 16;

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

/// `*` matches any run of characters, everything else itself. Linear:
/// the classic greedy match with one backtrack point.
fn glob_match(glob: &str, key: &str) -> bool {
    let (g, k) = (glob.as_bytes(), key.as_bytes());
    let (mut gi, mut ki) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ki < k.len() {
        match g.get(gi) {
            Some(b'*') => {
                star = Some((gi, ki));
                gi += 1;
            }
            Some(&c) if Some(&c) == k.get(ki) => {
                gi += 1;
                ki += 1;
            }
            _ => match star {
                Some((sg, sk)) => {
                    gi = sg + 1;
                    ki = sk + 1;
                    star = Some((sg, sk + 1));
                }
                None => return false,
            },
        }
    }
    g.get(gi..)
        .is_some_and(|rest| rest.iter().all(|&c| c == b'*'))
}

/// What a value is reached by: a member key, or being an array element.
#[derive(Debug, Clone, Copy)]
pub enum Edge<'a> {
    Key(&'a str),
    Element,
}

/// Live positions in a set of paths: `(path index, step index)`, sorted,
/// without duplicates, closed under skipping a `**`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct States(Vec<(u16, u16)>);

impl States {
    /// Every path at its first step (the value of the whole block).
    pub fn start(paths: &[Path]) -> States {
        let mut s = States(
            (0..paths.len())
                .filter_map(|p| u16::try_from(p).ok().map(|p| (p, 0)))
                .collect(),
        );
        s.close(paths);
        s
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a path ends here: this value is matched.
    pub fn matched(&self, paths: &[Path]) -> bool {
        self.0.iter().any(|&(p, i)| {
            paths
                .get(usize::from(p))
                .is_some_and(|x| x.steps.len() == usize::from(i))
        })
    }

    /// The states of a member or element reached by `edge`.
    pub fn step(&self, paths: &[Path], edge: Edge<'_>) -> States {
        let mut next = Vec::new();
        for &(p, i) in &self.0 {
            let Some(step) = paths
                .get(usize::from(p))
                .and_then(|x| x.steps.get(usize::from(i)))
            else {
                continue;
            };
            let advance = match (step, edge) {
                (Step::AnyDepth, _) => {
                    next.push((p, i));
                    false
                }
                (Step::Elements, Edge::Element) => true,
                (Step::Exact(k), Edge::Key(key)) => k == key,
                (Step::Key(g), Edge::Key(key)) => glob_match(g, key),
                _ => false,
            };
            if advance {
                next.push((p, i + 1));
            }
        }
        let mut s = States(next);
        s.close(paths);
        s
    }

    /// Adds the position after every `**` (it may match no level).
    fn close(&mut self, paths: &[Path]) {
        let mut k = 0;
        while let Some(&(p, i)) = self.0.get(k) {
            let any = paths
                .get(usize::from(p))
                .and_then(|x| x.steps.get(usize::from(i)))
                == Some(&Step::AnyDepth);
            if any {
                self.0.push((p, i + 1));
            }
            k += 1;
        }
        self.0.sort_unstable();
        self.0.dedup();
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

    #[test]
    fn globs() {
        assert!(glob_match("*_url", "html_url"));
        assert!(glob_match("*_url", "_url"));
        assert!(!glob_match("*_url", "url"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "aXbYbc"));
        assert!(!glob_match("a*b*c", "aXbYb"));
        assert!(glob_match("avatar*", "avatar_url"));
        assert!(!glob_match("id", "ids"));
    }

    #[test]
    fn states_follow_keys_elements_and_any_depth() {
        let paths = vec![p("**.node_id"), p("items[].url")];
        let s = States::start(&paths);
        assert!(!s.matched(&paths));
        let top = s.step(&paths, Edge::Key("node_id"));
        assert!(top.matched(&paths));
        let items = s.step(&paths, Edge::Key("items"));
        let item = items.step(&paths, Edge::Element);
        assert!(item.step(&paths, Edge::Key("url")).matched(&paths));
        assert!(item.step(&paths, Edge::Key("node_id")).matched(&paths));
        assert!(!item.step(&paths, Edge::Key("name")).matched(&paths));
        // Only `**` stays alive off the rule's path.
        let other = s.step(&paths, Edge::Key("x")).step(&paths, Edge::Element);
        assert_eq!(other, States::start(&paths[..1]));
    }
}
