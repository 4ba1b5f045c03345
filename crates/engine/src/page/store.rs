//! Pages kept in the gateway: proxy-wasm shared data, one space for every
//! worker of one Envoy (same `vm_id`).
//!
//! Proxy-wasm ABI 0.2.1 cannot delete a shared-data key, only overwrite it,
//! so pages live in a fixed ring of `store_pages` keys
//! (`mcp_toon.page.<n>`); emptying a key gives its memory back. One more
//! key, the index, records each slot's size, expiry and owner, the ring's
//! head and the bytes held; every writer updates it with compare-and-swap,
//! so workers never reserve the same slot. A reader checks the slot's own
//! header (result id, page, expiry, binding), so an evicted or reused slot
//! is never served as another result's page.
//!
//! **Owners and quotas.** A page's owner is the binding it is stored under
//! (an opaque 8-byte key: who the result was cut for). One owner's cuts
//! must not flush everyone else's pages, so a cut makes room in this order:
//! 1. expired pages are emptied;
//! 2. the owner's own oldest pages go while it would hold more than its
//!    quota (`paging.owner_pages`, `paging.owner_bytes`);
//! 3. its pages take the first run of consecutive free slots from the
//!    ring's head (a handle finds page `n` at `first + n - 2`); where there
//!    is none, the first run whose pages are the owner's own or belong to
//!    owners holding more than their fair share (the store divided evenly
//!    among the owners holding pages and this one), taking from each no
//!    more than it holds past that share;
//! 4. while the bytes held would pass `store_bytes`, its own oldest pages
//!    go, then the oldest of owners past their fair share, as above.
//!
//! Where that leaves no room, the cut's pages are not kept (the budget
//! stage counts `page_not_kept`): a page of an owner within its fair share
//! is never evicted. Every eviction is counted (`mcp_toon_page_evicted`;
//! those of another owner past its share also
//! `mcp_toon_page_evicted_over_share`).
//!
//! Known limit: two workers creating the index at the same instant (the
//! host has no create-if-absent) may each start from an empty index; the
//! later one wins, and the pages the earlier one wrote are served until a
//! later write reuses their slots, whose bytes it did not count.

use crate::config::PagingSettings;
use crate::report::Figures;
use crate::shared::{Services, Unstored};

const INDEX: &str = "mcp_toon.page.index";
/// Version 2: each slot records its owner (an index of version 1 reads as
/// none, and is started afresh).
const INDEX_MAGIC: &[u8; 4] = b"MTI2";
const SLOT_MAGIC: &[u8; 4] = b"MTP1";
/// Bytes of one slot's entry in the index: size, expiry, owner.
const ENTRY: usize = 16;
/// Compare-and-swap attempts before a write gives up.
const ATTEMPTS: usize = 16;

fn slot_key(slot: usize) -> String {
    format!("mcp_toon.page.{slot}")
}

/// Why pages were not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotKept {
    /// More pages or bytes than the whole store, or one owner's quota,
    /// holds; or no store.
    TooLarge,
    /// No room without evicting a page of another owner within its fair
    /// share.
    Full,
    /// The host has no shared data, or writes kept conflicting.
    Unavailable,
}

/// Why a page could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The slot holds another page (evicted and reused) or nothing.
    Unknown,
    Expired,
    /// The page belongs to another session or route.
    Foreign,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    size: u32,
    expires_s: u32,
    owner: [u8; 8],
}

/// What one owner holds.
#[derive(Debug, Clone, Copy, Default)]
struct Holding {
    pages: usize,
    bytes: u64,
}

#[derive(Debug, Clone)]
struct Index {
    head: u32,
    used: u64,
    slots: Vec<Slot>,
}

impl Index {
    fn new(slots: usize) -> Self {
        Index {
            head: 0,
            used: 0,
            slots: vec![Slot::default(); slots],
        }
    }

    fn parse(bytes: &[u8], slots: usize) -> Option<Self> {
        let magic = bytes.get(..4)?;
        if magic != INDEX_MAGIC {
            return None;
        }
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        };
        let count = usize::try_from(u32_at(4)?).ok()?;
        if count != slots || bytes.len() != 20 + ENTRY * count {
            return None;
        }
        let head = u32_at(8)?;
        let used = u64::from_le_bytes(bytes.get(12..20)?.try_into().ok()?);
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let at = 20 + ENTRY * i;
            out.push(Slot {
                size: u32_at(at)?,
                expires_s: u32_at(at + 4)?,
                owner: bytes.get(at + 8..at + 16)?.try_into().ok()?,
            });
        }
        Some(Index {
            head,
            used,
            slots: out,
        })
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20 + ENTRY * self.slots.len());
        out.extend_from_slice(INDEX_MAGIC);
        out.extend_from_slice(&u32::try_from(self.slots.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.head.to_le_bytes());
        out.extend_from_slice(&self.used.to_le_bytes());
        for s in &self.slots {
            out.extend_from_slice(&s.size.to_le_bytes());
            out.extend_from_slice(&s.expires_s.to_le_bytes());
            out.extend_from_slice(&s.owner);
        }
        out
    }

    /// Empties slot `i` in the index; returns whether it held a page.
    fn clear(&mut self, i: usize) -> bool {
        match self.slots.get_mut(i) {
            Some(s) if s.size > 0 => {
                self.used = self.used.saturating_sub(u64::from(s.size));
                *s = Slot::default();
                true
            }
            _ => false,
        }
    }

    /// Empties every expired slot; returns them.
    fn sweep(&mut self, now_s: u32) -> Vec<usize> {
        let expired: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.size > 0 && s.expires_s <= now_s)
            .map(|(i, _)| i)
            .collect();
        for &i in &expired {
            self.clear(i);
        }
        expired
    }

    fn figures(&self) -> Figures {
        Figures {
            bytes: self.used,
            pages: self.slots.iter().filter(|s| s.size > 0).count() as u64,
            ..Figures::default()
        }
    }

    /// What each owner holds, sorted by owner (found by binary search: no
    /// hash map's code in the module for this, and the one integer sort
    /// [`Index::oldest`] uses).
    fn holdings(&self) -> Holdings {
        let occupied = || self.slots.iter().filter(|s| s.size > 0);
        let mut owners: Vec<u64> = occupied().map(|s| u64::from_le_bytes(s.owner)).collect();
        owners.sort_unstable();
        owners.dedup();
        let mut held = vec![Holding::default(); owners.len()];
        for s in occupied() {
            let at = owners.binary_search(&u64::from_le_bytes(s.owner)).ok();
            if let Some(h) = at.and_then(|at| held.get_mut(at)) {
                h.pages += 1;
                h.bytes += u64::from(s.size);
            }
        }
        Holdings { owners, held }
    }

    /// Slots in ring order from the head: the oldest first.
    fn ring(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.slots.len().max(1);
        let head = usize::try_from(self.head).unwrap_or(0) % n;
        (0..self.slots.len()).map(move |j| (head + j) % n)
    }

    /// Slots holding a page that `pick` accepts, oldest first: by expiry
    /// (every page lives `ttl_s`), then by place in the ring.
    fn oldest(&self, pick: impl Fn(&Slot) -> bool) -> Vec<usize> {
        let n = self.slots.len().max(1);
        let head = usize::try_from(self.head).unwrap_or(0) % n;
        // Expiry, then place from the head, in one word (a ring has at most
        // 65,536 slots): one sort of integers.
        let mut found: Vec<u64> = self
            .ring()
            .enumerate()
            .filter_map(|(age, i)| {
                let s = self.slots.get(i)?;
                (s.size > 0 && pick(s)).then_some(u64::from(s.expires_s) << 32 | age as u64)
            })
            .collect();
        found.sort_unstable();
        found
            .into_iter()
            .map(|key| (head + (key & 0xffff_ffff) as usize) % n)
            .collect()
    }
}

/// What each owner holds: owners (as integers) sorted, and their holdings.
struct Holdings {
    owners: Vec<u64>,
    held: Vec<Holding>,
}

impl Holdings {
    fn get(&self, owner: &[u8; 8]) -> Option<Holding> {
        let i = self
            .owners
            .binary_search(&u64::from_le_bytes(*owner))
            .ok()?;
        self.held.get(i).copied()
    }

    fn get_mut(&mut self, owner: &[u8; 8]) -> Option<&mut Holding> {
        let i = self
            .owners
            .binary_search(&u64::from_le_bytes(*owner))
            .ok()?;
        self.held.get_mut(i)
    }

    /// Owners other than `owner` holding a page.
    fn others(&self, owner: &[u8; 8]) -> usize {
        let me = u64::from_le_bytes(*owner);
        self.owners
            .iter()
            .zip(&self.held)
            .filter(|(o, h)| h.pages > 0 && **o != me)
            .count()
    }
}

/// A cut's room being made: the index, what each owner holds, and the
/// fair share of each.
struct Room<'a> {
    index: &'a mut Index,
    owner: [u8; 8],
    holdings: Holdings,
    max_bytes: u64,
    evicted: u64,
    over_share: u64,
    freed: Vec<usize>,
}

impl Room<'_> {
    /// The fair share of each owner: the store divided evenly among the
    /// owners holding pages, this cut's owner counted too.
    fn fair(&self) -> (usize, u64) {
        let owners = self.holdings.others(&self.owner) + 1;
        (
            self.index.slots.len() / owners,
            self.max_bytes / owners as u64,
        )
    }

    /// Whether `owner` may lose `pages` pages of `bytes` bytes: it is this
    /// cut's owner, or holds more than its fair share and would not drop
    /// below it.
    fn may_take(&self, owner: &[u8; 8], pages: usize, bytes: u64) -> bool {
        if *owner == self.owner {
            return true;
        }
        let (fair_pages, fair_bytes) = self.fair();
        let h = self.holdings.get(owner).unwrap_or_default();
        h.pages.saturating_sub(pages) >= fair_pages && h.pages > fair_pages
            || h.bytes.saturating_sub(bytes) >= fair_bytes && h.bytes > fair_bytes
    }

    /// Empties slot `i`, counting the eviction.
    fn evict(&mut self, i: usize) {
        let Some(s) = self.index.slots.get(i).copied() else {
            return;
        };
        if self.index.clear(i) {
            self.evicted += 1;
            if s.owner != self.owner {
                self.over_share += 1;
            }
            if let Some(h) = self.holdings.get_mut(&s.owner) {
                h.pages = h.pages.saturating_sub(1);
                h.bytes = h.bytes.saturating_sub(u64::from(s.size));
            }
            self.freed.push(i);
        }
    }

    /// The owner's own oldest pages go while `over` says it holds too much.
    fn evict_own_while(&mut self, over: impl Fn(&Self) -> bool) {
        let owner = self.owner;
        for i in self.index.oldest(|s| s.owner == owner) {
            if !over(self) {
                return;
            }
            self.evict(i);
        }
    }

    /// The first run of `k` consecutive slots from the ring's head that is
    /// free, or else whose pages may all be taken ([`Room::may_take`]).
    fn run(&self, k: usize) -> Option<usize> {
        let n = self.index.slots.len();
        if k == 0 || k > n {
            return None;
        }
        let ring: Vec<usize> = self.index.ring().collect();
        let at = |p: usize| ring.get(p % n).copied().unwrap_or(0);
        // Free slots only.
        let mut busy = 0usize;
        for p in 0..n + k - 1 {
            if self.index.slots.get(at(p)).is_some_and(|s| s.size > 0) {
                busy += 1;
            }
            if p >= k && self.index.slots.get(at(p - k)).is_some_and(|s| s.size > 0) {
                busy -= 1;
            }
            if p + 1 >= k && busy == 0 {
                return Some(at(p + 1 - k));
            }
        }
        // Slots whose pages may be taken: per owner, what the window would
        // take from it, and how many owners could not lose that much.
        // A window's owners are few: a short list, searched.
        let mut taken: Vec<([u8; 8], (usize, u64))> = Vec::new();
        let mut blocked = 0usize;
        let step = |taken: &mut Vec<([u8; 8], (usize, u64))>, i: usize, add: bool| {
            let Some(s) = self.index.slots.get(i).filter(|s| s.size > 0) else {
                return 0isize;
            };
            if s.owner == self.owner {
                return 0;
            }
            let at = match taken.iter().position(|(o, _)| *o == s.owner) {
                Some(at) => at,
                None => {
                    taken.push((s.owner, (0, 0)));
                    taken.len() - 1
                }
            };
            let Some((_, t)) = taken.get_mut(at) else {
                return 0;
            };
            let before = t.0 > 0 && !self.may_take(&s.owner, t.0, t.1);
            if add {
                t.0 += 1;
                t.1 += u64::from(s.size);
            } else {
                t.0 -= 1;
                t.1 -= u64::from(s.size);
            }
            let after = t.0 > 0 && !self.may_take(&s.owner, t.0, t.1);
            isize::from(after) - isize::from(before)
        };
        for p in 0..n + k - 1 {
            blocked = blocked.saturating_add_signed(step(&mut taken, at(p), true));
            if p >= k {
                blocked = blocked.saturating_add_signed(step(&mut taken, at(p - k), false));
            }
            if p + 1 >= k && blocked == 0 {
                return Some(at(p + 1 - k));
            }
        }
        None
    }
}
/// The store as one stream sees it.
pub(crate) struct Store<'h, H: Services + ?Sized> {
    host: &'h mut H,
    slots: usize,
    max_bytes: u64,
    /// Most pages and bytes one owner holds.
    owner_pages: usize,
    owner_bytes: u64,
}

/// One page as kept: its header and the two texts a page call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    pub(crate) id: [u8; 16],
    pub(crate) page: u32,
    pub(crate) expires_s: u32,
    pub(crate) binding: [u8; 8],
    /// The tool whose result this is (for the decision record).
    pub(crate) tool: String,
    pub(crate) text: String,
    pub(crate) notice: String,
}

impl Kept {
    /// Bytes the page takes in its slot.
    pub(crate) fn size(&self) -> usize {
        42 + self.tool.len() + self.text.len() + self.notice.len()
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size());
        out.extend_from_slice(SLOT_MAGIC);
        out.extend_from_slice(&self.id);
        out.extend_from_slice(&self.page.to_le_bytes());
        out.extend_from_slice(&self.expires_s.to_le_bytes());
        out.extend_from_slice(&self.binding);
        let tool = self.tool.get(..self.tool.len().min(1024)).unwrap_or("");
        out.extend_from_slice(&u16::try_from(tool.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(tool.as_bytes());
        out.extend_from_slice(&u32::try_from(self.text.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(self.text.as_bytes());
        out.extend_from_slice(self.notice.as_bytes());
        out
    }

    fn parse(bytes: &[u8]) -> Option<Kept> {
        if bytes.get(..4)? != SLOT_MAGIC {
            return None;
        }
        let id: [u8; 16] = bytes.get(4..20)?.try_into().ok()?;
        let page = u32::from_le_bytes(bytes.get(20..24)?.try_into().ok()?);
        let expires_s = u32::from_le_bytes(bytes.get(24..28)?.try_into().ok()?);
        let binding: [u8; 8] = bytes.get(28..36)?.try_into().ok()?;
        let tool_len = usize::from(u16::from_le_bytes(bytes.get(36..38)?.try_into().ok()?));
        let tool = std::str::from_utf8(bytes.get(38..38 + tool_len)?).ok()?;
        let at = 38 + tool_len;
        let len =
            usize::try_from(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?)).ok()?;
        let text = std::str::from_utf8(bytes.get(at + 4..(at + 4).checked_add(len)?)?).ok()?;
        let notice = std::str::from_utf8(bytes.get(at + 4 + len..)?).ok()?;
        Some(Kept {
            id,
            page,
            expires_s,
            binding,
            tool: tool.to_string(),
            text: text.to_string(),
            notice: notice.to_string(),
        })
    }
}

impl<'h, H: Services + ?Sized> Store<'h, H> {
    /// The store of `slots` pages and `max_bytes` bytes, an owner's quota
    /// the whole of it (reading, sweeping, tests).
    pub(crate) fn new(host: &'h mut H, slots: usize, max_bytes: usize) -> Self {
        Store {
            host,
            slots,
            max_bytes: max_bytes as u64,
            owner_pages: slots,
            owner_bytes: max_bytes as u64,
        }
    }

    /// The store `paging` configures, with its owners' quotas.
    pub(crate) fn for_paging(host: &'h mut H, paging: &PagingSettings) -> Self {
        Store {
            owner_pages: paging.owner_pages,
            owner_bytes: paging.owner_bytes as u64,
            ..Store::new(host, paging.store_pages, paging.store_bytes)
        }
    }

    fn index(&self) -> (Index, u32) {
        match self.host.get(INDEX) {
            Some((bytes, cas)) => (
                Index::parse(&bytes, self.slots).unwrap_or_else(|| Index::new(self.slots)),
                cas,
            ),
            None => (Index::new(self.slots), 0),
        }
    }

    /// Commits `change` to the index with compare-and-swap, then empties
    /// the slots it freed. `change` returns the slots it freed, or why it
    /// gives up.
    fn update<T>(
        &mut self,
        mut change: impl FnMut(&mut Index) -> Result<(Vec<usize>, T), NotKept>,
    ) -> Result<(Index, Vec<usize>, T), NotKept> {
        for _ in 0..ATTEMPTS {
            let (mut index, cas) = self.index();
            let (freed, out) = change(&mut index)?;
            match self.host.set(INDEX, &index.bytes(), cas) {
                Ok(()) => {
                    for &i in &freed {
                        let _ = self.host.set(&slot_key(i), b"", 0);
                    }
                    return Ok((index, freed, out));
                }
                Err(Unstored::Changed) => continue,
                Err(Unstored::Refused) => return Err(NotKept::Unavailable),
            }
        }
        Err(NotKept::Unavailable)
    }

    /// Reserves consecutive slots for pages of these sizes (bytes of
    /// [`Kept::size`]) for `owner`, all expiring at `expires_s`, making room
    /// as the module's docs say; returns the first slot and the store's
    /// figures. The caller then [`Store::write`]s them.
    pub(crate) fn reserve(
        &mut self,
        owner: [u8; 8],
        sizes: &[usize],
        expires_s: u32,
        now_s: u32,
    ) -> Result<(u32, Figures), NotKept> {
        let need: u64 = sizes.iter().map(|&v| v as u64).sum();
        let k = sizes.len();
        let quota = k <= self.owner_pages && need <= self.owner_bytes;
        if k == 0 || k > self.slots || need > self.max_bytes || self.max_bytes == 0 || !quota {
            return Err(NotKept::TooLarge);
        }
        let slots = self.slots;
        let (max, owner_pages, owner_bytes) = (self.max_bytes, self.owner_pages, self.owner_bytes);
        let (index, _, (first, evicted, over_share, expired)) = self.update(|index| {
            let expired = index.sweep(now_s);
            let holdings = index.holdings();
            let mut room = Room {
                index,
                owner,
                holdings,
                max_bytes: max,
                evicted: 0,
                over_share: 0,
                freed: expired.clone(),
            };
            // The owner's quota: its own oldest pages make room.
            room.evict_own_while(|r| {
                let h = r.holdings.get(&owner).unwrap_or_default();
                h.pages + k > owner_pages || h.bytes + need > owner_bytes
            });
            let first = room.run(k).ok_or(NotKept::Full)?;
            for j in 0..k {
                room.evict((first + j) % slots);
            }
            // The store's bytes: the owner's own oldest, then the oldest
            // of owners past their fair share.
            room.evict_own_while(|r| r.index.used + need > max);
            // One pass: an owner that could not lose a page cannot later
            // either (what owners hold only shrinks here, and their shares
            // only grow).
            for i in room.index.oldest(|s| s.owner != owner) {
                if room.index.used + need <= max {
                    break;
                }
                let takes = room
                    .index
                    .slots
                    .get(i)
                    .is_some_and(|s| room.may_take(&s.owner, 1, u64::from(s.size)));
                if takes {
                    room.evict(i);
                }
            }
            if room.index.used + need > max {
                return Err(NotKept::Full);
            }
            let Room {
                index,
                evicted,
                over_share,
                mut freed,
                ..
            } = room;
            for (j, size) in sizes.iter().enumerate() {
                let i = (first + j) % slots;
                if let Some(s) = index.slots.get_mut(i) {
                    *s = Slot {
                        size: u32::try_from(*size).unwrap_or(u32::MAX),
                        expires_s,
                        owner,
                    };
                }
                // Reserved slots are written next, not emptied.
                freed.retain(|&f| f != i);
            }
            index.used += need;
            index.head = u32::try_from((first + k) % slots).unwrap_or(0);
            Ok((freed, (first, evicted, over_share, expired.len() as u64)))
        })?;
        let figures = Figures {
            stored: k as u64,
            evicted,
            evicted_over_share: over_share,
            expired,
            ..index.figures()
        };
        Ok((u32::try_from(first).unwrap_or(0), figures))
    }

    /// Writes pages into the slots [`Store::reserve`] gave, from `first`.
    /// A page the host refuses to keep makes the whole result unkept: its
    /// handles would lead to a gap, so the caller hands out none that rely
    /// on the store (the reserved slots age out like any others).
    pub(crate) fn write(&mut self, first: u32, pages: &[Kept]) -> Result<(), NotKept> {
        let first = usize::try_from(first).unwrap_or(0);
        for (j, page) in pages.iter().enumerate() {
            self.host
                .set(&slot_key((first + j) % self.slots.max(1)), &page.bytes(), 0)
                .map_err(|_| NotKept::Unavailable)?;
        }
        Ok(())
    }

    /// The page kept in `slot` for result `id`, page `page`, if it is there,
    /// unexpired and bound to `binding`.
    pub(crate) fn read(
        &self,
        slot: usize,
        id: &[u8; 16],
        page: u32,
        binding: &[u8; 8],
        now_s: u32,
    ) -> Result<Kept, Miss> {
        let (bytes, _) = self.host.get(&slot_key(slot)).ok_or(Miss::Unknown)?;
        let kept = Kept::parse(&bytes).ok_or(Miss::Unknown)?;
        if &kept.id != id || kept.page != page {
            return Err(Miss::Unknown);
        }
        if kept.expires_s <= now_s {
            return Err(Miss::Expired);
        }
        if &kept.binding != binding {
            return Err(Miss::Foreign);
        }
        Ok(kept)
    }

    /// Empties expired slots (the root context's timer). Writes nothing
    /// when nothing expired.
    pub(crate) fn sweep(&mut self, now_s: u32) -> Result<Figures, NotKept> {
        let (mut index, _) = self.index();
        if index.sweep(now_s).is_empty() {
            return Ok(index.figures());
        }
        let (index, freed, ()) = self.update(|index| Ok((index.sweep(now_s), ())))?;
        Ok(Figures {
            expired: freed.len() as u64,
            ..index.figures()
        })
    }
}

#[cfg(test)]
mod tests;
