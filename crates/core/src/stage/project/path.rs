//! Matching the operator's rule paths (`config::project::path` has their
//! syntax) one level at a time as a JSON text is walked.
//!
//! Matching is a small NFA: each rule position is a state, `**` loops on
//! itself, and a walker carries the set of live states from a value to its
//! members, so each member costs at most the total number of steps of the
//! rules.

use crate::config::project::{Path, Step};

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
pub(crate) enum Edge<'a> {
    Key(&'a str),
    Element,
}

/// Live positions in a set of paths: `(path index, step index)`, sorted,
/// without duplicates, closed under skipping a `**`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct States(Vec<(u16, u16)>);

impl States {
    /// Every path at its first step (the value of the whole block).
    pub(crate) fn start(paths: &[Path]) -> States {
        let mut s = States(
            (0..paths.len())
                .filter_map(|p| u16::try_from(p).ok().map(|p| (p, 0)))
                .collect(),
        );
        s.close(paths);
        s
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a path ends here: this value is matched.
    pub(crate) fn matched(&self, paths: &[Path]) -> bool {
        self.0.iter().any(|&(p, i)| {
            paths
                .get(usize::from(p))
                .is_some_and(|x| x.steps.len() == usize::from(i))
        })
    }

    /// The states of a member or element reached by `edge`.
    pub(crate) fn step(&self, paths: &[Path], edge: Edge<'_>) -> States {
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
