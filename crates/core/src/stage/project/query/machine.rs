//! One evaluation's state and the values it makes: the [`Meter`] every
//! charge goes to, the crate's context, one `null`, `true` and `false` to
//! share, and the recursion's depth. The interpreter (`eval.rs`) and the
//! functions (`functions.rs`) both work on it; the interpreter's step is a
//! function pointer it holds, so the functions, which the interpreter
//! calls, run an expression reference without naming the interpreter.

use std::rc::Rc;

use jmespath::ast::Ast;
use jmespath::{Context, ErrorReason, Rcvar, Variable};

use super::cost::MAX_AST_DEPTH;
use super::meter::{Fault, Meter, SLOT, VALUE};
use super::value::nodes;

/// How one node of a syntax tree applies to a value.
pub(super) type Step<'q> = fn(&mut Eval<'q>, &Rcvar, &Ast) -> Result<Rcvar, Fault>;

/// Bytes charged per node of a syntax tree an expression reference copies.
const AST_NODE: u64 = 64;

/// One evaluation of a query on one value.
pub(super) struct Eval<'q> {
    pub(super) meter: Meter,
    /// What the crate's own functions are called with.
    pub(super) ctx: Context<'q>,
    depth: usize,
    /// The interpreter's step (`eval.rs`): how one node applies to a
    /// value. Held here so that the functions that run an expression
    /// reference (`map`, `sort_by`, …) reach it through the evaluation they
    /// are given, without naming the interpreter that calls them.
    step: Step<'q>,
    /// One `null`, `true` and `false` for every answer that is one: the
    /// crate makes a new one each time; values are immutable, so sharing
    /// them changes no answer and costs no memory.
    null: Rcvar,
    yes: Rcvar,
    no: Rcvar,
}

impl<'q> Eval<'q> {
    pub(super) fn new(meter: Meter, ctx: Context<'q>, step: Step<'q>) -> Self {
        Self {
            meter,
            ctx,
            depth: 0,
            step,
            null: Rc::new(Variable::Null),
            yes: Rc::new(Variable::Bool(true)),
            no: Rc::new(Variable::Bool(false)),
        }
    }

    pub(super) fn null(&self) -> Rcvar {
        self.null.clone()
    }

    pub(super) fn boolean(&self, b: bool) -> Rcvar {
        if b {
            self.yes.clone()
        } else {
            self.no.clone()
        }
    }

    /// A new value whose parts were already charged: charges the value
    /// itself, then makes it.
    pub(super) fn made(&mut self, v: Variable) -> Result<Rcvar, Fault> {
        self.meter.memory(VALUE)?;
        Ok(Rc::new(v))
    }

    /// An array of `items`, charged before it is collected.
    pub(super) fn array(
        &mut self,
        items: impl ExactSizeIterator<Item = Rcvar>,
    ) -> Result<Rcvar, Fault> {
        let n = items.len() as u64;
        self.meter.work(n)?;
        self.meter.memory(SLOT.saturating_mul(n))?;
        let items: Vec<Rcvar> = items.collect();
        self.made(Variable::Array(items))
    }

    /// `&expr` as a value (the crate's `Variable::Expref`, a copy of the
    /// tree), for a function that takes any value or a query that returns
    /// one.
    pub(super) fn expref(&mut self, ast: &Ast) -> Result<Rcvar, Fault> {
        let n = nodes(ast);
        self.meter.work(n)?;
        self.meter.memory(AST_NODE.saturating_mul(n))?;
        self.made(Variable::Expref(ast.clone()))
    }

    /// `node` applied to `data`.
    pub(super) fn eval(&mut self, data: &Rcvar, node: &Ast) -> Result<Rcvar, Fault> {
        self.meter.work(1)?;
        // The tree's depth was bounded at parse; an expression reference
        // runs a subtree of it. This is a guard, not a limit anyone meets.
        if self.depth > MAX_AST_DEPTH + 8 {
            return Err(Fault::Error(ErrorReason::Parse("nested too deeply".into())));
        }
        self.depth += 1;
        let out = (self.step)(self, data, node);
        self.depth -= 1;
        out
    }
}
