use super::*;
use crate::config::Header;

fn toon_text(rows: usize) -> String {
    let mut s = String::from("[mcp-toon/v1] marker\ntotal: 9\nitems[");
    s.push_str(&format!("{rows}]{{id,name}}:"));
    for i in 0..rows {
        s.push_str(&format!("\n  {i},name {i}"));
    }
    s.push_str("\nnext: null");
    s
}

fn item(text: &str, framing: TextKind) -> Item<'_> {
    Item { text, framing }
}

#[test]
fn toon_rows_keep_the_header_and_a_true_count() {
    let text = toon_text(5);
    let u = Units::structured(&text, TextKind::Toon(Header::Marker)).unwrap();
    assert_eq!(u.kind, UnitKind::Rows);
    assert_eq!(u.len(), 5);
    assert_eq!(u.render(0..5), text);
    assert_eq!(
        u.render(1..3),
        "[mcp-toon/v1] marker\ntotal: 9\nitems[2]{id,name}:\n  1,name 1\n  2,name 2\nnext: null"
    );
}

#[test]
fn toon_root_table_and_quoted_key() {
    let text = "[mcp-toon/v1] m\n[3]{a}:\n  1\n  2\n  3";
    let u = Units::structured(text, TextKind::Toon(Header::Marker)).unwrap();
    assert_eq!(u.render(2..3), "[mcp-toon/v1] m\n[1]{a}:\n  3");
    let text = "[mcp-toon/v1] m\n\"a[b\"[2]{x}:\n  1\n  2";
    let u = Units::structured(text, TextKind::Toon(Header::Marker)).unwrap();
    assert_eq!(u.render(0..1), "[mcp-toon/v1] m\n\"a[b\"[1]{x}:\n  1");
}

#[test]
fn toon_that_is_not_one_table_has_no_structured_units() {
    for text in [
        "[mcp-toon/v1] m\na: 1\nb:\n  c: 2",
        "[mcp-toon/v1] m\n[3]{a}:\n  1\n  2",
        "[mcp-toon/v1] m\nt[2]{a}:\n  1\n  2\nu:\n  v: 1",
        "no marker\n[1]{a}:\n  1",
    ] {
        assert!(
            Units::structured(text, TextKind::Toon(Header::Marker)).is_none(),
            "{text}"
        );
    }
}

#[test]
fn fenced_toon_keeps_its_fence() {
    let text = "[mcp-toon/v1] m\n```toon\n[2]{a}:\n  1\n  2\n```";
    let u = Units::structured(text, TextKind::Toon(Header::Fence)).unwrap();
    assert_eq!(
        u.render(1..2),
        "[mcp-toon/v1] m\n```toon\n[1]{a}:\n  2\n```"
    );
}

#[test]
fn json_arrays_envelopes_and_objects() {
    let text = r#"[{"a":1}, {"a":2} ,{"a":[3]}]"#;
    let u = Units::structured(text, TextKind::Text).unwrap();
    assert_eq!(u.kind, UnitKind::Items);
    assert_eq!(u.render(1..3), r#"[{"a":2},{"a":[3]}]"#);

    let text = r#"{"total":3,"items":[1,2,3,4,5,6,7,8,9,10,11,12,13,14],"next":"x"}"#;
    let u = Units::structured(text, TextKind::Text).unwrap();
    assert_eq!(u.kind, UnitKind::Items);
    assert_eq!(u.render(0..2), r#"{"total":3,"items":[1,2],"next":"x"}"#);

    let text = r#"{ "a" : 1, "b":{"c":2},"a":3 }"#;
    let u = Units::structured(text, TextKind::Text).unwrap();
    assert_eq!(u.kind, UnitKind::Members);
    assert_eq!(u.len(), 3, "duplicate keys stay");
    assert_eq!(u.render(1..3), r#"{"b":{"c":2},"a":3}"#);
    for page in [u.render(0..1), u.render(2..3)] {
        serde_json::from_str::<serde_json::Value>(&page).unwrap();
    }
    assert!(Units::structured("\"just a string\"", TextKind::Text).is_none());
    assert!(Units::structured("[]", TextKind::Text).is_none());
    assert!(Units::structured("{\"a\":1}", TextKind::Text).is_none());
}

#[test]
fn lines_are_exact_slices_and_long_lines_split() {
    let text = "ab\ncdéfgh\n\nij";
    let u = Units::lines(text, 4);
    let joined: String = (0..u.len()).map(|i| u.unit(i)).collect();
    assert_eq!(joined, text);
    assert!((0..u.len()).all(|i| u.unit(i).len() <= 4));
    assert_eq!(u.render(0..u.len()), text);
}

fn rows_json(n: usize) -> String {
    let rows: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"seq": i, "level": "info", "message": format!("request {i} handled")}))
        .collect();
    serde_json::Value::Array(rows).to_string()
}

#[test]
fn every_page_fits_and_the_pages_hold_every_unit_once() {
    let text = rows_json(500);
    for budget in [Budget::Tokens(500), Budget::Bytes(3000)] {
        let items = [item(&text, TextKind::Text)];
        let plan = plan(&items, budget, 60).unwrap();
        assert_eq!(plan.cut, 0);
        let mut next = 0;
        let mut all = Vec::new();
        for p in &plan.pages {
            assert_eq!(p.units.start, next);
            next = p.units.end;
            assert!(measure(&p.text, budget) + 60 <= limit(budget), "{budget:?}");
            let v: Vec<serde_json::Value> = serde_json::from_str(&p.text).unwrap();
            assert_eq!(v.len(), p.units.len());
            all.extend(v);
        }
        assert_eq!(next, 500);
        assert_eq!(serde_json::Value::Array(all).to_string(), text);
    }
}

#[test]
fn a_result_that_fits_is_not_cut() {
    let text = rows_json(3);
    assert_eq!(
        plan(&[item(&text, TextKind::Text)], Budget::Tokens(10_000), 50),
        Err(NoPlan::Fits)
    );
    assert_eq!(
        plan(
            &[item(&rows_json(300), TextKind::Text)],
            Budget::Tokens(500),
            495
        ),
        Err(NoPlan::TooSmall)
    );
}

#[test]
fn items_before_the_cut_stay_whole_and_later_items_become_pages() {
    let small = "a short note";
    let big = rows_json(200);
    let after = "line one\nline two\n".repeat(40);
    let items = [
        item(small, TextKind::Text),
        item(&big, TextKind::Text),
        item(&after, TextKind::Text),
    ];
    let plan = plan(&items, Budget::Tokens(600), 50).unwrap();
    assert_eq!(plan.cut, 1);
    assert_eq!(plan.pages[0].item, 1);
    let last = plan.pages.last().unwrap();
    assert_eq!(last.item, 2);
    let text_pages: String = plan
        .pages
        .iter()
        .filter(|p| p.item == 2)
        .map(|p| p.text.as_str())
        .collect();
    assert_eq!(text_pages, after);
}

#[test]
fn a_structured_unit_larger_than_a_page_falls_back_to_lines() {
    let big_row = format!("[{{\"blob\":\"{}\"}},{{\"a\":1}}]", "x ".repeat(3000));
    let plan = plan(&[item(&big_row, TextKind::Text)], Budget::Bytes(2048), 100).unwrap();
    let joined: String = plan.pages.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(joined, big_row);
    assert!(plan.pages.iter().all(|p| p.kind == UnitKind::Lines));
    assert!(plan.pages.iter().all(|p| p.text.len() + 100 <= 2048));
}

#[test]
fn the_longest_notice_bounds_every_notice() {
    let text = rows_json(500);
    let budget = Budget::Tokens(500);
    let more = notice::Next::Handle {
        tool: "mcp_toon_page",
        handle: "abcdefghijklmnop",
    };
    let reserve = measure(&notice::longest(budget, text.len(), more), budget);
    let plan = plan(&[item(&text, TextKind::Text)], budget, reserve).unwrap();
    let first = notice::first(&plan, budget, &|i| i, more);
    assert!(measure(&first, budget) <= reserve, "{first}");
    for (n, p) in plan.pages.iter().enumerate() {
        let page = notice::page(p, 0, n + 1, plan.pages.len(), Some(more));
        assert!(measure(&page, budget) <= reserve, "{page}");
    }
    assert!(
        first.starts_with("[mcp-toon] Result cut to fit 500 tokens. Shown: items 1-"),
        "{first}"
    );
}
