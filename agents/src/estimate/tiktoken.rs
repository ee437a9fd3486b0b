//! OpenAI's own tokenizer as a [`TokenEstimator`] (feature `tiktoken`): exact token counts of
//! the text for the OpenAI families, from the BPE ranks the `tiktoken-rs` crate embeds (no IO).

use motet_directives::ModelRef;

use super::TokenEstimator;

/// Tokens a chat message costs beyond its text (role and separators), as OpenAI's own
/// counting recipe has it.
pub const TIKTOKEN_MESSAGE_OVERHEAD: u32 = 4;

/// Counts with an OpenAI encoding: `o200k_base` (GPT-4o, GPT-4.1, GPT-5, the o-series) or
/// `cl100k_base` (GPT-4, GPT-3.5). Building one parses the encoding's ranks (tens of
/// milliseconds): build it once and share it.
pub struct Tiktoken {
    bpe: tiktoken_rs::CoreBPE,
    encoding: &'static str,
}

impl std::fmt::Debug for Tiktoken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tiktoken")
            .field("encoding", &self.encoding)
            .finish()
    }
}

impl Tiktoken {
    /// The `o200k_base` encoding; `None` if its embedded ranks cannot be read.
    pub fn o200k() -> Option<Self> {
        tiktoken_rs::o200k_base().ok().map(|bpe| Self {
            bpe,
            encoding: "o200k_base",
        })
    }

    /// The `cl100k_base` encoding; `None` if its embedded ranks cannot be read.
    pub fn cl100k() -> Option<Self> {
        tiktoken_rs::cl100k_base().ok().map(|bpe| Self {
            bpe,
            encoding: "cl100k_base",
        })
    }

    /// The encoding of an OpenAI model (`openai:` and `openai-responses:` refs); `None` for
    /// other providers, whose tokenizers differ (use the heuristic or a calibrated one).
    pub fn for_model(model: &ModelRef) -> Option<Self> {
        if !matches!(model.provider(), "openai" | "openai-responses") {
            return None;
        }
        let name = model.model();
        if name.starts_with("gpt-4-") || name == "gpt-4" || name.starts_with("gpt-3.5") {
            Self::cl100k()
        } else {
            Self::o200k()
        }
    }

    /// The encoding's name.
    pub fn encoding(&self) -> &'static str {
        self.encoding
    }
}

impl TokenEstimator for Tiktoken {
    fn estimate_parts(&self, parts: &[&str]) -> u32 {
        parts
            .iter()
            .map(|p| u32::try_from(self.bpe.encode_ordinary(p).len()).unwrap_or(u32::MAX))
            .fold(TIKTOKEN_MESSAGE_OVERHEAD, u32::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_openai_tokens_and_only_for_openai_models() {
        let o200k = Tiktoken::o200k().unwrap_or_else(|| unreachable!());
        // "hello world" is two tokens in both encodings.
        assert_eq!(o200k.estimate_parts(&["hello world"]), 2 + 4);
        assert_eq!(o200k.estimate_parts(&[]), 4);
        let gpt5: ModelRef = "openai:gpt-5.2".parse().unwrap_or_else(|_| unreachable!());
        let gpt4: ModelRef = "openai:gpt-4-turbo"
            .parse()
            .unwrap_or_else(|_| unreachable!());
        let claude: ModelRef = "anthropic:claude-sonnet-4-5"
            .parse()
            .unwrap_or_else(|_| unreachable!());
        assert_eq!(
            Tiktoken::for_model(&gpt5).map(|t| t.encoding()),
            Some("o200k_base")
        );
        assert_eq!(
            Tiktoken::for_model(&gpt4).map(|t| t.encoding()),
            Some("cl100k_base")
        );
        assert!(Tiktoken::for_model(&claude).is_none());
    }
}
