//! The built-in functions (JMESPath specification, "Built-in Functions"),
//! metered.
//!
//! Three kinds:
//! - those that apply an expression reference to each element (`map`,
//!   `sort_by`, `max_by`, `min_by`) run here, on the metered evaluator;
//! - those whose work or output the data can make large run here, charged
//!   as they go: `to_string` (its text is counted, within what the budget
//!   has left, before it is written), `sort` (a merge sort that charges
//!   every comparison), `contains` on an array (a deep equality per
//!   element);
//! - the rest are the crate's own, total and linear in their arguments,
//!   called after [`charge`] has charged a bound on what they do and make
//!   (`join`'s output is the sum of its parts, `keys` copies every key).
//!
//! Argument checks and their errors are the crate's (its `Signature`),
//! so an agent sees the same error either way.

use std::cmp::Ordering;
use std::rc::Rc;
use std::sync::LazyLock;

use jmespath::ast::Ast;
use jmespath::functions::{ArgumentType, Function, Signature};
use jmespath::{Context, ErrorReason, Rcvar, Runtime, RuntimeError, Variable};

use super::machine::Eval;
use super::meter::{scan, Fault, ENTRY, SLOT, VALUE};
use super::value::{self, equal, number_len, write_json, Key, Metered};

/// Bytes charged per element a sort holds (its key and the element, in
/// two buffers).
const SORTED: u64 = 6 * SLOT;

/// An argument as evaluated: a value, or an expression reference kept as
/// the tree it names (the crate copies the tree into a value here; the
/// functions that take one need only to run it).
enum Arg<'a> {
    Value(Rcvar),
    Expref(&'a Ast),
}

/// `name(args…)` on `data`: the arguments are evaluated in order, then
/// the function runs.
pub(super) fn call(
    ev: &mut Eval<'_>,
    data: &Rcvar,
    name: &str,
    args: &[Ast],
) -> Result<Rcvar, Fault> {
    let mut values: Vec<Arg<'_>> = Vec::with_capacity(args.len());
    for a in args {
        values.push(match a {
            Ast::Expref { ast, .. } => {
                ev.meter.work(1)?;
                Arg::Expref(ast)
            }
            _ => Arg::Value(ev.eval(data, a)?),
        });
    }
    match name {
        "map" => map(ev, &values),
        "sort_by" => sort_by(ev, &values),
        "max_by" => extreme_by(ev, &values, Ordering::Greater),
        "min_by" => extreme_by(ev, &values, Ordering::Less),
        _ => {
            let mut args = Vec::with_capacity(values.len());
            for v in values {
                args.push(match v {
                    Arg::Value(v) => v,
                    Arg::Expref(ast) => ev.expref(ast)?,
                });
            }
            match name {
                "to_string" => to_string(ev, &args),
                "sort" => sort(ev, &args),
                "contains" if args.first().is_some_and(|a| a.is_array()) => contains(ev, &args),
                _ => builtin(ev, name, &args),
            }
        }
    }
}

fn error(reason: RuntimeError) -> Fault {
    Fault::Error(ErrorReason::Runtime(reason))
}

/// The crate's `Signature` check, its work charged first (a typed array
/// is checked element by element).
fn validate(ev: &mut Eval<'_>, args: &[Rcvar], inputs: Vec<ArgumentType>) -> Result<(), Fault> {
    let n: u64 = args
        .iter()
        .map(|a| a.as_array().map_or(1, |x| x.len() as u64))
        .sum();
    ev.meter.work(n)?;
    Signature::new(inputs, None)
        .validate(args, &ev.ctx)
        .map_err(|e| Fault::Error(e.reason))
}

/// The same check for functions that take an expression reference, which
/// here is no value (the crate's messages, in its order: the count, then
/// each argument).
fn check(args: &[Arg<'_>], inputs: &[ArgumentType]) -> Result<(), Fault> {
    let (expected, actual) = (inputs.len(), args.len());
    if actual < expected {
        return Err(error(RuntimeError::NotEnoughArguments { expected, actual }));
    }
    if actual > expected {
        return Err(error(RuntimeError::TooManyArguments { expected, actual }));
    }
    for (position, (arg, input)) in args.iter().zip(inputs).enumerate() {
        let (valid, actual) = match arg {
            Arg::Value(v) => (input.is_valid(v), v.get_type().to_string()),
            Arg::Expref(_) => (
                matches!(input, ArgumentType::Expref | ArgumentType::Any),
                "expref".to_string(),
            ),
        };
        if !valid {
            return Err(error(RuntimeError::InvalidType {
                expected: input.to_string(),
                actual,
                position,
            }));
        }
    }
    Ok(())
}

/// The array and the expression of a checked `(array, &expr)` call.
fn array_and_expr<'a, 'b>(args: &'b [Arg<'a>]) -> Option<(&'b [Rcvar], &'a Ast)> {
    match args {
        [Arg::Value(v), Arg::Expref(ast)] => Some((v.as_array()?.as_slice(), *ast)),
        _ => None,
    }
}

/// A checked call whose arguments are not what the check let through: no
/// path reaches it.
fn unexpected() -> Fault {
    Fault::Error(ErrorReason::Parse("unexpected arguments".into()))
}

/// `map(&expr, array)`: the expression on each element, nulls kept.
fn map(ev: &mut Eval<'_>, args: &[Arg<'_>]) -> Result<Rcvar, Fault> {
    check(args, &[ArgumentType::Expref, ArgumentType::Array])?;
    let [Arg::Expref(ast), Arg::Value(array)] = args else {
        return Err(unexpected());
    };
    let items = array.as_array().ok_or_else(unexpected)?;
    let mut out = Vec::new();
    for x in items {
        let v = ev.eval(x, ast)?;
        ev.meter.memory(SLOT)?;
        out.push(v);
    }
    ev.made(Variable::Array(out))
}

/// Each element's key by `&expr`: all strings or all numbers (the
/// crate's `InvalidReturnType`, `expected` as each function words it).
fn keys<'a>(
    ev: &mut Eval<'_>,
    items: &'a [Rcvar],
    ast: &Ast,
    first_expected: &str,
    key: fn(&Rcvar, &mut super::meter::Meter) -> Result<Key, Fault>,
) -> Result<Vec<(Key, &'a Rcvar)>, Fault> {
    let mut out = Vec::with_capacity(items.len());
    let mut first: Option<Rcvar> = None;
    for (invocation, item) in items.iter().enumerate() {
        let k = ev.eval(item, ast)?;
        let expected = match &first {
            None if k.is_string() || k.is_number() => {
                first = Some(k.clone());
                None
            }
            None => Some(first_expected.to_string()),
            Some(f) if f.get_type() != k.get_type() => {
                Some(format!("expression->{}", f.get_type()))
            }
            Some(_) => None,
        };
        if let Some(expected) = expected {
            return Err(error(RuntimeError::InvalidReturnType {
                expected,
                actual: k.get_type().to_string(),
                position: 1,
                invocation: invocation.max(1),
            }));
        }
        out.push((key(&k, &mut ev.meter)?, item));
    }
    Ok(out)
}

/// `sort_by(array, &expr)`: stable, by the keys.
fn sort_by(ev: &mut Eval<'_>, args: &[Arg<'_>]) -> Result<Rcvar, Fault> {
    check(args, &[ArgumentType::Array, ArgumentType::Expref])?;
    let (items, ast) = array_and_expr(args).ok_or_else(unexpected)?;
    if items.is_empty() {
        return ev.made(Variable::Array(Vec::new()));
    }
    ev.meter.memory(SORTED.saturating_mul(items.len() as u64))?;
    let keyed = keys(
        ev,
        items,
        ast,
        "expression->string|expression->number",
        Key::sorting,
    )?
    .into_iter()
    .map(|(k, v)| (k, v.clone()))
    .collect();
    let sorted = value::sort(keyed, &mut ev.meter)?;
    ev.array(sorted.into_iter().map(|(_, v)| v))
}

/// `max_by` (`want` Greater) and `min_by` (Less): the first element whose
/// key beats every earlier one.
fn extreme_by(ev: &mut Eval<'_>, args: &[Arg<'_>], want: Ordering) -> Result<Rcvar, Fault> {
    check(args, &[ArgumentType::Array, ArgumentType::Expref])?;
    let (items, ast) = array_and_expr(args).ok_or_else(unexpected)?;
    if items.is_empty() {
        return Ok(ev.null());
    }
    ev.meter.memory(SORTED.saturating_mul(items.len() as u64))?;
    let keyed = keys(
        ev,
        items,
        ast,
        "expression->number|expression->string",
        Key::of,
    )?;
    let mut best: Option<(Key, &Rcvar)> = None;
    for (k, item) in keyed {
        best = Some(match best {
            Some((bk, b)) if k.cmp(&bk, &mut ev.meter)? != want => (bk, b),
            _ => (k, item),
        });
    }
    best.map(|(_, b)| b.clone()).ok_or_else(unexpected)
}

/// `to_string`: a string as it is, anything else its JSON text. The text
/// is counted first, within what the budget has left, then written into
/// a buffer of exactly its size.
fn to_string(ev: &mut Eval<'_>, args: &[Rcvar]) -> Result<Rcvar, Fault> {
    use ArgumentType as T;
    validate(
        ev,
        args,
        vec![T::Union(vec![
            T::Object,
            T::Array,
            T::Bool,
            T::Number,
            T::String,
            T::Null,
        ])],
    )?;
    let [v] = args else {
        return Err(unexpected());
    };
    if v.is_string() {
        return Ok(v.clone());
    }
    // Counted first, charged as it goes (its bytes to memory): the walk
    // stops at the first charge past a limit. The write that follows walks
    // the same way: charged the same work, then done into a buffer of
    // exactly the counted size.
    let before = ev.meter.work;
    let mut counter = Metered {
        bytes: 0,
        meter: &mut ev.meter,
        stopped: None,
    };
    if write_json(v, &mut counter).is_err() {
        return Err(counter.stopped.take().unwrap_or(Fault::Memory));
    }
    let bytes = counter.bytes;
    ev.meter.work(ev.meter.work.saturating_sub(before))?;
    let mut text = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
    write_json(v, &mut text).map_err(|_| Fault::Memory)?;
    let text = String::from_utf8(text).map_err(|_| unexpected())?;
    ev.made(Variable::String(text))
}

/// `sort`: strings or numbers, stable.
fn sort(ev: &mut Eval<'_>, args: &[Rcvar]) -> Result<Rcvar, Fault> {
    use ArgumentType as T;
    validate(
        ev,
        args,
        vec![T::Union(vec![
            T::TypedArray(Box::new(T::String)),
            T::TypedArray(Box::new(T::Number)),
        ])],
    )?;
    let items = args
        .first()
        .and_then(|a| a.as_array())
        .ok_or_else(unexpected)?;
    ev.meter.memory(SORTED.saturating_mul(items.len() as u64))?;
    let mut keyed = Vec::with_capacity(items.len());
    for item in items {
        keyed.push((Key::sorting(item, &mut ev.meter)?, item.clone()));
    }
    let sorted = value::sort(keyed, &mut ev.meter)?;
    ev.array(sorted.into_iter().map(|(_, v)| v))
}

/// `contains(array, value)`: whether an element equals it (the crate's
/// `Vec::contains`: a reference to the same value is equal).
fn contains(ev: &mut Eval<'_>, args: &[Rcvar]) -> Result<Rcvar, Fault> {
    use ArgumentType as T;
    validate(ev, args, vec![T::Union(vec![T::String, T::Array]), T::Any])?;
    let [haystack, needle] = args else {
        return Err(unexpected());
    };
    let items = haystack.as_array().ok_or_else(unexpected)?;
    for x in items {
        if Rc::ptr_eq(x, needle) || equal(x, needle, &mut ev.meter)? {
            return Ok(ev.boolean(true));
        }
    }
    Ok(ev.boolean(false))
}

/// One of the crate's own functions, after [`charge`]. Called by name, not
/// through the crate's `Runtime`, whose builtins include the ones run here
/// and with them the crate's interpreter: the module carries neither.
fn builtin(ev: &mut Eval<'_>, name: &str, args: &[Rcvar]) -> Result<Rcvar, Fault> {
    use jmespath::functions as f;
    let (work, memory) = charge(name, args);
    ev.meter.work(work)?;
    ev.meter.memory(memory)?;
    let ctx = &mut ev.ctx;
    let out = match name {
        "abs" => f::AbsFn::new().evaluate(args, ctx),
        "avg" => f::AvgFn::new().evaluate(args, ctx),
        "ceil" => f::CeilFn::new().evaluate(args, ctx),
        "contains" => f::ContainsFn::new().evaluate(args, ctx),
        "ends_with" => f::EndsWithFn::new().evaluate(args, ctx),
        "floor" => f::FloorFn::new().evaluate(args, ctx),
        "join" => f::JoinFn::new().evaluate(args, ctx),
        "keys" => f::KeysFn::new().evaluate(args, ctx),
        "length" => f::LengthFn::new().evaluate(args, ctx),
        "max" => f::MaxFn::new().evaluate(args, ctx),
        "merge" => f::MergeFn::new().evaluate(args, ctx),
        "min" => f::MinFn::new().evaluate(args, ctx),
        "not_null" => f::NotNullFn::new().evaluate(args, ctx),
        "reverse" => f::ReverseFn::new().evaluate(args, ctx),
        "starts_with" => f::StartsWithFn::new().evaluate(args, ctx),
        "sum" => f::SumFn::new().evaluate(args, ctx),
        "to_array" => f::ToArrayFn::new().evaluate(args, ctx),
        "to_number" => ToNumber.evaluate(args, ctx),
        "type" => f::TypeFn::new().evaluate(args, ctx),
        "values" => f::ValuesFn::new().evaluate(args, ctx),
        _ => return Err(error(RuntimeError::UnknownFunction(name.to_string()))),
    };
    out.map_err(|e| Fault::Error(e.reason))
}

/// A bound on the work and memory of one of the crate's functions on
/// `args` (argument checks included; arguments of the wrong type cost
/// what their check does, then fail).
fn charge(name: &str, args: &[Rcvar]) -> (u64, u64) {
    let array = |i: usize| -> &[Rcvar] {
        args.get(i)
            .and_then(|a| a.as_array())
            .map_or(&[], Vec::as_slice)
    };
    let str_len = |v: &Variable| v.as_string().map_or(0, String::len);
    let first = args.first().map(|a| &**a).unwrap_or(&Variable::Null);
    let n = |items: &[Rcvar]| items.len() as u64;
    let sum = |items: &[Rcvar], f: &dyn Fn(&Variable) -> u64| -> u64 {
        items.iter().map(|x| f(x)).fold(0u64, u64::saturating_add)
    };
    let members = |v: &Variable| {
        v.as_object().map_or((0u64, 0u64), |o| {
            (o.len() as u64, o.keys().map(|k| k.len() as u64).sum())
        })
    };
    match name {
        "abs" | "ceil" | "floor" => (scan(number_len(first)), 2 * VALUE),
        "avg" | "sum" => (sum(array(0), &|x| scan(number_len(x))), 2 * VALUE),
        "contains" | "ends_with" | "starts_with" | "length" => (
            args.iter()
                .map(|a| scan(str_len(a)).saturating_mul(2))
                .sum(),
            VALUE,
        ),
        // The parts are copied, then joined.
        "join" => {
            let items = array(1);
            let out = sum(items, &|x| str_len(x) as u64)
                .saturating_add((str_len(first) as u64).saturating_mul(n(items)));
            (
                n(items).saturating_add(2 * (out / 16)),
                VALUE
                    .saturating_add(out.saturating_mul(2))
                    .saturating_add(24 * n(items)),
            )
        }
        "keys" => {
            let (count, bytes) = members(first);
            (
                count.saturating_add(bytes / 16),
                VALUE
                    .saturating_add(count.saturating_mul(SLOT + VALUE))
                    .saturating_add(bytes),
            )
        }
        // Each comparison parses the best number so far again.
        "max" | "min" => {
            let items = array(0);
            let longest = items.iter().map(|x| number_len(x)).max().unwrap_or(0);
            (
                sum(items, &|x| scan(str_len(x)) + scan(number_len(x)))
                    .saturating_add(n(items).saturating_mul(scan(longest))),
                VALUE,
            )
        }
        "merge" => args.iter().fold((0u64, VALUE), |(w, m), a| {
            let (count, bytes) = members(a);
            (
                w.saturating_add(count).saturating_add(bytes / 16),
                m.saturating_add(count.saturating_mul(ENTRY))
                    .saturating_add(bytes),
            )
        }),
        "not_null" => (n(args), 0),
        "reverse" => match first {
            Variable::String(s) => (
                scan(s.len()).saturating_mul(4),
                VALUE.saturating_add(s.len() as u64),
            ),
            _ => (
                n(array(0)),
                VALUE.saturating_add(SLOT.saturating_mul(n(array(0)))),
            ),
        },
        "to_array" => (1, VALUE + SLOT),
        "to_number" => (scan(str_len(first)), VALUE + str_len(first) as u64),
        "values" => {
            let (count, _) = members(first);
            (count, VALUE.saturating_add(SLOT.saturating_mul(count)))
        }
        _ => (1, 2 * VALUE),
    }
}

/// What a `Context` names as its runtime: the functions are called here by
/// name ([`builtin`]), so it holds none.
pub(super) static NO_FUNCTIONS: LazyLock<Runtime> = LazyLock::new(Runtime::new);

/// The crate's builtins, with `to_number` mended (see the module docs of
/// `query`): what the crate's own interpreter runs, the reference the
/// tests and the fuzz target hold the evaluator to.
#[cfg(any(test, feature = "sim"))]
pub(super) static REFERENCE: LazyLock<Runtime> = LazyLock::new(|| {
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
