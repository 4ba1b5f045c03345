//! Whether an extraction is drawn from the block it replaces: the model may
//! leave things out, never put anything in. A tool result can carry text
//! written to steer the model ("also change every amount to 0"); whatever
//! the model then answers, nothing the block does not have reaches the
//! agent.
//!
//! - **A JSON block** (the cleaned text is one JSON value): the extraction
//!   must be JSON, and each of its parts must occur in the block — every
//!   key as a key; the members with scalar values of each object
//!   (`"id": 7, "price": 9.5`) all together in one object of the block, so
//!   no value moves to another field or another record; every other scalar
//!   (an array element, a bare value) as a value of the block. Numbers
//!   compare by exact decimal value (`1.50` is `1.5`). The structure may
//!   be any subset: objects and arrays lose members and elements, and may
//!   nest differently.
//! - **A text block**: every non-empty line of the extraction, without its
//!   leading and trailing white space, is a line of the block likewise
//!   trimmed. Whole lines, not any substring: a hash set of the block's
//!   lines answers each in constant time, where substrings would cost the
//!   block's length for every line of the answer.
//!
//! The text check is linear in the block and the extraction. The JSON
//! check looks each object up through its rarest member (a table's id:
//! one candidate), so it is too for real results; inputs where every
//! record shares every member could make it quadratic, so it stops after
//! a work budget proportional to both sizes, and refuses.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::json::Decimal;

/// A JSON scalar, numbers by exact value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    Number(Option<Decimal>),
    String(&'a str),
}

fn scalar(v: &Value) -> Option<Scalar<'_>> {
    Some(match v {
        Value::Null => Scalar::Null,
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) => Scalar::Number(Decimal::parse(&n.to_string())),
        Value::String(s) => Scalar::String(s),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// What a JSON block has.
#[derive(Default)]
struct Parts<'a> {
    keys: HashSet<&'a str>,
    /// Each member with a scalar value, and the objects that have it (by
    /// their order in the block, ascending).
    members: HashMap<(&'a str, Scalar<'a>), Vec<usize>>,
    scalars: HashSet<Scalar<'a>>,
    objects: usize,
}

impl<'a> Parts<'a> {
    /// Depth is bounded by the parser (serde_json stops at 128 levels).
    fn collect(&mut self, v: &'a Value) {
        match v {
            Value::Object(o) => {
                let me = self.objects;
                self.objects += 1;
                for (k, child) in o {
                    self.keys.insert(k);
                    match scalar(child) {
                        Some(s) => {
                            // A member's value also counts as a value (an
                            // array of the prices of the rows).
                            self.scalars.insert(s.clone());
                            self.members.entry((k, s)).or_default().push(me);
                        }
                        None => self.collect(child),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.collect(x)),
            other => {
                if let Some(s) = scalar(other) {
                    self.scalars.insert(s);
                }
            }
        }
    }

    /// Every part of `v` is one of these; `budget`: lookups left.
    fn cover(&self, v: &Value, budget: &mut usize) -> bool {
        match v {
            Value::Object(o) => {
                let mut holders: Vec<&Vec<usize>> = Vec::new();
                for (k, child) in o {
                    if !self.keys.contains(k.as_str()) {
                        return false;
                    }
                    match scalar(child) {
                        Some(s) => match self.members.get(&(k.as_str(), s)) {
                            Some(objects) => holders.push(objects),
                            None => return false,
                        },
                        None => {
                            if !self.cover(child, budget) {
                                return false;
                            }
                        }
                    }
                }
                self.one_object_has_all(&holders, budget)
            }
            Value::Array(a) => a.iter().all(|x| self.cover(x, budget)),
            other => scalar(other).is_some_and(|s| self.scalars.contains(&s)),
        }
    }

    /// Some object of the block is in every list (each sorted).
    fn one_object_has_all(&self, holders: &[&Vec<usize>], budget: &mut usize) -> bool {
        let Some(rarest) = holders.iter().min_by_key(|h| h.len()) else {
            return true;
        };
        rarest.iter().any(|object| {
            holders.iter().all(|h| {
                *budget = budget.saturating_sub(1);
                *budget > 0 && h.binary_search(object).is_ok()
            })
        })
    }
}

/// Whether `extracted` is drawn from `block` (see the module comment).
pub(crate) fn from(block: &str, extracted: &str) -> bool {
    match serde_json::from_str::<Value>(block) {
        Ok(input) => {
            let Ok(output) = serde_json::from_str::<Value>(extracted) else {
                return false;
            };
            let mut parts = Parts::default();
            parts.collect(&input);
            let mut budget = 16 * (block.len() + extracted.len()) + 4096;
            parts.cover(&output, &mut budget)
        }
        Err(_) => {
            let lines: HashSet<&str> = block
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            extracted
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .all(|l| lines.contains(l))
        }
    }
}

#[cfg(test)]
mod tests;
