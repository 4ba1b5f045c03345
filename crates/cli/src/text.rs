//! The plain-text table `mcp-toon measure` prints by default.

use super::listing::ListingReport;
use super::measure::{Measurement, Totals};

/// `before -> after (±p%)`; the percentage only when `before` is not zero.
pub(crate) fn change(before: usize, after: usize) -> String {
    match percent(before, after) {
        Some(p) => format!("{before} -> {after} ({p})"),
        None => format!("{before} -> {after}"),
    }
}

/// The relative change, signed, one decimal: `-47.5%`.
pub(crate) fn percent(before: usize, after: usize) -> Option<String> {
    if before == 0 {
        return None;
    }
    let p = (after as f64 - before as f64) * 100.0 / before as f64;
    Some(if p > 0.0 {
        format!("+{p:.1}%")
    } else {
        format!("{p:.1}%")
    })
}

/// The whole table: one line per block, then the totals.
pub(crate) fn render(m: &Measurement) -> String {
    let header = [
        "PAYLOAD", "ID", "BLOCK", "OUTCOME", "REASON", "BYTES", "TOKENS",
    ];
    let mut lines: Vec<[String; 7]> = Vec::new();
    for p in &m.payloads {
        if p.rows.is_empty() && p.listing.is_none() {
            lines.push([
                p.payload.clone(),
                "-".into(),
                "-".into(),
                "no tool result".into(),
                format!("({} found)", p.kind.as_str()),
                String::new(),
                String::new(),
            ]);
        }
        for r in &p.rows {
            let block = r.block.is_some();
            lines.push([
                p.payload.clone(),
                r.id.clone().unwrap_or_else(|| "-".into()),
                r.block.map_or_else(|| "-".into(), |b| b.to_string()),
                r.outcome.clone(),
                r.reason.clone().unwrap_or_else(|| "-".into()),
                if block {
                    change(r.bytes_before, r.bytes_after)
                } else {
                    "-".into()
                },
                if block {
                    change(r.tokens_before, r.tokens_after)
                } else {
                    "-".into()
                },
            ]);
        }
    }
    let mut widths = header.map(str::len);
    for l in &lines {
        for (w, cell) in widths.iter_mut().zip(l.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let format_line = |cells: &[String]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths.iter()).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = String::new();
    out.push_str(&format_line(&header.map(String::from)));
    out.push('\n');
    for l in &lines {
        out.push_str(&format_line(l));
        out.push('\n');
    }
    out.push_str(&totals_line(m.payloads.len(), &m.totals, m.tokenizer));
    out.push('\n');
    out.push_str(&listings(m));
    out
}

/// The `tools/list` captures among the payloads: tokens as sent, compact
/// at each level and disclosed, then their totals.
fn listings(m: &Measurement) -> String {
    let reports: Vec<(&str, &ListingReport)> = m
        .payloads
        .iter()
        .filter_map(|p| Some((p.payload.as_str(), p.listing.as_ref()?)))
        .collect();
    if reports.is_empty() {
        return String::new();
    }
    let mut rows: Vec<[String; 7]> = vec![[
        "LISTING".into(),
        "TOOLS".into(),
        "SENT".into(),
        "LIGHT".into(),
        "MEDIUM".into(),
        "HIGH".into(),
        "DISCLOSED".into(),
    ]];
    let mut total = [0usize; 6];
    let mut tools = 0;
    for (name, r) in &reports {
        let figures = [
            r.sent.tokens,
            r.light.tokens,
            r.medium.tokens,
            r.high.tokens,
            r.disclosed.tokens,
        ];
        tools += r.tools;
        for (t, f) in total.iter_mut().zip(figures) {
            *t += f;
        }
        rows.push(listing_row(name, r.tools, &figures));
    }
    let sums = [total[0], total[1], total[2], total[3], total[4]];
    rows.push(listing_row("TOTAL", tools, &sums));
    let mut widths = [0usize; 7];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = format!("\n{} tokens of tools/list results (the `listings` section; hot tools: the configuration's)\n", m.tokenizer);
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn listing_row(name: &str, tools: usize, figures: &[usize; 5]) -> [String; 7] {
    let sent = figures[0];
    let cell = |after: usize| match percent(sent, after) {
        Some(p) => format!("{after} ({p})"),
        None => after.to_string(),
    };
    [
        name.to_string(),
        tools.to_string(),
        sent.to_string(),
        cell(figures[1]),
        cell(figures[2]),
        cell(figures[3]),
        cell(figures[4]),
    ]
}

/// `TOTAL: 7 payloads, 9 blocks, 2 changed; bytes a -> b (p); o200k_base tokens c -> d (q)`.
pub(crate) fn totals_line(payloads: usize, t: &Totals, tokenizer: &str) -> String {
    format!(
        "TOTAL: {payloads} payloads, {} blocks, {} changed; bytes {}; {tokenizer} tokens {}",
        t.blocks,
        t.changed,
        change(t.bytes_before, t.bytes_after),
        change(t.tokens_before, t.tokens_after),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(change(200, 100), "200 -> 100 (-50.0%)");
        assert_eq!(change(100, 100), "100 -> 100 (0.0%)");
        assert_eq!(change(3, 4), "3 -> 4 (+33.3%)");
        assert_eq!(change(0, 0), "0 -> 0");
    }
}
