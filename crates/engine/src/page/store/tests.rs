use super::*;
use crate::shared::SharedMemory;

fn page(id: u8, n: u32, size: usize, expires_s: u32) -> Kept {
    Kept {
        id: [id; 16],
        page: n,
        expires_s,
        binding: [9; 8],
        tool: "t".into(),
        text: "x".repeat(size),
        notice: "n".into(),
    }
}

fn keep(
    host: &mut SharedMemory,
    slots: usize,
    max: usize,
    pages: &[Kept],
    now: u32,
) -> Result<(u32, Figures), NotKept> {
    let mut store = Store::new(host, slots, max);
    let sizes: Vec<usize> = pages.iter().map(Kept::size).collect();
    let (first, f) = store.reserve(pages[0].binding, &sizes, pages[0].expires_s, now)?;
    store.write(first, pages)?;
    Ok((first, f))
}

#[test]
fn pages_are_read_back_by_id_page_and_binding() {
    let mut host = SharedMemory::default();
    let pages = [page(1, 2, 10, 100), page(1, 3, 10, 100)];
    let (first, f) = keep(&mut host, 8, 10_000, &pages, 10).unwrap();
    assert_eq!((f.stored, f.pages), (2, 2));
    assert_eq!(f.bytes, 2 * pages[0].size() as u64);
    let store = Store::new(&mut host, 8, 10_000);
    let slot = first as usize;
    assert_eq!(
        store.read(slot, &[1; 16], 2, &[9; 8], 10).unwrap(),
        pages[0]
    );
    assert_eq!(
        store.read(slot + 1, &[1; 16], 3, &[9; 8], 10).unwrap(),
        pages[1]
    );
    assert_eq!(
        store.read(slot, &[2; 16], 2, &[9; 8], 10),
        Err(Miss::Unknown)
    );
    assert_eq!(
        store.read(slot, &[1; 16], 3, &[9; 8], 10),
        Err(Miss::Unknown)
    );
    assert_eq!(
        store.read(slot, &[1; 16], 2, &[8; 8], 10),
        Err(Miss::Foreign)
    );
    assert_eq!(
        store.read(slot, &[1; 16], 2, &[9; 8], 100),
        Err(Miss::Expired)
    );
}

#[test]
fn bytes_and_keys_stay_within_the_limits_and_the_oldest_go_first() {
    let mut host = SharedMemory::default();
    let slots = 16;
    let max = 4000;
    for round in 0..200u32 {
        let n = 1 + (round as usize % 3);
        let pages: Vec<Kept> = (0..n)
            .map(|k| page(round as u8, 2 + k as u32, 300, 10_000))
            .collect();
        let (_, f) = keep(&mut host, slots, max, &pages, round).unwrap();
        assert!(f.bytes <= max as u64, "{f:?}");
        assert!(f.pages <= slots as u64);
        // What the host holds matches what the index says.
        let held = host.bytes() - Index::new(slots).bytes().len();
        assert_eq!(held as u64, f.bytes, "round {round}");
        assert!(host.keys() <= slots + 1);
    }
    // The latest round is readable; a much older one is gone.
    let store = Store::new(&mut host, slots, max);
    let found = (0..slots).any(|s| store.read(s, &[199; 16], 2, &[9; 8], 0).is_ok());
    assert!(found);
    let old = (0..slots).any(|s| store.read(s, &[150; 16], 2, &[9; 8], 0).is_ok());
    assert!(!old);
}

#[test]
fn too_large_for_the_store_is_refused() {
    let mut host = SharedMemory::default();
    assert_eq!(
        keep(&mut host, 4, 1000, &[page(1, 2, 2000, 10)], 0),
        Err(NotKept::TooLarge)
    );
    let many: Vec<Kept> = (0..5).map(|k| page(1, 2 + k, 1, 10)).collect();
    assert_eq!(
        keep(&mut host, 4, 100_000, &many, 0),
        Err(NotKept::TooLarge)
    );
    assert_eq!(keep(&mut host, 4, 0, &many[..1], 0), Err(NotKept::TooLarge));
}

#[test]
fn expired_pages_are_emptied_by_a_sweep_and_by_the_next_write() {
    let mut host = SharedMemory::default();
    keep(
        &mut host,
        8,
        10_000,
        &[page(1, 2, 500, 50), page(1, 3, 500, 50)],
        0,
    )
    .unwrap();
    let mut store = Store::new(&mut host, 8, 10_000);
    let f = store.sweep(49).unwrap();
    assert_eq!((f.expired, f.pages), (0, 2));
    let f = store.sweep(50).unwrap();
    assert_eq!((f.expired, f.pages, f.bytes), (2, 0, 0));
    assert!(host.bytes() < 200, "slots emptied: {}", host.bytes());

    keep(&mut host, 8, 10_000, &[page(2, 2, 500, 50)], 0).unwrap();
    let (_, f) = keep(&mut host, 8, 10_000, &[page(3, 2, 10, 500)], 60).unwrap();
    assert_eq!((f.expired, f.pages), (1, 1));
}

/// Another worker writes the index between a read and a write: the write
/// retries on the new version and neither reservation is lost.
#[test]
fn concurrent_writers_never_share_a_slot() {
    struct Racing {
        inner: SharedMemory,
        interfere: u32,
    }
    impl Services for Racing {
        fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
            self.inner.get(key)
        }
        fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored> {
            if key == INDEX && self.interfere > 0 {
                self.interfere -= 1;
                let mut other = Store::new(&mut self.inner, 8, 100_000);
                let (first, _) = other
                    .reserve([9; 8], &[page(7, 2, 5, 99).size()], 99, 0)
                    .unwrap();
                other.write(first, &[page(7, 2, 5, 99)]).unwrap();
            }
            self.inner.set(key, value, cas)
        }
        fn random(&mut self, out: &mut [u8]) -> bool {
            self.inner.random(out)
        }
        fn now_ms(&self) -> u64 {
            self.inner.now_ms()
        }
    }
    // The index exists (its creation is the one unguarded write).
    let mut inner = SharedMemory::default();
    keep(&mut inner, 8, 100_000, &[page(5, 2, 5, 99)], 0).unwrap();
    let mut host = Racing {
        inner,
        interfere: 3,
    };
    let mut store = Store::new(&mut host, 8, 100_000);
    let mine = page(1, 2, 5, 99);
    let (first, f) = store.reserve([9; 8], &[mine.size()], 99, 0).unwrap();
    store.write(first, std::slice::from_ref(&mine)).unwrap();
    assert_eq!(f.pages, 5, "the first, three racing writes and this one");
    assert_eq!(
        store.read(first as usize, &[1; 16], 2, &[9; 8], 0),
        Ok(mine)
    );
}

/// A store with owners' quotas, as `paging` configures it.
fn quota_store(
    host: &mut SharedMemory,
    slots: usize,
    max: usize,
    owner_pages: usize,
    owner_bytes: usize,
) -> Store<'_, SharedMemory> {
    Store {
        owner_pages,
        owner_bytes: owner_bytes as u64,
        ..Store::new(host, slots, max)
    }
}

/// `pages` pages of `size` bytes of text for `owner`, result `id`.
fn cut_of(owner: u8, id: u8, pages: u32, size: usize) -> Vec<Kept> {
    (0..pages)
        .map(|k| Kept {
            binding: [owner; 8],
            ..page(id, 2 + k, size, 10_000)
        })
        .collect()
}

fn keep_quota(
    host: &mut SharedMemory,
    (slots, max, owner_pages, owner_bytes): (usize, usize, usize, usize),
    pages: &[Kept],
) -> Result<(u32, Figures), NotKept> {
    let mut store = quota_store(host, slots, max, owner_pages, owner_bytes);
    let sizes: Vec<usize> = pages.iter().map(Kept::size).collect();
    let (first, f) = store.reserve(pages[0].binding, &sizes, pages[0].expires_s, 0)?;
    store.write(first, pages)?;
    Ok((first, f))
}

/// Whether every page of a cut is still served.
fn held(host: &mut SharedMemory, slots: usize, first: u32, pages: &[Kept]) -> bool {
    let store = Store::new(host, slots, usize::MAX);
    pages.iter().enumerate().all(|(j, p)| {
        store
            .read((first as usize + j) % slots, &p.id, p.page, &p.binding, 0)
            .is_ok()
    })
}

/// An owner's page quota at its boundary: exactly `owner_pages` pages are
/// all kept; one more takes the owner's own oldest page, counted.
#[test]
fn an_owner_holds_its_quota_of_pages_and_one_more_evicts_its_own_oldest() {
    let limits = (64, 1 << 20, 8, 1 << 20);
    let mut host = SharedMemory::default();
    let first = cut_of(1, 1, 4, 10);
    let (at, _) = keep_quota(&mut host, limits, &first).unwrap();
    let (_, f) = keep_quota(&mut host, limits, &cut_of(1, 2, 4, 10)).unwrap();
    assert_eq!((f.pages, f.evicted), (8, 0), "at the quota: {f:?}");
    assert!(held(&mut host, 64, at, &first));
    let (_, f) = keep_quota(&mut host, limits, &cut_of(1, 3, 1, 10)).unwrap();
    assert_eq!(
        (f.pages, f.evicted, f.evicted_over_share),
        (8, 1, 0),
        "{f:?}"
    );
    assert!(!held(&mut host, 64, at, &first[..1]), "the oldest went");
    assert!(held(&mut host, 64, at + 1, &first[1..]));
    // A cut larger than the quota is not kept at all.
    assert_eq!(
        keep_quota(&mut host, limits, &cut_of(1, 4, 9, 10)),
        Err(NotKept::TooLarge)
    );
}

/// The same with bytes: `owner_bytes` of pages are kept, one byte more
/// evicts the owner's own oldest page.
#[test]
fn an_owner_holds_its_quota_of_bytes_and_one_more_evicts_its_own_oldest() {
    let (size, small) = (page(1, 2, 100, 0).size(), page(1, 2, 0, 0).size());
    let exact = 4 * size + small;
    for (quota, evicted) in [(exact, 0), (exact - 1, 1)] {
        let limits = (64, 1 << 20, 64, quota);
        let mut host = SharedMemory::default();
        let first = cut_of(1, 1, 4, 100);
        let (at, _) = keep_quota(&mut host, limits, &first).unwrap();
        let (_, f) = keep_quota(&mut host, limits, &cut_of(1, 2, 1, 0)).unwrap();
        assert_eq!(f.evicted, evicted, "quota {quota}: {f:?}");
        assert!(f.bytes <= quota as u64);
        assert_eq!(held(&mut host, 64, at, &first), evicted == 0);
    }
}

/// One owner cutting result after result evicts only its own pages: the
/// other owner's, within its fair share, are all still served; what does
/// not fit is refused, never made room for at the other's cost.
#[test]
fn one_owners_cuts_never_evict_another_owners_pages_within_its_share() {
    let (slots, max) = (64, 64 * 200);
    for (owner_pages, owner_bytes) in [(16, max / 4), (64, max)] {
        let limits = (slots, max, owner_pages, owner_bytes);
        let mut host = SharedMemory::default();
        let victim = cut_of(2, 1, 6, 50);
        let (at, _) = keep_quota(&mut host, limits, &victim).unwrap();
        let mut refused = 0;
        for round in 0..200u32 {
            let n = 1 + round % 13;
            match keep_quota(&mut host, limits, &cut_of(1, round as u8, n, 150)) {
                Ok((_, f)) => {
                    assert_eq!(f.evicted_over_share, 0, "{f:?}");
                    assert!(f.bytes <= max as u64);
                }
                Err(e) => {
                    assert_eq!(e, NotKept::Full);
                    refused += 1;
                }
            }
            assert!(
                held(&mut host, slots, at, &victim),
                "round {round} ({owner_pages})"
            );
        }
        assert!(refused < 200);
    }
}

/// An owner past its fair share gives pages up to a newcomer, oldest
/// first and no more than it holds past that share.
#[test]
fn an_owner_past_its_fair_share_gives_up_its_oldest_pages_down_to_it() {
    let (slots, max) = (16, 1 << 20);
    let limits = (slots, max, slots, max);
    let mut host = SharedMemory::default();
    let mut cuts = Vec::new();
    for id in 0..4 {
        let cut = cut_of(1, id, 4, 10);
        cuts.push((keep_quota(&mut host, limits, &cut).unwrap().0, cut));
    }
    // The store is full, all of it the first owner's: the second owner's
    // cut of 4 takes its 4 oldest (its share is now 8 of 16).
    let newcomer = cut_of(2, 9, 4, 10);
    let (at, f) = keep_quota(&mut host, limits, &newcomer).unwrap();
    assert_eq!((f.evicted, f.evicted_over_share), (4, 4), "{f:?}");
    assert!(held(&mut host, slots, at, &newcomer));
    assert!(!held(&mut host, slots, cuts[0].0, &cuts[0].1[..1]));
    for (first, cut) in &cuts[1..] {
        assert!(held(&mut host, slots, *first, cut));
    }
    // Another 4 of the newcomer's: the first owner's oldest 4 more (12 -> 8).
    let (_, f) = keep_quota(&mut host, limits, &cut_of(2, 10, 4, 10)).unwrap();
    assert_eq!(f.evicted_over_share, 4, "{f:?}");
    // Now both hold their share: the newcomer's next cut takes its own.
    let (_, f) = keep_quota(&mut host, limits, &cut_of(2, 11, 4, 10)).unwrap();
    assert_eq!((f.evicted, f.evicted_over_share), (4, 0), "{f:?}");
    for (first, cut) in &cuts[2..] {
        assert!(held(&mut host, slots, *first, cut), "within its share");
    }
}
