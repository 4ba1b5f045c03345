//! A ranked search over one server's tools: BM25F (Robertson and
//! Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
//! 2009, §3.6) over four fields of each tool — its name (split on `_`,
//! `-`, `.` and camelCase), its title, its description and its argument
//! names — weighted in that order. Words are lower-cased, common English
//! function words left out, and plural and verb endings taken off, so
//! "listing files" finds `list_files`.
//!
//! Deterministic: the same listing and query give the same ranking on
//! every host. Scores use only IEEE 754 additions, multiplications and
//! divisions (the logarithm too, [`ln`]), are compared in millionths,
//! and ties go to the name that sorts first. A query naming a tool
//! exactly ranks that tool first.
//!
//! Bounded: the index is built once per listing, in one pass over it,
//! from at most [`MAX_FIELD_BYTES`] of each field; a query is cut to
//! [`MAX_QUERY_BYTES`] and its first [`MAX_QUERY_TERMS`] distinct terms,
//! and costs the postings of those terms plus one score per tool.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::Catalog;

/// Longest query read, in bytes (the rest is ignored).
pub const MAX_QUERY_BYTES: usize = 1024;
/// Most distinct terms of a query that count.
pub const MAX_QUERY_TERMS: usize = 32;
/// Most bytes of one field of one tool that are indexed.
pub(crate) const MAX_FIELD_BYTES: usize = 16 * 1024;

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Field weights: a word of the name says most about what a tool does.
const W_NAME: f64 = 3.0;
const W_TITLE: f64 = 2.0;
const W_DESCRIPTION: f64 = 1.0;
const W_ARGUMENT: f64 = 0.5;

const STOPWORDS: [&str; 44] = [
    "a", "an", "the", "of", "to", "in", "for", "on", "with", "and", "or", "is", "are", "be",
    "this", "that", "it", "its", "from", "by", "as", "at", "all", "any", "can", "will", "i", "me",
    "my", "we", "how", "do", "does", "what", "which", "some", "into", "your", "you", "please",
    "if", "when", "not", "tool",
];

/// The search index of one catalog.
#[derive(Debug, Clone)]
pub struct Index {
    names: Vec<String>,
    /// Each tool's weighted length.
    lengths: Vec<f64>,
    average: f64,
    /// Term → (tool, weighted frequency), tools in order.
    postings: BTreeMap<String, Vec<(u32, f64)>>,
    /// Lower-cased name → tool.
    exact: HashMap<String, u32>,
}

/// One result: a tool and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub name: String,
    pub(crate) score: f64,
}

/// A query, read within its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    terms: Vec<String>,
    exact: String,
}

impl Query {
    pub fn new(text: &str) -> Query {
        let mut end = text.len().min(MAX_QUERY_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let text = text.get(..end).unwrap_or("");
        let mut terms: Vec<String> = Vec::new();
        words(text, &mut |w| {
            if terms.len() < MAX_QUERY_TERMS && !terms.contains(&w) {
                terms.push(w);
            }
        });
        Query {
            terms,
            exact: text.trim().to_ascii_lowercase(),
        }
    }

    #[cfg(test)]
    pub(crate) fn terms(&self) -> &[String] {
        &self.terms
    }
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    title: Option<&'a RawValue>,
    #[serde(borrow)]
    description: Option<&'a RawValue>,
    #[serde(rename = "inputSchema", borrow)]
    input_schema: Option<&'a RawValue>,
    #[serde(borrow)]
    annotations: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Titled {
    title: Option<String>,
}

#[derive(Deserialize)]
struct Schema<'a> {
    #[serde(borrow)]
    properties: Option<&'a RawValue>,
}

/// A string value, at most [`MAX_FIELD_BYTES`] of it.
fn text(raw: Option<&RawValue>) -> String {
    let mut s = raw
        .and_then(|r| serde_json::from_str::<String>(r.get()).ok())
        .unwrap_or_default();
    if s.len() > MAX_FIELD_BYTES {
        let mut end = MAX_FIELD_BYTES;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

impl Index {
    /// Indexes every tool of `catalog`.
    pub fn new(catalog: &Catalog) -> Index {
        let mut index = Index {
            names: Vec::with_capacity(catalog.len()),
            lengths: Vec::with_capacity(catalog.len()),
            average: 0.0,
            postings: BTreeMap::new(),
            exact: HashMap::with_capacity(catalog.len()),
        };
        let mut counts: BTreeMap<String, f64> = BTreeMap::new();
        for (doc, (name, raw)) in catalog.tools().enumerate() {
            let Ok(doc) = u32::try_from(doc) else {
                break;
            };
            counts.clear();
            let mut add = |weight: f64, s: &str| {
                words(s, &mut |w| *counts.entry(w).or_insert(0.0) += weight);
            };
            add(W_NAME, name);
            if let Ok(f) = serde_json::from_str::<Fields>(raw) {
                let title = text(f.title);
                let title = if title.is_empty() {
                    f.annotations
                        .and_then(|a| serde_json::from_str::<Titled>(a.get()).ok())
                        .and_then(|t| t.title)
                        .unwrap_or_default()
                } else {
                    title
                };
                add(
                    W_TITLE,
                    title.get(..title.len().min(MAX_FIELD_BYTES)).unwrap_or(""),
                );
                add(W_DESCRIPTION, &text(f.description));
                let arguments = f
                    .input_schema
                    .and_then(|s| serde_json::from_str::<Schema>(s.get()).ok())
                    .and_then(|s| s.properties)
                    .and_then(crate::json::members)
                    .unwrap_or_default();
                let mut budget = MAX_FIELD_BYTES;
                for (argument, _) in arguments {
                    if argument.len() > budget {
                        break;
                    }
                    budget -= argument.len();
                    add(W_ARGUMENT, &argument);
                }
            }
            let length: f64 = counts.values().sum();
            for (term, &tf) in &counts {
                index
                    .postings
                    .entry(term.clone())
                    .or_default()
                    .push((doc, tf));
            }
            index.names.push(name.to_string());
            index.lengths.push(length);
            index.exact.entry(name.to_ascii_lowercase()).or_insert(doc);
        }
        let n = index.lengths.len();
        if n > 0 {
            index.average = index.lengths.iter().sum::<f64>() / n as f64;
        }
        index
    }

    /// The `limit` best tools for `query`, best first; only tools that
    /// match a term (or the query's exact name).
    pub fn search(&self, query: &Query, limit: usize) -> Vec<Hit> {
        let n = self.names.len();
        let mut scores = vec![0.0_f64; n];
        let big_n = n as f64;
        for term in &query.terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = ln(1.0 + (big_n - df + 0.5) / (df + 0.5));
            for &(doc, tf) in list {
                let i = doc as usize;
                let length = self.lengths.get(i).copied().unwrap_or(0.0);
                let norm = if self.average > 0.0 {
                    1.0 - B + B * length / self.average
                } else {
                    1.0
                };
                if let Some(s) = scores.get_mut(i) {
                    *s += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
                }
            }
        }
        let exact = self.exact.get(&query.exact).map(|&d| d as usize);
        let mut ranked: Vec<(i64, usize)> = scores
            .iter()
            .enumerate()
            .filter(|(i, s)| **s > 0.0 || Some(*i) == exact)
            .map(|(i, s)| {
                let key = if Some(i) == exact {
                    i64::MAX
                } else {
                    (s * 1e6).round() as i64
                };
                (key, i)
            })
            .collect();
        let name = |i: usize| self.names.get(i).map_or("", String::as_str);
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| name(a.1).cmp(name(b.1))));
        ranked
            .into_iter()
            .take(limit)
            .map(|(_, i)| Hit {
                name: name(i).to_string(),
                score: scores.get(i).copied().unwrap_or(0.0),
            })
            .collect()
    }
}

/// The terms of `text`, each handed to `out`: runs of ASCII letters and
/// digits and of any other non-ASCII characters,
/// split where a lower-case letter meets an upper-case one (`readFile`)
/// and before the last capital of a run of them (`HTTPServer`),
/// lower-cased, function words left out, endings taken off.
fn words(text: &str, out: &mut impl FnMut(String)) {
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    let mut flush = |word: &mut String| {
        if !word.is_empty() {
            let w = word.to_ascii_lowercase();
            word.clear();
            if !STOPWORDS.contains(&w.as_str()) {
                out(stem(&w));
            }
        }
    };
    while let Some(c) = chars.next() {
        // ASCII rules only (Unicode's case tables would cost the module
        // kilobytes): an ASCII character that is no letter or digit ends a
        // word; any other character is part of one, as it is.
        if c.is_ascii() && !c.is_ascii_alphanumeric() {
            flush(&mut word);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next_lower = chars.peek().is_some_and(char::is_ascii_lowercase);
            let camel = (p.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (p.is_ascii_uppercase() && c.is_ascii_uppercase() && next_lower);
            if camel {
                flush(&mut word);
            }
        }
        word.push(c);
        prev = Some(c);
    }
    flush(&mut word);
}

/// A light suffix stripper (after Porter's steps 1a, 1b and 5a): plural
/// `s`/`es`/`ies`, `ing`, `ed` and a final `e`, so that `files`, `file`,
/// `created`, `creates` and `create` meet.
fn stem(word: &str) -> String {
    if !word.is_ascii() {
        return word.to_string();
    }
    let mut s = word.to_string();
    if s.len() > 4 && s.ends_with("ies") {
        s.truncate(s.len() - 3);
        s.push('y');
    } else if s.ends_with("sses") {
        s.truncate(s.len() - 2);
    } else if s.len() > 3
        && s.ends_with('s')
        && !s.ends_with("ss")
        && !s.ends_with("us")
        && !s.ends_with("is")
    {
        s.pop();
    }
    let undouble = |s: &mut String| {
        let b = s.as_bytes();
        if let [.., x, y] = b {
            if s.len() > 3 && x == y && !b"aeioulsz".contains(y) {
                s.pop();
            }
        }
    };
    if s.len() > 5 && s.ends_with("ing") {
        s.truncate(s.len() - 3);
        undouble(&mut s);
    } else if s.len() > 4 && s.ends_with("ed") {
        s.truncate(s.len() - 2);
        undouble(&mut s);
    }
    if s.len() > 3 && s.ends_with('e') {
        s.pop();
    }
    s
}

/// The natural logarithm of `x` (> 0), from IEEE 754 basic operations
/// only, so every host computes the same bits: `x = m·2^e` with `m` in
/// [1, 2), `ln m = 2·atanh((m−1)/(m+1))` by its series (|z| ≤ 1/3: 30
/// terms are past f64's precision).
pub(crate) fn ln(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 || !x.is_finite() {
        return 0.0;
    }
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    if exponent == 0 {
        // Subnormal: no score gets here (every argument is at least 1).
        return 0.0;
    }
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let e = (exponent - 1023) as f64;
    let z = (m - 1.0) / (m + 1.0);
    let z2 = z * z;
    let mut term = z;
    let mut sum = 0.0;
    let mut k = 1.0;
    for _ in 0..30 {
        sum += term / k;
        term *= z2;
        k += 2.0;
    }
    e * std::f64::consts::LN_2 + 2.0 * sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::Limits;

    fn catalog(tools: &[&str]) -> Catalog {
        let mut c = Catalog::default();
        let page = format!(r#"{{"tools":[{}]}}"#, tools.join(","));
        c.add_page(
            &page,
            Limits {
                max_tools: 100_000,
                max_bytes: 1 << 30,
            },
        )
        .unwrap();
        c
    }

    #[test]
    fn words_split_names_and_prose() {
        let mut got = Vec::new();
        words("read_text_file getFileInfo HTTPServer API-post-search browser.click v2 Listing the Directories", &mut |w| got.push(w));
        assert_eq!(
            got,
            [
                "read",
                "text",
                "fil",
                "get",
                "fil",
                "info",
                "http",
                "server",
                "api",
                "post",
                "search",
                "browser",
                "click",
                "v2",
                "list",
                "directory"
            ]
        );
        for (a, b) in [
            ("files", "file"),
            ("created", "create"),
            ("creates", "creating"),
            ("searches", "search"),
            ("running", "run"),
            ("issues", "issue"),
            ("branches", "branch"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
    }

    #[test]
    fn ln_is_the_logarithm() {
        for x in [1.0, 1.5, 2.0, std::f64::consts::E, 10.0, 1234.5, 1e9] {
            assert!((ln(x) - x.ln()).abs() < 1e-12, "{x}: {} {}", ln(x), x.ln());
        }
    }

    #[test]
    fn ranks_names_above_descriptions_and_breaks_ties_by_name() {
        let c = catalog(&[
            r#"{"name":"write_note","description":"Stores a file on disk."}"#,
            r#"{"name":"read_file","description":"Reads a note."}"#,
            r#"{"name":"b_tool","description":"same words"}"#,
            r#"{"name":"a_tool","description":"same words"}"#,
        ]);
        let index = Index::new(&c);
        let names = |q: &str, n| {
            index
                .search(&Query::new(q), n)
                .into_iter()
                .map(|h| h.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("file", 2), ["read_file", "write_note"]);
        assert_eq!(names("same words", 5), ["a_tool", "b_tool"]);
        assert_eq!(names("nothing matches", 5), Vec::<String>::new());
        assert_eq!(names("  B_TOOL ", 1), ["b_tool"]);
    }

    #[test]
    fn queries_are_bounded() {
        let long = "word ".repeat(10_000);
        assert!(Query::new(&long).terms().len() <= 1);
        let many: String = (0..1000).map(|i| format!("w{i} ")).collect();
        assert_eq!(Query::new(&many).terms().len(), MAX_QUERY_TERMS);
        let wide = "é".repeat(2000);
        assert!(Query::new(&wide).exact.len() <= MAX_QUERY_BYTES);
    }
}
