//! Pages kept in the gateway: proxy-wasm shared data, one space for every
//! worker of one Envoy (same `vm_id`).
//!
//! Proxy-wasm ABI 0.2.1 cannot delete a shared-data key, only overwrite it,
//! so pages live in a fixed ring of `store_pages` keys
//! (`mcp_toon.page.<n>`); emptying a key gives its memory back. One more
//! key, the index, records each slot's size and expiry, the ring's head
//! and the bytes held; every writer updates it with compare-and-swap, so
//! workers never reserve the same slot. A cut reserves the next slots of
//! the ring (evicting what they held), then evicts further, oldest first,
//! until the bytes held fit `store_bytes`; expired pages are emptied on
//! every write and on the root context's timer. A reader checks the slot's
//! own header (result id, page, expiry, binding), so an evicted or
//! reused slot is never served as another result's page.
//!
//! Known limit: two workers creating the index at the same instant (the
//! host has no create-if-absent) may each start from an empty index; the
//! later one wins, and the pages the earlier one wrote are served until a
//! later write reuses their slots, whose bytes it did not count.

use crate::shared::{SessionStore, Unstored};

const INDEX: &str = "mcp_toon.page.index";
const INDEX_MAGIC: &[u8; 4] = b"MTI1";
const SLOT_MAGIC: &[u8; 4] = b"MTP1";
/// Compare-and-swap attempts before a write gives up.
const ATTEMPTS: usize = 16;

fn slot_key(slot: usize) -> String {
    format!("mcp_toon.page.{slot}")
}

/// What the store held after an operation, and what it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Bytes of page data held (slot values).
    pub bytes: u64,
    /// Slots holding a page.
    pub pages: u64,
    pub stored: u64,
    pub evicted: u64,
    pub expired: u64,
}

/// Why pages were not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotKept {
    /// More pages or bytes than the whole store holds, or no store.
    TooLarge,
    /// The host has no shared data, or writes kept conflicting.
    Unavailable,
}

/// Why a page could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
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
        if count != slots || bytes.len() != 20 + 8 * count {
            return None;
        }
        let head = u32_at(8)?;
        let used = u64::from_le_bytes(bytes.get(12..20)?.try_into().ok()?);
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            out.push(Slot {
                size: u32_at(20 + 8 * i)?,
                expires_s: u32_at(24 + 8 * i)?,
            });
        }
        Some(Index {
            head,
            used,
            slots: out,
        })
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20 + 8 * self.slots.len());
        out.extend_from_slice(INDEX_MAGIC);
        out.extend_from_slice(&u32::try_from(self.slots.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.head.to_le_bytes());
        out.extend_from_slice(&self.used.to_le_bytes());
        for s in &self.slots {
            out.extend_from_slice(&s.size.to_le_bytes());
            out.extend_from_slice(&s.expires_s.to_le_bytes());
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
}

/// The store as one stream sees it.
pub struct Store<'h, H: SessionStore + ?Sized> {
    host: &'h mut H,
    slots: usize,
    max_bytes: u64,
}

/// One page as kept: its header and the two texts a page call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub id: [u8; 16],
    pub page: u32,
    pub expires_s: u32,
    pub binding: [u8; 8],
    /// The tool whose result this is (for the decision record).
    pub tool: String,
    pub text: String,
    pub notice: String,
}

impl Kept {
    /// Bytes the page takes in its slot.
    pub fn size(&self) -> usize {
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

impl<'h, H: SessionStore + ?Sized> Store<'h, H> {
    pub fn new(host: &'h mut H, slots: usize, max_bytes: usize) -> Self {
        Store {
            host,
            slots,
            max_bytes: max_bytes as u64,
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
    /// [`Kept::size`]), all expiring at `expires_s`; returns the first slot
    /// and the store's figures. The caller then [`Store::write`]s them.
    pub fn reserve(
        &mut self,
        sizes: &[usize],
        expires_s: u32,
        now_s: u32,
    ) -> Result<(u32, Figures), NotKept> {
        let need: u64 = sizes.iter().map(|&v| v as u64).sum();
        let k = sizes.len();
        if k == 0 || k > self.slots || need > self.max_bytes || self.max_bytes == 0 {
            return Err(NotKept::TooLarge);
        }
        let slots = self.slots;
        let max = self.max_bytes;
        let (index, _, (first, evicted, expired)) = self.update(|index| {
            let expired = index.sweep(now_s);
            let mut freed = expired.clone();
            let first = usize::try_from(index.head).unwrap_or(0) % slots;
            let mut evicted = 0u64;
            for j in 0..k {
                let i = (first + j) % slots;
                if index.clear(i) {
                    evicted += 1;
                }
            }
            // Oldest first: the ring's next slots hold the oldest pages.
            let mut j = k;
            while index.used + need > max && j < slots {
                let i = (first + j) % slots;
                if index.clear(i) {
                    evicted += 1;
                    freed.push(i);
                }
                j += 1;
            }
            for (j, size) in sizes.iter().enumerate() {
                let i = (first + j) % slots;
                if let Some(s) = index.slots.get_mut(i) {
                    *s = Slot {
                        size: u32::try_from(*size).unwrap_or(u32::MAX),
                        expires_s,
                    };
                }
                // Reserved slots are written next, not emptied.
                freed.retain(|&f| f != i);
            }
            index.used += need;
            index.head = u32::try_from((first + k) % slots).unwrap_or(0);
            Ok((freed, (first, evicted, expired.len() as u64)))
        })?;
        let figures = Figures {
            stored: k as u64,
            evicted,
            expired,
            ..index.figures()
        };
        Ok((u32::try_from(first).unwrap_or(0), figures))
    }

    /// Writes pages into the slots [`Store::reserve`] gave, from `first`.
    /// A page the host refuses to keep makes the whole result unkept: its
    /// handles would lead to a gap, so the caller hands out none that rely
    /// on the store (the reserved slots age out like any others).
    pub fn write(&mut self, first: u32, pages: &[Kept]) -> Result<(), NotKept> {
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
    pub fn read(
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
    pub fn sweep(&mut self, now_s: u32) -> Result<Figures, NotKept> {
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
