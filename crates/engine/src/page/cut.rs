//! A result over its budget: the plan of the budget stage, the handles of
//! its pages, the pages kept in the store, and the notice of page 1. The
//! same steps rebuild any page from the result when the tool is called
//! again ([`page_of`]): for the same result and configuration they give the
//! same pages, which the digest proves.

use sha2::{Digest, Sha256};

use super::handle::{Handle, SealedCall, NOT_STORED};
use super::keys::{self, Derived};
use super::owner::Owner;
use super::store::{Kept, NotKept, Store};
use super::tools;
use crate::config::{Budget, PagingSettings, Policy, ReissuePolicy};
use crate::report::Figures;
use crate::shared::Services;
use crate::stage::budget::{self, notice, Item, NoPlan, Plan};
use crate::stage::clean::TextKind;

/// The call whose result is cut.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallInfo<'a> {
    pub(crate) tool: Option<&'a str>,
    /// `params.arguments` as sent (raw JSON).
    pub(crate) arguments: Option<&'a str>,
    /// Whom the result was cut for: its pages are bound to them.
    pub(crate) owner: &'a Owner,
    /// The server whose listings say whether the tool is safe to call
    /// again ([`tools`]).
    pub(crate) cluster: Option<&'a str>,
    /// An LLM trimmed a block: calling the tool again would not give the
    /// same pages.
    pub(crate) trimmed: bool,
}

/// What became of a result over its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cut {
    pub(crate) plan: Plan,
    /// The notice item that follows the result.
    pub(crate) notice: String,
    /// Pages 2.. can be fetched.
    pub(crate) paged: bool,
    /// Why the pages were not kept in this gateway's store, if they were
    /// not (`None`: kept, or a single page).
    pub(crate) not_kept: Option<NotKept>,
    pub(crate) figures: Option<Figures>,
}

/// The digest of a cut result: its budget and final texts.
pub(crate) fn digest(items: &[Item<'_>], budget: Budget) -> [u8; 12] {
    let mut h = Sha256::new();
    h.update(b"mcp-toon/pages/1\0");
    h.update(budget.describe().as_bytes());
    for item in items {
        h.update((item.text.len() as u64).to_le_bytes());
        h.update([u8::from(matches!(item.framing, TextKind::Toon(_)))]);
        h.update(item.text.as_bytes());
    }
    let d = h.finalize();
    let mut out = [0u8; 12];
    out.copy_from_slice(d.get(..12).unwrap_or(&[0; 12]));
    out
}

fn now_s<H: Services + ?Sized>(host: &H) -> u32 {
    u32::try_from(host.now_ms() / 1000).unwrap_or(u32::MAX)
}

/// The notice allowance of every page: the longest notice this result can
/// have, with a handle of the length its handles have.
fn reserve(items: &[Item<'_>], budget: Budget, tool: &str, handle_len: Option<usize>) -> usize {
    let most = items.iter().map(|i| i.text.len()).sum::<usize>();
    let placeholder = "A".repeat(handle_len.unwrap_or(0));
    let next = match handle_len {
        Some(_) => notice::Next::Handle {
            tool,
            handle: &placeholder,
        },
        None => notice::Next::Gone,
    };
    budget::measure(&notice::longest(budget, most, next), budget)
}

/// Cuts `items` (the text items of one result, `indexes` their places in
/// `content[]`) to `policy`'s budget. `None` when there is no budget or the
/// result fits (or the budget cannot hold a notice: then it passes whole).
pub(crate) fn cut<H: Services + ?Sized>(
    items: &[Item<'_>],
    indexes: &[usize],
    policy: &Policy,
    paging: &PagingSettings,
    call: &CallInfo<'_>,
    host: &mut H,
) -> Result<Cut, NoPlan> {
    let budget = policy.budget.ok_or(NoPlan::Fits)?;
    let index = |i: usize| indexes.get(i).copied().unwrap_or(i);
    let mut id = [0u8; 16];
    let can_page = policy.paging && host.random(&mut id);
    let now = now_s(host);
    let expires_s = now.saturating_add(u32::try_from(paging.ttl_s).unwrap_or(u32::MAX));
    let reissue = !call.trimmed
        && match policy.reissue {
            ReissuePolicy::Always => true,
            ReissuePolicy::Never => false,
            ReissuePolicy::Auto => call
                .tool
                .and_then(|t| tools::known_safe(host, call.cluster.unwrap_or(""), t))
                .unwrap_or(false),
        };
    // The sealing key, and the owner's binding under it (checked by any
    // gateway with the key) and under the local key (checked by this one).
    let sealing: Option<Derived> = paging.keys.first().map(|k| Derived::of(k));
    let seal = sealing.as_ref().map(|d| &d.handle);
    let handle_binding = sealing
        .as_ref()
        .map_or([0; 8], |d| call.owner.binding(&d.owner));
    let signed_call = |digest: [u8; 12]| {
        call.tool.map(|tool| SealedCall {
            expires_s,
            digest,
            binding: handle_binding,
            reissue,
            budget,
            tool: tool.to_string(),
            arguments: call.arguments.unwrap_or("").to_string(),
        })
    };
    let template = Handle {
        id,
        page: 2,
        pages: 2,
        first_slot: 0,
        call: signed_call([0; 12]),
    };
    let handle_len = can_page.then(|| template.encoded_len(seal.is_some()));
    let plan = match budget::plan(
        items,
        budget,
        reserve(items, budget, &paging.tool_name, handle_len),
    ) {
        Err(NoPlan::TooSmall) if handle_len.is_some() => {
            // The handle does not leave room for data: cut without pages.
            let plan = budget::plan(items, budget, reserve(items, budget, "", None))?;
            let notice = notice::first(&plan, budget, &index, notice::Next::Gone);
            return Ok(Cut {
                plan,
                notice,
                paged: false,
                not_kept: None,
                figures: None,
            });
        }
        other => other?,
    };
    let pages = plan.pages.len();
    let signed = seal.is_some() && template.call.as_ref().is_some_and(SealedCall::fits);
    if !can_page || pages < 2 {
        let notice = notice::first(&plan, budget, &index, notice::Next::Gone);
        return Ok(Cut {
            plan,
            notice,
            paged: false,
            not_kept: None,
            figures: None,
        });
    }
    let digest = digest(items, budget);
    let handle = |page: usize, first_slot: u32| Handle {
        id,
        page: u32::try_from(page).unwrap_or(u32::MAX),
        pages: u32::try_from(pages).unwrap_or(u32::MAX),
        first_slot,
        call: signed_call(digest),
    };
    let local = if paging.store_bytes == 0 {
        None
    } else {
        keys::local(host)
    };
    let store_binding = local.map_or([0; 8], |k| call.owner.binding(&k));
    let kept = |first_slot: u32| -> Vec<Kept> {
        plan.pages
            .iter()
            .enumerate()
            .skip(1)
            .map(|(k, p)| {
                let number = k + 1;
                let next = (number < pages).then(|| handle(number + 1, first_slot).encode(seal));
                Kept {
                    id,
                    page: u32::try_from(number).unwrap_or(u32::MAX),
                    expires_s,
                    binding: store_binding,
                    tool: call.tool.unwrap_or("").to_string(),
                    text: p.text.clone(),
                    notice: notice::page(
                        p,
                        index(p.item),
                        number,
                        pages,
                        next.as_deref().map(|h| notice::Next::Handle {
                            tool: &paging.tool_name,
                            handle: h,
                        }),
                    ),
                }
            })
            .collect()
    };
    // Handles are of one length whatever the slot: the pages' sizes are
    // known before the store says where they go.
    let (first_slot, not_kept, figures) = if paging.store_bytes == 0 {
        (NOT_STORED, Some(NotKept::TooLarge), None)
    } else if local.is_none() {
        // No shared data or randomness: no key to bind stored pages with.
        (NOT_STORED, Some(NotKept::Unavailable), None)
    } else {
        let sizes: Vec<usize> = kept(0).iter().map(Kept::size).collect();
        let mut store = Store::for_paging(host, paging);
        match store.reserve(store_binding, &sizes, expires_s, now) {
            Ok((first, figures)) => match store.write(first, &kept(first)) {
                Ok(()) => (first, None, Some(figures)),
                Err(e) => (NOT_STORED, Some(e), None),
            },
            Err(e) => (NOT_STORED, Some(e), None),
        }
    };
    if first_slot == NOT_STORED && !signed {
        // Neither kept nor fetchable elsewhere.
        let notice = notice::first(&plan, budget, &index, notice::Next::Gone);
        return Ok(Cut {
            plan,
            notice,
            paged: false,
            not_kept,
            figures,
        });
    }
    let next = handle(2, first_slot).encode(seal);
    let notice = notice::first(
        &plan,
        budget,
        &index,
        notice::Next::Handle {
            tool: &paging.tool_name,
            handle: &next,
        },
    );
    Ok(Cut {
        plan,
        notice,
        paged: true,
        not_kept,
        figures,
    })
}

/// Why a page could not be rebuilt from a fresh result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rebuilt {
    /// The result differs from the one that was cut.
    Changed,
}

/// Page `handle.page` of `items` (a fresh result of the handle's call),
/// with its notice, as the gateway that cut the result made it; the next
/// handle sealed with this gateway's sealing key.
pub(crate) fn page_of(
    items: &[Item<'_>],
    indexes: &[usize],
    handle: &Handle,
    paging: &PagingSettings,
) -> Result<(String, String), Rebuilt> {
    let sealing: Option<Derived> = paging.keys.first().map(|k| Derived::of(k));
    let seal = sealing.as_ref().map(|d| &d.handle);
    let call = handle.call.as_ref().ok_or(Rebuilt::Changed)?;
    if digest(items, call.budget) != call.digest {
        return Err(Rebuilt::Changed);
    }
    let handle_len = handle.encoded_len(seal.is_some());
    let plan = budget::plan(
        items,
        call.budget,
        reserve(items, call.budget, &paging.tool_name, Some(handle_len)),
    )
    .map_err(|_| Rebuilt::Changed)?;
    let pages = plan.pages.len();
    if u32::try_from(pages).ok() != Some(handle.pages) {
        return Err(Rebuilt::Changed);
    }
    let number = usize::try_from(handle.page).map_err(|_| Rebuilt::Changed)?;
    let p = number
        .checked_sub(1)
        .and_then(|n| plan.pages.get(n))
        .ok_or(Rebuilt::Changed)?;
    let next = handle.next().map(|h| h.encode(seal));
    let notice = notice::page(
        p,
        indexes.get(p.item).copied().unwrap_or(p.item),
        number,
        pages,
        next.as_deref().map(|h| notice::Next::Handle {
            tool: &paging.tool_name,
            handle: h,
        }),
    );
    Ok((p.text.clone(), notice))
}

#[cfg(test)]
mod tests;
