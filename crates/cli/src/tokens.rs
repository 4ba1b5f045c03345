//! Token counts in `o200k_base`, the encoding of the GPT-4o and GPT-5
//! families, from the table `tiktoken-rs` embeds (nothing is downloaded).

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// The `o200k_base` encoder, loaded once per process.
#[derive(Clone, Copy)]
pub struct Tokenizer {
    bpe: &'static CoreBPE,
}

/// The embedded table could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerError(pub String);

impl std::fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mcp-toon: cannot load the o200k_base table: {}", self.0)
    }
}

impl std::error::Error for TokenizerError {}

static O200K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();

impl Tokenizer {
    /// Name of the encoding, as tiktoken spells it.
    pub(crate) const NAME: &'static str = "o200k_base";

    pub fn o200k_base() -> Result<Self, TokenizerError> {
        match O200K.get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| e.to_string())) {
            Ok(bpe) => Ok(Self { bpe }),
            Err(e) => Err(TokenizerError(e.clone())),
        }
    }

    /// Tokens in `text`, every character taken as text (a special-token
    /// spelling such as `<|endoftext|>` counts as the characters it has).
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Self::NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        let t = Tokenizer::o200k_base().unwrap();
        assert_eq!(t.count(""), 0);
        assert_eq!(t.count("hello world"), 2);
        assert!(t.count(r#"[{"id":1,"name":"a"},{"id":2,"name":"b"}]"#) > 10);
    }
}
