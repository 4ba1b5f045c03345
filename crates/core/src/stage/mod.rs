//! The stages a text block goes through, in the order the pipeline runs
//! them. Each stage reads a block's text and its resolved settings and
//! answers with the new text or why it left it; the stages that need more
//! (trim's LLM call, the budget's pages, the agent's query) say so in what
//! they answer, and the pipeline carries it out.

pub mod budget;
pub mod clean;
pub mod project;
pub mod toon;
pub mod trim;

/// Bytes a string takes as a JSON string literal the way `serde_json`
/// writes it (RFC 8259 §7: `"` and `\` and control characters escaped,
/// the short forms where they exist, everything else verbatim), quotes
/// included. Lets a stage compare wire sizes without serialising.
pub fn literal_len(s: &str) -> usize {
    crate::json::literal::literal_len(s)
}

#[cfg(test)]
mod tests {
    #[test]
    fn literal_len_matches_serde_json() {
        for s in [
            "",
            "plain",
            "q\"b\\",
            "n\nr\rt\t\u{8}\u{c}",
            "\u{1}\u{1f}",
            "é€😀",
            "\u{7f}",
        ] {
            let expected = serde_json::to_string(s).map(|x| x.len()).unwrap_or(0);
            assert_eq!(super::literal_len(s), expected, "{s:?}");
        }
    }
}
