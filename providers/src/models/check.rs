//! The check that a request asks nothing of its model that the model or dialect cannot give:
//! every rule's checker (hosted tools, response formats, media, reasoning) run in turn. Apart
//! from the capability table, which the checkers themselves read.

use motet_directives::LlmRequest;

use super::{capabilities, dialect_for};
use crate::error::ProviderError;
use crate::{hosted, media, structured};

/// Checks that the request asks nothing of its model that the model or dialect cannot do.
///
/// Asking for thinking or reasoning (`thinking_budget`, `reasoning_effort`) requires a model
/// that can replay it across turns, and for OpenAI the Responses API: Chat Completions cannot
/// carry reasoning back. Hosted tools must be ones the dialect has, with options it can
/// express, and — for models whose provider documents it — ones the model can run
/// (docs/providers.md, "Hosted tools"). A response format must be one the dialect can express
/// and, for models whose provider documents it, one the model can give (docs/structured-output.md).
/// Images, documents and audio must be ones the dialect can carry, the model (when known) can
/// read, within the dialect's size limits (the `media` module).
///
/// # Errors
/// [`ProviderError::UnsupportedModel`] with the reason,
/// [`ProviderError::UnsupportedHostedTool`] naming the tool and why,
/// [`ProviderError::UnsupportedResponseFormat`] for a response format the dialect, the model
/// or its constrained decoding cannot take,
/// [`ProviderError::UnsupportedContent`] for an image, document or sound the dialect has no
/// form for or the known model cannot read, [`ProviderError::ContentTooLarge`] for parts past
/// the dialect's size limits,
/// [`ProviderError::InvalidRequest`] for a hosted tool asked for twice or an MCP server
/// without its name, URL or token, or [`ProviderError::Config`] for an unknown provider.
pub fn validate(req: &LlmRequest) -> Result<(), ProviderError> {
    let model = &req.model;
    let dialect = dialect_for(model)?;
    hosted::check_dialect(dialect, req)?;
    hosted::check_model(dialect, req)?;
    structured::check_dialect(dialect, req)?;
    structured::check_model(dialect, req)?;
    media::check_dialect(dialect, req)?;
    media::check_model(dialect, req)?;
    let wants_reasoning =
        req.options.thinking_budget.is_some() || req.options.reasoning_effort.is_some();
    if !wants_reasoning {
        return Ok(());
    }
    let unsupported = |reason: String| ProviderError::UnsupportedModel {
        model: model.to_string(),
        reason,
    };
    if model.provider() == "openai" {
        return Err(unsupported(format!(
            "reasoning cannot be replayed through Chat Completions; use `openai-responses:{}`",
            model.model()
        )));
    }
    match capabilities(model) {
        Some(caps) if !caps.reasoning_replay => Err(unsupported(
            "this model cannot replay its reasoning across turns (needs Claude 4.5+, GPT-5.2+ or Gemini 3+)"
                .to_owned(),
        )),
        _ => Ok(()),
    }
}
