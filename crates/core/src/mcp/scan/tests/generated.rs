//! Generated bodies: JSON built from the names and values the readers look
//! at (keys written twice, escaped, undecodable; values of every type in
//! every field), laid out with any whitespace, then often broken by one
//! grammar byte put in or taken out. The scanner must give serde_json's
//! answer on each.

use proptest::prelude::*;

use super::same;

const KEYS: &[&str] = &[
    "id",
    "\\u0069d",
    "method",
    "params",
    "name",
    "arguments",
    "_meta",
    "expected_info",
    "result",
    "error",
    "content",
    "type",
    "text",
    "isError",
    "x",
    "\\ud800",
    "\\udc00x",
];

const STRINGS: &[&str] = &[
    "tools/call",
    "tools\\/call",
    "tools/list",
    "text",
    "t\\u0065xt",
    "  ids  ",
    "",
    " ",
    "\\ud800",
    "\\ud83d\\ude00",
    "a\\\"b\\\\c\\n",
    "é€😀",
    "\\ud800\\u0041",
    "\\ud800\\n",
    "\\udc00",
    "\\ud83d\\ud83d",
    "x\\ud83d",
    "\\u00e9\\/\\b\\f\\r\\t\\u0000",
];

const SCALARS: &[&str] = &[
    "null",
    "true",
    "false",
    "0",
    "-0",
    "1",
    "7",
    "1.5e3",
    "-2E-2",
    "1e400",
    "123456789012345678901234567890",
];

fn space() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", "", " ", "\n\t", "\r\n  "])
}

fn json() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(SCALARS).prop_map(str::to_string),
        prop::sample::select(STRINGS).prop_map(|s| format!("\"{s}\"")),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec((space(), inner.clone()), 0..5).prop_map(|items| {
                let items: Vec<String> =
                    items.into_iter().map(|(w, v)| format!("{w}{v}")).collect();
                format!("[{}]", items.join(","))
            }),
            prop::collection::vec((space(), prop::sample::select(KEYS), space(), inner), 0..6)
                .prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(w, k, v, x)| format!("{w}\"{k}\"{v}:{x}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
        ]
    })
}

type Member = (&'static str, String);

/// An object with each of `core`'s members (most often), now and then one
/// or two more drawn from `extra` (so a key may come twice), in any order.
fn object(
    core: Vec<BoxedStrategy<Member>>,
    extra: impl Strategy<Value = Member> + 'static,
) -> BoxedStrategy<String> {
    let core: Vec<_> = core
        .into_iter()
        .map(|m| prop::option::weighted(0.85, m))
        .collect();
    (
        core,
        prop::collection::vec(prop::option::weighted(0.3, extra), 0..3),
    )
        .prop_flat_map(|(core, extra)| {
            let members: Vec<Member> = core.into_iter().chain(extra).flatten().collect();
            Just(members).prop_shuffle()
        })
        .prop_flat_map(|members| {
            prop::collection::vec(space(), members.len()).prop_map(move |ws| {
                let members: Vec<String> = members
                    .iter()
                    .zip(ws)
                    .map(|((k, v), w)| format!("{w}\"{k}\":{w}{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            })
        })
        .boxed()
}

fn string(of: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(of).prop_map(|s| format!("\"{s}\""))
}

/// A request shaped as MCP's (`id`, `method`, `params` with `name`,
/// `arguments`, `_meta`), any field of any type now and then.
fn call() -> BoxedStrategy<String> {
    let arguments = || {
        let intent = || {
            prop_oneof![4 => string(STRINGS), 1 => json()]
                .prop_map(|v| ("expected_info", v))
                .boxed()
        };
        prop_oneof![
            4 => object(
                vec![intent()],
                prop_oneof![
                    intent(),
                    json().prop_map(|v| ("\\u0065xpected_info", v)),
                    json().prop_map(|v| ("q", v)),
                    string(STRINGS).prop_map(|v| ("q", v)),
                    json().prop_map(|v| ("\\u0071", v)),
                    json().prop_map(|v| ("\\ud800", v)),
                ],
            ),
            1 => json(),
        ]
    };
    let name = || string(&["rows", "t\\u00e9", "\\ud800", ""]).prop_map(|v| ("name", v));
    let params = prop_oneof![
        6 => object(
            vec![
                name().boxed(),
                arguments().prop_map(|v| ("arguments", v)).boxed(),
                arguments().prop_map(|v| ("_meta", v)).boxed(),
            ],
            prop_oneof![
                name(),
                arguments().prop_map(|v| ("arguments", v)),
                arguments().prop_map(|v| ("_meta", v)),
                json().prop_map(|v| ("name", v)),
                json().prop_map(|v| ("\\ud800", v)),
            ],
        ),
        1 => json(),
    ];
    let id = || {
        prop_oneof![
            string(&["a", "\\u0061", "\\ud800"]),
            prop::sample::select(SCALARS).prop_map(str::to_string),
        ]
        .prop_map(|v| ("id", v))
    };
    let method = || {
        prop_oneof![
            6 => string(&["tools/call", "tools\\/call", "tools/list", "\\ud800"]),
            1 => json(),
        ]
        .prop_map(|v| ("method", v))
    };
    object(
        vec![
            Just(("jsonrpc", "\"2.0\"".to_string())).boxed(),
            id().boxed(),
            method().boxed(),
            params.prop_map(|v| ("params", v)).boxed(),
        ],
        prop_oneof![id(), method(), json().prop_map(|v| ("params", v))],
    )
}

/// A response shaped as MCP's (`id`, `result` with `content[]` items and
/// `isError`, `error`), any field of any type now and then.
fn answer() -> BoxedStrategy<String> {
    let kind = || string(&["text", "t\\u0065xt", "image", "\\ud800"]).prop_map(|v| ("type", v));
    let text = || string(STRINGS).prop_map(|v| ("text", v));
    let item = prop_oneof![
        6 => object(
            vec![kind().boxed(), text().boxed()],
            prop_oneof![
                kind(),
                text(),
                json().prop_map(|v| ("text", v)),
                json().prop_map(|v| ("type", v)),
                json().prop_map(|v| ("\\udc00", v)),
            ],
        ),
        1 => json(),
    ];
    let content = prop::collection::vec(item, 0..4).prop_map(|i| format!("[{}]", i.join(",")));
    let is_error = || {
        prop::sample::select(&["true", "false", "null", "1"][..])
            .prop_map(|v| ("isError", v.to_string()))
    };
    let result = prop_oneof![
        6 => object(
            vec![content.prop_map(|v| ("content", v)).boxed(), is_error().boxed()],
            prop_oneof![
                is_error(),
                json().prop_map(|v| ("structuredContent", v)),
                json().prop_map(|v| ("content", v)),
            ],
        ),
        1 => json(),
    ];
    let id = || prop::sample::select(SCALARS).prop_map(|v| ("id", v.to_string()));
    object(
        vec![id().boxed(), result.prop_map(|v| ("result", v)).boxed()],
        prop_oneof![
            id(),
            json().prop_map(|v| ("result", v)),
            json().prop_map(|v| ("error", v)),
            string(&["notifications/progress"]).prop_map(|v| ("method", v)),
        ],
    )
}

/// A message or a batch of them, as generated JSON.
fn body() -> impl Strategy<Value = String> {
    let message = || prop_oneof![3 => call(), 3 => answer(), 1 => json()];
    prop_oneof![
        message(),
        prop::collection::vec(message(), 0..4).prop_map(|m| format!("[{}]", m.join(","))),
    ]
}

const GRAMMAR: &[&str] = &[
    "", "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "0", "-", "n", "\u{1}",
];

/// Pieces of a string literal: plain runs and every kind of escape,
/// surrogates paired, lone and misordered.
fn literal() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        prop::sample::select(&[0xD800u32, 0xDBFF, 0xDC00, 0xDFFF, 0x41, 0xE9, 0, 0xFFFF][..]),
        0u32..0x10000,
    ];
    let piece = prop_oneof![
        "[a-z é😀\"\\\\]{0,6}".prop_map(|s| s.replace('\\', "\\\\").replace('"', "\\\"")),
        prop::sample::select(&["\\n", "\\/", "\\b", "\\f", "\\r", "\\t", "\\\"", "\\\\"][..])
            .prop_map(str::to_string),
        unit.clone().prop_map(|u| format!("\\u{u:04x}")),
        unit.prop_map(|u| format!("\\u{u:04X}")),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|p| format!("\"{}\"", p.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A text item's value, decoded by the scan, is serde_json's.
    #[test]
    fn generated_text_literals(text in literal()) {
        same(&format!(r#"{{"id":1,"result":{{"content":[{{"type":"text","text":{text}}}]}}}}"#));
    }

    #[test]
    fn generated_bodies(body in body()) {
        same(&body);
    }

    #[test]
    fn generated_bodies_broken(body in body(), at in any::<prop::sample::Index>(),
                               put in prop::sample::select(GRAMMAR), cut in any::<bool>()) {
        let mut at = at.index(body.len() + 1);
        while !body.is_char_boundary(at) {
            at -= 1;
        }
        let rest = if cut {
            body[at..].chars().skip(1).collect::<String>()
        } else {
            body[at..].to_string()
        };
        same(&format!("{}{put}{rest}", &body[..at]));
    }
}
