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

mod check;

pub use check::validate;

use motet_directives::{ModelRef, Part, PartKind};

use crate::dialect::Dialect;
use crate::error::ProviderError;

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

/// What kinds of input a model reads besides text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inputs {
    /// Images.
    pub image: bool,
    /// PDF documents (and plain-text ones where the dialect takes them).
    pub pdf: bool,
    /// Audio.
    pub audio: bool,
}

impl Inputs {
    /// Text only.
    pub const TEXT: Self = Self {
        image: false,
        pdf: false,
        audio: false,
    };
    /// Images and PDFs.
    pub const IMAGE_PDF: Self = Self {
        image: true,
        pdf: true,
        audio: false,
    };
    /// Images, PDFs and audio.
    pub const ALL: Self = Self {
        image: true,
        pdf: true,
        audio: true,
    };

    /// Whether a model with these inputs reads `part`.
    pub fn reads(self, part: &Part) -> bool {
        match part.kind() {
            PartKind::Text => true,
            PartKind::Image => self.image,
            PartKind::Document => self.pdf,
            PartKind::Audio => self.audio,
        }
    }
}
