//! The notice that follows a cut result and every page: one `content[]`
//! text item of its own, after the result's items.
//!
//! Why an item of its own and not a line in the block: the block stays what
//! its form promises — TOON that decodes, JSON that parses, text that
//! concatenates byte for byte with the next page — so an agent (or a client
//! that parses results) never has to strip a line before decoding. Clients
//! show every text item in order, so the agent reads the notice right
//! after the data. The wording is the contract README quotes.

use std::fmt::Write as _;

use super::{Page, Plan, UnitKind};
use crate::config::Budget;

/// Every notice starts with this.
pub const PREFIX: &str = "[mcp-toon]";

/// How the rest can be fetched.
#[derive(Debug, Clone, Copy)]
pub enum Next<'a> {
    /// Call `tool` with `{"handle": handle}`.
    Handle { tool: &'a str, handle: &'a str },
    /// The rest is not kept.
    Gone,
}

fn range(out: &mut String, kind: UnitKind, units: &std::ops::Range<usize>, total: usize) {
    let _ = write!(
        out,
        "{} {}-{} of {}",
        kind.name(),
        units.start + 1,
        units.end,
        total
    );
}

fn next(out: &mut String, next: Next<'_>) {
    match next {
        Next::Handle { tool, handle } => {
            let _ = write!(
                out,
                " For the next page, call the tool \"{tool}\" with {{\"handle\":\"{handle}\"}}."
            );
        }
        Next::Gone => out.push_str(
            " They are not kept: to see them, call the tool again with narrower arguments (a filter, a smaller limit).",
        ),
    }
}

/// The notice after a cut result. `index` maps a text item's position to
/// its index in `content[]`.
pub fn first(
    plan: &Plan,
    budget: Budget,
    index: &dyn Fn(usize) -> usize,
    more: Next<'_>,
) -> String {
    let mut out = String::with_capacity(256);
    let _ = write!(out, "{PREFIX} Result cut to fit {}.", budget.describe());
    let later = plan.pages.len().saturating_sub(1);
    if let Some(p) = plan.pages.first() {
        if p.units.is_empty() {
            let _ = write!(out, " content[{}] not shown.", index(p.item));
        } else {
            out.push_str(" Shown: ");
            range(&mut out, p.kind, &p.units, p.total);
            let _ = write!(out, " of content[{}].", index(p.item));
        }
        // A set: a result of very many items, each a page of its own,
        // would cost the square of their number with a list (issue 13).
        let items_after = plan
            .pages
            .iter()
            .map(|q| q.item)
            .filter(|&i| i != p.item)
            .collect::<std::collections::HashSet<usize>>()
            .len();
        let rest = p.total.saturating_sub(p.units.end);
        let _ = write!(out, " Not shown: {rest} {}", p.kind.name());
        if items_after > 0 {
            let _ = write!(out, " and {items_after} more text items");
        }
        match more {
            Next::Handle { .. } => {
                let _ = write!(out, ", in {later} more pages.");
            }
            Next::Gone => out.push('.'),
        }
    }
    next(&mut out, more);
    out
}

/// The notice after page `number` (1-based, the first page being the cut
/// result) of `pages`.
pub fn page(p: &Page, index: usize, number: usize, pages: usize, more: Option<Next<'_>>) -> String {
    let mut out = String::with_capacity(192);
    let _ = write!(out, "{PREFIX} Page {number} of {pages}: ");
    range(&mut out, p.kind, &p.units, p.total);
    let _ = write!(out, " of content[{index}] of the original result.");
    match more {
        Some(n) => next(&mut out, n),
        None => out.push_str(" This is the last page."),
    }
    out
}

/// The text of a tool error from the page tool.
pub fn refused(why: &str) -> String {
    format!(
        "{PREFIX} {why} Call the original tool again with narrower arguments (a filter, a smaller limit) to get a result that fits."
    )
}

/// A notice at least as long as any [`first`] or [`page`] notice of a
/// result with at most `max` units and items (every number spelt with as
/// many digits as `max`): what a page must leave room for.
pub fn longest(budget: Budget, max: usize, more: Next<'_>) -> String {
    let n = max.max(10);
    let mut out = String::with_capacity(320);
    let _ = write!(
        out,
        "{PREFIX} Result cut to fit {}. Shown: members {n}-{n} of {n} of content[{n}]. Not shown: {n} members and {n} more text items, in {n} more pages.",
        budget.describe()
    );
    next(&mut out, more);
    out
}
