//! One server scope's full list of tools, gathered from the pages of its
//! `tools/list` results (MCP 2025-06-18 "Pagination": a page with a
//! `nextCursor` has more after it), each tool's text as the server sent
//! it. Bounded: past `max_tools` tools or `max_listing_bytes` bytes of
//! tool text a page is refused, and the listing passes as the server sent
//! it. Its stored form ([`Catalog::stored`]) is one JSON array of the
//! tools, which [`Catalog::from_stored`] reads back.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::value::RawValue;

use crate::mcp;

/// How much a catalog holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_tools: usize,
    pub max_bytes: usize,
}

/// Why a page was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a `tools/list` result: no `tools` array of objects, a tool
    /// without a string `name`, or a known member written twice.
    NotAListing,
    /// Two tools of one name: a client cannot tell which one a call means.
    DuplicateName,
    /// More tools than `max_tools`.
    TooManyTools,
    /// More tool text than `max_bytes`.
    TooLarge,
}

/// The tools of one server scope, in listing order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// Every tool's text, one after another, separated by commas.
    text: String,
    tools: Vec<(String, Range<usize>)>,
    by_name: HashMap<String, usize>,
}

impl Catalog {
    /// Adds the tools of one page (a `tools/list` result's text); the
    /// catalog is unchanged when the page is refused. Returns how many
    /// tools it added.
    pub fn add_page(&mut self, result: &str, limits: Limits) -> Result<usize, Refusal> {
        let raw: &RawValue = serde_json::from_str(result).map_err(|_| Refusal::NotAListing)?;
        let tools = mcp::tool_entries(raw).ok_or(Refusal::NotAListing)?;
        self.add(
            tools.iter().map(|t| (t.name.as_deref(), t.raw.get())),
            limits,
        )?;
        Ok(tools.len())
    }

    fn add<'a>(
        &mut self,
        tools: impl Iterator<Item = (Option<&'a str>, &'a str)> + Clone,
        limits: Limits,
    ) -> Result<(), Refusal> {
        let mut count = self.tools.len();
        let mut bytes = self.text.len();
        let mut names = std::collections::HashSet::new();
        for (name, raw) in tools.clone() {
            let name = name.ok_or(Refusal::NotAListing)?;
            if self.by_name.contains_key(name) || !names.insert(name) {
                return Err(Refusal::DuplicateName);
            }
            count += 1;
            bytes += raw.len() + 1;
            if count > limits.max_tools {
                return Err(Refusal::TooManyTools);
            }
            if bytes > limits.max_bytes {
                return Err(Refusal::TooLarge);
            }
        }
        for (name, raw) in tools {
            let name = name.unwrap_or_default();
            if !self.text.is_empty() {
                self.text.push(',');
            }
            let start = self.text.len();
            self.text.push_str(raw);
            self.by_name.insert(name.to_string(), self.tools.len());
            self.tools.push((name.to_string(), start..self.text.len()));
        }
        Ok(())
    }

    /// The catalog as stored: a JSON array of the tools' texts.
    pub fn stored(&self) -> String {
        format!("[{}]", self.text)
    }

    /// A catalog read back from [`Catalog::stored`]'s form, within
    /// `limits`.
    pub fn from_stored(stored: &str, limits: Limits) -> Result<Catalog, Refusal> {
        let wrapped = format!("{{\"tools\":{stored}}}");
        let mut c = Catalog::default();
        c.add_page(&wrapped, limits)?;
        Ok(c)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// A tool's text as the server sent it.
    pub fn get(&self, name: &str) -> Option<&str> {
        let (_, span) = self.tools.get(*self.by_name.get(name)?)?;
        self.text.get(span.clone())
    }

    /// Every tool, `(name, text)`, in listing order.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tools
            .iter()
            .map(|(name, span)| (name.as_str(), self.text.get(span.clone()).unwrap_or("")))
    }

    /// The first of `names` a server tool already has: the plugin cannot
    /// add a tool of that name (the listing then passes as it came).
    pub fn shadowed<'n>(&self, names: &[&'n str]) -> Option<&'n str> {
        names
            .iter()
            .copied()
            .find(|n| self.by_name.contains_key(*n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDE: Limits = Limits {
        max_tools: 100,
        max_bytes: 1 << 20,
    };

    #[test]
    fn pages_add_up_and_read_back() {
        let mut c = Catalog::default();
        assert_eq!(
            c.add_page(r#"{"tools":[{"name":"a","x":1}],"nextCursor":"2"}"#, WIDE),
            Ok(1)
        );
        assert_eq!(
            c.add_page(
                r#"{"tools":[{"name":"b"} , {"name":"c","d":"\u00e9"}]}"#,
                WIDE
            ),
            Ok(2)
        );
        assert_eq!(c.get("c"), Some(r#"{"name":"c","d":"\u00e9"}"#));
        assert_eq!(
            c.stored(),
            r#"[{"name":"a","x":1},{"name":"b"},{"name":"c","d":"\u00e9"}]"#
        );
        let back = Catalog::from_stored(&c.stored(), WIDE).unwrap();
        assert_eq!(back, c);
        assert_eq!(
            c.tools().map(|(n, _)| n).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(c.shadowed(&["x", "b"]), Some("b"));
    }

    #[test]
    fn refusals_leave_the_catalog_as_it_was() {
        let mut c = Catalog::default();
        c.add_page(r#"{"tools":[{"name":"a"}]}"#, WIDE).unwrap();
        let before = c.clone();
        for (page, refusal) in [
            (r#"{"tools":[{"name":"a"}]}"#, Refusal::DuplicateName),
            (
                r#"{"tools":[{"name":"b"},{"name":"b"}]}"#,
                Refusal::DuplicateName,
            ),
            (r#"{"tools":[{"title":"b"}]}"#, Refusal::NotAListing),
            (r#"{"tools":[1]}"#, Refusal::NotAListing),
            (r#"{"tools":{}}"#, Refusal::NotAListing),
            (
                r#"{"tools":[{"name":"b","name":"c"}]}"#,
                Refusal::NotAListing,
            ),
            ("[]", Refusal::NotAListing),
        ] {
            assert_eq!(c.add_page(page, WIDE), Err(refusal), "{page}");
            assert_eq!(c, before);
        }
        let tight = Limits {
            max_tools: 2,
            max_bytes: 40,
        };
        assert_eq!(
            c.add_page(r#"{"tools":[{"name":"b"},{"name":"c"}]}"#, tight),
            Err(Refusal::TooManyTools)
        );
        assert_eq!(
            c.add_page(
                r#"{"tools":[{"name":"b","description":"0123456789012345678901234"}]}"#,
                tight
            ),
            Err(Refusal::TooLarge)
        );
        assert_eq!(c, before);
    }
}
