//! Walks of values that a query's data can make long: equality, order,
//! JSON text, sorting. Each is iterative (a stack of iterators, one per
//! level, so depth costs no recursion) and metered, and each answers
//! exactly as the `jmespath` crate's own `PartialEq`, `Ord`, `Serialize`
//! and `sort` do (the differential tests in `tests.rs` hold them to it).
//!
//! Values are reference-counted and may be shared (`[@, @]` holds `@`
//! twice), so a value's tree can be far larger than what it took to make:
//! every walk here is charged per node and byte it visits, never by what
//! the value cost.

use std::cmp::Ordering;
use std::collections::btree_map;
use std::io;
use std::rc::Rc;

use jmespath::ast::Ast;
use jmespath::{Rcvar, Variable};

use super::meter::{scan, Fault, Meter};

/// Bytes of a number's text: with serde_json's `arbitrary_precision` a
/// number is its text, parsed again on every use as a float.
pub(super) fn number_len(v: &Variable) -> usize {
    match v {
        Variable::Number(n) => n.as_str().len(),
        _ => 0,
    }
}

/// The crate's float equality (`jmespath::variable::float_eq`, private
/// there): equal, or within a relative `f64::EPSILON`.
fn float_eq(a: f64, b: f64) -> bool {
    let diff = (a - b).abs();
    if a == b {
        true
    } else if !a.is_normal() || !b.is_normal() {
        diff < (f64::EPSILON * f64::MIN_POSITIVE)
    } else {
        diff / (a.abs() + b.abs()) < f64::EPSILON
    }
}

/// One level of a walk over two containers at once.
enum Pair<'a> {
    Arrays(std::iter::Zip<std::slice::Iter<'a, Rcvar>, std::slice::Iter<'a, Rcvar>>),
    Objects(std::iter::Zip<btree_map::Iter<'a, String, Rcvar>, btree_map::Iter<'a, String, Rcvar>>),
}

/// `a == b` as the crate's `Variable: PartialEq` answers it: types equal,
/// numbers by [`float_eq`] (a number beyond `f64` equals nothing), arrays
/// and objects member by member, where two references to one value are
/// equal without a look (`Rc`'s `PartialEq` for `Eq` types), as they are
/// not at the top (`Variable::compare` compares the values).
pub(super) fn equal(a: &Variable, b: &Variable, m: &mut Meter) -> Result<bool, Fault> {
    let mut stack: Vec<Pair<'_>> = Vec::new();
    if !shallow_equal(a, b, m, &mut stack)? {
        return Ok(false);
    }
    while let Some(top) = stack.last_mut() {
        let next = match top {
            Pair::Arrays(it) => it.next(),
            Pair::Objects(it) => match it.next() {
                Some(((ka, va), (kb, vb))) => {
                    m.work(scan(ka.len().min(kb.len())))?;
                    if ka != kb {
                        return Ok(false);
                    }
                    Some((va, vb))
                }
                None => None,
            },
        };
        match next {
            None => {
                stack.pop();
            }
            Some((x, y)) => {
                if !Rc::ptr_eq(x, y) && !shallow_equal(x, y, m, &mut stack)? {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// Compares two values' types and scalars; for two containers of one
/// length, pushes the walk of their members.
fn shallow_equal<'a>(
    a: &'a Variable,
    b: &'a Variable,
    m: &mut Meter,
    stack: &mut Vec<Pair<'a>>,
) -> Result<bool, Fault> {
    m.work(1)?;
    Ok(match (a, b) {
        (Variable::Null, Variable::Null) => true,
        (Variable::Bool(x), Variable::Bool(y)) => x == y,
        (Variable::String(x), Variable::String(y)) => {
            m.work(scan(x.len().min(y.len())))?;
            x == y
        }
        (Variable::Number(_), Variable::Number(_)) => {
            m.work(scan(number_len(a) + number_len(b)))?;
            match (a.as_number(), b.as_number()) {
                (Some(x), Some(y)) => float_eq(x, y),
                _ => false,
            }
        }
        (Variable::Array(x), Variable::Array(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            stack.push(Pair::Arrays(x.iter().zip(y.iter())));
            true
        }
        (Variable::Object(x), Variable::Object(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            stack.push(Pair::Objects(x.iter().zip(y.iter())));
            true
        }
        (Variable::Expref(x), Variable::Expref(y)) => {
            m.work(nodes(x).saturating_add(nodes(y)))?;
            x == y
        }
        _ => false,
    })
}

/// A value as the crate orders it (`Variable: Ord`): strings by their
/// bytes, numbers as floats (a number beyond `f64`, or two of different
/// types, compare equal). Numbers are read once, not at every comparison.
#[derive(Debug, Clone)]
pub(super) enum Key {
    Str(Rcvar),
    Num(Option<f64>),
    Other,
}

impl Key {
    /// The key of `v` as the crate compares it one pair at a time
    /// (`max_by`, `min_by`), charging the parse of a number.
    pub(super) fn of(v: &Rcvar, m: &mut Meter) -> Result<Key, Fault> {
        Ok(match &**v {
            Variable::Number(_) => {
                m.work(scan(number_len(v)))?;
                Key::Num(v.as_number())
            }
            _ => Key::shallow(v),
        })
    }

    /// The key of `v` for a sort: a number beyond `f64` is an infinity, as
    /// JSON and the JavaScript reference read it. The crate's order, where
    /// such a number equals every other, is no order: its sort panics on
    /// it (`sort` of `[2, 1e400, 1, …]`, Rust's "user-provided comparison
    /// function does not correctly implement a total order"), and a panic
    /// traps the VM.
    pub(super) fn sorting(v: &Rcvar, m: &mut Meter) -> Result<Key, Fault> {
        Ok(match &**v {
            Variable::Number(n) => {
                m.work(scan(number_len(v)))?;
                Key::Num(n.as_str().parse::<f64>().ok().filter(|x| !x.is_nan()))
            }
            _ => Key::shallow(v),
        })
    }

    fn shallow(v: &Rcvar) -> Key {
        match &**v {
            Variable::String(_) => Key::Str(v.clone()),
            _ => Key::Other,
        }
    }

    /// `Variable::cmp`, charging the bytes compared.
    pub(super) fn cmp(&self, other: &Key, m: &mut Meter) -> Result<Ordering, Fault> {
        m.work(1)?;
        Ok(match (self, other) {
            (Key::Str(a), Key::Str(b)) => match (&**a, &**b) {
                (Variable::String(a), Variable::String(b)) => {
                    m.work(scan(a.len().min(b.len())))?;
                    a.cmp(b)
                }
                _ => Ordering::Equal,
            },
            (Key::Num(Some(a)), Key::Num(Some(b))) => a.partial_cmp(b).unwrap_or(Ordering::Less),
            _ => Ordering::Equal,
        })
    }
}

/// A stable sort of `items` by their keys, as `slice::sort_by` would give
/// (a stable sort's order is unique), bottom-up merge sort so that every
/// comparison is charged and the sort stops at the limit: `n⌈log₂ n⌉`
/// comparisons at most, two buffers of `n` (the caller charged both when
/// it charged the keys).
pub(super) fn sort(items: Vec<(Key, Rcvar)>, m: &mut Meter) -> Result<Vec<(Key, Rcvar)>, Fault> {
    let n = items.len();
    let mut src = items;
    let mut dst: Vec<(Key, Rcvar)> = Vec::with_capacity(n);
    let mut width = 1usize;
    while width < n {
        for chunk in src.chunks(width.saturating_mul(2)) {
            let (left, right) = chunk.split_at(width.min(chunk.len()));
            let (mut l, mut r) = (left.iter().peekable(), right.iter().peekable());
            loop {
                let take_right = match (l.peek(), r.peek()) {
                    (Some(a), Some(b)) => b.0.cmp(&a.0, m)? == Ordering::Less,
                    (Some(_), None) => false,
                    (None, Some(_)) => true,
                    (None, None) => break,
                };
                m.work(1)?;
                let next = if take_right { r.next() } else { l.next() };
                if let Some(item) = next {
                    dst.push(item.clone());
                }
            }
        }
        std::mem::swap(&mut src, &mut dst);
        dst.clear();
        width = width.saturating_mul(2);
    }
    Ok(src)
}

/// A writer that only counts, charging the meter as it goes: a unit of
/// work per write and per 4 bytes (escaping a string is most of a walk's
/// cost), and the bytes to memory (what the text will take once written).
/// It fails at the first charge past a limit, which it keeps.
pub(super) struct Metered<'m> {
    pub(super) bytes: u64,
    pub(super) meter: &'m mut Meter,
    pub(super) stopped: Option<Fault>,
}

impl io::Write for Metered<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len() as u64;
        let charged = self
            .meter
            .work(1 + n / 4)
            .and_then(|()| self.meter.memory(n));
        if let Err(fault) = charged {
            self.stopped = Some(fault);
            return Err(io::ErrorKind::WriteZero.into());
        }
        self.bytes = self.bytes.saturating_add(n);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer that fails once it would hold more than `max` bytes.
pub(super) struct Capped {
    pub(super) bytes: Vec<u8>,
    pub(super) max: usize,
}

impl io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.max {
            return Err(io::ErrorKind::WriteZero.into());
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One open container of [`write_json`].
enum Open<'a> {
    Array(std::slice::Iter<'a, Rcvar>, bool),
    Object(btree_map::Iter<'a, String, Rcvar>, bool),
}

/// Writes `v` as compact JSON, byte for byte what `serde_json::to_writer`
/// writes for the crate's `Variable` (objects in key order, numbers as
/// their text, an expression reference as the string of its debug form).
/// Every value makes at least one write, so a writer that stops after `n`
/// writes or bytes bounds the walk however shared the value's parts are.
///
/// One writer type (a trait object) for every caller: serde_json's string
/// escaping is then in the module once.
pub(super) fn write_json(v: &Variable, w: &mut dyn io::Write) -> io::Result<()> {
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut next = Some(v);
    loop {
        if let Some(v) = next.take() {
            match v {
                Variable::Null => w.write_all(b"null")?,
                Variable::Bool(true) => w.write_all(b"true")?,
                Variable::Bool(false) => w.write_all(b"false")?,
                Variable::Number(n) => serde_json::to_writer(&mut *w, n)?,
                Variable::String(s) => serde_json::to_writer(&mut *w, s.as_str())?,
                Variable::Expref(e) => {
                    serde_json::to_writer(&mut *w, &format!("<expression: {e:?}>"))?
                }
                Variable::Array(a) => {
                    w.write_all(b"[")?;
                    stack.push(Open::Array(a.iter(), true));
                }
                Variable::Object(o) => {
                    w.write_all(b"{")?;
                    stack.push(Open::Object(o.iter(), true));
                }
            }
        }
        let Some(top) = stack.last_mut() else {
            return Ok(());
        };
        match top {
            Open::Array(it, first) => match it.next() {
                Some(x) => {
                    if !std::mem::take(first) {
                        w.write_all(b",")?;
                    }
                    next = Some(&**x);
                }
                None => {
                    w.write_all(b"]")?;
                    stack.pop();
                }
            },
            Open::Object(it, first) => match it.next() {
                Some((k, x)) => {
                    if !std::mem::take(first) {
                        w.write_all(b",")?;
                    }
                    serde_json::to_writer(&mut *w, k.as_str())?;
                    w.write_all(b":")?;
                    next = Some(&**x);
                }
                None => {
                    w.write_all(b"}")?;
                    stack.pop();
                }
            },
        }
    }
}

/// Nodes of a syntax tree, counted without recursion: what cloning or
/// comparing it costs.
pub(super) fn nodes(ast: &Ast) -> u64 {
    let mut count = 0u64;
    let mut stack = vec![ast];
    while let Some(a) = stack.pop() {
        count += 1;
        match a {
            Ast::Comparison { lhs, rhs, .. }
            | Ast::Projection { lhs, rhs, .. }
            | Ast::And { lhs, rhs, .. }
            | Ast::Or { lhs, rhs, .. }
            | Ast::Subexpr { lhs, rhs, .. } => {
                stack.push(lhs);
                stack.push(rhs);
            }
            Ast::Condition {
                predicate, then, ..
            } => {
                stack.push(predicate);
                stack.push(then);
            }
            Ast::Expref { ast, .. } => stack.push(ast),
            Ast::Flatten { node, .. } | Ast::Not { node, .. } | Ast::ObjectValues { node, .. } => {
                stack.push(node)
            }
            Ast::Function { args, .. } | Ast::MultiList { elements: args, .. } => {
                stack.extend(args.iter())
            }
            Ast::MultiHash { elements, .. } => stack.extend(elements.iter().map(|kv| &kv.value)),
            Ast::Identity { .. }
            | Ast::Field { .. }
            | Ast::Index { .. }
            | Ast::Slice { .. }
            | Ast::Literal { .. } => {}
        }
    }
    count
}
