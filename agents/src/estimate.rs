//! Token estimation: how many tokens an entry or a message will cost in the prompt.
//!
//! The default is the seeds' heuristic, `bytes / 4 + 10` per message. The thread computes an
//! entry's estimate once, when it is appended, so a projection only adds stored numbers.
//!
//! Every estimator is a [`TokenEstimator`]: the [`Heuristic`] (the fallback, for any model),
//! [`Calibrated`] (the heuristic scaled by what the provider counted for a previous call: its
//! usage), and, with the `tiktoken` feature, [`Tiktoken`] (OpenAI's own tokenizer, for the
//! OpenAI families). Their measured error against real prompt-token counts is in
//! docs/context.md ("Token estimation").

#[cfg(feature = "tiktoken")]
mod tiktoken;
#[cfg(feature = "tiktoken")]
pub use tiktoken::{TIKTOKEN_MESSAGE_OVERHEAD, Tiktoken};

use motet_directives::{AssistantBlock, AssistantMessage, Message, ProviderMeta, ToolDef};

mod body;
mod media;
pub use body::estimate_body;
pub use media::{AUDIO_BYTES_PER_TOKEN, IMAGE_TOKENS, PDF_PAGE_TOKENS, media_tokens};

/// Counts prompt tokens. Implementations may wrap a real tokenizer.
pub trait TokenEstimator {
    /// Tokens of one message whose content is made of `parts` (text, tool arguments, provider
    /// continuity data), including the per-message overhead.
    fn estimate_parts(&self, parts: &[&str]) -> u32;
}

/// The seeds' heuristic: about four bytes per token, plus ten tokens per message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heuristic;

/// Per-message overhead of [`Heuristic`] (role, separators).
pub const HEURISTIC_MESSAGE_OVERHEAD: u32 = 10;

impl TokenEstimator for Heuristic {
    fn estimate_parts(&self, parts: &[&str]) -> u32 {
        let bytes: usize = parts.iter().map(|p| p.len()).sum();
        u32::try_from(bytes / 4)
            .unwrap_or(u32::MAX)
            .saturating_add(HEURISTIC_MESSAGE_OVERHEAD)
    }
}

/// The heuristic scaled by what a provider counted: after a call whose context the heuristic
/// estimated at `estimated` tokens and the provider billed `actual` prompt tokens (its usage),
/// the next estimates are scaled by `actual / estimated`. The usage of the previous call is the
/// one count every provider gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibrated {
    /// The scale in thousandths (1,000 = the heuristic itself).
    per_mille: u32,
}

impl Calibrated {
    /// The scale `actual / estimated`, kept within 1/8..8 (a zero or absurd count gives the
    /// heuristic back rather than an estimate of nothing).
    pub fn from_usage(estimated: u64, actual: u64) -> Self {
        let per_mille = if estimated == 0 || actual == 0 {
            1_000
        } else {
            (actual.saturating_mul(1_000) / estimated).clamp(125, 8_000)
        };
        Self {
            per_mille: u32::try_from(per_mille).unwrap_or(1_000),
        }
    }

    /// The scale in thousandths.
    pub fn per_mille(&self) -> u32 {
        self.per_mille
    }
}

impl TokenEstimator for Calibrated {
    fn estimate_parts(&self, parts: &[&str]) -> u32 {
        let base = u64::from(Heuristic.estimate_parts(parts));
        u32::try_from(base * u64::from(self.per_mille) / 1_000).unwrap_or(u32::MAX)
    }
}

fn meta_parts<'a>(meta: Option<&'a ProviderMeta>, parts: &mut Vec<&'a str>) {
    match meta {
        Some(ProviderMeta::Anthropic { signature }) => parts.push(signature),
        Some(ProviderMeta::AnthropicRedacted { data }) => parts.push(data),
        Some(ProviderMeta::Gemini { thought_signature }) => parts.push(thought_signature),
        Some(ProviderMeta::OpenAi {
            id,
            encrypted_content,
        }) => {
            parts.push(id);
            if let Some(content) = encrypted_content {
                parts.push(content);
            }
        }
        // `ProviderMeta` is non-exhaustive; unknown meta is not counted.
        Some(_) | None => {}
    }
}

fn assistant_parts<'a>(message: &'a AssistantMessage, parts: &mut Vec<&'a str>) {
    for block in &message.blocks {
        match block {
            AssistantBlock::Text { text, .. } | AssistantBlock::Reasoning { text, .. } => {
                parts.push(text);
            }
            AssistantBlock::ToolUse { id, name, args, .. } => {
                parts.push(id);
                parts.push(name);
                parts.push(args.get());
            }
            // A server-side item (web search results, an MCP listing) is resent whole.
            AssistantBlock::Opaque { item, .. } => parts.push(item),
            _ => {}
        }
        meta_parts(block.meta(), parts);
    }
}

/// Estimated tokens of the tools' definitions as a request carries them: per tool, its name,
/// description and parameter schema (as compact JSON), with one message's overhead.
pub fn estimate_tools(estimator: &dyn TokenEstimator, tools: &[ToolDef]) -> u64 {
    tools
        .iter()
        .map(|tool| {
            // A `Value` always serializes; an empty schema would only undercount.
            let schema = serde_json::to_string(&tool.parameters).unwrap_or_default();
            u64::from(estimator.estimate_parts(&[&tool.name, &tool.description, &schema]))
        })
        .sum()
}

/// Estimated tokens of a message. A tool-results message counts one message per result, as
/// the entries it was built from do.
pub fn estimate_message(estimator: &dyn TokenEstimator, message: &Message) -> u32 {
    let mut parts: Vec<&str> = Vec::new();
    match message {
        Message::System { content } => parts.push(content),
        Message::User { content } => {
            let text = content.text();
            return estimator
                .estimate_parts(&[&text])
                .saturating_add(media_tokens(content.media()));
        }
        Message::Assistant(turn) => assistant_parts(turn, &mut parts),
        Message::ToolResults { results } => {
            return results
                .iter()
                .map(|r| {
                    estimator
                        .estimate_parts(&[&r.tool_use_id, &r.content])
                        .saturating_add(media_tokens(&r.attachments))
                })
                .fold(0u32, u32::saturating_add);
        }
    }
    estimator.estimate_parts(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_scales_the_heuristic_by_the_providers_count() {
        let text = "a".repeat(400);
        assert_eq!(Heuristic.estimate_parts(&[&text]), 110);
        let under = Calibrated::from_usage(1_000, 1_500);
        assert_eq!(under.per_mille(), 1_500);
        assert_eq!(under.estimate_parts(&[&text]), 165);
        // No count, or an absurd one, does not zero the estimate.
        assert_eq!(Calibrated::from_usage(0, 50).per_mille(), 1_000);
        assert_eq!(Calibrated::from_usage(1_000, 0).per_mille(), 1_000);
        assert_eq!(Calibrated::from_usage(1_000, 1).per_mille(), 125);
        assert_eq!(Calibrated::from_usage(1, u64::MAX).per_mille(), 8_000);
    }

    #[test]
    fn heuristic_is_bytes_over_four_plus_ten() {
        assert_eq!(Heuristic.estimate_parts(&[]), 10);
        assert_eq!(Heuristic.estimate_parts(&["abcd", "efgh"]), 12);
        assert_eq!(Heuristic.estimate_parts(&["abc"]), 10);
    }
}
