//! The four wire dialects: their names, and which blocks each replays.
//!
//! The type is a leaf every other module may name (errors carry it, the checks match on it);
//! what a dialect leads to — its renderer, decoder and error classifier — is in
//! `dispatch`, which names them all.

mod dispatch;

use std::fmt;

use motet_directives::{AssistantBlock, LlmRequest, Message, ProviderMeta};

/// A wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Chat Completions, and every OpenAI-compatible server.
    OpenAiChat,
    /// The OpenAI Responses API.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `streamGenerateContent`.
    Gemini,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 4] = [
        Dialect::OpenAiChat,
        Dialect::OpenAiResponses,
        Dialect::Anthropic,
        Dialect::Gemini,
    ];

    /// The dialect's name: `openai-chat`, `openai-responses`, `anthropic`, `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::OpenAiChat => "openai-chat",
            Dialect::OpenAiResponses => "openai-responses",
            Dialect::Anthropic => "anthropic",
            Dialect::Gemini => "gemini",
        }
    }

    /// Whether this dialect sends back blocks kept opaquely for `provider` (the `provider` of
    /// an `AssistantBlock::Opaque`): only to the API that produced them.
    pub fn replays_opaque(self, provider: &str) -> bool {
        matches!(
            (self, provider),
            (Dialect::OpenAiResponses, "openai")
                | (Dialect::Anthropic, "anthropic")
                | (Dialect::Gemini, "gemini")
        )
    }

    /// How many blocks of `req`'s assistant turns this dialect leaves out, whole or in part,
    /// because they were kept for another provider: blocks kept opaquely (a server tool's call
    /// and result, a compaction), and text blocks whose citations it does not send (the text
    /// goes, the citations do not; Anthropic itself takes no empty text block, so citations
    /// without text go nowhere). The model does not see them, and the runtime says so on the
    /// call's span.
    pub fn unreplayed_blocks(self, req: &LlmRequest) -> usize {
        req.messages
            .iter()
            .filter_map(|m| match m {
                Message::Assistant(turn) => Some(turn),
                _ => None,
            })
            .flat_map(|turn| &turn.blocks)
            .filter(|block| match (block, block.meta()) {
                (AssistantBlock::Opaque { provider, .. }, _) => !self.replays_opaque(provider),
                (
                    AssistantBlock::Text { text, .. },
                    Some(meta @ ProviderMeta::AnthropicCitations { .. }),
                ) => text.is_empty() || !self.replays_opaque(meta.family()),
                _ => false,
            })
            .count()
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use motet_directives::{
        AssistantBlock, AssistantMessage, LlmRequest, Message, ProviderMeta, StopReason,
    };

    use super::Dialect;

    fn opaque(provider: &str) -> AssistantBlock {
        AssistantBlock::Opaque {
            provider: provider.into(),
            item: r#"{"type":"x"}"#.into(),
        }
    }

    #[test]
    fn opaque_blocks_go_back_only_to_the_api_that_made_them() {
        let turn = AssistantMessage {
            blocks: vec![
                opaque("anthropic"),
                AssistantBlock::text("a"),
                opaque("openai"),
                opaque("gemini"),
                opaque("anthropic"),
                // Its text goes everywhere, its citations only back to Anthropic.
                AssistantBlock::Text {
                    text: "cited".into(),
                    meta: Some(Box::new(ProviderMeta::AnthropicCitations {
                        citations: vec![r#"{"type":"char_location"}"#.into()],
                    })),
                },
            ],
            stop_reason: StopReason::EndTurn,
        };
        let Ok(model) = "openai:gpt-5.2".parse() else {
            panic!("a model ref");
        };
        let req = LlmRequest::new(model, vec![Message::user("q"), Message::Assistant(turn)]);
        let dropped = |d: Dialect| d.unreplayed_blocks(&req);
        assert_eq!(dropped(Dialect::Anthropic), 2);
        assert_eq!(dropped(Dialect::OpenAiResponses), 4);
        assert_eq!(dropped(Dialect::Gemini), 4);
        assert_eq!(dropped(Dialect::OpenAiChat), 5);
    }
}
