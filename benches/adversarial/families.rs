//! The adversarial inputs: for each parser and transform of the plugin, the
//! shapes that make a naive implementation superlinear (the ones measured in
//! issue 13, the known html5ever cases, and more of the same kind). Each
//! family writes one exchange whose payload is about `n` bytes.

use serde_json::json;

/// One exchange as the scripted host plays it.
pub struct Case {
    pub request: Vec<u8>,
    pub content_type: &'static str,
    pub response: Vec<u8>,
}

/// A family: a name, what it attacks, and its generator.
pub struct Family {
    pub name: &'static str,
    pub target: &'static str,
    pub make: fn(usize) -> Case,
}

const CALL: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{}}}"#;

/// A `tools/call` result with one text item.
fn text_result(text: &str) -> Case {
    Case {
        request: CALL.to_vec(),
        content_type: "application/json",
        response: json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}})
            .to_string()
            .into_bytes(),
    }
}

/// `unit` repeated to about `n` bytes.
fn repeat(unit: &str, n: usize) -> String {
    unit.repeat((n / unit.len()).max(1))
}

/// `head`, then `unit` repeated to about `n` bytes in all.
fn led(head: &str, unit: &str, n: usize) -> String {
    let mut s = String::from(head);
    s.push_str(&repeat(unit, n.saturating_sub(head.len())));
    s
}

/// Deterministic bytes (xorshift), so every run sees the same input.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn base64(&mut self, n: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        (0..n)
            .map(|_| char::from(ALPHABET[(self.next() % 64) as usize]))
            .collect()
    }
}

/// Random base64 of about `n` characters, wrapped at `width` columns.
fn wrapped_base64(n: usize, width: usize) -> String {
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut s = String::with_capacity(n + n / width + 1);
    while s.len() < n {
        s.push_str(&noise.base64(width));
        s.push('\n');
    }
    s
}

fn b64_lines(n: usize) -> Case {
    text_result(&repeat("AAAAAAAAAAAAAAAA\n", n))
}

fn b64_mime(n: usize) -> Case {
    text_result(&wrapped_base64(n, 76))
}

fn b64_wrapped_80(n: usize) -> Case {
    text_result(&wrapped_base64(n, 80))
}

fn b64_one_run(n: usize) -> Case {
    text_result(&Noise(7).base64(n))
}

fn b64_short_runs(n: usize) -> Case {
    // Runs just over the wrap width, each looked at on its own, each
    // looking back for a URL through a word that never ends.
    text_result(&led("see://", "Ab3dEf5hIj7lMn9pQr,", n))
}

fn b64_url_word(n: usize) -> Case {
    // Runs long enough to strip, inside one word that never ends: each
    // looks back up to 2 KiB for the `://` of a URL.
    let mut noise = Noise(5);
    let mut s = String::from("see https://x.test/");
    while s.len() < n {
        s.push_str(&noise.base64(260));
        s.push(',');
    }
    text_result(&s)
}

fn b64_dotted(n: usize) -> Case {
    text_result(&repeat("Ab3dEf5hIj7lMn9pQrSt.", n))
}

fn data_uri_no_comma(n: usize) -> Case {
    text_result(&repeat("data:image/png;base64;base64;base64;base64;", n))
}

fn data_uri_many(n: usize) -> Case {
    let mut noise = Noise(11);
    let mut s = String::new();
    while s.len() < n {
        s.push_str(" data:image/png;base64,");
        s.push_str(&noise.base64(300));
    }
    text_result(&s)
}

fn html_rt(n: usize) -> Case {
    text_result(&led("<html><body><p>a</p>", "<rt>x", n))
}

fn html_div_title(n: usize) -> Case {
    text_result(&led("<html><body>", "<div title=\"<\">", n))
}

fn html_deep_div(n: usize) -> Case {
    let half = repeat("<div>", n / 2);
    let close = repeat("</div>", n / 2);
    text_result(&format!("{half}x{close}"))
}

fn html_ul_li(n: usize) -> Case {
    text_result(&led("<html><body>", "<ul><li>", n))
}

fn html_formatting(n: usize) -> Case {
    text_result(&led("<html><body>", "<b>", n))
}

fn html_formatting_distinct(n: usize) -> Case {
    // Formatting elements that differ by an attribute: Noah's Ark keeps
    // them all and compares each new one with every entry.
    let mut s = String::from("<html><body>");
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("<b class=c{i}>"));
        i += 1;
    }
    text_result(&s)
}

fn html_adoption(n: usize) -> Case {
    // Misnested formatting: every `</b>` runs the adoption agency over the
    // blocks opened since its `<b>`.
    text_result(&led(
        "<html><body>",
        "<b><i><u><s><div><p>x</b></i></u></s>y",
        n,
    ))
}

fn html_misnested_a(n: usize) -> Case {
    text_result(&led("<html><body>", "<a href=x><div><a href=y>z", n))
}

fn html_unknown_end_tags(n: usize) -> Case {
    // `</x>` closes nothing; a depth estimate that counts it as a close
    // sees none of the nesting the parser builds.
    text_result(&led("<html><body>", "<div></x>", n))
}

fn html_span_end_walk(n: usize) -> Case {
    // A deep run of phrasing elements, then end tags that walk the whole
    // stack looking for an element that is not there.
    let spans = repeat("<span>", (n / 2).min(200_000));
    let mut s = format!("<html><body>{spans}");
    s.push_str(&repeat("</em>", n.saturating_sub(s.len())));
    text_result(&s)
}

/// `head`, then `part(0)`, `part(1)`… until the text reaches `n` bytes,
/// then `tail`.
fn grown(head: &str, n: usize, part: impl Fn(usize) -> String, tail: &str) -> String {
    let mut s = String::from(head);
    let mut i = 0;
    while s.len() < n {
        s.push_str(&part(i));
        i += 1;
    }
    s.push_str(tail);
    s
}

fn html_many_attributes(n: usize) -> Case {
    text_result(&grown(
        "<html><body><div",
        n,
        |i| format!(" a{i}"),
        ">x</div>",
    ))
}

fn html_attributes_per_tag(n: usize) -> Case {
    // Many tags of many distinct attributes each.
    let tag: String = (0..200).map(|i| format!(" a{i}=v")).collect();
    text_result(&led("<html><body>", &format!("<p{tag}>x</p>"), n))
}

fn html_quoted_gt(n: usize) -> Case {
    // Quoted `>` and `<` inside one long tag.
    let mut s = String::from("<html><body><div");
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!(" a{i}=\"<>\""));
        i += 1;
    }
    s.push_str(">x</div>");
    text_result(&s)
}

fn html_html_attrs(n: usize) -> Case {
    // Every `<html>` start tag merges its attributes into the root.
    let mut s = String::from("<html><body>x");
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("<html a{i}>"));
        i += 1;
    }
    text_result(&s)
}

fn html_table_colspan(n: usize) -> Case {
    text_result(&led(
        "<table><tr><th>h</th></tr>",
        "<tr><td colspan=1000>cell text</td></tr>",
        n,
    ))
}

fn html_table_ragged(n: usize) -> Case {
    // One wide row, then many narrow ones: a grid of rows × widest row.
    let wide = repeat("<td>x</td>", n / 2);
    let mut s = format!("<table><tr>{wide}</tr>");
    s.push_str(&repeat("<tr><td>y</td></tr>", n.saturating_sub(s.len())));
    text_result(&s)
}

fn html_nested_list_lines(n: usize) -> Case {
    let open = repeat("<ul><li>", 8 * 100);
    text_result(&led(&format!("<html><body>{open}"), "x<br>", n))
}

fn html_comments(n: usize) -> Case {
    text_result(&led("<html><body>", "<!-- a b c d e f g -->x", n))
}

fn html_script(n: usize) -> Case {
    text_result(&led(
        "<html><body><script>",
        "if (a<b && c>d) { e = '<div x y z>'; }\n",
        n,
    ))
}

fn html_page(n: usize) -> Case {
    // An ordinary page, for scale: what the plugin does to real HTML.
    text_result(&led(
        "<!doctype html><html><head><title>Doc</title></head><body>",
        "<div class=\"section\"><h2 id=\"s\">Section</h2><p>Some <b>bold</b> and <a href=\"https://example.com/x\">a link</a> in a paragraph.</p><ul><li>one</li><li>two</li></ul></div>\n",
        n,
    ))
}

fn ws_one_run(n: usize) -> Case {
    text_result(&format!("a{}b", " ".repeat(n)))
}

fn ws_mixed(n: usize) -> Case {
    text_result(&repeat("a \t \n\n\n  \t", n))
}

fn ws_fences(n: usize) -> Case {
    text_result(&repeat("```\nx   y\n", n))
}

fn ws_long_line(n: usize) -> Case {
    text_result(&repeat("word ", n))
}

fn json_deep(n: usize) -> Case {
    let half = n / 2;
    text_result(&format!("{}{}", "[".repeat(half), "]".repeat(half)))
}

fn json_long_key_deep(n: usize) -> Case {
    // A member key with an escape (decoded into its own string), then
    // arrays nested below it that inherit it.
    let key = format!("k\\n{}", "x".repeat(n / 2));
    let depth = 100;
    let inner = repeat("\"s\",", n / 2);
    let inner = inner.trim_end_matches(',');
    text_result(&format!(
        "{{\"{key}\": {}{inner}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    ))
}

fn json_long_key_strings(n: usize) -> Case {
    // Every string of a long array asks whether its (long) key names a
    // handle.
    let key = "k".repeat(n / 2);
    let inner = repeat("\"s\",", n / 2);
    let inner = inner.trim_end_matches(',');
    text_result(&format!("{{\"{key}\": [{inner}]}}"))
}

fn json_nulls(n: usize) -> Case {
    let inner = repeat("\"a\": null, ", n);
    text_result(&format!("{{{} \"z\": 1}}", inner))
}

fn json_tiny_strings(n: usize) -> Case {
    let inner = repeat("\"a  b\",", n);
    text_result(&format!("[{}\"z\"]", inner))
}

fn json_wide_object(n: usize) -> Case {
    // One object of very many members, written with `", "` and `": "`
    // separators: compaction rewrites it, TOON classifies it.
    let member = |i: usize| {
        let comma = if i > 0 { ", " } else { "" };
        format!("{comma}\"k{i}\": {i}")
    };
    text_result(&grown("{", n, member, "}"))
}

fn toon_wide_envelope(n: usize) -> Case {
    // An envelope: very many scalar members around one table (each key
    // checked against the others for duplicates).
    let rows =
        "{\"rows\":[{\"a\":1,\"b\":2},{\"a\":3,\"b\":4},{\"a\":5,\"b\":6},{\"a\":7,\"b\":8}]";
    text_result(&grown(rows, n, |i| format!(",\"k{i}\":{i}"), "}"))
}

fn toon_near_tables(n: usize) -> Case {
    // Very many arrays of three rows (`min_rows` is 4) below the root, each
    // in an envelope of its own: the search for a table anywhere checks
    // every one, and finds none.
    let part = |i: usize| {
        let comma = if i > 0 { "," } else { "" };
        format!("{comma}{{\"s\":{{\"rows\":[{{\"a\":{i},\"b\":1}},{{\"a\":2,\"b\":2}},{{\"a\":3,\"b\":3}}]}}}}")
    };
    text_result(&grown("{\"data\":[", n, part, "]}"))
}

fn toon_nested_row_groups(n: usize) -> Case {
    // Rows whose field groups hold arrays of rows, themselves tables: each
    // array read once by the search, never once per level above it.
    let row = |i: usize| {
        let comma = if i > 0 { "," } else { "" };
        format!(
            "{comma}{{\"id\":{i},\"g\":{{\"items\":[{{\"a\":1}},{{\"a\":2}},{{\"a\":3}},{{\"a\":4}}]}}}}"
        )
    };
    text_result(&grown("{\"ok\":true,\"data\":{\"rows\":[", n, row, "]}}"))
}

fn toon_deep_envelope(n: usize) -> Case {
    // A table 90 objects deep (within the fast parser's bound of 100
    // levels), each level with a near table beside it.
    let mut s = String::new();
    for i in 0..90 {
        s.push_str(&format!("{{\"near{i}\":[{{\"a\":1}},{{\"a\":2}}],\"l\":"));
    }
    let rows = grown(
        "[",
        n.saturating_sub(s.len()),
        |i| format!("{{\"id\":{i},\"name\":\"user-{i}\"}},"),
        "{\"id\":0,\"name\":\"x\"}]",
    );
    s.push_str(&rows);
    s.push_str(&"}".repeat(90));
    text_result(&s)
}

fn toon_pretty_table(n: usize) -> Case {
    // A table written with `JSON.stringify(rows, null, 2)`: the fast path
    // reads it with its whitespace (issue 39).
    let row = |i: usize| {
        format!(
            "  {{\n    \"id\": {i},\n    \"name\": \"user-{i}\",\n    \"active\": {}\n  }},\n",
            i % 2 == 0
        )
    };
    text_result(&grown(
        "[\n",
        n,
        row,
        "  {\n    \"id\": 0,\n    \"name\": \"x\",\n    \"active\": true\n  }\n]",
    ))
}

fn json_escapes(n: usize) -> Case {
    let inner = repeat("\\u00e9\\n\\\"", n);
    text_result(&format!("[\"{inner}\"]"))
}

fn text_long_number_prefix(n: usize) -> Case {
    // Digits to the end, then a letter: at the defaults the skim follows
    // the number all the way before it rules out JSON.
    text_result(&format!("{}x", "7".repeat(n)))
}

fn text_lead_whitespace(n: usize) -> Case {
    // Escaped whitespace all the way, then a table: the skim's prefix
    // reaches the bracket, and the full read goes over it again.
    text_result(&format!(
        "{}[{{\"a\":1}},{{\"a\":2}}]",
        "\n\t ".repeat(n / 3)
    ))
}

fn toon_tiny_rows(n: usize) -> Case {
    let inner = repeat("{\"a\":1},", n);
    text_result(&format!("[{}{{\"a\":2}}]", inner))
}

fn toon_wide_rows(n: usize) -> Case {
    // Few rows of very many keys each.
    let keys: String = (0..n / 40)
        .map(|i| format!("\"k{i}\":{i},"))
        .collect::<String>();
    let row = format!("{{{}\"z\":0}}", keys);
    text_result(&format!("[{row},{row},{row},{row}]"))
}

fn toon_reordered_keys(n: usize) -> Case {
    // Rows whose one field group lists a big key set in opposite orders:
    // every key looked up by name in every other row's group.
    let k = n / 4 / 12;
    let fwd: Vec<String> = (0..k).map(|i| format!("\"key{i}\":{}", i % 10)).collect();
    let rev: Vec<String> = fwd.iter().rev().cloned().collect();
    let (fwd, rev) = (fwd.join(","), rev.join(","));
    text_result(&format!(
        "[{{\"id\":1,\"g\":{{{fwd}}}}},{{\"id\":2,\"g\":{{{rev}}}}},{{\"id\":3,\"g\":{{{fwd}}}}},{{\"id\":4,\"g\":{{{rev}}}}}]"
    ))
}

fn toon_near_keys(n: usize) -> Case {
    // Keys that share a long prefix and differ in the last byte.
    let prefix = "p".repeat(200);
    let row = format!("{{\"{prefix}a\":1,\"{prefix}b\":2,\"{prefix}c\":3,\"{prefix}d\":4}},");
    let inner = repeat(&row, n);
    text_result(&format!(
        "[{}{{\"{prefix}a\":1,\"{prefix}b\":2,\"{prefix}c\":3,\"{prefix}d\":4}}]",
        inner
    ))
}

fn toon_group_rows(n: usize) -> Case {
    // Field groups whose keys appear in a different order in every row.
    let rows = [
        "{\"id\":1,\"g\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4}},",
        "{\"id\":2,\"g\":{\"d\":4,\"c\":3,\"b\":2,\"a\":1}},",
    ]
    .concat();
    let inner = repeat(&rows, n);
    text_result(&format!(
        "[{}{{\"id\":0,\"g\":{{\"a\":1,\"b\":2,\"c\":3,\"d\":4}}}}]",
        inner
    ))
}

fn toon_sparse_rows(n: usize) -> Case {
    // Every tenth row lacks a key, and beside the rows an array nests past
    // the fast parser's bound (100 levels): the fast path leaves the table
    // to the generic one (toon-format, 1-2 µs per byte).
    let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
    let mut s = format!("{{\"deep\":{deep},\"rows\":[");
    let mut i = 0;
    while s.len() < n {
        if i % 10 == 9 {
            s.push_str(&format!("{{\"id\":{i},\"name\":\"user-{i}\"}},"));
        } else {
            s.push_str(&format!(
                "{{\"id\":{i},\"name\":\"user-{i}\",\"tag\":\"t\"}},"
            ));
        }
        i += 1;
    }
    s.push_str("{\"id\":0,\"name\":\"x\",\"tag\":\"t\"}]}");
    text_result(&s)
}

fn toon_sparse_items(n: usize) -> Case {
    // The same, as many content items of 8 KiB each: one budget per
    // response, not per item.
    let response: serde_json::Value =
        serde_json::from_slice(&toon_sparse_rows(8 << 10).response).unwrap_or_default();
    let block = response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let items: Vec<_> = (0..(n / block.len()).max(1))
        .map(|_| json!({"type": "text", "text": block}))
        .collect();
    Case {
        request: CALL.to_vec(),
        content_type: "application/json",
        response: json!({"jsonrpc": "2.0", "id": 1, "result": {"content": items}})
            .to_string()
            .into_bytes(),
    }
}

fn toon_long_numbers(n: usize) -> Case {
    let row = format!("{{\"a\":1.{}5}},", "0".repeat(200));
    let inner = repeat(&row, n);
    text_result(&format!("[{}{{\"a\":2}}]", inner))
}

fn toon_huge_number(n: usize) -> Case {
    // One cell of a table is a number of `n` digits (exponent and all).
    let digits = "7".repeat(n);
    let rows = "{\"a\":1},".repeat(5);
    text_result(&format!("[{rows}{{\"a\":1.{digits}e-5}}]"))
}

fn toon_long_strings(n: usize) -> Case {
    let cell = "x, y: \\\"z\\\" ".repeat(50);
    let row = format!("{{\"a\":\"{cell}\",\"b\":1}},");
    let inner = repeat(&row, n);
    text_result(&format!("[{}{{\"a\":\"q\",\"b\":2}}]", inner))
}

fn toon_table(n: usize) -> Case {
    // An ordinary table, for scale.
    let mut s = String::from("[");
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!(
            "{{\"id\":{i},\"name\":\"user-{i}\",\"email\":\"user{i}@example.com\",\"active\":{},\"score\":{}.5}},",
            i % 2 == 0,
            i % 100
        ));
        i += 1;
    }
    s.push_str("{\"id\":0,\"name\":\"x\",\"email\":\"y\",\"active\":true,\"score\":1.5}]");
    text_result(&s)
}

/// An SSE response: `body` as sent.
fn sse(body: String) -> Case {
    Case {
        request: CALL.to_vec(),
        content_type: "text/event-stream",
        response: body.into_bytes(),
    }
}

fn sse_data_without_end(n: usize) -> Case {
    sse(format!("data: {}", "x".repeat(n)))
}

fn sse_unclosed_quote(n: usize) -> Case {
    sse(format!(
        "data: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\n\n",
        "x".repeat(n)
    ))
}

fn sse_many_data_lines(n: usize) -> Case {
    // One event of many `data:` lines, each a piece of the message.
    let text = "y".repeat(n / 2);
    let message =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}})
            .to_string();
    let mut body = String::new();
    for chunk in message.as_bytes().chunks(3) {
        body.push_str("data:");
        body.push_str(std::str::from_utf8(chunk).unwrap_or("?"));
        body.push('\n');
    }
    body.push('\n');
    sse(body)
}

fn sse_tiny_events(n: usize) -> Case {
    let mut body = repeat(
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n",
        n,
    );
    body.push_str("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n");
    sse(body)
}

fn sse_batch_results(n: usize) -> Case {
    // A batch of many calls answered on an event stream, one result per
    // event: every event looks its call up.
    let calls = n / 110;
    let request: Vec<_> = (0..calls)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t", "arguments": {}}}))
        .collect();
    let mut body = String::new();
    for i in (0..calls).rev() {
        body.push_str(&format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"x\"}}]}}}}\n\n"
        ));
    }
    Case {
        request: serde_json::to_vec(&request).unwrap_or_default(),
        content_type: "text/event-stream",
        response: body.into_bytes(),
    }
}

fn sse_comments_cr(n: usize) -> Case {
    sse(repeat(":\r", n))
}

fn sse_fields(n: usize) -> Case {
    sse(format!(
        "{}data: {{}}\n\n",
        repeat("event: e\nid: 1\nretry: 5\n", n)
    ))
}

fn request_batch(n: usize) -> Case {
    // A batch of many calls and a batch of their results, in reverse order:
    // every result looks up its call.
    let calls = n / 110;
    let request: Vec<_> = (0..calls)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t", "arguments": {}}}))
        .collect();
    let response: Vec<_> = (0..calls)
        .rev()
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "x"}]}}))
        .collect();
    Case {
        request: serde_json::to_vec(&request).unwrap_or_default(),
        content_type: "application/json",
        response: serde_json::to_vec(&response).unwrap_or_default(),
    }
}

fn request_many_arguments(n: usize) -> Case {
    // A call whose arguments hold many members (the intent is looked for
    // and stripped among them).
    let mut args = serde_json::Map::new();
    let mut i = 0;
    while args.len() * 16 < n {
        args.insert(format!("arg{i}"), json!(i));
        i += 1;
    }
    args.insert("expected_info".into(), json!("the ids"));
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": args, "_meta": {"k": 1}}});
    Case {
        request: serde_json::to_vec(&request).unwrap_or_default(),
        content_type: "application/json",
        response: br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}"#
            .to_vec(),
    }
}

fn request_deep_arguments(n: usize) -> Case {
    let depth = n / 2;
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"t\",\"arguments\":{{\"a\":{}{}}}}}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    Case {
        request: request.into_bytes(),
        content_type: "application/json",
        response: br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}"#
            .to_vec(),
    }
}

/// A call of `request`'s tool answered with these content items.
fn items_result(request: &[u8], items: Vec<serde_json::Value>) -> Case {
    Case {
        request: request.to_vec(),
        content_type: "application/json",
        response: json!({"jsonrpc": "2.0", "id": 1, "result": {"content": items}})
            .to_string()
            .into_bytes(),
    }
}

fn result_many_items(n: usize) -> Case {
    let items = (0..n / 40)
        .map(|i| json!({"type": "text", "text": format!("item {i}")}))
        .collect();
    items_result(CALL, items)
}

/// A call of the tool `budgeted`, which main.rs gives a budget of 200
/// tokens: its result is cut.
const BUDGETED_CALL: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"budgeted","arguments":{}}}"#;

fn budgeted(items: Vec<serde_json::Value>) -> Case {
    items_result(BUDGETED_CALL, items)
}

fn budget_many_items(n: usize) -> Case {
    // Every item a page of its own: the notice counts the items after the
    // first page.
    let items = (0..n / 60)
        .map(|i| json!({"type": "text", "text": format!("item {i} {}", "w ".repeat(10))}))
        .collect();
    budgeted(items)
}

fn budget_table(n: usize) -> Case {
    let mut rows = Vec::new();
    let mut size = 2;
    let mut i = 0;
    while size < n {
        let row = json!({"id": i, "name": format!("user-{i}"), "active": i % 2 == 0});
        size += row.to_string().len() + 1;
        rows.push(row);
        i += 1;
    }
    budgeted(vec![
        json!({"type": "text", "text": serde_json::Value::Array(rows).to_string()}),
    ])
}

fn budget_batch(n: usize) -> Case {
    // A batch of many calls of the budgeted tool, each result over its
    // budget: every result finds its own blocks among all of them.
    let calls = n / 1800;
    let request: Vec<_> = (0..calls)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "budgeted", "arguments": {}}}))
        .collect();
    let text = "a line of a log\n".repeat(100);
    let response: Vec<_> = (0..calls)
        .rev()
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}}))
        .collect();
    Case {
        request: serde_json::to_vec(&request).unwrap_or_default(),
        content_type: "application/json",
        response: serde_json::to_vec(&response).unwrap_or_default(),
    }
}

fn result_many_changed_items(n: usize) -> Case {
    // Many small JSON items, each compacted: a decision per block.
    let items = (0..n / 60)
        .map(|i| json!({"type": "text", "text": format!("{{\"id\": {i}, \"ok\": true}}")}))
        .collect();
    items_result(CALL, items)
}

fn listing_many_tools(n: usize) -> Case {
    // A tools/list of very many tools: each annotated (annotate_tools),
    // given the query argument, its declared arguments recorded.
    let tools: Vec<_> = (0..n / 300)
        .map(|i| {
            json!({"name": format!("tool_{i}"), "description": "Lists things of a kind, with filters.",
                   "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["q"]}})
        })
        .collect();
    Case {
        request: br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec(),
        content_type: "application/json",
        response: json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
            .to_string()
            .into_bytes(),
    }
}

/// A call of the tool `projected` (operator rules in main.rs), with an
/// agent query when given.
fn projected(text: &str, query: Option<&str>) -> Case {
    let mut args = serde_json::Map::new();
    if let Some(q) = query {
        args.insert("jmespath".into(), json!(q));
    }
    Case {
        request: json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "projected", "arguments": args}})
            .to_string()
            .into_bytes(),
        content_type: "application/json",
        response: json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}})
            .to_string()
            .into_bytes(),
    }
}

fn api_rows(n: usize) -> String {
    let mut rows = Vec::new();
    let mut size = 2;
    let mut i = 0;
    while size < n {
        let row = json!({"id": i, "node_id": format!("N_{i}"), "url": format!("https://api.example/x/{i}"),
                         "owner": {"login": format!("u{i}"), "avatar_url": "https://a.example/u.png", "url": "https://api.example/u"},
                         "labels": [{"name": "bug", "url": "https://api.example/l/bug"}]});
        size += row.to_string().len() + 1;
        rows.push(row);
        i += 1;
    }
    serde_json::Value::Array(rows).to_string()
}

fn project_rules(n: usize) -> Case {
    projected(&api_rows(n), None)
}

fn project_rules_deep(n: usize) -> Case {
    // `**` rules walk every level of deep nesting.
    let half = n / 16;
    projected(
        &format!("{}{}", "{\"a\":[".repeat(half), "]}".repeat(half)),
        None,
    )
}

fn project_query(n: usize) -> Case {
    projected(
        &api_rows(n),
        Some("[?id > `10`].{id: id, login: owner.login, labels: labels[*].name}"),
    )
}

/// The attack of issue 37: each `to_array(@)|to_string(@)` escapes the
/// previous text again, doubling it; 24 steps would take terabytes. The
/// static bound refuses it before the block is read.
fn query_doubling(n: usize) -> Case {
    projected(
        &api_rows(n),
        Some(&vec!["to_array(@)|to_string(@)"; 24].join("|")),
    )
}

/// One step of it, which the bound accepts: the whole block's text,
/// escaped again, counted and charged before it is written.
fn query_to_string(n: usize) -> Case {
    projected(&api_rows(n), Some("to_array(@)|to_string(@)"))
}

/// A multi-select of 24 copies, flattened and filtered: 24 references
/// and 24 filter runs per row (the static bound accepts 24, not 26).
fn query_wide_select(n: usize) -> Case {
    let copies = vec!["@"; 24].join(",");
    projected(
        &api_rows(n),
        Some(&format!("length([{copies}][] | [?id > `10`])")),
    )
}

/// Rows whose sort keys share a long prefix: every comparison reads it.
fn query_sort(n: usize) -> Case {
    let prefix = "k".repeat(200);
    let mut rows = Vec::new();
    let mut size = 2;
    let mut i = 0u64;
    while size < n {
        // Keys in a scrambled order, so the sort has work to do.
        let key = format!("{prefix}{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000);
        let row = json!({"id": i, "key": key});
        size += row.to_string().len() + 1;
        rows.push(row);
        i += 1;
    }
    projected(
        &serde_json::Value::Array(rows).to_string(),
        Some("sort_by([@,@][], &key)[:3].id"),
    )
}

/// Deep equality of values built apart: every row compared member by
/// member with a copy of itself.
fn query_equal(n: usize) -> Case {
    projected(
        &api_rows(n),
        Some("length([*].{i: id, o: owner, l: labels} == [*].{i: id, o: owner, l: labels} && [?contains([owner], owner)])"),
    )
}

fn budget_lines(n: usize) -> Case {
    budgeted(vec![
        json!({"type": "text", "text": repeat("a line of a log\n", n)}),
    ])
}

/// `str(rows)` of database rows to about `n` bytes: `mcp-server-sqlite`'s
/// answer, read as a Python literal and encoded as TOON.
fn py_rows(n: usize) -> Case {
    let mut out = String::from("[");
    let mut i = 0;
    while out.len() < n {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!(
            "{{'id': {i}, 'name': 'Customer {i}', 'score': {}.5, 'ok': True, 'note': None}}",
            i % 9
        ));
        i += 1;
    }
    out.push(']');
    text_result(&out)
}

fn py_near_miss(n: usize) -> Case {
    // Read to its last byte, then refused: no `repr` ends so.
    let Case { response, .. } = py_rows(n);
    let v: serde_json::Value = serde_json::from_slice(&response).unwrap();
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    text_result(&format!("{}}}", &text[..text.len() - 1]))
}

fn py_deep_tuples(n: usize) -> Case {
    // Past the nesting bound at once; the skim reads it whole first.
    text_result(&repeat("(", n))
}

fn py_many_keys(n: usize) -> Case {
    // One dict: its keys checked with a hash set.
    let mut out = String::from("{");
    let mut i = 0;
    while out.len() < n {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("'key {i}': True"));
        i += 1;
    }
    out.push('}');
    text_result(&out)
}

fn py_varying_keys(n: usize) -> Case {
    // Dicts of 16 keys, each set new: pairwise checks, no row alike.
    let mut rows = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < n {
        let keys: Vec<String> = (0..16)
            .map(|k| format!("'k{}': None", i * 16 + k))
            .collect();
        let row = format!("{{{}}}", keys.join(", "));
        size += row.len() + 2;
        rows.push(row);
        i += 1;
    }
    text_result(&format!("[{}]", rows.join(", ")))
}

fn py_escapes(n: usize) -> Case {
    text_result(&format!("['{}', None]", repeat("\\x00\\u200b\\n", n)))
}

fn py_floats(n: usize) -> Case {
    // Each float's shortest spelling checked.
    let mut out = String::from("[True");
    let mut i: u64 = 1;
    while out.len() < n {
        out.push_str(", ");
        mcp_toon::json::python::repr_float(1.0 / i as f64, &mut out);
        i += 1;
    }
    out.push(']');
    text_result(&out)
}

fn py_unicode(n: usize) -> Case {
    // Characters past ASCII, each looked up as printable.
    text_result(&format!(
        "['{}', None]",
        repeat("Zażółć gęślą jaźń 中文 ", n)
    ))
}

/// Content types of cases that call a listing function of the core
/// directly (crates/core/src/listing/, not yet wired into the exchange): `response` is
/// the function's input, `request` a query where one is needed.
pub const LISTING_COMPACT: &str = "x-mcp-toon/listing-compact";
pub const LISTING_SEARCH: &str = "x-mcp-toon/listing-search";
pub const LISTING_REWRITE: &str = "x-mcp-toon/listing-rewrite";

const NAMES: mcp_toon::listing::Names<'static> = mcp_toon::listing::Names {
    search: "mcp_toon_search_tools",
    call: "mcp_toon_call_tool",
    describe: "mcp_toon_describe",
};

/// Runs a listing case; `None` for an exchange.
pub fn direct(case: &Case) -> Option<String> {
    use mcp_toon::config::Level;
    use mcp_toon::listing::{self, Catalog, Compaction, Index, Limits, Query, Rewrite};
    let text = std::str::from_utf8(&case.response).ok()?;
    let how = Compaction {
        level: Level::High,
        max_description_bytes: 120,
    };
    match case.content_type {
        LISTING_COMPACT => {
            let describe = listing::describe_tool(NAMES);
            let out = listing::compact_listing(text, how, &[&describe]);
            Some(format!("compact:{}", out.map_or(0, |o| o.len())))
        }
        LISTING_SEARCH => {
            let mut catalog = Catalog::default();
            let limits = Limits {
                max_tools: 1 << 20,
                max_bytes: 1 << 30,
            };
            catalog.add_page(text, limits).ok()?;
            let index = Index::new(&catalog);
            let query = std::str::from_utf8(&case.request).ok()?;
            let hits = index.search(&Query::new(query), 5);
            let answer = listing::search_answer(&catalog, &index, query, 5, how);
            Some(format!("search:{}:{}", hits.len(), answer.len()))
        }
        LISTING_REWRITE => Some(match listing::rewrite_call(&case.response, NAMES) {
            Rewrite::Rewritten { body, .. } => format!("rewritten:{}", body.len()),
            Rewrite::Refused(_) => "refused".into(),
            Rewrite::Pass => "pass".into(),
        }),
        _ => None,
    }
}

/// A `tools/list` result of `count` tools made by `tool`.
fn listing(count: usize, tool: impl Fn(usize) -> serde_json::Value) -> String {
    let tools: Vec<_> = (0..count.max(1)).map(tool).collect();
    json!({ "tools": tools }).to_string()
}

fn listing_case(content_type: &'static str, request: &str, result: String) -> Case {
    Case {
        request: request.as_bytes().to_vec(),
        content_type,
        response: result.into_bytes(),
    }
}

/// A tool as real servers write them (zod-to-json-schema's noise, two
/// sentences, described arguments).
fn real_tool(i: usize) -> serde_json::Value {
    json!({"name": format!("create_item_{i}"), "title": "Create item",
           "description": "Create a new item in a repository. Labels and assignees are optional.",
           "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                           "properties": {"owner": {"type": "string", "description": "Repository owner"},
                                          "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels", "default": []}},
                           "required": ["owner"], "additionalProperties": false},
           "annotations": {"readOnlyHint": false}})
}

fn listing_compact_many_tools(n: usize) -> Case {
    listing_case(LISTING_COMPACT, "", listing(n / 480, real_tool))
}

fn listing_compact_deep_schemas(n: usize) -> Case {
    // Schemas nested 100 deep (serde_json reads 128), alternating the
    // keywords that hold schemas, each level with noise to drop.
    let depth = 100;
    let mut schema = json!({"type": "string", "title": "leaf"});
    for d in 0..depth {
        schema = match d % 4 {
            0 => json!({"type": "object", "title": "t", "properties": {"a": schema}}),
            1 => json!({"type": "array", "description": "d", "items": schema}),
            2 => json!({"anyOf": [schema, {"type": "null"}], "default": null}),
            _ => json!({"allOf": [schema], "examples": [1]}),
        };
    }
    let size = schema.to_string().len();
    listing_case(
        LISTING_COMPACT,
        "",
        listing(
            n / size,
            |i| json!({"name": format!("deep_{i}"), "inputSchema": {"type": "object", "properties": {"x": schema}}}),
        ),
    )
}

fn listing_compact_long_description(n: usize) -> Case {
    // No sentence ends: abbreviations and stops before lower case only.
    let text = repeat("see e.g. this. and more words ", n);
    listing_case(
        LISTING_COMPACT,
        "",
        listing(1, |_| json!({"name": "long", "description": text})),
    )
}

fn listing_compact_many_refs(n: usize) -> Case {
    // A chain of definitions, each referring to the next, and as many
    // that nothing refers to.
    let count = n / 90;
    let mut defs = serde_json::Map::new();
    for i in 0..count {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1), "description": "x"}),
        );
        defs.insert(
            format!("u{i}"),
            json!({"type": "string", "title": "unused"}),
        );
    }
    defs.insert(format!("d{count}"), json!({"type": "string"}));
    let schema =
        json!({"$defs": defs, "type": "object", "properties": {"p": {"$ref": "#/$defs/d0"}}});
    listing_case(
        LISTING_COMPACT,
        "",
        listing(1, |_| json!({"name": "refs", "inputSchema": schema})),
    )
}

fn listing_search_many_tools(n: usize) -> Case {
    listing_case(
        LISTING_SEARCH,
        "create a new item with labels",
        listing(n / 480, real_tool),
    )
}

fn listing_search_long_fields(n: usize) -> Case {
    // Ten tools with long descriptions and names of many words; the query
    // as long as a query may be.
    let words = repeat("alpha beta gamma delta ", n / 10);
    let query = repeat("gamma delta epsilon ", 4096);
    listing_case(
        LISTING_SEARCH,
        &query,
        listing(
            10,
            |i| json!({"name": format!("tool_{i}_{}", "aB".repeat(50)), "description": words}),
        ),
    )
}

fn listing_rewrite_call(n: usize) -> Case {
    let arguments: serde_json::Map<String, serde_json::Value> = (0..n / 20)
        .map(|i| (format!("k{i}"), json!("value")))
        .collect();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "mcp_toon_call_tool", "arguments": {"name": "real", "arguments": arguments},
                                 "_meta": {"progressToken": 1}}});
    Case {
        request: Vec::new(),
        content_type: LISTING_REWRITE,
        response: body.to_string().into_bytes(),
    }
}

macro_rules! families {
    ($($name:ident: $target:literal,)*) => {
        pub const ALL: &[Family] = &[$(Family { name: stringify!($name), target: $target, make: $name },)*];
    };
}

families! {
    b64_lines: "base64: 16-column lines of one letter (issue 13)",
    b64_mime: "base64: random, wrapped at 76 columns (MIME)",
    b64_wrapped_80: "base64: random, wrapped at 80 columns (issue 13)",
    b64_one_run: "base64: one run without separators",
    b64_short_runs: "base64: short runs in one long URL-like word",
    b64_url_word: "base64: strippable runs in one long URL word",
    b64_dotted: "base64: dotted runs (JWT-like)",
    data_uri_no_comma: "base64: data: URIs without a payload",
    data_uri_many: "base64: many data: URIs",
    html_rt: "HTML: <rt> nesting (issue 13)",
    html_div_title: "HTML: <div title=\"<\"> nesting (issue 13)",
    html_deep_div: "HTML: nested <div>s",
    html_ul_li: "HTML: nested <ul><li> (html5ever #788)",
    html_formatting: "HTML: nested <b> (formatting elements)",
    html_formatting_distinct: "HTML: <b>s that differ (Noah's Ark)",
    html_adoption: "HTML: misnested formatting (adoption agency)",
    html_misnested_a: "HTML: misnested <a>",
    html_unknown_end_tags: "HTML: <div></x> (end tags that close nothing)",
    html_span_end_walk: "HTML: deep <span>s, then stray end tags",
    html_many_attributes: "HTML: one tag, many attributes",
    html_attributes_per_tag: "HTML: tags of 200 attributes each",
    html_quoted_gt: "HTML: attributes quoting < and >",
    html_html_attrs: "HTML: <html aN> merging attributes",
    html_table_colspan: "HTML: table cells spanning 1000 columns",
    html_table_ragged: "HTML: one wide row, many narrow ones",
    html_nested_list_lines: "HTML: line breaks deep in nested lists",
    html_comments: "HTML: many comments",
    html_script: "HTML: script with < and quotes",
    html_page: "HTML: an ordinary page (scale)",
    ws_one_run: "whitespace: one run of spaces",
    ws_mixed: "whitespace: blank lines and mixed runs",
    ws_fences: "whitespace: fence lines",
    ws_long_line: "whitespace: one long line of words",
    json_deep: "JSON: deep arrays",
    json_long_key_deep: "JSON: long escaped key over nested arrays",
    json_long_key_strings: "JSON: long key over many strings",
    json_nulls: "JSON: many null members",
    json_tiny_strings: "JSON: many tiny strings",
    json_escapes: "JSON: one string of escapes",
    json_wide_object: "JSON: one object of very many members",
    text_long_number_prefix: "text: digits to the end, then a letter (no JSON)",
    text_lead_whitespace: "text: whitespace to the end, then a table",
    toon_tiny_rows: "TOON: very many tiny rows",
    toon_wide_rows: "TOON: rows of very many keys",
    toon_wide_envelope: "TOON: one table among very many members",
    toon_near_tables: "TOON: very many nested arrays a row short of a table",
    toon_nested_row_groups: "TOON: tables in the field groups of a table's rows",
    toon_deep_envelope: "TOON: a table 90 envelopes deep, near tables beside",
    toon_pretty_table: "TOON: a table written pretty (indent 2)",
    toon_reordered_keys: "TOON: a field group's keys in opposite orders",
    toon_near_keys: "TOON: keys that almost collide",
    toon_group_rows: "TOON: field groups in changing key order",
    toon_sparse_rows: "TOON: rows lacking a key (generic path)",
    toon_sparse_items: "TOON: many items of such rows (generic path)",
    toon_long_numbers: "TOON: long decimal numbers",
    toon_huge_number: "TOON: one number of a million digits",
    toon_long_strings: "TOON: long quoted cells",
    toon_table: "TOON: an ordinary table (scale)",
    sse_data_without_end: "SSE: one data: line that never ends",
    sse_unclosed_quote: "SSE: an event whose JSON never closes",
    sse_many_data_lines: "SSE: one event of many data: lines",
    sse_tiny_events: "SSE: very many tiny events",
    sse_batch_results: "SSE: a batch's results, one event each",
    sse_comments_cr: "SSE: comment lines ended by CR",
    sse_fields: "SSE: many non-data fields",
    request_batch: "request: a batch of many calls",
    request_many_arguments: "request: arguments of many members",
    request_deep_arguments: "request: deeply nested arguments",
    result_many_items: "response: many content items",
    budget_many_items: "budget: many items, each a page",
    budget_table: "budget: one table cut into pages of rows",
    budget_lines: "budget: text cut into pages of lines",
    budget_batch: "budget: a batch of many results over budget",
    listing_many_tools: "listing: very many tools annotated",
    listing_compact_many_tools: "listings: compact a listing of very many tools",
    listing_compact_deep_schemas: "listings: compact schemas nested 100 deep",
    listing_compact_long_description: "listings: one description without a sentence end",
    listing_compact_many_refs: "listings: a chain of $defs and as many unused",
    listing_search_many_tools: "listings: index and search very many tools",
    listing_search_long_fields: "listings: long descriptions, the longest query",
    listing_rewrite_call: "listings: rewrite a call with very many arguments",
    result_many_changed_items: "response: many content items, each changed",
    project_rules: "project: operator rules over API rows",
    project_rules_deep: "project: `**` rules over deep nesting",
    project_query: "project: an agent query over API rows",
    py_rows: "Python literal: str(rows) of a table (scale)",
    py_near_miss: "Python literal: rows refused at the last byte",
    py_deep_tuples: "Python literal: nested tuples past the bound",
    py_many_keys: "Python literal: one dict of very many keys",
    py_varying_keys: "Python literal: dicts of 16 keys, each set new",
    py_escapes: "Python literal: a string of escapes",
    py_floats: "Python literal: floats in shortest spelling",
    py_unicode: "Python literal: a string past ASCII",
    query_doubling: "query: to_array(@)|to_string(@) 24 times (issue 37)",
    query_to_string: "query: the whole block's text, escaped again",
    query_wide_select: "query: a multi-select of 24 copies, flattened",
    query_sort: "query: sort_by on keys sharing a 200-byte prefix",
    query_equal: "query: deep equality of rows built apart",
}
