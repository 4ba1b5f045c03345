use super::*;
use crate::config::Settings;
use crate::page::handle::Handle;
use crate::page::keys;
use crate::page::owner::Owner;
use crate::page::store::Store;
use crate::shared::SharedMemory;

fn rows(n: usize) -> String {
    let rows: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"seq": i, "level": "info", "message": format!("request {i} handled")}))
        .collect();
    serde_json::Value::Array(rows).to_string()
}

fn settings(extra: &str) -> Settings {
    Settings::from_json(&format!(
        r#"{{"hold_headers":true,"budget":{{"tokens":600}},"paging":{{"enabled":true{extra}}}}}"#
    ))
    .unwrap()
}

fn host() -> SharedMemory {
    let mut host = SharedMemory::with(crate::shared::Entropy::Seeded(42));
    host.now_ms = 1_000_000;
    host
}

static OWNER: std::sync::LazyLock<Owner> = std::sync::LazyLock::new(|| {
    Owner::of(
        &crate::config::OwnerSource::Credentials,
        &[("authorization".into(), "Bearer alice".into())],
        None,
        &crate::config::StreamInfo::default(),
    )
});

fn call() -> CallInfo<'static> {
    CallInfo {
        tool: Some("export"),
        arguments: Some(r#"{"n":1}"#),
        owner: &OWNER,
        cluster: Some("c"),
        trimmed: false,
    }
}

fn handle_in(notice: &str) -> &str {
    let start = notice.find("{\"handle\":\"").unwrap() + 11;
    &notice[start..start + notice[start..].find('"').unwrap()]
}

#[test]
fn pages_are_kept_and_each_notice_hands_on_the_next() {
    let s = settings("");
    let text = rows(300);
    let items = [Item {
        text: &text,
        framing: TextKind::Text,
    }];
    let mut host = host();
    let policy = s.policy(Default::default(), Some("export"));
    let cut = cut(&items, &[0], &policy, &s.paging, &call(), &mut host).unwrap();
    assert!(cut.paged);
    let mut all: Vec<serde_json::Value> = serde_json::from_str(&cut.plan.pages[0].text).unwrap();
    let mut notice = cut.notice.clone();
    let mut n = 1;
    loop {
        if !notice.contains("\"handle\"") {
            break;
        }
        let (h, _) = Handle::decode(handle_in(&notice), &keys::derive(&s.paging.keys)).unwrap();
        n += 1;
        assert_eq!(h.page as usize, n);
        let binding = OWNER.binding(&keys::local(&mut host).unwrap());
        let store = Store::new(&mut host, s.paging.store_pages, s.paging.store_bytes);
        let kept = store
            .read(
                h.slot(s.paging.store_pages).unwrap(),
                &h.id,
                h.page,
                &binding,
                1000,
            )
            .unwrap();
        let page: Vec<serde_json::Value> = serde_json::from_str(&kept.text).unwrap();
        all.extend(page);
        notice = kept.notice;
    }
    assert_eq!(n, cut.plan.pages.len());
    assert!(notice.ends_with("This is the last page."), "{notice}");
    assert_eq!(serde_json::Value::Array(all).to_string(), text);
}

#[test]
fn a_signed_handle_rebuilds_any_page_from_the_same_result_only() {
    let s =
        settings(r#","key":"0123456789abcdef0123456789abcdef","store_bytes":0,"reissue":"always""#);
    let text = rows(300);
    let items = [Item {
        text: &text,
        framing: TextKind::Text,
    }];
    let policy = s.policy(Default::default(), Some("export"));
    let cut = cut(&items, &[0], &policy, &s.paging, &call(), &mut host()).unwrap();
    assert!(cut.paged);
    let derived = keys::derive(&s.paging.keys);
    let (h, opened) = Handle::decode(handle_in(&cut.notice), &derived).unwrap();
    assert_eq!(opened, 0);
    assert_eq!(h.first_slot, crate::page::handle::NOT_STORED);
    let call = h.call.clone().unwrap();
    assert!(call.reissue);
    assert_eq!(
        call.binding,
        OWNER.binding(&derived[0].owner),
        "sealed for its owner"
    );
    assert_eq!(call.arguments, r#"{"n":1}"#);
    let (page, notice) = page_of(&items, &[0], &h, &s.paging).unwrap();
    assert_eq!(page, cut.plan.pages[1].text);
    assert!(notice.starts_with("[mcp-toon] Page 2 of "), "{notice}");
    let changed = rows(301);
    let other = [Item {
        text: &changed,
        framing: TextKind::Text,
    }];
    assert_eq!(page_of(&other, &[0], &h, &s.paging), Err(Rebuilt::Changed));
}

#[test]
fn without_store_or_key_the_rest_is_not_kept() {
    let s = settings(r#","store_bytes":0"#);
    let text = rows(300);
    let items = [Item {
        text: &text,
        framing: TextKind::Text,
    }];
    let policy = s.policy(Default::default(), Some("export"));
    let cut = cut(&items, &[0], &policy, &s.paging, &call(), &mut host()).unwrap();
    assert!(!cut.paged);
    assert!(cut.notice.contains("They are not kept"), "{}", cut.notice);
    // No random source: no handles either.
    let s = settings("");
    let cut = super::cut(
        &items,
        &[0],
        &policy,
        &s.paging,
        &call(),
        &mut SharedMemory::with(crate::shared::Entropy::None),
    )
    .unwrap();
    assert!(!cut.paged);
}

/// A host that keeps the store's index but refuses the pages themselves:
/// the result counts as not kept, and no handle leads into the store.
#[test]
fn a_refused_page_write_hands_out_no_stored_page() {
    use crate::shared::{Services, Unstored};
    struct RefusesPages(SharedMemory);
    impl Services for RefusesPages {
        fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
            self.0.get(key)
        }
        fn set(&mut self, key: &str, value: &[u8], cas: u32) -> Result<(), Unstored> {
            if key.contains("page") && !key.contains("index") {
                return Err(Unstored::Refused);
            }
            self.0.set(key, value, cas)
        }
        fn random(&mut self, out: &mut [u8]) -> bool {
            self.0.random(out)
        }
        fn now_ms(&self) -> u64 {
            self.0.now_ms()
        }
    }
    let text = rows(300);
    let items = [Item {
        text: &text,
        framing: TextKind::Text,
    }];
    // Without a key no page can be rebuilt elsewhere either: nothing paged.
    let s = settings("");
    let policy = s.policy(Default::default(), Some("export"));
    let mut host = RefusesPages(host());
    let done = cut(&items, &[0], &policy, &s.paging, &call(), &mut host).unwrap();
    assert_eq!(done.not_kept, Some(NotKept::Unavailable));
    assert!(!done.paged, "{}", done.notice);
    assert!(done.figures.is_none());
    assert!(done.notice.contains("They are not kept"), "{}", done.notice);
}
