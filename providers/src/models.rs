//! Model refs to dialects, what each known model can do, and the check that a request asks
//! nothing of a model it cannot give (seed 004 §1.3).
//!
//! | provider part | dialect |
//! |---|---|
//! | `openai` | OpenAI Chat Completions |
//! | `openai-responses` | OpenAI Responses |
//! | `anthropic` | Anthropic Messages |
//! | `gemini` | Gemini |
//! | `openai-compat` | Chat Completions at `MOTET_OPENAI_COMPAT_BASE_URL` |
//!
//! The capability table covers the current models of each provider; dated snapshots match by
//! prefix (`claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`), the longest prefix winning.
//! A model not in the table is not refused: plain chat works with any model the endpoint
//! accepts; only asking a *known* model for reasoning it cannot replay, or for a hosted tool
//! its provider documents it lacks (the rules are in the `hosted` module), is an error.

use motet_directives::{LlmRequest, ModelRef};

use crate::dialect::Dialect;
use crate::error::ProviderError;
use crate::media::{self, Inputs};
use crate::{hosted, structured};

/// What a model can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelCaps {
    /// Input plus output tokens the model can attend to.
    pub context_window: u32,
    /// The most output tokens one call can produce.
    pub max_output: u32,
    /// Whether its reasoning can be carried across turns and resumed exactly (Anthropic
    /// interleaved thinking with signatures, OpenAI reasoning items with encrypted content,
    /// Gemini thought signatures).
    pub reasoning_replay: bool,
    /// What it reads besides text: images, PDFs, audio (docs/providers.md, "Images,
    /// documents and audio").
    pub inputs: Inputs,
}

/// A model that reads text, images and PDFs.
const fn caps(context_window: u32, max_output: u32, reasoning_replay: bool) -> ModelCaps {
    ModelCaps {
        context_window,
        max_output,
        reasoning_replay,
        inputs: Inputs::IMAGE_PDF,
    }
}

impl ModelCaps {
    /// The same capabilities, reading `inputs` besides text.
    const fn reading(mut self, inputs: Inputs) -> Self {
        self.inputs = inputs;
        self
    }
}

/// (provider family, model prefix, capabilities). `openai` covers `openai-responses` too.
const TABLE: &[(&str, &str, ModelCaps)] = &[
    ("anthropic", "claude-opus-4-6", caps(200_000, 128_000, true)),
    ("anthropic", "claude-opus-4-5", caps(200_000, 64_000, true)),
    (
        "anthropic",
        "claude-sonnet-4-5",
        caps(200_000, 64_000, true),
    ),
    ("anthropic", "claude-haiku-4-5", caps(200_000, 64_000, true)),
    ("anthropic", "claude-opus-4-1", caps(200_000, 32_000, false)),
    ("anthropic", "claude-opus-4", caps(200_000, 32_000, false)),
    ("anthropic", "claude-sonnet-4", caps(200_000, 64_000, false)),
    (
        "anthropic",
        "claude-3-7-sonnet",
        caps(200_000, 64_000, false),
    ),
    ("anthropic", "claude-3-5", caps(200_000, 8_192, false)),
    // Claude 3 (Opus, Sonnet, Haiku) predates PDF support, which came with 3.5.
    (
        "anthropic",
        "claude-3",
        caps(200_000, 4_096, false).reading(Inputs {
            pdf: false,
            ..Inputs::IMAGE_PDF
        }),
    ),
    ("openai", "gpt-5.2", caps(400_000, 128_000, true)),
    ("openai", "gpt-5.1", caps(400_000, 128_000, false)),
    ("openai", "gpt-5", caps(400_000, 128_000, false)),
    ("openai", "gpt-4.1", caps(1_047_576, 32_768, false)),
    ("openai", "gpt-4o", caps(128_000, 16_384, false)),
    // The audio models of Chat Completions hear but do not see.
    (
        "openai",
        "gpt-4o-audio",
        caps(128_000, 16_384, false).reading(Inputs {
            image: false,
            pdf: false,
            audio: true,
        }),
    ),
    (
        "openai",
        "gpt-audio",
        caps(128_000, 16_384, false).reading(Inputs {
            image: false,
            pdf: false,
            audio: true,
        }),
    ),
    // o1-mini and o3-mini read text only.
    (
        "openai",
        "o1-mini",
        caps(128_000, 65_536, false).reading(Inputs::TEXT),
    ),
    (
        "openai",
        "o3-mini",
        caps(200_000, 100_000, false).reading(Inputs::TEXT),
    ),
    ("openai", "o4-mini", caps(200_000, 100_000, false)),
    ("openai", "o3", caps(200_000, 100_000, false)),
    ("openai", "o1", caps(200_000, 100_000, false)),
    (
        "gemini",
        "gemini-3",
        caps(1_048_576, 65_536, true).reading(Inputs::ALL),
    ),
    (
        "gemini",
        "gemini-2.5",
        caps(1_048_576, 65_536, false).reading(Inputs::ALL),
    ),
    (
        "gemini",
        "gemini-2.0",
        caps(1_048_576, 8_192, false).reading(Inputs::ALL),
    ),
    (
        "gemini",
        "gemini-1.5",
        caps(1_048_576, 8_192, false).reading(Inputs::ALL),
    ),
];

/// The dialect a model ref's provider part selects.
///
/// # Errors
/// [`ProviderError::Config`] for an unknown provider.
pub fn dialect_for(model: &ModelRef) -> Result<Dialect, ProviderError> {
    match model.provider() {
        "openai" | "openai-compat" => Ok(Dialect::OpenAiChat),
        "openai-responses" => Ok(Dialect::OpenAiResponses),
        "anthropic" => Ok(Dialect::Anthropic),
        "gemini" => Ok(Dialect::Gemini),
        other => Err(ProviderError::Config {
            message: format!(
                "unknown provider `{other}` in model ref `{model}` (expected openai, openai-responses, anthropic, gemini or openai-compat)"
            ),
        }),
    }
}

/// What a known model can do; `None` for models the table does not know (and for
/// `openai-compat`, whose models are whatever the server serves).
pub fn capabilities(model: &ModelRef) -> Option<ModelCaps> {
    let family = match model.provider() {
        "openai" | "openai-responses" => "openai",
        other => other,
    };
    TABLE
        .iter()
        .filter(|(f, prefix, _)| *f == family && model.model().starts_with(prefix))
        .max_by_key(|(_, prefix, _)| prefix.len())
        .map(|(_, _, caps)| *caps)
}

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
