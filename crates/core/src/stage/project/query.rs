//! The agent's query: a JMESPath expression (jmespath.org/specification)
//! parsed by the `jmespath` crate and evaluated here, on a JSON text
//! block, within a budget.
//!
//! Hostile expressions are input too, checked three times:
//! - before it is parsed: longer than the configured
//!   `project.max_query_bytes`, nested deeper than [`MAX_DEPTH`] or with
//!   more than [`MAX_BRACKETS`] brackets (the crate's parser recurses);
//! - before it runs, a static bound on its output and work as multiples
//!   of the block's size ([`cost`]; over [`MAX_SIZE_FACTOR`] or
//!   [`MAX_WORK_FACTOR`] it is refused);
//! - while it runs, a [`meter`] of work and memory against the
//!   `project.query_*` budget, scaled to the block ([`eval`]: the crate's
//!   interpreter, node for node, metered; [`functions`]; [`value`]). A
//!   query past either limit stops there, before it makes the value that
//!   would pass it (`query_budget`).
//!
//! The output is serialised into a buffer that refuses to grow past the
//! block's size.
//!
//! The crate's own number parsing goes through serde, which the
//! `arbitrary_precision` build of serde_json (this crate needs it for exact
//! number spellings) turns into a map: literal numbers and `to_number` are
//! mended here, and the input is converted without serde.

mod cost;
mod eval;
mod functions;
mod machine;
mod meter;
mod value;

use std::collections::BTreeMap;
use std::rc::Rc;

use jmespath::ast::Ast;
use jmespath::{Context, Rcvar, Variable};
use serde_json::Value;

pub(crate) use cost::Cost;

use crate::config::QueryBudget;
// NUMBER_TOKEN: serde_json's `arbitrary_precision` marker; a number
// deserialized by a foreign `Deserialize` arrives as a map with this one key.
use crate::json::{self, StrictError, NUMBER_TOKEN};
use crate::mcp::QUERY_NOT_A_STRING;
use crate::outcome::Reason;
use meter::{Fault, Meter};
use value::{write_json, Capped};

/// Most nesting of brackets and parentheses in an expression, prefix
/// operators (`!`, `&`) included.
pub(crate) const MAX_DEPTH: usize = 16;
/// Most brackets, parentheses and prefix operators in an expression: the
/// crate's parser recurses once per projection of a chain (`a[*].b[*]…`).
pub(crate) const MAX_BRACKETS: usize = 48;
/// Largest output size factor `M` accepted.
pub(crate) const MAX_SIZE_FACTOR: u64 = 32;
/// Largest work factor `W` accepted.
pub(crate) const MAX_WORK_FACTOR: u64 = 256;

/// Why a query was not applied, with a one-line detail for the note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: Reason,
    pub detail: String,
}

impl Refusal {
    fn new(reason: Reason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: one_line(&detail.into()),
        }
    }
}

/// At most 160 characters of the first line, without control characters:
/// the note is one line of the text an agent reads.
fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or_default();
    first
        .chars()
        .filter(|c| !c.is_control())
        .take(160)
        .collect()
}

/// A parsed expression within every limit.
#[derive(Debug, Clone)]
pub struct Query {
    text: String,
    ast: Ast,
}

/// What a query spent on a block: units of work and bytes of values made
/// (`meter`), up to where it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    pub work: u64,
    pub memory: u64,
}

impl Query {
    /// Parses and checks an expression.
    pub fn parse(text: &str, max_bytes: usize) -> Result<Query, Refusal> {
        Self::parse_checked(text, max_bytes, true)
    }

    /// [`Query::parse`] without the static bound's factors (the tree's
    /// depth is still bounded): how the fuzz target and the tests reach
    /// the meter with what the bound would refuse.
    #[cfg(any(test, feature = "sim"))]
    pub fn parse_unbounded(text: &str, max_bytes: usize) -> Result<Query, Refusal> {
        Self::parse_checked(text, max_bytes, false)
    }

    fn parse_checked(text: &str, max_bytes: usize, bound: bool) -> Result<Query, Refusal> {
        // The request said the argument is there, as no string.
        if let Some(kind) = text.strip_prefix(QUERY_NOT_A_STRING) {
            return Err(Refusal::new(
                Reason::QueryInvalid,
                format!("the argument must be a string holding a JMESPath expression, not {kind}"),
            ));
        }
        let text = text.trim();
        if text.len() > max_bytes {
            return Err(Refusal::new(
                Reason::QueryInvalid,
                format!("longer than {max_bytes} bytes"),
            ));
        }
        let (depth, count) = nesting(text);
        if depth > MAX_DEPTH || count > MAX_BRACKETS {
            return Err(Refusal::new(
                Reason::QueryInvalid,
                format!(
                    "more than {MAX_DEPTH} nested or {MAX_BRACKETS} brackets and prefix `!`, `&`"
                ),
            ));
        }
        let mut ast = jmespath::parse(text)
            .map_err(|e| Refusal::new(Reason::QueryInvalid, e.reason.to_string()))?;
        mend_literals(&mut ast);
        let c = cost::cost(&ast, 0)?;
        if bound && (c.size > MAX_SIZE_FACTOR || c.work > MAX_WORK_FACTOR) {
            return Err(Refusal::new(
                Reason::QueryTooComplex,
                format!(
                    "its output may reach {}× and its work {}× the result's size (limits {MAX_SIZE_FACTOR}× and {MAX_WORK_FACTOR}×)",
                    c.size, c.work
                ),
            ));
        }
        Ok(Query {
            text: text.to_string(),
            ast,
        })
    }

    /// Evaluates on a JSON text within the default budget; the output is
    /// compact JSON strictly smaller than `text`.
    pub fn apply(&self, text: &str) -> Result<String, Refusal> {
        self.apply_within(text, &QueryBudget::default())
    }

    /// Evaluates on a JSON text within `budget`, scaled to the text's size.
    pub fn apply_within(&self, text: &str, budget: &QueryBudget) -> Result<String, Refusal> {
        self.run(text, budget).0
    }

    /// [`Query::apply_within`], with what the evaluation spent (up to where
    /// it stopped).
    pub fn run(&self, text: &str, budget: &QueryBudget) -> (Result<String, Refusal>, Spent) {
        let data = match read(text) {
            Ok(data) => data,
            Err(r) => return (Err(r), Spent::default()),
        };
        let meter = Meter::new(budget.work(text.len()), budget.memory(text.len()));
        let mut ev = eval::evaluator(meter, Context::new(&self.text, &functions::NO_FUNCTIONS));
        let out = ev.eval(&data, &self.ast);
        let m = &ev.meter;
        let spent = Spent {
            work: m.work,
            memory: m.memory,
        };
        let out = match out {
            Ok(out) => out,
            Err(Fault::Error(e)) => {
                return (Err(Refusal::new(Reason::QueryError, e.to_string())), spent)
            }
            Err(Fault::Work) => {
                let detail = format!(
                    "it needed more than the {} units of work its budget allows on a result of this size",
                    m.max_work
                );
                return (Err(Refusal::new(Reason::QueryBudget, detail)), spent);
            }
            Err(Fault::Memory) => {
                let detail = format!(
                    "it needed more than the {} bytes of memory its budget allows on a result of this size",
                    m.max_memory
                );
                return (Err(Refusal::new(Reason::QueryBudget, detail)), spent);
            }
        };
        (finish(&out, text.len()), spent)
    }

    /// The crate's own interpreter on the same query and text, unmetered
    /// and unbounded: the answer [`Query::apply_within`] must give
    /// whenever it finishes within its budget (the tests and the fuzz
    /// target compare the two). Never for traffic.
    #[cfg(any(test, feature = "sim"))]
    pub fn reference(&self, text: &str) -> Result<String, Refusal> {
        let data = read(text)?;
        let mut ctx = Context::new(&self.text, &functions::REFERENCE);
        let out = jmespath::interpret(&data, &self.ast, &mut ctx)
            .map_err(|e| Refusal::new(Reason::QueryError, e.reason.to_string()))?;
        finish(&out, text.len())
    }

    pub fn cost(&self) -> Result<Cost, Refusal> {
        cost::cost(&self.ast, 0)
    }
}

/// The block's JSON value, as the query sees it.
fn read(text: &str) -> Result<Rcvar, Refusal> {
    // A key written twice: a value keeps one of them, so the query would
    // answer about a result the server did not unambiguously send
    // (crate::json::object has the rule).
    match json::parse_strict(text) {
        Ok(v) => Ok(Rc::new(variable(v))),
        Err(StrictError::Syntax) => Err(Refusal::new(Reason::NotJson, "the result is not JSON")),
        Err(StrictError::DuplicateKey) => Err(Refusal::new(
            Reason::DuplicateKeys,
            "an object in the result has a key twice",
        )),
    }
}

/// The answer as compact JSON, refused when empty or not smaller than the
/// block (`block` bytes); written into a buffer that stops there.
fn finish(out: &Variable, block: usize) -> Result<String, Refusal> {
    let empty = match out {
        Variable::Null => true,
        Variable::Array(a) => a.is_empty(),
        Variable::Object(o) => o.is_empty(),
        Variable::String(s) => s.is_empty(),
        _ => false,
    };
    if empty {
        return Err(Refusal::new(
            Reason::QueryEmpty,
            "it selected nothing (null or empty)",
        ));
    }
    let mut buf = Capped {
        bytes: Vec::new(),
        max: block.saturating_sub(1),
    };
    let larger = || {
        Refusal::new(
            Reason::QueryLarger,
            "its result is not smaller than the full result",
        )
    };
    write_json(out, &mut buf).map_err(|_| larger())?;
    String::from_utf8(buf.bytes).map_err(|_| larger())
}

/// The deepest nesting of `(`, `[`, `{` plus every prefix operator (`!`
/// not followed by `=`, a single `&`), and the number of all of them: the
/// crate's parser recurses on each. Counted inside literals too, a
/// conservative bound.
fn nesting(text: &str) -> (usize, usize) {
    let b = text.as_bytes();
    let (mut depth, mut max, mut prefix, mut opened) = (0usize, 0usize, 0usize, 0usize);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' | b'{' => {
                depth += 1;
                opened += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'!' if b.get(i + 1) != Some(&b'=') => prefix += 1,
            b'&' if b.get(i + 1) != Some(&b'&') && (i == 0 || b.get(i - 1) != Some(&b'&')) => {
                prefix += 1
            }
            _ => {}
        }
    }
    (max + prefix, opened + prefix)
}

/// The input, converted without serde (see the module docs). Depth is
/// bounded by serde_json's recursion limit (128) on the parse before.
fn variable(v: Value) -> Variable {
    match v {
        Value::Null => Variable::Null,
        Value::Bool(b) => Variable::Bool(b),
        Value::Number(n) => Variable::Number(n),
        Value::String(s) => Variable::String(s),
        Value::Array(a) => Variable::Array(a.into_iter().map(|x| Rc::new(variable(x))).collect()),
        Value::Object(o) => Variable::Object(
            o.into_iter()
                .map(|(k, x)| (k, Rc::new(variable(x))))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

/// A literal as the crate parsed it, with numbers put back.
fn mend(v: &Variable) -> Option<Variable> {
    match v {
        Variable::Object(o) => {
            if let (1, Some(Variable::String(n))) = (o.len(), o.get(NUMBER_TOKEN).map(|x| &**x)) {
                return n.parse::<serde_json::Number>().ok().map(Variable::Number);
            }
            let mut changed = false;
            let mended: BTreeMap<String, Rcvar> = o
                .iter()
                .map(|(k, x)| match mend(x) {
                    Some(m) => {
                        changed = true;
                        (k.clone(), Rc::new(m))
                    }
                    None => (k.clone(), x.clone()),
                })
                .collect();
            changed.then_some(Variable::Object(mended))
        }
        Variable::Array(a) => {
            let mut changed = false;
            let mended: Vec<Rcvar> = a
                .iter()
                .map(|x| match mend(x) {
                    Some(m) => {
                        changed = true;
                        Rc::new(m)
                    }
                    None => x.clone(),
                })
                .collect();
            changed.then_some(Variable::Array(mended))
        }
        _ => None,
    }
}

fn mend_literals(ast: &mut Ast) {
    match ast {
        Ast::Literal { value, .. } => {
            if let Some(m) = mend(value) {
                *value = Rc::new(m);
            }
        }
        Ast::Comparison { lhs, rhs, .. }
        | Ast::Projection { lhs, rhs, .. }
        | Ast::And { lhs, rhs, .. }
        | Ast::Or { lhs, rhs, .. }
        | Ast::Subexpr { lhs, rhs, .. } => {
            mend_literals(lhs);
            mend_literals(rhs);
        }
        Ast::Condition {
            predicate, then, ..
        } => {
            mend_literals(predicate);
            mend_literals(then);
        }
        Ast::Expref { ast, .. } => mend_literals(ast),
        Ast::Flatten { node, .. } | Ast::Not { node, .. } | Ast::ObjectValues { node, .. } => {
            mend_literals(node)
        }
        Ast::Function { args, .. } | Ast::MultiList { elements: args, .. } => {
            args.iter_mut().for_each(mend_literals)
        }
        Ast::MultiHash { elements, .. } => elements
            .iter_mut()
            .for_each(|kv| mend_literals(&mut kv.value)),
        Ast::Identity { .. } | Ast::Field { .. } | Ast::Index { .. } | Ast::Slice { .. } => {}
    }
}

#[cfg(test)]
mod tests;
