//! Hand cases of the Python-literal reader: each rule of the module docs,
//! at its edge. `tests/python_literal.rs` holds it to CPython itself on
//! thousands of generated values.

use super::{read, repr_float, MAX_DEPTH};

fn json(text: &str) -> Option<String> {
    read(text).map(|r| r.json)
}

#[test]
fn str_rows_read_as_json() {
    let text = "[{'id': 1, 'name': 'Ann', 'score': 3.5, 'ok': True, 'note': None}, \
                {'id': 2, 'name': \"O'Brien\", 'score': -0.25, 'ok': False, 'note': 'a\\nb'}]";
    assert_eq!(
        json(text).as_deref(),
        Some(
            "[{\"id\":1,\"name\":\"Ann\",\"score\":3.5,\"ok\":true,\"note\":null},\
             {\"id\":2,\"name\":\"O'Brien\",\"score\":-0.25,\"ok\":false,\"note\":\"a\\nb\"}]"
        )
    );
    let read = read(text).unwrap();
    assert!(!read.tuples);
}

#[test]
fn containers_in_every_canonical_form() {
    assert_eq!(json("[]"), None, "valid JSON as it stands");
    assert_eq!(json("()").as_deref(), Some("[]"));
    assert_eq!(json("(1,)").as_deref(), Some("[1]"));
    assert_eq!(json("(1, 'a')").as_deref(), Some("[1,\"a\"]"));
    assert_eq!(
        json("[(), {}, [], ((),)]").as_deref(),
        Some("[[],{},[],[[]]]")
    );
    assert_eq!(json("{'a': (1, 2)}").as_deref(), Some("{\"a\":[1,2]}"));
    assert!(read("[(1, 2)]").unwrap().tuples);
    assert!(!read("[['a']]").unwrap().tuples);
    // Not how repr writes them.
    for text in [
        "(1)",
        "(1, )",
        "(1,2)",
        "(1, 2,)",
        "[1,2, 'a']",
        "['a' , 1]",
        "['a',]",
        "{'a':1}",
        "{'a' : 1}",
        "{'a': 1,}",
        " ['a']",
        "['a'] ",
        "['a']\n",
        "[ 'a']",
        "['a', 1",
        "['a']]",
        "['a'] ['b']",
    ] {
        assert_eq!(json(text), None, "{text}");
    }
}

#[test]
fn only_lists_tuples_and_dicts_at_the_top() {
    for text in ["'a'", "1", "True", "None", "1.5", "-1"] {
        assert_eq!(json(text), None, "{text}");
    }
}

#[test]
fn json_texts_are_left_to_json() {
    // Nothing JSON lacks: JSON reads the same value.
    for text in [
        "[1, 2, 3]",
        "[1.5, -2, 1e+16]",
        "{\"it's\": [1, {}]}",
        "[\"it's\", []]",
    ] {
        assert_eq!(json(text), None, "{text}");
    }
    // JSON's own spelling is no repr.
    for text in ["[true]", "[null]", "{\"a\": 1}", "[\"a\"]", "[1,2]"] {
        assert_eq!(json(text), None, "{text}");
    }
}

#[test]
fn keys_are_strings_and_distinct() {
    assert_eq!(json("{1: 'a'}"), None);
    assert_eq!(json("{None: 'a'}"), None);
    assert_eq!(json("{True: 'a'}"), None);
    assert_eq!(json("{1.5: 'a'}"), None);
    assert_eq!(json("{(1, 2): 'a'}"), None);
    assert_eq!(json("{'a': 1, 'a': 2}"), None);
    assert_eq!(
        json("{'a': {'a': 1}, 'b': 2}").as_deref(),
        Some("{\"a\":{\"a\":1},\"b\":2}")
    );
    // Rows that share their keys, then one that repeats a key.
    assert!(json("[{'a': 1, 'b': 2}, {'a': 3, 'b': 4}]").is_some());
    assert_eq!(json("[{'a': 1, 'b': 2}, {'a': 3, 'a': 4}]"), None);
    // Many keys: the hash set's side.
    let many: Vec<String> = (0..40).map(|i| format!("'k{i}': {i}")).collect();
    let text = format!("{{{}}}", many.join(", "));
    assert!(json(&text).is_some());
    let text = format!("{{{}, 'k7': 0}}", many.join(", "));
    assert_eq!(json(&text), None);
    // Sets, and dict-like texts that are not dicts.
    assert_eq!(json("{'a', 'b'}"), None);
    assert_eq!(json("{'a': }"), None);
}

#[test]
fn booleans_and_none_are_the_words() {
    assert_eq!(
        json("[True, False, None]").as_deref(),
        Some("[true,false,null]")
    );
    for text in [
        "[true]",
        "[TRUE]",
        "[Truex]",
        "[Non]",
        "[null]",
        "[Ellipsis]",
        "[...]",
    ] {
        assert_eq!(json(text), None, "{text}");
    }
}

#[test]
fn ints_of_any_size_in_one_spelling() {
    let big = format!("['a', {}]", "9".repeat(5000));
    assert_eq!(json(&big), Some(format!("[\"a\",{}]", "9".repeat(5000))));
    assert_eq!(json("['a', 0, -1, 10]").as_deref(), Some("[\"a\",0,-1,10]"));
    for text in [
        "['a', -0]",
        "['a', 01]",
        "['a', 1_000]",
        "['a', +1]",
        "['a', 0x10]",
        "['a', -]",
    ] {
        assert_eq!(json(text), None, "{text}");
    }
}

#[test]
fn floats_in_their_shortest_spelling() {
    for (text, ok) in [
        ("0.0", true),
        ("-0.0", true),
        ("1.0", true),
        ("0.1", true),
        ("1.5", true),
        ("0.0001", true),
        ("1e-05", true),
        ("1.5e-07", true),
        ("1000000000000000.0", true),
        ("1e+16", true),
        ("1.2345678901234567e+19", true),
        ("1.7976931348623157e+308", true),
        ("5e-324", true),
        ("0.30000000000000004", true),
        ("123456789.123", true),
        // Not repr's.
        ("1.", false),
        ("1.00", false),
        ("0.10", false),
        ("1e16", false),
        ("1e+5", false),
        ("1E+16", false),
        ("10000000000000000.0", false),
        ("0.00001", false),
        ("1.0e-05", false),
        ("0.1000000000000000055511151231257827", false),
        ("1e+400", false),
        ("inf", false),
        ("nan", false),
        ("-inf", false),
        (".5", false),
    ] {
        let text = format!("['a', {text}]");
        assert_eq!(json(&text).is_some(), ok, "{text}");
    }
}

#[test]
fn repr_float_writes_pythons_forms() {
    for (x, want) in [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (1e-4, "0.0001"),
        (1e-5, "1e-05"),
        (123.456, "123.456"),
        (1.5e300, "1.5e+300"),
        (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
        // A tie between two shortest spellings: CPython takes the even one.
        (7000002000000783e-1, "700000200000078.2"),
        (-7000002000000783e-1, "-700000200000078.2"),
        (700_000_200_000_078.0 + 0.75, "700000200000078.8"),
    ] {
        let mut out = String::new();
        repr_float(x, &mut out);
        assert_eq!(out, want);
    }
}

#[test]
fn strings_choose_their_quote_as_repr_does() {
    assert_eq!(json("['a']").as_deref(), Some("[\"a\"]"));
    assert_eq!(json("[\"it's\"]"), None, "valid JSON: JSON reads it");
    assert_eq!(json("[\"it's\", None]").as_deref(), Some("[\"it's\",null]"));
    assert_eq!(
        json("['say \"hi\"']").as_deref(),
        Some("[\"say \\\"hi\\\"\"]")
    );
    assert_eq!(
        json("['it\\'s \"x\"']").as_deref(),
        Some("[\"it's \\\"x\\\"\"]")
    );
    // A quote repr would not have picked.
    assert_eq!(json("[\"a\", None]"), None);
    assert_eq!(json("['it\\'s']"), None);
    assert_eq!(json("[\"it's \\\"x\\\"\", None]"), None);
    assert_eq!(json("['say \\\"hi\\\"']"), None);
}

#[test]
fn escapes_only_where_repr_writes_them() {
    let cases = [
        ("['a\\nb\\tc\\rd\\\\e']", Some("[\"a\\nb\\tc\\rd\\\\e\"]")),
        (
            "['\\x00\\x1f\\x7f\\x80\\xa0\\xad']",
            Some("[\"\\u0000\\u001f\\u007f\\u0080\\u00a0\\u00ad\"]"),
        ),
        ("['\\x08\\x0c']", Some("[\"\\b\\f\"]")),
        (
            "['\\u200b\\u2028\\ufeff']",
            Some("[\"\\u200b\\u2028\\ufeff\"]"),
        ),
        ("['\\U000e0001']", Some("[\"\\udb40\\udc01\"]")),
        ("['é中😀']", Some("[\"é中😀\"]")),
        // Printable characters are not escaped.
        ("['\\x41']", None),
        ("['\\xe9']", None),
        ("['\\u4e2d']", None),
        ("['\\U0001f600']", None),
        // Each character's own form, lowercase hex.
        ("['\\x0A']", None),
        ("['\\x0a']", None),
        ("['\\x09']", None),
        ("['\\u0000']", None),
        ("['\\U0000200b']", None),
        ("['\\u200B']", None),
        // Surrogates: no JSON counterpart.
        ("['\\ud800']", None),
        ("['\\ud83d\\ude00']", None),
        // Escapes repr never writes.
        ("['\\a']", None),
        ("['\\0']", None),
        ("['\\N{BULLET}']", None),
        ("['\\\n']", None),
        ("['\\\"']", None),
        ("['\\z']", None),
        // Raw characters repr would escape.
        ("['a\nb']", None),
        ("['\u{7f}']", None),
        ("['\u{a0}']", None),
        ("['\u{200b}']", None),
        ("['\u{e0001}']", None),
    ];
    for (text, want) in cases {
        assert_eq!(json(text).as_deref(), want, "{text}");
    }
}

#[test]
fn other_python_reprs_are_refused() {
    for text in [
        "[datetime.date(2024, 1, 2)]",
        "[Decimal('1.5')]",
        "[b'abc']",
        "[nan]",
        "[inf]",
        "[<object at 0x7f>]",
        "[{'a': 1}, set()]",
        "[u'a']",
        "[r'a']",
        "[f'a']",
        "['a' 'b']",
        "[1j]",
        "[frozenset({1})]",
    ] {
        assert_eq!(json(text), None, "{text}");
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = |n: usize| format!("{}'a'{}", "[".repeat(n), "]".repeat(n));
    assert!(json(&deep(MAX_DEPTH)).is_some());
    assert_eq!(json(&deep(MAX_DEPTH + 1)), None);
    // A megabyte of brackets is refused at the bound, not at the end.
    assert_eq!(json(&"(".repeat(1 << 20)), None);
}

#[test]
fn the_json_parses_to_what_the_literal_holds() {
    let text = "[{'k': 'v\\x00', 'n': 12345678901234567890123, 'f': 2.5e-07, 't': (1,)}]";
    let out = json(text).unwrap();
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value[0]["k"], "v\u{0}");
    assert_eq!(value[0]["t"], serde_json::json!([1]));
    assert_eq!(value[0]["n"].to_string(), "12345678901234567890123");
    assert_eq!(value[0]["f"].to_string(), "2.5e-07");
}
