use serde_json::{Map, Value};

use super::*;

fn how(level: Level) -> Compaction {
    Compaction {
        level,
        max_description_bytes: 40,
    }
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn light_drops_schema_noise_and_nothing_else() {
    let tool = r#"{ "name" : "t", "title":"T", "description":"One. Two.",
        "inputSchema": {"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
          "title":"In","properties":{"title":{"type":"string","title":"x","default":"a"},
          "description":{"type":"string","description":"kept at light","examples":["e"]}},
          "required":["title"],"additionalProperties":false,"$comment":"c"},
        "annotations":{"title":"Tee","readOnlyHint":true} }"#;
    let out = compact_tool(tool, how(Level::Light)).unwrap();
    assert_eq!(
        out,
        r#"{ "name" : "t", "title":"T", "description":"One. Two.",
        "inputSchema": {"type":"object","properties":{"title":{"type":"string"},
          "description":{"type":"string","description":"kept at light"}},
          "required":["title"]},
        "annotations":{"title":"Tee","readOnlyHint":true} }"#
    );
}

#[test]
fn medium_cuts_descriptions_and_output_annotations() {
    let tool = r#"{"name":"t","description":"Read a file. Only in allowed directories.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"Where"}},"required":["path"]},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","title":"O","properties":{"content":{"type":"string","description":"The text","default":""}},"required":["content"],"additionalProperties":false}}"#;
    let out = compact_tool(tool, how(Level::Medium)).unwrap();
    assert_eq!(
        out,
        r#"{"name":"t","description":"Read a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"outputSchema":{"type":"object","properties":{"content":{"type":"string","default":""}},"required":["content"],"additionalProperties":false}}"#
    );
    let high = compact_tool(
        r#"{"name":"t","description":"Create a new issue in a GitHub repository with labels and assignees"}"#,
        how(Level::High),
    )
    .unwrap();
    assert_eq!(
        high,
        r#"{"name":"t","description":"Create a new issue in a GitHub…"}"#
    );
}

#[test]
fn medium_drops_only_the_hints_no_client_reads_as_less_careful_when_absent() {
    let with = |a: &str| format!(r#"{{"name":"t","annotations":{a}}}"#);
    let cases = [
        // false by default, and false to a client that skips defaults.
        (
            r#"{"title":"T","readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}"#,
            Some(r#"{"title":"T","destructiveHint":true,"openWorldHint":true}"#),
        ),
        // destructiveHint and idempotentHint mean nothing beside
        // readOnlyHint: true.
        (
            r#"{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}"#,
            Some(r#"{"readOnlyHint":true,"openWorldHint":false}"#),
        ),
        // ... and without it, each says what its absence would not.
        (r#"{"destructiveHint":false}"#, None),
        (r#"{"idempotentHint":true,"destructiveHint":true}"#, None),
        (
            r#"{"readOnlyHint":false,"idempotentHint":true}"#,
            Some(r#"{"idempotentHint":true}"#),
        ),
        (r#"{"readOnlyHint":false}"#, Some("{}")),
        // A hint named twice: which one counts is the reader's, so nothing goes.
        (
            r#"{"readOnlyHint":true,"destructiveHint":false,"readOnlyHint":false}"#,
            None,
        ),
        (r#"{"idempotentHint":false,"idempotentHint":true}"#, None),
        // Not JSON booleans: they stay.
        (r#"{"readOnlyHint":"false","idempotentHint":0}"#, None),
        (r#"null"#, None),
    ];
    for (annotations, want) in cases {
        let tool = with(annotations);
        assert_eq!(compact_tool(&tool, how(Level::Light)), None, "{tool}");
        assert_eq!(
            compact_tool(&tool, how(Level::Medium)),
            want.map(with),
            "{tool}"
        );
    }
}

#[test]
fn medium_drops_a_title_that_repeats_the_name() {
    let tool = |name: &str, title: &str| format!(r#"{{"name":{name},"title":{title},"x":1}}"#);
    for (name, title, goes) in [
        (r#""create_entities""#, r#""Create Entities""#, true),
        (r#""sequentialthinking""#, r#""Sequential Thinking""#, true),
        (r#""get-env""#, r#""Print Environment Tool""#, false),
        (r#""read_file""#, r#""Read File (Deprecated)""#, false),
        (r#""x""#, r#""""#, false),
        (r#""café""#, r#""Café""#, true),
        (r#""caf\u00e9""#, r#""Caf\u00e9""#, true),
        (r#""été""#, r#""Été""#, false),
    ] {
        let t = tool(name, title);
        assert_eq!(compact_tool(&t, how(Level::Light)), None, "{t}");
        let want = goes.then(|| format!(r#"{{"name":{name},"x":1}}"#));
        assert_eq!(compact_tool(&t, how(Level::Medium)), want, "{t}");
    }
    // A tool with two names or two titles keeps them all.
    let twice = r#"{"name":"a_b","title":"A B","name":"c"}"#;
    assert_eq!(compact_tool(twice, how(Level::Medium)), None);
}

#[test]
fn the_dialect_stays_where_the_schema_depends_on_it() {
    let input = |schema: &str| format!(r#"{{"name":"t","inputSchema":{schema}}}"#);
    let kept = |schema: &str| {
        let out = compact_tool(&input(schema), how(Level::Light)).unwrap_or_else(|| input(schema));
        out.contains("$schema")
    };
    let d7 = r#""$schema":"http://json-schema.org/draft-07/schema#""#;
    let d2020 = r#""$schema":"https://json-schema.org/draft/2020-12/schema""#;
    assert!(!kept(&format!(r#"{{{d7},"type":"object"}}"#)));
    assert!(!kept(&format!(r#"{{"type":"object",{d2020}}}"#)));
    assert!(kept(&format!(
        r#"{{{d7},"type":"object","properties":{{"a":{{"type":"array","items":[{{"type":"string"}}]}}}}}}"#
    )));
    assert!(kept(&format!(
        r##"{{{d7},"type":"object","properties":{{"a":{{"$ref":"#/definitions/x"}}}}}}"##
    )));
    assert!(!kept(&format!(
        r##"{{{d2020},"type":"object","properties":{{"a":{{"$ref":"#/$defs/x"}}}},"$defs":{{"x":{{}}}}}}"##
    )));
    assert!(kept(
        r#"{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}"#
    ));
    assert!(kept(&format!(r#"{{{d7},"dependencies":{{"a":["b"]}}}}"#)));
    // A nested `$schema` (an embedded resource) is not the root's.
    assert!(kept(&format!(
        r#"{{"type":"object","properties":{{"a":{{{d7}}}}}}}"#
    )));
}

#[test]
fn definitions_nothing_refers_to_leave() {
    let tool = |schema: &str| format!(r#"{{"name":"t","inputSchema":{schema}}}"#);
    let light = |schema: &str| {
        compact_tool(&tool(schema), how(Level::Light)).map(|t| parse(&t)["inputSchema"].clone())
    };
    // `a` from a property, `b` from `a`, `c` from nowhere.
    let out = light(r##"{"$defs":{"a":{"$ref":"#/$defs/b"},"c":{"type":"string"},"b":{"type":"integer"}},"type":"object","properties":{"p":{"$ref":"#/$defs/a"}}}"##).unwrap();
    assert_eq!(
        out,
        parse(
            r##"{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"integer"}},"type":"object","properties":{"p":{"$ref":"#/$defs/a"}}}"##
        )
    );
    // Nothing refers to any: the map goes.
    let out = light(
        r#"{"type":"object","$defs":{"x":{"type":"string"}},"properties":{"p":{"type":"string"}}}"#,
    )
    .unwrap();
    assert_eq!(
        out,
        parse(r#"{"type":"object","properties":{"p":{"type":"string"}}}"#)
    );
    // Something the walk cannot resolve: every definition stays.
    for schema in [
        r##"{"$defs":{"x":{"$anchor":"x"},"y":{}},"properties":{"p":{"$ref":"#x"}}}"##,
        r##"{"$defs":{"a~b":{},"y":{}},"properties":{"p":{"$ref":"#/$defs/a~0b"}}}"##,
        r##"{"$defs":{"y":{}},"properties":{"p":{"$ref":"#/$defs/missing"}}}"##,
        r##"{"$defs":{"y":{"$id":"https://x/y"}},"properties":{"p":{"$ref":"https://x/y"}}}"##,
    ] {
        let out = light(schema).unwrap_or_else(|| parse(schema));
        assert_eq!(out["$defs"], parse(schema)["$defs"], "{schema}");
    }
}

#[test]
fn members_leave_with_their_commas_wherever_they_are() {
    let names = ["title", "a", "default", "b", "examples"];
    // Every subset of the five members, in every position: what is left
    // is valid JSON with exactly the kept members, in order.
    for mask in 0..(1u32 << names.len()) {
        let members: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, k)| format!(" \"{k}\" : 1 "))
            .collect();
        let schema = format!("{{{}}}", members.join(","));
        let tool = format!(r#"{{"name":"t","inputSchema":{schema}}}"#);
        let out = compact_tool(&tool, how(Level::Light)).unwrap_or_else(|| tool.clone());
        let v = parse(&out);
        let kept: Vec<&str> = v["inputSchema"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let want: Vec<&str> = names
            .iter()
            .enumerate()
            .filter(|(i, k)| mask & (1 << i) != 0 && (**k == "a" || **k == "b"))
            .map(|(_, k)| *k)
            .collect();
        assert_eq!(kept, want, "{schema} -> {out}");
    }
}

#[test]
fn what_is_not_a_tool_object_is_left_alone() {
    for text in ["[]", "\"x\"", "{\"name\":\"t\"", "{\"name\":\"t\"} x", ""] {
        assert_eq!(compact_tool(text, how(Level::High)), None, "{text}");
    }
    let deep = format!(
        r#"{{"name":"t","inputSchema":{}{{}}{}}}"#,
        r#"{"title":"x","not":"#.repeat(200),
        "}".repeat(200)
    );
    assert_eq!(compact_tool(&deep, how(Level::Light)), None);
}

// ---- the real listings against a second implementation on serde_json values

#[derive(Clone, Copy, PartialEq)]
enum Side {
    In,
    Out,
}

/// The same rules, written over values.
fn strip_schema(v: &mut Value, side: Side, level: Level, root: bool, flags: &mut (bool, bool)) {
    let Value::Object(map) = v else { return };
    let mut keep = Map::new();
    for (k, mut child) in std::mem::take(map) {
        match k.as_str() {
            "additionalItems" | "dependencies" | "$recursiveRef" | "$recursiveAnchor" => {
                flags.0 = true
            }
            "items" if child.is_array() => flags.0 = true,
            "$ref" => flags.1 = true,
            _ => {}
        }
        let drop = match (side, k.as_str()) {
            (Side::In, "title" | "examples" | "$comment" | "default") => true,
            (Side::In, "description") => level >= Level::Medium,
            (Side::In, "additionalProperties") => child == Value::Bool(false),
            (Side::In, "properties") => child == Value::Object(Map::new()),
            (Side::Out, "title" | "examples" | "$comment" | "description") => true,
            _ => false,
        };
        if drop {
            continue;
        }
        match k.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            | "dependencies" => {
                if let Value::Object(m) = &mut child {
                    for s in m.values_mut() {
                        strip_schema(s, side, level, false, flags);
                    }
                }
            }
            k if SUBSCHEMAS.contains(&k) => match &mut child {
                Value::Array(a) => a
                    .iter_mut()
                    .for_each(|s| strip_schema(s, side, level, false, flags)),
                other => strip_schema(other, side, level, false, flags),
            },
            _ => {}
        }
        keep.insert(k, child);
    }
    if root {
        if let Some(Value::String(uri)) = keep.get("$schema") {
            let seven = uri.contains("draft-07") || uri.contains("draft-06");
            let known = seven || uri.contains("2019-09") || uri.contains("2020-12");
            if known && !flags.0 && !(seven && flags.1) {
                keep.shift_remove("$schema");
            }
        }
    }
    *map = keep;
}

/// References and identifiers in schema positions of `v`.
fn refs(v: &Value, out: &mut Vec<String>, unresolved: &mut bool) {
    let Value::Object(map) = v else { return };
    for (k, child) in map {
        match k.as_str() {
            "$ref" => match child.as_str() {
                Some(r) => out.push(r.to_string()),
                None => *unresolved = true,
            },
            "$id" | "id" | "$anchor" | "$dynamicAnchor" | "$dynamicRef" => *unresolved = true,
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            | "dependencies" => {
                if let Value::Object(m) = child {
                    m.values().for_each(|s| refs(s, out, unresolved));
                }
            }
            k if SUBSCHEMAS.contains(&k) => match child {
                Value::Array(a) => a.iter().for_each(|s| refs(s, out, unresolved)),
                other => refs(other, out, unresolved),
            },
            _ => {}
        }
    }
}

/// The root's definitions that no reference reaches, removed.
fn prune(schema: &mut Value) {
    let Value::Object(root) = schema else { return };
    let mut outside = Vec::new();
    let mut unresolved = false;
    let mut rest = root.clone();
    rest.shift_remove("$defs");
    rest.shift_remove("definitions");
    refs(&Value::Object(rest), &mut outside, &mut unresolved);
    let name = |r: &str| -> Option<(String, String)> {
        for (prefix, kw) in [("#/$defs/", "$defs"), ("#/definitions/", "definitions")] {
            if let Some(p) = r.strip_prefix(prefix) {
                if p.contains(['~', '%']) {
                    return None;
                }
                return Some((kw.to_string(), p.split('/').next().unwrap().to_string()));
            }
        }
        None
    };
    let mut reached: Vec<(String, String)> = Vec::new();
    let mut queue: Vec<String> = outside.into_iter().filter(|r| r != "#").collect();
    while let Some(r) = queue.pop() {
        let Some((kw, n)) = name(&r) else { return };
        let Some(def) = root.get(&kw).and_then(|d| d.get(&n)) else {
            return;
        };
        if reached.contains(&(kw.clone(), n.clone())) {
            continue;
        }
        let mut inner = Vec::new();
        refs(def, &mut inner, &mut unresolved);
        queue.extend(inner.into_iter().filter(|r| r != "#"));
        reached.push((kw, n));
    }
    for kw in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = root.get(kw) {
            let d2 = defs.clone();
            let mut u = false;
            d2.values().for_each(|s| refs(s, &mut Vec::new(), &mut u));
            if u {
                unresolved = true;
            }
        }
    }
    if unresolved {
        return;
    }
    for kw in ["$defs", "definitions"] {
        let Some(Value::Object(defs)) = root.get_mut(kw) else {
            continue;
        };
        defs.retain(|n, _| reached.contains(&(kw.to_string(), n.clone())));
        if defs.is_empty() {
            root.shift_remove(kw);
        }
    }
}

/// The keywords whose values are schemas or arrays of them (JSON Schema
/// 2020-12 Core §10), as the model walks below read them.
const SUBSCHEMAS: &[&str] = &[
    "allOf",
    "anyOf",
    "oneOf",
    "prefixItems",
    "items",
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// The hints whose absence every client reads the same (the rule of
/// compact.rs, restated on values).
fn strip_hints(a: &mut Map<String, Value>) {
    let read_only = a.get("readOnlyHint") == Some(&Value::Bool(true));
    a.retain(|k, v| {
        !matches!(
            (k.as_str(), &*v, read_only),
            ("readOnlyHint" | "idempotentHint", Value::Bool(false), _)
                | ("destructiveHint", Value::Bool(false), true)
                | ("idempotentHint", Value::Bool(true), true)
        )
    });
}

fn expected(tool: &Value, level: Level) -> Value {
    let mut t = tool.clone();
    let map = t.as_object_mut().unwrap();
    if map.get("execution") == Some(&serde_json::json!({"taskSupport": "forbidden"})) {
        map.shift_remove("execution");
    }
    if let Some(s) = map.get_mut("inputSchema") {
        strip_schema(s, Side::In, level, true, &mut (false, false));
        prune(s);
    }
    if level >= Level::Medium {
        if let Some(Value::Object(a)) = map.get_mut("annotations") {
            strip_hints(a);
        }
        let letters = |v: Option<&Value>| {
            v.and_then(Value::as_str).map(|s| {
                s.to_ascii_lowercase()
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || !c.is_ascii())
                    .collect::<String>()
            })
        };
        let title = letters(map.get("title"));
        if title.is_some_and(|t| !t.is_empty() && Some(t) == letters(map.get("name"))) {
            map.shift_remove("title");
        }
        if let Some(s) = map.get_mut("outputSchema") {
            strip_schema(s, Side::Out, level, true, &mut (false, false));
            prune(s);
        }
        if let Some(Value::String(d)) = map.get_mut("description") {
            let first = crate::listing::sentence::first_sentence(d);
            let short = if level == Level::High {
                crate::listing::sentence::cut_bytes(first, 40)
            } else {
                first.to_string()
            };
            if !short.is_empty() {
                *d = short;
            }
        }
    }
    t
}

#[test]
fn real_listings_keep_what_clients_rely_on() {
    for (file, body) in crate::listing::tests::listings() {
        for page in crate::listing::tests::pages(&body) {
            for tool in page["result"]["tools"].as_array().unwrap() {
                let text = serde_json::to_string(tool).unwrap();
                for level in Level::ALL {
                    let out = compact_tool(&text, how(level)).unwrap_or_else(|| text.clone());
                    let got = parse(&out);
                    let want = expected(tool, level);
                    assert!(
                        crate::json::same_value(&got, &want),
                        "{file} {level:?}\n{out}\n{want}"
                    );
                    // Not a value only: the keys the level keeps are in
                    // their places, and nothing else moved.
                    assert_eq!(got["name"], tool["name"]);
                    assert_eq!(got.get("annotations"), want.get("annotations"));
                    if level == Level::Light {
                        assert_eq!(got.get("outputSchema"), tool.get("outputSchema"));
                    }
                }
            }
        }
    }
}
