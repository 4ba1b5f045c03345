// A failed unwrap or panic here is a failed test, which is what it is for.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::{is_html, Converted};

/// The Markdown, when the text converts.
fn to_markdown(text: &str) -> Option<String> {
    match super::to_markdown(text) {
        Converted::Markdown(m) => Some(m),
        _ => None,
    }
}

#[test]
fn documents_are_html() {
    for text in [
        "<!DOCTYPE html><html><body><p>x</p></body></html>",
        "<!doctype html>\n<title>t</title>\nplain",
        "\u{feff}  <HTML lang=\"en\"><BODY>Hi</BODY></HTML>",
        "<!-- generated -->\n<html>\n<head></head><body>x</body></html>",
    ] {
        assert!(is_html(text), "{text}");
    }
}

#[test]
fn fragments_with_enough_real_tags_are_html() {
    for text in [
        "<p>Hello <b>world</b></p>",
        "<div class=\"card\"><h2>Title</h2><p>Body</p></div>\n",
        "<ul><li>a<li>b</ul>",
        "<table><tr><td>1</td></tr></table>",
        "<P>Upper <EM>case</EM></P>",
        "<br/><br/><span>x</span>",
    ] {
        assert!(is_html(text), "{text}");
    }
}

#[test]
fn html_looking_text_is_not_html() {
    for text in [
        "Use <b>bold</b> for emphasis",
        "<b>x</b>",
        "<note><to>Tove</to><from>Jani</from></note>",
        "<T> and <U> are type parameters <V>",
        "<https://example.com/a> and <mailto:a@b.c>",
        "if a < b && c > d { <p> }",
        "<p>Hello <b>unfinished",
        "<svg><g><path d=\"M0\"/></g></svg>",
        "# Title\n\n<details><summary>More</summary>text</details>",
        "<div>one tag pair</div>",
        "",
        "<",
        "</p></p></p>",
    ] {
        assert!(!is_html(text), "{text}");
    }
}

#[test]
#[cfg(feature = "html")]
fn converts_and_drops_scripts_styles_and_anchors() {
    let html = "<html><head><style>.a{color:red}</style><script>alert(1)</script></head>\
                <body><h2 id=\"s\">Section</h2><p>See <a href=\"https://x.test/a?b=1\">docs</a>.</p>\
                <noscript>enable js</noscript><ol><li>one</li><li>two</li></ol></body></html>";
    let md = to_markdown(html).unwrap();
    assert!(md.starts_with("## Section"), "{md}");
    assert!(md.contains("[docs](https://x.test/a?b=1)"), "{md}");
    assert!(md.contains("1. one\n2. two"), "{md}");
    for gone in ["alert", "color", "enable js", "id=", "<"] {
        assert!(!md.contains(gone), "{gone:?} in {md}");
    }
    assert!(!md.starts_with('\n') && !md.ends_with('\n'));
}

#[test]
fn not_html_is_not_converted() {
    assert_eq!(to_markdown("Use <b>bold</b> for emphasis"), None);
}

#[test]
fn conversion_that_does_not_shrink_is_dropped() {
    // `<p>` tags are few bytes; escaping Markdown characters adds more.
    let html = format!("<p>{}</p><p>x</p><p>y</p>", "*_".repeat(50));
    assert_eq!(to_markdown(&html), None);
}

#[test]
#[cfg(feature = "html")]
fn nesting_up_to_the_limit_converts() {
    // `<html>` and `<body>` are two levels. Every `<div>` walks the stack
    // of open elements, so nesting this deep costs about depth² of parser
    // work: the text is long enough for the work budget to allow it.
    let depth = super::guard::MAX_DEPTH - 2;
    let text = "word ".repeat(4000);
    let html = format!("{}{text}{}", "<div>".repeat(depth), "</div>".repeat(depth));
    assert_eq!(to_markdown(&html).as_deref(), Some(text.trim_end()));
    let deeper = format!("<div>{html}</div>");
    assert_eq!(super::to_markdown(&deeper), Converted::OverBudget);
    assert_eq!(
        super::guard::check(&deeper),
        Err(super::guard::Refusal::TooDeep)
    );
    // Elements without end tags and SVG's self-closed ones do not nest.
    let flat = format!("<div>{}</div>", "<p>para<br><img src=a.png>".repeat(1000));
    assert!(to_markdown(&flat).is_some());
    let icons = format!(
        "<div>{}</div>",
        "<svg><path d=\"M0\"/></svg><span>i</span>".repeat(500)
    );
    assert!(to_markdown(&icons).is_some());
}

#[test]
#[cfg(feature = "html")]
fn hostile_nesting_is_over_budget() {
    // Without the budget each of these takes seconds (issue 13).
    let div = format!("{}x{}", "<div>".repeat(20_000), "</div>".repeat(20_000));
    let lists = "<ul><li>x".repeat(20_000) + "</ul>";
    let unclosed = "<div>x".repeat(20_000) + "</div>";
    let ruby = format!("<html><body><p>a</p>{}", "<rt>x".repeat(20_000));
    let quoted = format!("<html><body>{}", "<div title=\"<\">".repeat(20_000));
    let stray_ends = format!("<html><body>{}", "<div></x>".repeat(20_000));
    for html in [div, lists, unclosed, ruby, quoted, stray_ends] {
        assert!(super::is_html(&html));
        assert_eq!(
            super::to_markdown(&html),
            Converted::OverBudget,
            "{}",
            &html[..40]
        );
    }
}

#[test]
#[cfg(not(feature = "html"))]
fn without_the_feature_nothing_converts() {
    const { assert!(!super::SUPPORTED) };
    assert_eq!(
        to_markdown("<html><body><p>x</p><p>y</p></body></html>"),
        None
    );
}

#[test]
#[cfg(feature = "html")]
fn conversion_quiets_html5ever_logging() {
    // Other tests convert concurrently; each restores what it found, and
    // the last to finish restores the level seen by the first.
    log::set_max_level(log::LevelFilter::Trace);
    let md = to_markdown("<p>Hello <b>world</b></p><p>again</p>");
    assert_eq!(md.as_deref(), Some("Hello **world**\n\nagain"));
    let during = {
        let _q = super::quiet::Quiet::new();
        log::max_level()
    };
    assert!(during <= log::LevelFilter::Info);
}
