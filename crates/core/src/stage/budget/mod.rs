//! The budget stage: the last word on how much of one tool result an agent
//! reads. It runs after every other stage (clean, trim, TOON, the
//! `max_text_bytes` cap) on the result's text items as a whole: items that
//! fit go as they are; the first that does not is cut at a unit boundary
//! ([`units`]); the rest of it, and the text items after it, become pages.
//! One notice (a `content[]` text item of its own, see [`notice`]) says
//! what was shown, what remains and how to get it.
//!
//! A budget counts the text items an agent reads — page and notice — in
//! estimated `o200k_base` tokens ([`estimate`], tuned to over-count
//! slightly) or in bytes. Cutting is lossy by design: the decision record
//! says so (`lossless: false`).

pub mod estimate;
pub mod notice;
pub(crate) mod units;

use std::ops::Range;

use crate::config::Budget;
use crate::stage::clean::TextKind;
pub(crate) use units::{UnitKind, Units};

/// What `text` costs against `budget`.
pub fn measure(text: &str, budget: Budget) -> usize {
    match budget {
        Budget::Tokens(_) => estimate::tokens(text),
        Budget::Bytes(_) => text.len(),
    }
}

fn limit(budget: Budget) -> usize {
    match budget {
        Budget::Tokens(n) | Budget::Bytes(n) => n,
    }
}

/// One text item of a result as the stage sees it: its final text and
/// whether that is a TOON emission.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    pub text: &'a str,
    pub framing: TextKind,
}

/// One page: a run of units of one text item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Position of the item among the result's text items.
    pub item: usize,
    pub units: Range<usize>,
    /// Units of the item in all.
    pub(crate) total: usize,
    pub(crate) kind: UnitKind,
    /// The page's text: a block of the item's form.
    pub text: String,
}

/// How a result is cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Items before this one are shown whole; this one is cut (its first
    /// page is `pages[0]`, possibly with no units: then it is not shown),
    /// and the items after it are not shown.
    pub cut: usize,
    /// `pages[0]` goes out with the result; the others are fetched.
    pub pages: Vec<Page>,
}

/// Why a result could not be cut within its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoPlan {
    /// Everything fits: nothing to cut.
    Fits,
    /// The notice leaves no room for a unit of text on a page.
    TooSmall,
}

/// Whether `items` as a whole are within `budget`: [`plan`] would cut
/// nothing.
pub fn fits(items: &[Item<'_>], budget: Budget) -> bool {
    items.iter().map(|i| measure(i.text, budget)).sum::<usize>() <= limit(budget)
}

/// Cuts `items` so the first page, with a notice costing `notice` (in the
/// budget's unit), stays within `budget`, and so does every later page.
pub fn plan(items: &[Item<'_>], budget: Budget, notice: usize) -> Result<Plan, NoPlan> {
    let cap = limit(budget);
    let costs: Vec<usize> = items.iter().map(|i| measure(i.text, budget)).collect();
    if costs.iter().sum::<usize>() <= cap {
        return Err(NoPlan::Fits);
    }
    let room = cap
        .checked_sub(notice)
        .filter(|r| *r >= 16)
        .ok_or(NoPlan::TooSmall)?;
    // Items shown whole, then the one that does not fit.
    let mut used = 0usize;
    let mut cut = items.len();
    for (i, c) in costs.iter().enumerate() {
        if used + c > room {
            cut = i;
            break;
        }
        used += c;
    }
    let mut pages = Vec::new();
    for (k, item) in items.iter().enumerate().skip(cut) {
        let units = units_for(item, budget, room);
        let costs: Vec<usize> = (0..units.len())
            .map(|i| measure(units.unit(i), budget) + sep_cost(&units, budget))
            .collect();
        let overhead = overhead_cost(&units, budget);
        let mut start = 0usize;
        let mut first = k == cut;
        loop {
            let avail = if first {
                room.saturating_sub(used)
            } else {
                room
            };
            let mut end = start;
            let mut size = overhead;
            while let Some(c) = costs.get(end) {
                if size + c > avail {
                    break;
                }
                size += c;
                end += 1;
            }
            if end == start && !first {
                // A unit that cannot fit a page alone: `units_for` splits
                // text, so only a structured unit larger than a page gets
                // here; it goes alone (the page is over the budget by it).
                end = start + 1;
            }
            if first || end > start {
                pages.push(Page {
                    item: k,
                    units: start..end,
                    total: units.len(),
                    kind: units.kind,
                    text: if end > start {
                        units.render(start..end)
                    } else {
                        String::new()
                    },
                });
            }
            first = false;
            start = end;
            if start >= units.len() {
                break;
            }
        }
    }
    Ok(Plan { cut, pages })
}

/// The units of one item: structured when every unit fits a page with its
/// overhead, else lines short enough for a page.
fn units_for<'a>(item: &Item<'a>, budget: Budget, room: usize) -> Units<'a> {
    if let Some(u) = Units::structured(item.text, item.framing) {
        let overhead = overhead_cost(&u, budget);
        let fits = (0..u.len()).all(|i| overhead + measure(u.unit(i), budget) < room);
        if fits {
            return u;
        }
    }
    // The estimate never exceeds a text's bytes plus one, so a piece of
    // `room - 1` bytes fits a page in tokens as in bytes.
    Units::lines(item.text, room.saturating_sub(1))
}

/// The cost of a page's form without units, with room for the count's
/// digits.
fn overhead_cost(units: &Units<'_>, budget: Budget) -> usize {
    let overhead = units.overhead();
    if overhead.is_empty() {
        return 0;
    }
    let digits = units.len().to_string().len();
    measure(&overhead, budget) + digits
}

fn sep_cost(units: &Units<'_>, budget: Budget) -> usize {
    match (budget, units.separator_bytes()) {
        (_, 0) => 0,
        // A separator merges into its neighbours' punctuation or is one
        // token of its own.
        (Budget::Tokens(_), _) => 1,
        (Budget::Bytes(_), n) => n,
    }
}

#[cfg(test)]
mod tests;
