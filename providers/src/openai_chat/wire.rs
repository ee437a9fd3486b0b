//! Chat Completions on the wire: the chunks we read. The request body is built as a `Value`
//! (request.rs): it has no part that must be written byte for byte. Only what motet uses is
//! declared; every field is optional, since compatible servers leave out what they like.

use motet_directives::Usage;
use serde::Deserialize;
use serde_json::Value;

/// One `chat.completion.chunk` (or an error object sent in its place).
#[derive(Debug, Deserialize)]
pub(super) struct Chunk {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) choices: Vec<Choice>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    /// llama.cpp's own counts, beside `usage` on the last chunk; read leniently, as a value,
    /// so that a server's odd `timings` never fails the chunk that carries the usage.
    #[serde(default)]
    pub(super) timings: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) error: Option<serde_json::Value>,
    /// `error` when the chunk is itself an error object (older vLLM).
    #[serde(default)]
    pub(super) object: Option<String>,
}

/// One choice of a chunk; motet asks for one, index 0.
#[derive(Debug, Deserialize)]
pub(super) struct Choice {
    #[serde(default)]
    pub(super) index: u64,
    #[serde(default)]
    pub(super) delta: Option<Delta>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

/// What a choice adds: text, reasoning in any of the servers' fields, a refusal, tool-call
/// fragments, OpenRouter's `reasoning_details`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta {
    #[serde(default)]
    pub(super) content: Option<Content>,
    #[serde(default)]
    pub(super) reasoning_content: Option<String>,
    #[serde(default)]
    pub(super) reasoning: Option<String>,
    #[serde(default)]
    pub(super) reasoning_details: Option<Vec<Value>>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Option<Vec<WireToolCall>>,
}

impl Delta {
    /// Whether the delta carries anything: text, reasoning, a refusal, tool calls, details.
    pub(super) fn has_content(&self) -> bool {
        let text = |t: &Option<String>| t.as_deref().is_some_and(|t| !t.is_empty());
        text(&self.reasoning_content)
            || text(&self.reasoning)
            || text(&self.refusal)
            || self.content.as_ref().is_some_and(Content::has_content)
            || self
                .reasoning_details
                .as_ref()
                .is_some_and(|d| !d.is_empty())
            || self.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
    }
}

/// `delta.content`: a string, or (Mistral) a list of parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// A part of a Mistral content list: `{"type": "text", "text"}`, or `{"type": "thinking",
/// "thinking": [{"type": "text", "text"}]}`. Other kinds are skipped.
#[derive(Debug, Deserialize)]
pub(super) struct ContentPart {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thinking: Option<Vec<ContentPart>>,
}

impl Content {
    /// The text, and the reasoning text of `thinking` parts.
    pub(super) fn split(self) -> (String, String) {
        let parts = match self {
            Content::Text(text) => return (text, String::new()),
            Content::Parts(parts) => parts,
        };
        let (mut text, mut thinking) = (String::new(), String::new());
        for part in parts {
            match (part.kind.as_str(), part.text, part.thinking) {
                ("text", Some(more), _) => text.push_str(&more),
                ("thinking", _, Some(inner)) => {
                    for piece in inner {
                        if piece.kind == "text"
                            && let Some(more) = piece.text
                        {
                            thinking.push_str(&more);
                        }
                    }
                }
                (kind, ..) => tracing::debug!("a content part of type `{kind}` was skipped"),
            }
        }
        (text, thinking)
    }

    /// Whether there is any text or part.
    pub(super) fn has_content(&self) -> bool {
        match self {
            Content::Text(text) => !text.is_empty(),
            Content::Parts(parts) => !parts.is_empty(),
        }
    }
}

/// A tool call fragment, keyed by `index`.
#[derive(Debug, Deserialize)]
pub(super) struct WireToolCall {
    #[serde(default)]
    pub(super) index: Option<u64>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<WireFunction>,
}

/// A fragment's name and arguments text.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireFunction {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<String>,
}

/// `usage`, every count read leniently.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) prompt_tokens: u64,
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) completion_tokens: u64,
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub(super) completion_tokens_details: Option<CompletionDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct PromptDetails {
    #[serde(default, deserialize_with = "crate::count::option")]
    pub(super) cached_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct CompletionDetails {
    #[serde(default, deserialize_with = "crate::count::option")]
    pub(super) reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cache_read_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: u
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}
