//! The agent's query: a JMESPath expression (jmespath.org/specification)
//! evaluated on a JSON text block by the `jmespath` crate.
//!
//! Hostile expressions are input too. A JMESPath expression is a total
//! function of one value: no loops, recursion, variables or generators, and
//! every node is evaluated once per value it is applied to. So its cost can
//! be bounded before it runs, as multiples of the input size S:
//! - `M`, the output's size, at most `M·S` (a multi-select of two copies
//!   doubles it; `[@,@] | [@,@] | …` grows as 3^k and is refused);
//! - `W`, the work, at most `W·S` (a projection runs its right side on
//!   every element, whose sizes add up to at most its input's).
//!
//! [`cost`] computes both from the syntax tree; an expression over
//! [`MAX_SIZE_FACTOR`] or [`MAX_WORK_FACTOR`] is refused, as is one longer
//! than the configured `project.max_query_bytes`, nested deeper than
//! [`MAX_DEPTH`] or with more than [`MAX_BRACKETS`] brackets (the crate's
//! parser and interpreter recurse). The output is
//! serialised into a buffer that refuses to grow past the block's size.
//!
//! The crate's own number parsing goes through serde, which the
//! `arbitrary_precision` build of serde_json (this crate needs it for exact
//! number spellings) turns into a map: literal numbers and `to_number` are
//! mended here, and the input is converted without serde.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::LazyLock;

use jmespath::ast::Ast;
use jmespath::functions::Function;
use jmespath::{Context, Rcvar, Runtime, Variable};
use serde_json::Value;

use crate::json::{self, StrictError};
use crate::outcome::Reason;

/// Most nesting of brackets and parentheses in an expression, prefix
/// operators (`!`, `&`) included.
pub const MAX_DEPTH: usize = 16;
/// Most brackets, parentheses and prefix operators in an expression: the
/// crate's parser recurses once per projection of a chain (`a[*].b[*]…`).
pub const MAX_BRACKETS: usize = 48;
/// Largest output size factor `M` accepted.
pub const MAX_SIZE_FACTOR: u64 = 32;
/// Largest work factor `W` accepted.
pub const MAX_WORK_FACTOR: u64 = 256;
/// `n log n` of a sort, as a factor on `n` (`n` ≤ 2^20 in a block).
const SORT_FACTOR: u64 = 20;

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

/// The output size and work factors of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    pub size: u64,
    pub work: u64,
}

impl Query {
    /// Parses and checks an expression.
    pub fn parse(text: &str, max_bytes: usize) -> Result<Query, Refusal> {
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
        let c = cost(&ast, 0)?;
        if c.size > MAX_SIZE_FACTOR || c.work > MAX_WORK_FACTOR {
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

    /// Evaluates on a JSON text; the output is compact JSON strictly
    /// smaller than `text`.
    pub fn apply(&self, text: &str) -> Result<String, Refusal> {
        // A key written twice: a value keeps one of them, so the query
        // would answer about a result the server did not unambiguously send
        // (crate::json::object has the rule).
        let value = json::parse_strict(text).map_err(|e| match e {
            StrictError::Syntax => Refusal::new(Reason::NotJson, "the result is not JSON"),
            StrictError::DuplicateKey => Refusal::new(
                Reason::DuplicateKeys,
                "an object in the result has a key twice",
            ),
        })?;
        let data = Rc::new(variable(value));
        let mut ctx = Context::new(&self.text, &RUNTIME);
        let out = jmespath::interpret(&data, &self.ast, &mut ctx)
            .map_err(|e| Refusal::new(Reason::QueryError, e.reason.to_string()))?;
        let empty = match &*out {
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
            max: text.len().saturating_sub(1),
        };
        let larger = || {
            Refusal::new(
                Reason::QueryLarger,
                "its result is not smaller than the full result",
            )
        };
        serde_json::to_writer(&mut buf, &*out).map_err(|_| larger())?;
        String::from_utf8(buf.bytes).map_err(|_| larger())
    }

    pub fn cost(&self) -> Result<Cost, Refusal> {
        cost(&self.ast, 0)
    }
}

/// A writer that fails once it would hold more than `max` bytes.
struct Capped {
    bytes: Vec<u8>,
    max: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.max {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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

/// serde_json's `arbitrary_precision` marker: a number deserialized by a
/// foreign `Deserialize` arrives as a map with this one key.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

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

/// Output size and work factors of `ast` (see the module docs). `depth`
/// bounds this recursion like the crate's own.
fn cost(ast: &Ast, depth: usize) -> Result<Cost, Refusal> {
    if depth > 4 * MAX_DEPTH + 64 {
        return Err(Refusal::new(Reason::QueryTooComplex, "nested too deeply"));
    }
    let sub = |a: &Ast| cost(a, depth + 1);
    let one = Cost { size: 1, work: 1 };
    // Applying `r` to each output of `l` (a pipe, a sub-expression, a
    // projection): outputs add up to at most `l.size·S`.
    let then = |l: Cost, r: Cost| Cost {
        size: l.size.saturating_mul(r.size),
        work: l.work.saturating_add(l.size.saturating_mul(r.work)),
    };
    let c = match ast {
        Ast::Identity { .. } | Ast::Field { .. } | Ast::Index { .. } | Ast::Slice { .. } => one,
        Ast::Literal { value, .. } => Cost {
            size: literal_size(value).max(1),
            work: 1,
        },
        Ast::Subexpr { lhs, rhs, .. } | Ast::Projection { lhs, rhs, .. } => {
            then(sub(lhs)?, sub(rhs)?)
        }
        Ast::Condition {
            predicate, then: t, ..
        } => {
            let (p, t) = (sub(predicate)?, sub(t)?);
            Cost {
                size: t.size,
                work: p.work.saturating_add(t.work),
            }
        }
        Ast::Comparison { lhs, rhs, .. } => {
            let (l, r) = (sub(lhs)?, sub(rhs)?);
            Cost {
                size: 1,
                work: l
                    .work
                    .saturating_add(r.work)
                    .saturating_add(l.size.min(r.size)),
            }
        }
        Ast::And { lhs, rhs, .. } | Ast::Or { lhs, rhs, .. } => {
            let (l, r) = (sub(lhs)?, sub(rhs)?);
            Cost {
                size: l.size.max(r.size),
                work: l.work.saturating_add(r.work),
            }
        }
        Ast::Not { node, .. } => Cost {
            size: 1,
            work: sub(node)?.work,
        },
        Ast::Flatten { node, .. } | Ast::ObjectValues { node, .. } => {
            let n = sub(node)?;
            Cost {
                size: n.size,
                work: n.work.saturating_add(n.size),
            }
        }
        Ast::MultiList { elements, .. } => {
            sum(elements.iter().map(sub).collect::<Result<Vec<_>, _>>()?)
        }
        Ast::MultiHash { elements, .. } => sum(elements
            .iter()
            .map(|kv| sub(&kv.value))
            .collect::<Result<Vec<_>, _>>()?),
        // An expression reference is data until a function applies it.
        Ast::Expref { ast, .. } => sub(ast)?,
        Ast::Function { name, args, .. } => function(name, args, &sub)?,
    };
    Ok(c)
}

fn sum(costs: Vec<Cost>) -> Cost {
    costs.iter().fold(Cost { size: 1, work: 1 }, |a, c| Cost {
        size: a.size.saturating_add(c.size),
        work: a.work.saturating_add(c.work),
    })
}

/// Bytes of a literal's JSON (its size in the units of `S`).
fn literal_size(v: &Variable) -> u64 {
    serde_json::to_string(v).map_or(u64::MAX, |s| s.len() as u64)
}

/// The builtin functions (JMESPath specification, "Built-in Functions").
fn function(
    name: &str,
    args: &[Ast],
    sub: &dyn Fn(&Ast) -> Result<Cost, Refusal>,
) -> Result<Cost, Refusal> {
    let costs = args.iter().map(sub).collect::<Result<Vec<_>, _>>()?;
    let work_in: u64 = costs.iter().fold(1, |a, c| a.saturating_add(c.work));
    let size_in: u64 = costs.iter().fold(0, |a, c| a.saturating_add(c.size));
    let arg = |i: usize| costs.get(i).copied().unwrap_or(Cost { size: 1, work: 1 });
    // Functions taking `&expr` apply it to each element of their array.
    let per_element = |array: Cost, expr: Cost| {
        array
            .work
            .saturating_add(array.size.saturating_mul(expr.work))
    };
    let c = match name {
        "abs" | "avg" | "ceil" | "contains" | "ends_with" | "floor" | "length" | "starts_with"
        | "sum" | "to_number" | "type" => Cost {
            size: 1,
            work: work_in.saturating_add(size_in),
        },
        "keys" | "max" | "merge" | "min" | "not_null" | "reverse" | "to_array" | "to_string"
        | "values" => Cost {
            size: size_in.max(1),
            work: work_in.saturating_add(size_in),
        },
        "sort" => Cost {
            size: size_in.max(1),
            work: work_in.saturating_add(SORT_FACTOR.saturating_mul(size_in)),
        },
        // The separator repeats between elements: only a literal keeps the
        // output linear.
        "join" => {
            let Some(Ast::Literal { value, .. }) = args.first() else {
                return Err(Refusal::new(
                    Reason::QueryTooComplex,
                    "join's separator must be a literal string",
                ));
            };
            let sep = literal_size(value);
            Cost {
                size: arg(1).size.saturating_mul(sep.saturating_add(1)),
                work: work_in.saturating_add(arg(1).size.saturating_mul(sep.saturating_add(1))),
            }
        }
        "map" => Cost {
            size: arg(1).size.saturating_mul(arg(0).size),
            work: per_element(arg(1), arg(0)),
        },
        "max_by" | "min_by" => Cost {
            size: arg(0).size,
            work: per_element(arg(0), arg(1)),
        },
        "sort_by" => Cost {
            size: arg(0).size,
            work: per_element(arg(0), arg(1))
                .saturating_add(SORT_FACTOR.saturating_mul(arg(0).size)),
        },
        _ => {
            return Err(Refusal::new(
                Reason::QueryInvalid,
                format!("unknown function {name}()"),
            ))
        }
    };
    Ok(c)
}

/// The builtins, with `to_number` mended (see the module docs).
static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut runtime = Runtime::new();
    runtime.register_builtin_functions();
    runtime.register_function("to_number", Box::new(ToNumber));
    runtime
});

/// `to_number`: numbers as they are, strings that are JSON numbers parsed
/// exactly, anything else `null` (JMESPath specification, `to_number`).
struct ToNumber;

impl Function for ToNumber {
    fn evaluate(&self, args: &[Rcvar], ctx: &mut Context<'_>) -> jmespath::SearchResult {
        let [arg] = args else {
            return Err(jmespath::JmespathError::from_ctx(
                ctx,
                jmespath::ErrorReason::Parse("to_number takes one argument".into()),
            ));
        };
        Ok(match &**arg {
            Variable::Number(_) => arg.clone(),
            Variable::String(s) => Rc::new(
                s.trim()
                    .parse::<serde_json::Number>()
                    .map_or(Variable::Null, Variable::Number),
            ),
            _ => Rc::new(Variable::Null),
        })
    }
}

#[cfg(test)]
mod tests;
