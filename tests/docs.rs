#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // test code

//! The documents hold together: README links every file of `docs/`, and
//! every relative link in README and `docs/*.md` reaches a file that
//! exists — and, with `#anchor`, a heading of that file, by GitHub's slug
//! rules (lowercase; spaces become `-`; punctuation other than `-` and `_`
//! dropped; a repeated heading gets `-1`, `-2`, …).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `docs/*.md`, sorted.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    let mut all = vec![root().join("README.md")];
    all.extend(docs);
    all
}

/// The lines of `text` outside fenced code blocks (``` or ~~~).
fn prose(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let run: String = t.chars().take_while(|c| *c == '`' || *c == '~').collect();
        let is_fence =
            indent <= 3 && run.len() >= 3 && run.chars().all(|c| c == run.chars().next().unwrap());
        match &fence {
            None if is_fence => fence = Some(run),
            Some(open)
                if is_fence
                    && run.starts_with(open.as_str())
                    && t[run.len()..].trim().is_empty() =>
            {
                fence = None;
            }
            None => out.push(line),
            Some(_) => {}
        }
    }
    out
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a document's headings (ATX headings, outside code).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let t = line.trim_start();
        if line.len() - t.len() > 3 {
            continue;
        }
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !t[hashes..].starts_with(' ') {
            continue;
        }
        let title = t[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(title);
        let n = seen.iter().filter(|s| **s == base).count();
        seen.push(base.clone());
        out.insert(if n == 0 { base } else { format!("{base}-{n}") });
    }
    out
}

/// The targets of inline links `[text](target)` outside fenced code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after
                .find(|c: char| c == ')' || c.is_whitespace())
                .unwrap_or(after.len());
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

fn is_external(target: &str) -> bool {
    let scheme = target.split(':').next().unwrap_or("");
    target.contains(':')
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn name(p: &Path) -> String {
    p.strip_prefix(root()).unwrap().display().to_string()
}

#[test]
fn readme_links_every_doc() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let linked: BTreeSet<String> = links(&readme)
        .into_iter()
        .map(|t| t.split('#').next().unwrap().to_string())
        .collect();
    let mut missing = Vec::new();
    for doc in documents().iter().skip(1) {
        if !linked.contains(&name(doc)) {
            missing.push(name(doc));
        }
    }
    assert!(missing.is_empty(), "README links none of {missing:?}");
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in links(&text) {
            if is_external(&target) {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(path)
            };
            if !dest.exists() {
                broken.push(format!("{}: {target}: no such file", name(&doc)));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().and_then(|e| e.to_str()) != Some("md") {
                continue;
            }
            let headings = anchors(&std::fs::read_to_string(&dest).unwrap());
            if !headings.contains(anchor) {
                broken.push(format!("{}: {target}: no such heading", name(&doc)));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("The HTTP+SSE transport (MCP 2024-11-05)"),
        "the-httpsse-transport-mcp-2024-11-05"
    );
    assert_eq!(
        slug("`tools` and `servers`: overrides"),
        "tools-and-servers-overrides"
    );
    assert_eq!(
        slug("Buffering and Envoy's buffer limit"),
        "buffering-and-envoys-buffer-limit"
    );
    assert_eq!(slug("snake_case stays"), "snake_case-stays");
    let text = "# A\n\n```sh\n# not a heading\n```\n\n## A\n";
    let got: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(got, ["a", "a-1"]);
    assert_eq!(links("[x](a.md#b) and [`y`](c/) ```z```"), ["a.md#b", "c/"]);
}
