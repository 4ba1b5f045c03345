//! The page `mcp-toon measure --report FILE.html` writes: one file with its
//! CSS and an SVG bar chart inline, no script and nothing fetched, so it
//! opens from disk or as a CI artifact.

use std::fmt::Write;

use super::measure::Measurement;
use super::text::{change, percent};

const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:70rem;padding:0 1rem;color:#1f2328}
h1{font-size:1.4rem;margin-bottom:.2rem}h2{font-size:1.1rem;margin-top:2rem}
p.lead{color:#57606a;margin-top:0}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;white-space:nowrap}
tr.total td{font-weight:600;border-top:2px solid #1f2328}
.encoded{color:#1a7f37;font-weight:600}.passthrough{color:#57606a}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem;vertical-align:middle}
svg text{font:12px system-ui,sans-serif;fill:#1f2328}
";
const BEFORE_COLOUR: &str = "#8c959f";
const AFTER_COLOUR: &str = "#0969da";

/// Text safe inside HTML and SVG element content and quoted attributes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The whole page.
pub(crate) fn render(m: &Measurement) -> String {
    let t = &m.totals;
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n");
    out.push_str("<title>mcp-toon measure</title>\n<style>");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<h1>mcp-toon: tokens before and after</h1>\n");
    let _ = writeln!(
        out,
        "<p class=\"lead\">{} payloads, {} text blocks, {} changed. {} tokens {}; bytes {}.</p>",
        m.payloads.len(),
        t.blocks,
        t.changed,
        escape(m.tokenizer),
        escape(&change(t.tokens_before, t.tokens_after)),
        escape(&change(t.bytes_before, t.bytes_after)),
    );
    let _ = writeln!(
        out,
        "<p class=\"legend\">Tokens per payload:<span style=\"background:{BEFORE_COLOUR}\"></span>as the server sent it<span style=\"background:{AFTER_COLOUR}\"></span>as the plugin would send it</p>"
    );
    out.push_str(&chart(m));
    out.push_str(&payload_table(m));
    out.push_str(&block_table(m));
    out.push_str("</body>\n</html>\n");
    out
}

/// Two horizontal bars per payload, scaled to the largest count.
fn chart(m: &Measurement) -> String {
    const LABEL: usize = 260;
    const BARS: usize = 560;
    const BAR: usize = 14;
    const GAP: usize = 12;
    let width = LABEL + BARS + 120;
    let row = 2 * BAR + GAP;
    let height = m.payloads.len() * row + GAP;
    let max = m
        .payloads
        .iter()
        .map(|p| p.totals.tokens_before.max(p.totals.tokens_after))
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |n: usize| n.saturating_mul(BARS).div_ceil(max);
    let names: Vec<&str> = m.payloads.iter().map(|p| p.payload.as_str()).collect();
    let shared = common_dir(&names);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"tokens before and after per payload\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">"
    );
    for (i, p) in m.payloads.iter().enumerate() {
        let y = GAP + i * row;
        let name = escape(&p.payload);
        let label = escape(&tail(p.payload.get(shared..).unwrap_or(&p.payload), 38));
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{label}</text>",
            LABEL - 8,
            y + BAR + 4
        );
        for (j, (n, colour, what)) in [
            (p.totals.tokens_before, BEFORE_COLOUR, "before"),
            (p.totals.tokens_after, AFTER_COLOUR, "after"),
        ]
        .into_iter()
        .enumerate()
        {
            let by = y + j * BAR;
            let w = scale(n);
            let _ = writeln!(
                out,
                "<rect x=\"{LABEL}\" y=\"{by}\" width=\"{w}\" height=\"{}\" fill=\"{colour}\"><title>{name}: {n} tokens {what}</title></rect>",
                BAR - 2
            );
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{}\">{n}</text>",
                LABEL + w + 6,
                by + BAR - 3
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// Length of the directory prefix (up to and including a `/`) every name
/// shares, so chart labels show what differs.
fn common_dir(names: &[&str]) -> usize {
    let Some(first) = names.first() else {
        return 0;
    };
    let mut len = first.len();
    for name in names {
        len = first
            .bytes()
            .zip(name.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    first
        .get(..len)
        .and_then(|p| p.rfind('/'))
        .map_or(0, |i| i + 1)
}

/// The last `max` characters of a name, `…` in front when cut: the end
/// of a path says most about it.
fn tail(name: &str, max: usize) -> String {
    let count = name.chars().count();
    if count <= max {
        return name.to_string();
    }
    let kept: String = name.chars().skip(count + 1 - max).collect();
    format!("…{kept}")
}

fn payload_table(m: &Measurement) -> String {
    let mut out = String::from(
        "<h2>Payloads</h2>\n<table>\n<tr><th>payload</th><th>shape</th><th>blocks</th><th>changed</th><th>bytes</th><th>tokens</th><th>change</th></tr>\n",
    );
    for p in &m.payloads {
        let t = &p.totals;
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} → {}</td><td class=\"n\">{} → {}</td><td class=\"n\">{}</td></tr>",
            escape(&p.payload),
            p.kind.as_str(),
            t.blocks,
            t.changed,
            t.bytes_before,
            t.bytes_after,
            t.tokens_before,
            t.tokens_after,
            percent(t.tokens_before, t.tokens_after).unwrap_or_default(),
        );
    }
    let t = &m.totals;
    let _ = writeln!(
        out,
        "<tr class=\"total\"><td>total</td><td></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} → {}</td><td class=\"n\">{} → {}</td><td class=\"n\">{}</td></tr>\n</table>",
        t.blocks,
        t.changed,
        t.bytes_before,
        t.bytes_after,
        t.tokens_before,
        t.tokens_after,
        percent(t.tokens_before, t.tokens_after).unwrap_or_default(),
    );
    out
}

/// A block's change; a whole-response row has no block to measure.
fn block_change(block: Option<usize>, before: usize, after: usize) -> String {
    match block {
        Some(_) => change(before, after),
        None => "-".to_string(),
    }
}

fn block_table(m: &Measurement) -> String {
    let mut out = String::from(
        "<h2>Blocks</h2>\n<table>\n<tr><th>payload</th><th>id</th><th>block</th><th>outcome</th><th>reason</th><th>bytes</th><th>tokens</th></tr>\n",
    );
    for p in &m.payloads {
        for r in &p.rows {
            let class = if r.outcome == super::measure::PASSTHROUGH {
                "passthrough"
            } else {
                "encoded"
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"{class}\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                escape(&p.payload),
                escape(r.id.as_deref().unwrap_or("-")),
                r.block.map_or_else(|| "-".to_string(), |b| b.to_string()),
                escape(&r.outcome),
                escape(r.reason.as_deref().unwrap_or("")),
                escape(&block_change(r.block, r.bytes_before, r.bytes_after)),
                escape(&block_change(r.block, r.tokens_before, r.tokens_after)),
            );
        }
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn chart_labels_drop_the_shared_directory() {
        assert_eq!(super::common_dir(&["a/b/x.json", "a/b/y.json"]), 4);
        assert_eq!(super::common_dir(&["a/b/x.json", "a/bc/y.json"]), 2);
        assert_eq!(super::common_dir(&["x.json"]), 0);
        assert_eq!(super::common_dir(&["d/x.json"]), 2);
        assert_eq!(super::common_dir(&[]), 0);
    }

    #[test]
    fn long_names_keep_their_end() {
        assert_eq!(super::tail("abc", 3), "abc");
        assert_eq!(super::tail("abcdef", 4), "…def");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            super::escape(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
    }
}
