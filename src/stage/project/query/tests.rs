// A failed unwrap here is a failed test.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

const GRAPH: &str = r#"{"entities": [
  {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["wrote the first program", "born 1815"], "score": 1.50e3},
  {"type": "entity", "name": "Analytical Engine", "entityType": "machine", "observations": ["designed by Babbage"], "score": 12345678901234567890123},
  {"type": "entity", "name": "Babbage", "entityType": "person", "observations": [], "score": -0}
], "relations": [{"type": "relation", "from": "Ada", "to": "Analytical Engine", "relationType": "programmed"}]}"#;

fn run(q: &str) -> Result<String, Refusal> {
    Query::parse(q, 1024)?.apply(GRAPH)
}

fn reason(q: &str) -> Reason {
    match run(q) {
        Ok(out) => panic!("{q} gave {out}"),
        Err(r) => r.reason,
    }
}

#[test]
fn projects_filters_and_keeps_number_spellings() {
    assert_eq!(
        run("entities[?entityType=='person'].name").unwrap(),
        r#"["Ada","Babbage"]"#
    );
    assert_eq!(
        run("entities[*].score").unwrap(),
        r#"[1.50e+3,12345678901234567890123,-0]"#
    );
    // Objects come out with their keys in the crate's (sorted) order.
    assert_eq!(
        run("entities[0].{type: entityType, name: name}").unwrap(),
        r#"{"name":"Ada","type":"person"}"#
    );
    assert_eq!(run("length(entities)").unwrap(), "3");
}

#[test]
fn number_literals_and_to_number_are_numbers() {
    // With serde_json's arbitrary_precision the crate would see `1000` as
    // a map and compare nothing.
    assert_eq!(
        run("entities[?score > `1000`].name").unwrap(),
        r#"["Ada","Analytical Engine"]"#
    );
    assert_eq!(
        run("entities[?score == `1500`].name").unwrap(),
        r#"["Ada"]"#
    );
    assert_eq!(run("to_number('42.50')").unwrap(), "42.50");
    assert_eq!(
        run("[to_number('x'), `[1, {\"a\": 2.0}]`]").unwrap(),
        r#"[null,[1,{"a":2.0}]]"#
    );
}

#[test]
fn refusals_name_their_reason() {
    assert_eq!(reason("entities[?"), Reason::QueryInvalid);
    assert_eq!(reason("nope(@)"), Reason::QueryInvalid);
    assert_eq!(reason("length(`1`)"), Reason::QueryError);
    assert_eq!(reason("missing"), Reason::QueryEmpty);
    assert_eq!(reason("entities[?entityType=='robot']"), Reason::QueryEmpty);
    let compact = r#"{"a":[1,2,3]}"#;
    for q in ["@", "[@, @]", "a"] {
        let r = Query::parse(q, 1024).unwrap().apply(compact);
        if q == "a" {
            assert_eq!(r.unwrap(), "[1,2,3]");
        } else {
            assert_eq!(r.unwrap_err().reason, Reason::QueryLarger, "{q}");
        }
    }
    assert_eq!(
        Query::parse("a", 1024)
            .unwrap()
            .apply("{oops")
            .unwrap_err()
            .reason,
        Reason::NotJson
    );
    // A key twice, at any depth: no answer picks one of its values.
    for text in [
        r#"{"a":[1],"a":[2,3,4,5]}"#,
        r#"{"b":{"c":1,"c":2},"a":[1,2,3]}"#,
    ] {
        let r = Query::parse("a", 1024).unwrap().apply(text);
        assert_eq!(r.unwrap_err().reason, Reason::DuplicateKeys, "{text}");
    }
    // The detail is one short line.
    let r = run("entities[?").unwrap_err();
    assert!(
        !r.detail.contains('\n') && r.detail.len() <= 4 * 160,
        "{r:?}"
    );
}

#[test]
fn limits_are_checked_before_running() {
    let long = format!("entities[?name=='{}'].name", "x".repeat(1100));
    assert_eq!(
        Query::parse(&long, 1024).unwrap_err().reason,
        Reason::QueryInvalid
    );
    let deep = format!("{}@{}", "[".repeat(17), "]".repeat(17));
    assert_eq!(
        Query::parse(&deep, 1024).unwrap_err().reason,
        Reason::QueryInvalid
    );
    // Prefix operators recurse in the crate's parser like brackets.
    let nots = format!("{}entities", "!".repeat(17));
    assert_eq!(
        Query::parse(&nots, 1024).unwrap_err().reason,
        Reason::QueryInvalid
    );
    assert!(Query::parse("!a && b != c && !(d == e)", 1024).is_ok());
    assert!(Query::parse("sort_by(entities, &name)", 1024).is_ok());
    // A long chain is deep in the tree, not in the parser: the cost walk
    // refuses it.
    let chain = vec!["a"; 300].join(".");
    assert_eq!(
        Query::parse(&chain, 1024).unwrap_err().reason,
        Reason::QueryTooComplex
    );
    // Each multi-select of two copies triples the bound: refused at 3^4.
    assert!(Query::parse("[@,@] | [@,@] | [@,@]", 1024).is_ok());
    assert_eq!(
        Query::parse("[@,@] | [@,@] | [@,@] | [@,@]", 1024)
            .unwrap_err()
            .reason,
        Reason::QueryTooComplex
    );
    assert_eq!(
        Query::parse("join(to_string(@), @)", 1024)
            .unwrap_err()
            .reason,
        Reason::QueryTooComplex
    );
    assert_eq!(
        Query::parse("join(', ', [*].name)", 1024)
            .unwrap()
            .cost()
            .unwrap()
            .size,
        5
    );
}

#[test]
fn typical_queries_are_within_the_limits() {
    for q in [
        "entities[?entityType=='person'].{name: name, observations: observations}",
        "items[*].{id: id, title: title, state: state, user: user.login, labels: labels[*].name, comments: comments, created_at: created_at, updated_at: updated_at}",
        "sort_by(items, &created_at)[-5:].{id: id, title: title}",
        "max_by(items, &to_number(price)).name",
        "items[?contains(tags, 'urgent') && !closed] | [0:10].id",
        "map(&{n: name, t: entityType}, entities)",
        "relations[*].[from, relationType, to]",
    ] {
        let c = Query::parse(q, 1024).map(|x| x.cost());
        assert!(matches!(c, Ok(Ok(_))), "{q}: {c:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Hostile expressions are input: none panics, whatever it is.
    #[test]
    fn arbitrary_expressions_never_panic(q in r"[a-z@*?&|!=<>.,:\[\]{}()`'0-9 \-]{0,40}") {
        if let Ok(query) = Query::parse(&q, 1024) {
            let _ = query.apply(GRAPH);
        }
    }
}
