//! The evaluator: the `jmespath` crate's interpreter
//! (`jmespath::interpret`), node for node, with a [`Meter`] threaded
//! through. Each node evaluated costs a unit of work; each value made is
//! charged to memory before it is made; what a node walks (a projection's
//! elements, a comparison's members) is charged as it goes. A query stops
//! at the first charge past its budget.
//!
//! The answers are the crate's: same values, same errors, same sharing of
//! values (which JMESPath can observe: a number beyond `f64` equals only
//! itself, as a shared reference). The recursion follows the syntax tree,
//! whose depth [`super::cost`] bounded when the query was parsed.

use std::collections::BTreeMap;

use jmespath::ast::{Ast, Comparator};
use jmespath::{Context, ErrorReason, Rcvar, RuntimeError, Variable};

use super::functions;
use super::machine::Eval;
use super::meter::{scan, Fault, Meter, ENTRY, SLOT};
use super::value::{equal, number_len};

/// An evaluation of a query on one value, charged to `meter`, whose
/// steps are this interpreter's.
pub(super) fn evaluator<'q>(meter: Meter, ctx: Context<'q>) -> Eval<'q> {
    Eval::new(meter, ctx, Eval::node)
}

impl<'q> Eval<'q> {
    fn node(&mut self, data: &Rcvar, node: &Ast) -> Result<Rcvar, Fault> {
        match node {
            Ast::Field { name, .. } => {
                self.meter.work(scan(name.len()))?;
                Ok(match &**data {
                    Variable::Object(o) => o.get(name).cloned().unwrap_or_else(|| self.null()),
                    _ => self.null(),
                })
            }
            Ast::Subexpr { lhs, rhs, .. } => {
                let left = self.eval(data, lhs)?;
                self.eval(&left, rhs)
            }
            Ast::Identity { .. } => Ok(data.clone()),
            Ast::Literal { value, .. } => Ok(value.clone()),
            Ast::Index { idx, .. } => Ok(index(data, *idx).unwrap_or_else(|| self.null())),
            Ast::Or { lhs, rhs, .. } => {
                let left = self.eval(data, lhs)?;
                if left.is_truthy() {
                    Ok(left)
                } else {
                    self.eval(data, rhs)
                }
            }
            Ast::And { lhs, rhs, .. } => {
                let left = self.eval(data, lhs)?;
                if left.is_truthy() {
                    self.eval(data, rhs)
                } else {
                    Ok(left)
                }
            }
            Ast::Not { node, .. } => {
                let v = self.eval(data, node)?;
                Ok(self.boolean(!v.is_truthy()))
            }
            Ast::Condition {
                predicate, then, ..
            } => {
                if self.eval(data, predicate)?.is_truthy() {
                    self.eval(data, then)
                } else {
                    Ok(self.null())
                }
            }
            Ast::Comparison {
                comparator,
                lhs,
                rhs,
                ..
            } => {
                let left = self.eval(data, lhs)?;
                let right = self.eval(data, rhs)?;
                Ok(match self.compare(&left, comparator, &right)? {
                    Some(b) => self.boolean(b),
                    None => self.null(),
                })
            }
            Ast::ObjectValues { node, .. } => {
                let subject = self.eval(data, node)?;
                match &*subject {
                    Variable::Object(o) => self.array(o.values().cloned()),
                    _ => Ok(self.null()),
                }
            }
            // The right side on each element; nulls are left out.
            Ast::Projection { lhs, rhs, .. } => {
                let left = self.eval(data, lhs)?;
                let Variable::Array(items) = &*left else {
                    return Ok(self.null());
                };
                let mut out = Vec::new();
                for element in items {
                    let v = self.eval(element, rhs)?;
                    if !v.is_null() {
                        self.meter.memory(SLOT)?;
                        out.push(v);
                    }
                }
                self.made(Variable::Array(out))
            }
            Ast::Flatten { node, .. } => {
                let subject = self.eval(data, node)?;
                let Variable::Array(items) = &*subject else {
                    return Ok(self.null());
                };
                let mut out: Vec<Rcvar> = Vec::new();
                for element in items {
                    match &**element {
                        Variable::Array(inner) => {
                            let n = inner.len() as u64;
                            self.meter.work(1u64.saturating_add(n))?;
                            self.meter.memory(SLOT.saturating_mul(n))?;
                            out.extend(inner.iter().cloned());
                        }
                        _ => {
                            self.meter.work(1)?;
                            self.meter.memory(SLOT)?;
                            out.push(element.clone());
                        }
                    }
                }
                self.made(Variable::Array(out))
            }
            Ast::MultiList { elements, .. } => {
                if data.is_null() {
                    return Ok(self.null());
                }
                self.meter
                    .memory(SLOT.saturating_mul(elements.len() as u64))?;
                let mut out = Vec::with_capacity(elements.len());
                for e in elements {
                    out.push(self.eval(data, e)?);
                }
                self.made(Variable::Array(out))
            }
            // Keys in order; a key written twice keeps its last value.
            Ast::MultiHash { elements, .. } => {
                if data.is_null() {
                    return Ok(self.null());
                }
                let mut out = BTreeMap::new();
                for kv in elements {
                    let v = self.eval(data, &kv.value)?;
                    self.meter.work(scan(kv.key.len()))?;
                    self.meter
                        .memory(ENTRY.saturating_add(kv.key.len() as u64))?;
                    out.insert(kv.key.clone(), v);
                }
                self.made(Variable::Object(out))
            }
            Ast::Function { name, args, .. } => functions::call(self, data, name, args),
            Ast::Expref { ast, .. } => self.expref(ast),
            Ast::Slice {
                start, stop, step, ..
            } => {
                if *step == 0 {
                    return Err(Fault::Error(ErrorReason::Runtime(
                        RuntimeError::InvalidSlice,
                    )));
                }
                match &**data {
                    Variable::Array(a) => {
                        let picks = || slice(a.len(), *start, *stop, *step);
                        let n = picks().count() as u64;
                        self.meter.work(n)?;
                        self.meter.memory(SLOT.saturating_mul(n))?;
                        let picked = picks().filter_map(|i| a.get(i).cloned()).collect();
                        self.made(Variable::Array(picked))
                    }
                    _ => Ok(self.null()),
                }
            }
        }
    }

    /// `Variable::compare`: `==` and `!=` on any values, the order
    /// comparators on two numbers only (else `None`, a null).
    fn compare(
        &mut self,
        left: &Variable,
        comparator: &Comparator,
        right: &Variable,
    ) -> Result<Option<bool>, Fault> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let order = |this: &mut Self| -> Result<Option<std::cmp::Ordering>, Fault> {
            if !(left.is_number() && right.is_number()) {
                return Ok(None);
            }
            this.meter
                .work(scan(number_len(left).saturating_add(number_len(right))))?;
            Ok(Some(match (left.as_number(), right.as_number()) {
                (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(Less),
                _ => Equal,
            }))
        };
        Ok(match comparator {
            Comparator::Equal => Some(equal(left, right, &mut self.meter)?),
            Comparator::NotEqual => Some(!equal(left, right, &mut self.meter)?),
            Comparator::LessThan => order(self)?.map(|o| o == Less),
            Comparator::LessThanEqual => order(self)?.map(|o| o != Greater),
            Comparator::GreaterThan => order(self)?.map(|o| o == Greater),
            Comparator::GreaterThanEqual => order(self)?.map(|o| o != Less),
        })
    }
}

/// `Variable::get_index` and `get_negative_index`: `-1` is the last
/// element.
fn index(data: &Variable, idx: i32) -> Option<Rcvar> {
    let Variable::Array(a) = data else {
        return None;
    };
    if idx >= 0 {
        return a.get(usize::try_from(idx).ok()?).cloned();
    }
    let back = usize::try_from(idx.unsigned_abs()).ok()?.max(1);
    a.get(a.len().checked_sub(back)?).cloned()
}

/// The indices a slice picks (JMESPath specification, "Slices"; the
/// crate's `slice`), computed in `i64`: the crate's `i32` arithmetic
/// overflows past the end of an array for a step near `2^31`
/// (`[1::2147483647]`), where it indexes out of bounds and panics.
fn slice(
    len: usize,
    start: Option<i32>,
    stop: Option<i32>,
    step: i32,
) -> impl Iterator<Item = usize> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let step = i64::from(step);
    let adjust = |end: i32| -> i64 {
        let end = i64::from(end);
        if end < 0 {
            let end = end + len;
            if end >= 0 {
                end
            } else if step < 0 {
                -1
            } else {
                0
            }
        } else if end < len {
            end
        } else if step < 0 {
            len - 1
        } else {
            len
        }
    };
    let (from, to) = if len == 0 {
        (0, 0)
    } else {
        let from = match start {
            Some(s) => adjust(s),
            None if step < 0 => len - 1,
            None => 0,
        };
        let to = match stop {
            Some(s) => adjust(s),
            None if step < 0 => -1,
            None => len,
        };
        (from, to)
    };
    std::iter::successors(Some(from), move |i| i.checked_add(step))
        .take_while(move |&i| if step > 0 { i < to } else { i > to })
        .filter_map(|i| usize::try_from(i).ok())
}
