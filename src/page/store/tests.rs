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
    let (first, f) = store.reserve(&sizes, pages[0].expires_s, now)?;
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
    impl SessionStore for Racing {
        fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
            self.inner.get(key)
        }
        fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored> {
            if key == INDEX && self.interfere > 0 {
                self.interfere -= 1;
                let mut other = Store::new(&mut self.inner, 8, 100_000);
                let (first, _) = other.reserve(&[page(7, 2, 5, 99).size()], 99, 0).unwrap();
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
    let (first, f) = store.reserve(&[mine.size()], 99, 0).unwrap();
    store.write(first, std::slice::from_ref(&mine)).unwrap();
    assert_eq!(f.pages, 5, "the first, three racing writes and this one");
    assert_eq!(
        store.read(first as usize, &[1; 16], 2, &[9; 8], 0),
        Ok(mine)
    );
}
