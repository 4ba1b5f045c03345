// A failed unwrap or panic here is a failed test, which is what it is for.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use super::*;

const UNLIMITED: Limits = Limits {
    work: u64::MAX,
    output: u64::MAX,
};

/// An ordinary page: headings, paragraphs, links, lists, a table.
fn page(sections: usize) -> String {
    let section = "<div class=\"section\"><h2 id=\"s\">Section</h2><p>Some <b>bold</b> and \
                   <a href=\"https://example.com/x\">a link</a> in a paragraph.</p>\
                   <ul><li>one</li><li>two <code>x</code></li></ul>\
                   <table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table></div>\n";
    format!(
        "<!doctype html><html><head><title>Doc</title><style>p{{color:red}}</style></head><body>{}</body></html>",
        section.repeat(sections)
    )
}

/// The text of the first real page of the token-savings corpus.
fn corpus_page() -> String {
    let raw = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/corpus/html-web-page.json"
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn ordinary_pages_use_a_fraction_of_the_budget() {
    for text in [page(1), page(200), corpus_page()] {
        let used = measure(&text, UNLIMITED).unwrap();
        let len = text.len() as u64;
        // Calibrated on 3,855 installed manual pages (rustdoc, mdBook,
        // Node.js, valgrind): at most 6.8 units and 2.2 Markdown bytes per
        // byte; the budgets leave three times that.
        assert!(
            used.work <= len * WORK_PER_BYTE / 3,
            "{} > {len} * 8",
            used.work
        );
        assert!(used.output <= len * OUTPUT_PER_BYTE / 3, "{}", used.output);
        assert_eq!(check(&text), Ok(()));
    }
}

#[test]
fn the_work_budget_holds_at_its_exact_boundary() {
    let text = page(20);
    let used = measure(&text, UNLIMITED).unwrap();
    let at = Limits {
        work: used.work,
        output: u64::MAX,
    };
    assert_eq!(measure(&text, at), Ok(used));
    let below = Limits {
        work: used.work - 1,
        output: u64::MAX,
    };
    assert_eq!(measure(&text, below), Err(Refusal::ParserWork));
}

#[test]
fn the_output_budget_holds_at_its_exact_boundary() {
    let text = page(20);
    let used = measure(&text, UNLIMITED).unwrap();
    let at = Limits {
        work: u64::MAX,
        output: used.output,
    };
    assert_eq!(measure(&text, at), Ok(used));
    let below = Limits {
        work: u64::MAX,
        output: used.output - 1,
    };
    assert_eq!(measure(&text, below), Err(Refusal::OutputSize));
}

#[test]
fn the_budget_grows_with_the_text() {
    // WORK_BASE and WORK_PER_BYTE: the same markup passes or not by its
    // size alone.
    let deep = |n: usize| format!("{}x{}", "<div>".repeat(n), "</div>".repeat(n));
    assert_eq!(check(&deep(200)), Ok(()));
    assert_eq!(check(&deep(500)), Err(Refusal::ParserWork));
    let padded = format!("{}{}", deep(500), "<p>plain words here</p>".repeat(1000));
    assert_eq!(check(&padded), Ok(()));
}

#[test]
fn hostile_markup_is_refused_early() {
    let n = 200_000;
    let many_attributes = format!(
        "<html><body><div{}>x</div>",
        (0..n / 8).map(|i| format!(" a{i}")).collect::<String>()
    );
    let quoted = format!(
        "<html><body><div{}>x</div>",
        (0..n / 10)
            .map(|i| format!(" a{i}=\"<>\""))
            .collect::<String>()
    );
    let roots = format!(
        "<html><body>x{}",
        (0..n / 10)
            .map(|i| format!("<html a{i}>"))
            .collect::<String>()
    );
    let formatting = format!(
        "<html><body>{}",
        (0..n / 12)
            .map(|i| format!("<b class=c{i}>"))
            .collect::<String>()
    );
    let adoption = format!(
        "<html><body>{}",
        "<b><i><u><s><div><p>x</b></i></u></s>y".repeat(n / 40)
    );
    let misnested_a = format!(
        "<html><body>{}",
        "<a href=x><div><a href=y>z".repeat(n / 25)
    );
    let span_walk = format!(
        "<html><body>{}{}",
        "<span>".repeat(400),
        "</em>".repeat(n / 5)
    );
    for (text, refusal) in [
        (many_attributes, Refusal::ParserWork),
        (quoted, Refusal::ParserWork),
        (roots, Refusal::ParserWork),
        // Distinct formatting elements nest: Noah's Ark compares each new
        // one with every open one, until the depth limit.
        (formatting, Refusal::TooDeep),
        // The adoption agency reopens formatting elements inside every new
        // block: the tree deepens with each misnesting.
        (adoption, Refusal::TooDeep),
        (misnested_a, Refusal::TooDeep),
        (span_walk, Refusal::ParserWork),
    ] {
        assert_eq!(check(&text), Err(refusal), "{}", &text[..60]);
    }
}

#[test]
fn spanning_cells_count_for_every_slot_they_cover() {
    // mdka repeats a spanning cell in every grid slot and sizes the grid by
    // the widest row, with `colspan` unclamped: these would allocate
    // gigabytes.
    for colspan in ["18446744073709551615", "4000000000", "100000"] {
        let text = format!("<table><tr><td colspan={colspan}>x</td></tr></table>");
        assert_eq!(check(&text), Err(Refusal::OutputSize), "{colspan}");
    }
    let ragged = format!(
        "<table><tr>{}</tr>{}</table>",
        "<td>x</td>".repeat(3000),
        "<tr><td>y</td></tr>".repeat(3000)
    );
    assert_eq!(check(&ragged), Err(Refusal::OutputSize));
    // A few ordinary spans are nothing.
    let spans = "<table><tr><th colspan=2>h</th></tr><tr><td rowspan=2>a</td><td>b</td></tr><tr><td>c</td></tr></table>";
    assert_eq!(check(spans), Ok(()));
    // What mdka reads as no span at all.
    for colspan in ["0", "-3", "x", "99999999999999999999999"] {
        let text = format!("<table><tr><td colspan={colspan}>x</td></tr></table>");
        assert_eq!(check(&text), Ok(()), "{colspan}");
    }
}

#[test]
fn lines_deep_in_lists_count_their_prefix() {
    // Twenty levels: each line would carry twenty prefixes.
    let nested = format!("{}{}", "<ul><li>".repeat(20), "x<br>".repeat(20_000));
    assert_eq!(check(&nested), Err(Refusal::OutputSize));
    let shallow = format!("<ul><li>{}</ul>", "x<br>".repeat(20_000));
    assert_eq!(check(&shallow), Ok(()));
}

#[test]
fn attribute_starts_are_the_bytes_after_a_separator() {
    let text = "<p a=\"x\"b c/d e='f'>one two\tthree";
    // a, x (inside quotes: the count cannot tell), b, c, d (after `/`), e,
    // f, then two and three; `>` after a quote is no start.
    assert_eq!(attribute_starts(text, 0, text.len()), 9);
    // A piece sees the byte before it.
    assert_eq!(attribute_starts("a b", 2, 3), 1);
    assert_eq!(attribute_starts("ab", 1, 2), 0);
}

#[test]
fn silence_counts_from_the_piece_before_the_last_action() {
    let mut s = Silence::default();
    assert_eq!(s.after(true, 5), 5);
    assert_eq!(s.after(false, 3), 8);
    assert_eq!(s.after(true, 2), 2 + 3);
    assert_eq!(s.after(false, 1), 2 + 1 + 3);
    assert_eq!(s.after(true, 0), 1);
}
