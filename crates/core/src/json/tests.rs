use serde_json::Value;

use super::*;

fn v(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn decimal_equality_is_exact() {
    let eq = |a: &str, b: &str| Decimal::parse(a) == Decimal::parse(b);
    assert!(eq("1.50", "1.5"));
    assert!(eq("1e2", "100"));
    assert!(eq("100E-2", "1"));
    assert!(eq("0.000", "0"));
    assert!(eq("12345678901234567890123", "1.2345678901234567890123e22"));
    assert!(!eq("12345678901234567890123", "12345678901234567000000"));
    assert!(!eq("-0", "0"));
    assert!(!eq("0.1", "0.10000000000000001"));
    assert!(Decimal::parse("1e99999999999999999999").is_none());
    for bad in ["", "-", "01", "1.", ".5", "1e", "+1", "1e+", "0x10", "1 "] {
        assert!(Decimal::parse(bad).is_none(), "{bad}");
    }
}

#[test]
fn same_value_compares_key_order_and_exact_numbers() {
    assert!(same_value(
        &v(r#"{"a":1.0,"b":[1,"x",null]}"#),
        &v(r#"{"a":1,"b":[1,"x",null]}"#)
    ));
    assert!(!same_value(&v(r#"{"a":1,"b":2}"#), &v(r#"{"b":2,"a":1}"#)));
    assert!(!same_value(
        &v("18446744073709551617"),
        &v("18446744073709551616")
    ));
    assert!(!same_value(&v(r#""1""#), &v("1")));
    assert!(!same_value(&v("[1,2]"), &v("[1,2,3]")));
}

#[test]
fn numbers_keep_their_spelling() {
    // arbitrary_precision: digits survive a parse and re-emit exactly; only
    // the exponent marker is normalised (`E` → `e`, explicit `+`), which is
    // why byte-exact rewrites splice spans instead of re-serialising.
    let text = r#"[1.50,1e400,1E5,-0.0,123456789012345678901234567890]"#;
    assert_eq!(
        v(text).to_string(),
        r#"[1.50,1e+400,1e+5,-0.0,123456789012345678901234567890]"#
    );
}

#[test]
fn strict_parse_refuses_duplicates_at_any_depth() {
    assert_eq!(
        parse_strict(r#"{"a":1,"a":2}"#),
        Err(StrictError::DuplicateKey)
    );
    assert_eq!(
        parse_strict(r#"[{"x":{"b":1,"b":1}}]"#),
        Err(StrictError::DuplicateKey)
    );
    assert_eq!(parse_strict(r#"{"a":1,"b":{"a":1}}"#).map(|_| ()), Ok(()));
    assert_eq!(parse_strict(r#"{"n":1.5e3,"m":[1,2]}"#).map(|_| ()), Ok(()));
    assert_eq!(parse_strict("[1,]"), Err(StrictError::Syntax));
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert_eq!(parse_strict(&deep), Err(StrictError::Syntax));
}
