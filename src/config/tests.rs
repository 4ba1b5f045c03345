// Tests fail loudly: unwrap and friends are the point here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

#[test]
fn hold_headers_defaults_to_false() {
    let settings = Settings::from_json("{}").unwrap();
    assert!(!settings.hold_headers);
    assert!(!Settings::default().hold_headers);
}

#[test]
fn hold_headers_accepts_a_boolean() {
    let on = Settings::from_json(r#"{"hold_headers": true}"#).unwrap();
    assert!(on.hold_headers);
    let off = Settings::from_json(r#"{"hold_headers": false}"#).unwrap();
    assert!(!off.hold_headers);
}

#[test]
fn hold_headers_refuses_anything_else_naming_the_field() {
    for bad in [r#""yes""#, "1", "[]"] {
        let err = Settings::from_json(&format!(r#"{{"hold_headers": {bad}}}"#)).unwrap_err();
        assert_eq!(err.field, "hold_headers", "{bad}: {err}");
        assert!(err.message.contains("boolean"), "{bad}: {err}");
        assert!(
            err.to_string()
                .starts_with("mcp-toon configuration: hold_headers: "),
            "{err}"
        );
    }
}
