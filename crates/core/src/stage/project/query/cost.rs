//! The static bound: an expression's output size and work as multiples of
//! its input's size `S`, from the syntax tree, before it runs.
//!
//! A JMESPath expression is a total function of one value: no loops,
//! recursion, variables or generators, and every node is evaluated once per
//! value it is applied to. So:
//! - `size`, the output's serialised size, is at most `size·S` (a
//!   multi-select of two copies doubles it; `[@,@] | [@,@] | …` grows as
//!   3^k);
//! - `work` is at most `work·S` (a projection runs its right side on every
//!   element, whose sizes add up to at most its input's).
//!
//! String-producing functions are priced by what they really write:
//! `to_string` of a value is its JSON text, escaped again when written as a
//! string (each `"` and `\` doubles, a control character becomes
//! `\u00XX`: at most 6× plus the quotes), so `to_array(@) | to_string(@)`
//! repeated grows as 6^k and is refused at the second step. The bound is an
//! early refusal only: what it cannot see (a value shared by many parts of
//! the output, a function's real cost on the data) the meter stops while
//! the query runs (`eval`).

use jmespath::ast::Ast;
use jmespath::Variable;

use super::{Refusal, MAX_DEPTH};
use crate::outcome::Reason;

/// `n log n` of a sort, as a factor on `n` (`n` ≤ 2^20 in a block).
const SORT_FACTOR: u64 = 20;
/// A JSON string's serialised size against its content's: every byte may
/// be escaped as `\u00XX` (RFC 8259 §7).
const ESCAPE_FACTOR: u64 = 6;

/// The output size and work factors of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    pub size: u64,
    pub work: u64,
}

/// Output size and work factors of `ast` (see the module docs). `depth`
/// bounds this recursion, and with it every walk of a parsed query.
pub(super) fn cost(ast: &Ast, depth: usize) -> Result<Cost, Refusal> {
    if depth > MAX_AST_DEPTH {
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

/// The deepest syntax tree [`cost`] accepts: a chain of 64 steps on top of
/// the deepest nesting the parser is given. Every later walk of the tree
/// (the evaluator's included) recurses at most this deep.
pub(super) const MAX_AST_DEPTH: usize = 4 * MAX_DEPTH + 64;

fn sum(costs: Vec<Cost>) -> Cost {
    costs.iter().fold(Cost { size: 1, work: 1 }, |a, c| Cost {
        size: a.size.saturating_add(c.size),
        work: a.work.saturating_add(c.work),
    })
}

/// Bytes of a literal's JSON (its size in the units of `S`).
pub(super) fn literal_size(v: &Variable) -> u64 {
    let mut text = Vec::new();
    super::value::write_json(v, &mut text).map_or(u64::MAX, |()| text.len() as u64)
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
        "keys" | "max" | "merge" | "min" | "not_null" | "reverse" | "values" => Cost {
            size: size_in.max(1),
            work: work_in.saturating_add(size_in),
        },
        // `[x]`: two more bytes, at most one more `S`.
        "to_array" => Cost {
            size: size_in.saturating_add(1),
            work: work_in.saturating_add(size_in),
        },
        // The input's JSON text as a string, escaped when written: at most
        // 6× its size, plus the quotes.
        "to_string" => {
            let size = ESCAPE_FACTOR.saturating_mul(size_in).saturating_add(2);
            Cost {
                size,
                work: work_in.saturating_add(size_in).saturating_add(size),
            }
        }
        "sort" => Cost {
            size: size_in.max(1),
            work: work_in.saturating_add(SORT_FACTOR.saturating_mul(size_in)),
        },
        // The separator repeats between elements (each element takes at
        // least 3 bytes of its array, `"",`): only a literal keeps the
        // output linear.
        "join" => {
            let Some(Ast::Literal { value, .. }) = args.first() else {
                return Err(Refusal::new(
                    Reason::QueryTooComplex,
                    "join's separator must be a literal string",
                ));
            };
            let sep = literal_size(value);
            let size = arg(1).size.saturating_mul(sep.saturating_add(1));
            Cost {
                size,
                work: work_in.saturating_add(size),
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
