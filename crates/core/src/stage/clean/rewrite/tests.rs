// A failed unwrap or panic here is a failed test, which is what it is for.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::{rewrite, Rewritten};

fn run(text: &str, drop_nulls: bool) -> Rewritten {
    rewrite(text, drop_nulls, &mut |_| None).unwrap()
}

#[test]
fn writes_compact_and_keeps_every_token() {
    let text = " {\n  \"z\" : [ 1.50 , 1e400 , -0 , 1E+2 , true , null ],\n\t\"a\":{ },\"e\" :[ ] ,\"s\": \"a  b \\u00e9\\/\" } \n";
    let out = run(text, false);
    assert_eq!(
        out.text,
        "{\"z\":[1.50,1e400,-0,1E+2,true,null],\"a\":{},\"e\":[],\"s\":\"a  b \\u00e9\\/\"}"
    );
    assert_eq!((out.nulls_removed, out.nulls_saved), (0, 0));
}

#[test]
fn top_level_scalars_and_strings() {
    assert_eq!(
        run(" 12345678901234567890123 ", false).text,
        "12345678901234567890123"
    );
    assert_eq!(run("\"x\"", false).text, "\"x\"");
    assert_eq!(
        run("null", true).text,
        "null",
        "a top-level null is a value"
    );
}

#[test]
fn removes_null_members_at_every_depth_keeping_order() {
    let text = r#"{"z":1,"a":null,"m":{"q":null,"b":[null,{"c":null,"d":2}]},"e":null}"#;
    let out = run(text, true);
    assert_eq!(out.text, r#"{"z":1,"m":{"b":[null,{"d":2}]}}"#);
    assert_eq!(out.nulls_removed, 4);
    assert_eq!(out.nulls_saved, text.len() - out.text.len(), "exact");
}

#[test]
fn null_accounting_is_exact_wherever_the_member_sits() {
    for text in [
        r#"{"a":null,"b":1}"#,
        r#"{"a":1,"b":null}"#,
        r#"{"a":null}"#,
        r#"{"a":null,"b":null,"c":[{"x\"y":null}]}"#,
        r#"[{"a":null},{"b":null,"c":2},{"d":3,"e":null,"f":4}]"#,
    ] {
        let out = run(text, true);
        assert_eq!(out.nulls_saved, text.len() - out.text.len(), "{text}");
    }
    assert_eq!(run(r#"{"a":null,"b":null}"#, true).text, "{}");
}

#[test]
fn duplicate_keys_survive() {
    let text = "{\"a\": 1, \"a\": null, \"a\": 2}";
    assert_eq!(run(text, false).text, "{\"a\":1,\"a\":null,\"a\":2}");
    assert_eq!(run(text, true).text, "{\"a\":1,\"a\":2}");
}

#[test]
fn strings_get_their_key_and_only_values_are_offered() {
    let text = r#"{"k1":"v1","k\n2":["v2",{"k3":"v3"}],"k4":{"k5":"v5"}}"#;
    let mut seen = Vec::new();
    let out = rewrite(text, false, &mut |s| {
        seen.push((
            s.value.to_string(),
            s.key.map(str::to_string),
            s.literal_len,
        ));
        Some(s.value.to_uppercase())
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            ("v1".to_string(), Some("k1".to_string()), 4),
            ("v2".to_string(), Some("k\n2".to_string()), 4),
            ("v3".to_string(), Some("k3".to_string()), 4),
            ("v5".to_string(), Some("k5".to_string()), 4),
        ]
    );
    assert_eq!(
        out.text,
        r#"{"k1":"V1","k\n2":["V2",{"k3":"V3"}],"k4":{"k5":"V5"}}"#
    );
}

#[test]
fn an_array_string_after_an_inner_object_has_the_outer_key_again() {
    // Arrays keep no key of their own (issue 13: a byte a level): a string
    // in one has the key of the nearest open object, here the member
    // holding the array once the inner object has closed.
    let text = r#"[{"x":"a"},"b",{"k":[[{"y":"c"}],"d"]},"e"]"#;
    let mut seen = Vec::new();
    rewrite(text, false, &mut |s| {
        seen.push((s.value.to_string(), s.key.map(str::to_string), s.key_at));
        None
    })
    .unwrap();
    let at = |k: &str| text.find(&format!("\"{k}\""));
    let key = |k: &str| Some(k.to_string());
    assert_eq!(
        seen,
        [
            ("a".to_string(), key("x"), at("x")),
            ("b".to_string(), None, None),
            ("c".to_string(), key("y"), at("y")),
            ("d".to_string(), key("k"), at("k")),
            ("e".to_string(), None, None),
        ]
    );
}

#[test]
fn replaced_strings_are_escaped() {
    let out = rewrite("[\"a\"]", false, &mut |_| Some("q\"\n\\é".to_string())).unwrap();
    assert_eq!(out.text, "[\"q\\\"\\n\\\\é\"]");
}

#[test]
fn deep_nesting_needs_no_recursion() {
    let depth = 100_000;
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(run(&text, true).text, text);
}

#[test]
fn broken_input_gives_none() {
    for text in ["[1,", "{\"a\" 1}", "\"open", "]", "{\"a\":1", "{\"a\":}"] {
        assert!(rewrite(text, true, &mut |_| None).is_none(), "{text}");
    }
}

mod properties {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::super::rewrite;
    use crate::json::same_value;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,5})?([eE][+-]?[0-9]{1,3})?"
                .prop_map(|n| serde_json::from_str::<Value>(&n).unwrap()),
            "[ a-z\"\\\\\\n\\t\\u{e9}\\u{1F600}\\u{1}]{0,12}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\" ]{0,4}", inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    fn without_null_members(v: &Value) -> Value {
        match v {
            Value::Array(a) => Value::Array(a.iter().map(without_null_members).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .filter(|(_, x)| !x.is_null())
                    .map(|(k, x)| (k.clone(), without_null_members(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    proptest! {
        #[test]
        fn compact_output_is_the_same_value(v in value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            let out = rewrite(&text, false, &mut |_| None).unwrap();
            prop_assert_eq!(&out.text, &serde_json::to_string(&v).unwrap());
            let dropped = rewrite(&text, true, &mut |_| None).unwrap();
            let back: Value = serde_json::from_str(&dropped.text).unwrap();
            prop_assert!(same_value(&back, &without_null_members(&v)));
            prop_assert_eq!(dropped.nulls_saved, out.text.len() - dropped.text.len());
        }
    }
}

#[test]
fn nested_arrays_share_their_member_key() {
    // An escaped key is decoded once and shared by every array below it
    // (issue 13: copying it at each `[` cost depth × key length).
    let key = format!("k\\n{}", "x".repeat(1000));
    let depth = 500;
    let text = format!(
        "{{\"{key}\":{}\"a\",\"b\"{},\"other\":[\"c\"]}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let mut seen = Vec::new();
    rewrite(&text, false, &mut |s| {
        seen.push((s.value.to_string(), s.key.map(str::len), s.key_at));
        None
    })
    .unwrap();
    let first_at = text.find('"');
    let other_at = text.find("\"other\"");
    assert_eq!(
        seen,
        [
            ("a".to_string(), Some(1002), first_at),
            ("b".to_string(), Some(1002), first_at),
            ("c".to_string(), Some(5), other_at),
        ]
    );
}
