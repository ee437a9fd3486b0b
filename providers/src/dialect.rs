//! The four wire dialects, and the dispatch from one to its request renderer, stream decoder
//! and error classifier.

use std::fmt;
use std::str::FromStr;

use motet_directives::{AssistantBlock, LlmRequest, Message, ProviderMeta, ToolChoice};
use serde_json::Value;

use crate::decoder::StreamDecoder;
use crate::error::ProviderError;
use crate::{anthropic, gemini, hosted, openai_chat, openai_responses, structured};

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

    /// A fresh decoder for one response stream.
    pub fn decoder(self) -> Box<dyn StreamDecoder> {
        match self {
            Dialect::OpenAiChat => Box::new(openai_chat::stream::Decoder::new()),
            Dialect::OpenAiResponses => Box::new(openai_responses::stream::Decoder::new()),
            Dialect::Anthropic => Box::new(anthropic::stream::Decoder::new()),
            Dialect::Gemini => Box::new(gemini::stream::Decoder::new()),
        }
    }

    /// The request body for this dialect, replaying each block's provider meta as the
    /// provider requires.
    ///
    /// # Errors
    /// [`ProviderError::InvalidRequest`] or [`ProviderError::Config`] when the request cannot
    /// be expressed in this dialect, or its `tool_choice` names a tool it does not offer;
    /// [`ProviderError::UnsupportedHostedTool`] for a hosted tool the dialect does not have;
    /// [`ProviderError::UnsupportedResponseFormat`] for a response format it cannot give;
    /// [`ProviderError::UnsupportedContent`] for an image, document or sound it has no form
    /// for, [`ProviderError::ContentTooLarge`] for parts past its size limits.
    pub fn render(self, req: &LlmRequest) -> Result<Value, ProviderError> {
        check_named_tool(req)?;
        hosted::check_dialect(self, req)?;
        structured::check_dialect(self, req)?;
        crate::media::check_dialect(self, req)?;
        match self {
            Dialect::OpenAiChat => openai_chat::request::render(req),
            Dialect::OpenAiResponses => openai_responses::request::render(req),
            Dialect::Anthropic => anthropic::request::render(req),
            Dialect::Gemini => gemini::request::render(req),
        }
    }

    /// The request body as sent: [`Dialect::render`]'s body as JSON text, except that blocks
    /// kept opaquely (`AssistantBlock::Opaque`) go back byte for byte as they were received,
    /// which a `Value` (its keys sorted, its numbers reparsed) cannot promise.
    ///
    /// # Errors
    /// As for [`Dialect::render`].
    pub fn encode(self, req: &LlmRequest) -> Result<Vec<u8>, ProviderError> {
        check_named_tool(req)?;
        hosted::check_dialect(self, req)?;
        structured::check_dialect(self, req)?;
        crate::media::check_dialect(self, req)?;
        match self {
            Dialect::OpenAiChat => openai_chat::request::encode(req),
            Dialect::OpenAiResponses => openai_responses::request::encode(req),
            Dialect::Anthropic => anthropic::request::encode(req),
            Dialect::Gemini => gemini::request::encode(req),
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

    /// The typed error for an HTTP error response of this dialect (anything that looks like an
    /// API key is removed from its message).
    pub fn classify_error(self, status: u16, body: &str) -> ProviderError {
        let error = match self {
            Dialect::OpenAiChat => openai_chat::classify_error(status, body),
            Dialect::OpenAiResponses => openai_responses::classify_error(status, body),
            Dialect::Anthropic => anthropic::classify_error(status, body),
            Dialect::Gemini => gemini::classify_error(status, body),
        };
        error.redacted()
    }
}

/// A `tool_choice` that names a tool must name one the request offers: every provider would
/// refuse it (or, like some OpenAI-compatible servers, silently ignore the name).
fn check_named_tool(req: &LlmRequest) -> Result<(), ProviderError> {
    let ToolChoice::Tool { name } = &req.tool_choice else {
        return Ok(());
    };
    if req.tools.iter().any(|tool| tool.name == *name) {
        return Ok(());
    }
    let offered: Vec<&str> = req.tools.iter().map(|tool| tool.name.as_str()).collect();
    let message = if offered.is_empty() {
        format!("tool_choice names `{name}` but no tools are offered")
    } else {
        format!(
            "tool_choice names `{name}`, which is not among the offered tools ({})",
            offered.join(", ")
        )
    };
    Err(ProviderError::InvalidRequest { status: 0, message })
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Dialect {
    type Err = ProviderError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| ProviderError::Config {
                message: format!(
                    "unknown dialect `{s}` (expected openai-chat, openai-responses, anthropic or gemini)"
                ),
            })
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
