//! From a [`Dialect`] to its code: the request renderer, the stream decoder, the error
//! classifier, and the dialect named in text. They answer in [`ProviderError`], which itself
//! names a `Dialect`, so they sit here rather than beside the type.

use std::str::FromStr;

use motet_directives::{LlmRequest, ToolChoice};
use serde_json::Value;

use super::Dialect;
use crate::decoder::StreamDecoder;
use crate::error::ProviderError;
use crate::{anthropic, gemini, hosted, media, openai_chat, openai_responses, structured};

impl Dialect {
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
        media::check_dialect(self, req)?;
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
        media::check_dialect(self, req)?;
        match self {
            Dialect::OpenAiChat => openai_chat::request::encode(req),
            Dialect::OpenAiResponses => openai_responses::request::encode(req),
            Dialect::Anthropic => anthropic::request::encode(req),
            Dialect::Gemini => gemini::request::encode(req),
        }
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
