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

// --- the metered evaluator ---------------------------------------------------------

/// `to_array(@)|to_string(@)` `k` times (issue 37): each step escapes the
/// previous text again, so its output doubles or more.
fn doubling(k: usize) -> String {
    vec!["to_array(@)|to_string(@)"; k].join("|")
}

/// About `n` bytes of rows whose strings carry quotes and backslashes.
fn rows(n: usize) -> String {
    let mut rows = Vec::new();
    let mut size = 2;
    let mut i = 0;
    while size < n {
        let row = serde_json::json!({"id": i, "name": format!("user \"{i}\" \\ x"), "email": format!("u{i}@example.com"), "active": i % 2 == 0});
        size += row.to_string().len() + 1;
        rows.push(row);
        i += 1;
    }
    serde_json::Value::Array(rows).to_string()
}

#[test]
fn the_doubling_chain_is_refused_before_it_runs_and_stopped_when_it_runs() {
    let text = rows(4096);
    // The static bound prices `to_string` by what it writes: 6^k.
    assert!(Query::parse(&doubling(1), 1024).is_ok());
    for k in [2, 12, 24] {
        let r = Query::parse(&doubling(k), 1024).unwrap_err();
        assert_eq!(r.reason, Reason::QueryTooComplex, "{k}");
    }
    // Past the bound, the meter stops it: the budget is never passed.
    let budget = QueryBudget::default();
    for k in [12, 16, 20, 24] {
        let q = Query::parse_unbounded(&doubling(k), 1024).unwrap();
        let (r, spent) = q.run(&text, &budget);
        let r = r.unwrap_err();
        assert_eq!(r.reason, Reason::QueryBudget, "{k}: {r:?}");
        assert!(r.detail.contains("memory"), "{r:?}");
        assert!(spent.memory <= budget.memory(text.len()), "{k}: {spent:?}");
        assert!(spent.work <= budget.work(text.len()), "{k}: {spent:?}");
    }
    // Where it fits, the chain gives the crate's answer.
    let q = Query::parse_unbounded(&doubling(3), 1024).unwrap();
    let big = QueryBudget {
        memory_per_byte: 64,
        ..budget
    };
    assert_eq!(
        q.apply_within(&text, &big).unwrap_err().reason,
        Reason::QueryLarger
    );
    let q = Query::parse_unbounded("to_string(@)", 1024).unwrap();
    let short = r#"[{"a":"x\"y"}]"#;
    assert_eq!(
        q.apply_within(short, &budget).unwrap_err().reason,
        Reason::QueryLarger
    );
    let q = Query::parse_unbounded("to_string([0].a)", 1024).unwrap();
    assert_eq!(q.apply_within(short, &budget).unwrap(), r#""x\"y""#);
}

#[test]
fn work_and_memory_stop_at_their_limits() {
    let text = rows(64 * 1024);
    let exactly = |work, memory| QueryBudget {
        work_per_byte: 0,
        work_floor: work,
        memory_per_byte: 0,
        memory_floor: memory,
    };
    for q in [
        "sort_by(@, &name)[*].id",
        "[*].{a: name, b: email, c: [id, name, email]}",
        "[?active].to_string(@)",
        "max_by(@, &email).name",
    ] {
        let query = Query::parse(q, 1024).unwrap();
        let (r, spent) = query.run(&text, &exactly(u64::MAX, u64::MAX));
        let want = r.map(|s| s.len()).map_err(|e| e.reason);
        assert!(spent.work > 0 && spent.memory > 0, "{q}: {spent:?}");
        // At its limits, the query runs as without them; one unit or byte
        // under either, it stops, naming which.
        let (r, at) = query.run(&text, &exactly(spent.work, spent.memory));
        assert_eq!(
            (r.map(|s| s.len()).map_err(|e| e.reason), at),
            (want, spent),
            "{q}"
        );
        let (r, under) = query.run(&text, &exactly(spent.work - 1, spent.memory));
        let r = r.unwrap_err();
        assert_eq!(r.reason, Reason::QueryBudget, "{q}");
        assert!(r.detail.contains("units of work"), "{q}: {r:?}");
        assert!(under.work < spent.work, "{q}: {under:?}");
        let (r, under) = query.run(&text, &exactly(spent.work, spent.memory - 1));
        let r = r.unwrap_err();
        assert_eq!(r.reason, Reason::QueryBudget, "{q}");
        assert!(r.detail.contains("bytes of memory"), "{q}: {r:?}");
        assert!(under.memory < spent.memory, "{q}: {under:?}");
        // The detail is one line within the note's length.
        assert!(!r.detail.contains('\n') && r.detail.chars().count() <= 160);
    }
}

#[test]
fn hostile_shapes_stay_within_the_budget() {
    let text = rows(64 * 1024);
    let budget = QueryBudget::default();
    let (max_work, max_memory) = (budget.work(text.len()), budget.memory(text.len()));
    for q in [
        // A wide multi-select of the whole input, flattened: shared, but
        // every flatten copies its elements.
        "[@,@,@,@,@,@,@,@][][] | [@,@,@,@,@,@,@,@][][] | [@,@,@,@,@,@,@,@][][]",
        // Deep equality of values made of shared parts.
        "[@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@] | @ == [@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@]",
        "sort_by([@,@,@,@][], &name)",
        "sort([@,@,@,@,@,@,@,@][][*].name)",
        "max_by([@,@,@,@][], &to_string(@))",
        "contains([@,@] | [@,@] | [@,@] | [@,@], `1`)",
        "join(',', [@,@,@,@][][*].to_string(@))",
        "length(to_string([@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@]))",
        "map(&to_string(@), [@,@,@,@][])",
    ] {
        let query = Query::parse_unbounded(q, 1024).unwrap();
        let (r, spent) = query.run(&text, &budget);
        assert!(
            spent.work <= max_work && spent.memory <= max_memory,
            "{q}: {spent:?} {r:?}"
        );
        // Where it finished, it answered as the crate does.
        if !matches!(&r, Err(e) if e.reason == Reason::QueryBudget) {
            assert_eq!(
                r.as_ref().map_err(|e| e.reason),
                query.reference(&text).as_ref().map_err(|e| e.reason),
                "{q}"
            );
        }
    }
}

#[test]
fn a_slice_step_near_two_to_the_31_ends_the_slice() {
    // The crate's i32 index overflows here and indexes out of bounds (a
    // panic: a trapped VM).
    assert_eq!(
        run("entities[1::2147483647].name").unwrap(),
        r#"["Analytical Engine"]"#
    );
    assert_eq!(
        run("entities[::-2147483647].name").unwrap(),
        r#"["Babbage"]"#
    );
    assert_eq!(
        run("entities[-2147483647:2147483647:2147483647].name").unwrap(),
        r#"["Ada"]"#
    );
}

#[test]
fn a_query_argument_that_is_no_string_gets_the_note() {
    for kind in ["a number", "an object", "null"] {
        let r =
            Query::parse(&format!("{}{kind}", crate::mcp::QUERY_NOT_A_STRING), 1024).unwrap_err();
        assert_eq!(r.reason, Reason::QueryInvalid);
        assert!(
            r.detail.ends_with(&format!(
                "must be a string holding a JMESPath expression, not {kind}"
            )),
            "{r:?}"
        );
    }
}

/// Expressions from a small grammar that reaches every node and function,
/// over the field names the data uses.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("@".to_string()),
        prop::sample::select(vec!["a", "b", "c", "name", "n", "\"a\"", "a.b", "*"])
            .prop_map(str::to_string),
        prop::sample::select(vec![
            "`1`",
            "`-2.5`",
            "`\"x\"`",
            "'y'",
            "`[1, 2]`",
            "`{\"a\": 1}`",
            "`null`",
            "`true`",
            "`1e400`",
            "`\"a\\\"b\"`",
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            "[0]",
            "[-1]",
            "[1:]",
            "[::-1]",
            "[::2]",
            "[-2:10:1]",
            "[5]",
            "[]",
            "[*]",
            "*"
        ])
        .prop_map(|s| format!("@{s}")),
    ];
    leaf.prop_recursive(4, 40, 3, |inner| {
        let one = inner.clone();
        let two = (inner.clone(), inner.clone());
        prop_oneof![
            two.clone().prop_map(|(x, y)| format!(
                "({x}).{}",
                if y.starts_with('(')
                    || y.starts_with('`')
                    || y.starts_with('\'')
                    || y.starts_with('@')
                {
                    "a".to_string()
                } else {
                    y
                }
            )),
            two.clone().prop_map(|(x, y)| format!("({x}) | ({y})")),
            two.clone().prop_map(|(x, y)| format!(
                "({x})[*].{}",
                if y.chars().next().is_some_and(char::is_alphabetic) {
                    y
                } else {
                    "n".to_string()
                }
            )),
            two.clone().prop_map(|(x, y)| format!("({x})[?({y})]")),
            (
                inner.clone(),
                inner.clone(),
                prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="])
            )
                .prop_map(|(x, y, op)| format!("({x}) {op} ({y})")),
            two.clone().prop_map(|(x, y)| format!("({x}) && ({y})")),
            two.clone().prop_map(|(x, y)| format!("({x}) || ({y})")),
            one.clone().prop_map(|x| format!("!({x})")),
            one.clone().prop_map(|x| format!("({x})[]")),
            one.clone().prop_map(|x| format!("({x}).*")),
            two.clone().prop_map(|(x, y)| format!("[({x}), ({y})]")),
            two.clone()
                .prop_map(|(x, y)| format!("{{a: ({x}), b: ({y}), a: ({x})}}")),
            two.clone().prop_map(|(x, y)| format!("&({x}) == &({y})")),
            (
                prop::sample::select(vec![
                    "abs",
                    "avg",
                    "ceil",
                    "floor",
                    "keys",
                    "length",
                    "max",
                    "min",
                    "not_null",
                    "reverse",
                    "sort",
                    "sum",
                    "to_array",
                    "to_number",
                    "to_string",
                    "type",
                    "values",
                ]),
                one.clone()
            )
                .prop_map(|(f, x)| format!("{f}({x})")),
            (
                prop::sample::select(vec![
                    "contains",
                    "ends_with",
                    "starts_with",
                    "merge",
                    "not_null",
                    "max",
                    "join"
                ]),
                two.clone()
            )
                .prop_map(|(f, (x, y))| if f == "join" {
                    format!("join(', ', {x})")
                } else {
                    format!("{f}({x}, {y})")
                }),
            (
                prop::sample::select(vec!["sort_by", "max_by", "min_by"]),
                two.clone()
            )
                .prop_map(|(f, (x, y))| format!("{f}({x}, &{y})")),
            two.clone().prop_map(|(x, y)| format!("map(&{y}, {x})")),
            one.clone().prop_map(|x| format!("to_array(&{x})")),
        ]
    })
}

/// JSON values over the same field names, numbers of several spellings.
fn data() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop::sample::select(vec![
            "0",
            "1",
            "-3",
            "2.50",
            "1e2",
            "-0",
            "12345678901234567890123",
            "0.1"
        ])
        .prop_map(|n| serde_json::from_str::<Value>(n).unwrap()),
        prop::sample::select(vec!["", "x", "y", "a\"b", "ümlaut", "a", "\u{1}"])
            .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec!["a", "b", "c", "name", "n"]),
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// The metered evaluator answers as the crate's interpreter, whatever
    /// the query and data: the same value, or an error where it errs (the
    /// same error, but for the argument-less `Parse` ones the crate raises
    /// where its own checks cannot fail).
    #[test]
    fn the_evaluator_answers_as_the_crate(q in expression(), v in data()) {
        if let Ok(query) = Query::parse_unbounded(&q, 4096) {
            let data = Rc::new(variable(v));
            let mut ev = eval::evaluator(Meter::new(u64::MAX, u64::MAX), Context::new(&query.text, &functions::NO_FUNCTIONS));
            let ours = ev.eval(&data, &query.ast);
            let mut ctx = Context::new(&query.text, &functions::REFERENCE);
            let theirs = jmespath::interpret(&data, &query.ast, &mut ctx);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => prop_assert_eq!(
                    serde_json::to_string(&**a).unwrap(),
                    serde_json::to_string(&**b).unwrap(),
                    "{}", q
                ),
                (Err(Fault::Error(a)), Err(b)) => prop_assert_eq!(a.to_string(), b.reason.to_string(), "{}", q),
                _ => prop_assert!(false, "{}: ours {:?}, the crate's {:?}", q, ours, theirs),
            }
        }
    }

    /// Through [`Query::apply_within`] too: the answer, or the reason.
    #[test]
    fn applied_queries_answer_as_the_crate(q in expression(), v in data()) {
        let text = v.to_string();
        if let Ok(query) = Query::parse_unbounded(&q, 4096) {
            let ours = query.apply_within(&text, &QueryBudget::default());
            let theirs = query.reference(&text);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{}", q),
                (Err(a), Err(b)) => prop_assert_eq!(a.reason, b.reason, "{}: {:?} {:?}", q, a, b),
                _ => prop_assert!(false, "{}: ours {:?}, the crate's {:?}", q, ours, theirs),
            }
        }
    }

    /// The JSON writer writes what serde_json writes for a value.
    #[test]
    fn the_writer_writes_what_serde_json_writes(v in data()) {
        let var = variable(v);
        let mut out = Vec::new();
        value::write_json(&var, &mut out).unwrap();
        prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&var).unwrap());
    }
}

#[test]
fn sort_orders_numbers_beyond_f64_as_infinities() {
    // The crate's own sort panics on this array (its order says 1e400
    // equals every number, no total order): a trapped VM.
    let text = "[2,1e400,1,-1e400,0,1e400,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23]";
    let q = |q: &str| Query::parse(q, 1024).unwrap().apply(text);
    assert_eq!(q("sort(@)[:3]").unwrap(), "[-1e+400,0,1]");
    assert_eq!(q("sort(@)[-3:]").unwrap(), "[23,1e+400,1e+400]");
    assert_eq!(q("sort_by(@, &@)[:2]").unwrap(), "[-1e+400,0]");
}

#[test]
fn equality_is_the_crates_down_to_shared_values() {
    // A number beyond f64 equals nothing, but for the same value met
    // inside an array or object (Rc's equality looks at the pointer).
    let text = r#"{"n": 1e400, "m": 1e400, "pad": "a string to make the block longer"}"#;
    let q = |q: &str| Query::parse(q, 1024).unwrap().apply(text).unwrap();
    assert_eq!(
        q("[n == n, [n] == [n], [n] == [m], n == `1e400`]"),
        "[false,true,false,false]"
    );
    assert_eq!(q("[contains([n], n), contains([m], n)]"), "[true,false]");
}
