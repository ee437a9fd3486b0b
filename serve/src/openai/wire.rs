//! The OpenAI Chat Completions API's JSON, as far as a motet agent reads and writes it: the
//! request (fields the endpoint does not use are ignored), the completion, the stream's chunks,
//! the model list.

use serde::{Deserialize, Serialize};

/// `POST /v1/chat/completions`: the fields the endpoint reads. Sampling settings
/// (`temperature`, `max_tokens`, ...) are not read: the agent's own configuration decides them.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    /// The agent's name.
    pub(crate) model: String,
    /// The conversation, oldest first; the last is the user's ask.
    pub(crate) messages: Vec<ChatMessage>,
    /// Answer as SSE chunks.
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    /// Options of a streamed answer.
    #[serde(default)]
    pub(crate) stream_options: Option<StreamOptions>,
    /// How many answers: only 1 is served.
    #[serde(default)]
    pub(crate) n: Option<u32>,
    /// Tools the client would run itself: refused, the agent runs its own.
    #[serde(default)]
    pub(crate) tools: Option<Vec<serde_json::Value>>,
    /// The legacy form of `tools`: refused as well.
    #[serde(default)]
    pub(crate) functions: Option<Vec<serde_json::Value>>,
    /// Text, any JSON object, or JSON matching a schema.
    #[serde(default)]
    pub(crate) response_format: Option<ResponseFormat>,
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    /// Send a last chunk with the usage and no choices.
    #[serde(default)]
    pub(crate) include_usage: bool,
}

/// One message of the conversation.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant`, `tool` or `function`.
    pub(crate) role: String,
    /// Its text, or its parts; absent or null on an assistant message that only calls tools.
    #[serde(default)]
    pub(crate) content: Option<Content>,
    /// Tool calls of an assistant message: never made by a motet agent's answers.
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<serde_json::Value>>,
}

/// A message's content: a string or a list of parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    /// Plain text.
    Text(String),
    /// Parts (`{"type": "text", "text": ...}`, images, audio, files).
    Parts(Vec<Part>),
}

/// One part of a message's content.
#[derive(Debug, Deserialize)]
pub(crate) struct Part {
    /// `text`, `image_url`, `input_audio`, `file`, `refusal`, ...
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// A text part's text.
    #[serde(default)]
    pub(crate) text: Option<String>,
}

/// `response_format`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ResponseFormat {
    /// Free text (the default).
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: JsonSchema,
    },
}

/// `response_format.json_schema`.
#[derive(Debug, Deserialize)]
pub(crate) struct JsonSchema {
    /// The schema's name.
    pub(crate) name: String,
    /// The JSON Schema.
    #[serde(default)]
    pub(crate) schema: Option<serde_json::Value>,
    /// Whether the provider must follow it exactly.
    #[serde(default)]
    pub(crate) strict: Option<bool>,
}

/// Token counts, as OpenAI reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Usage {
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    pub(crate) total_tokens: u64,
    pub(crate) prompt_tokens_details: PromptDetails,
    pub(crate) completion_tokens_details: CompletionDetails,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct PromptDetails {
    pub(crate) cached_tokens: u64,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct CompletionDetails {
    pub(crate) reasoning_tokens: u64,
}

impl From<&motet_directives::Usage> for Usage {
    fn from(usage: &motet_directives::Usage) -> Self {
        Self {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens(),
            prompt_tokens_details: PromptDetails {
                cached_tokens: usage.cache_read_tokens,
            },
            completion_tokens_details: CompletionDetails {
                reasoning_tokens: usage.reasoning_tokens,
            },
        }
    }
}

/// A whole answer: `object: "chat.completion"`.
#[derive(Debug, Serialize)]
pub(crate) struct Completion<'a> {
    pub(crate) id: &'a str,
    pub(crate) object: &'static str,
    pub(crate) created: u64,
    pub(crate) model: &'a str,
    pub(crate) choices: [Choice<'a>; 1],
    pub(crate) usage: Usage,
    /// Where the answer ran, and what it waits for: fields OpenAI clients keep as extras.
    pub(crate) motet: &'a Motet,
}

/// The one choice of a completion.
#[derive(Debug, Serialize)]
pub(crate) struct Choice<'a> {
    pub(crate) index: u32,
    pub(crate) message: AnswerMessage<'a>,
    pub(crate) logprobs: Option<()>,
    pub(crate) finish_reason: &'static str,
}

/// The assistant's message in a completion.
#[derive(Debug, Serialize)]
pub(crate) struct AnswerMessage<'a> {
    pub(crate) role: &'static str,
    pub(crate) content: &'a str,
    pub(crate) refusal: Option<()>,
}

/// One chunk of a streamed answer: `object: "chat.completion.chunk"`.
#[derive(Debug, Serialize)]
pub(crate) struct Chunk<'a> {
    pub(crate) id: &'a str,
    pub(crate) object: &'static str,
    pub(crate) created: u64,
    pub(crate) model: &'a str,
    /// One choice, or none in the usage chunk.
    pub(crate) choices: Vec<ChunkChoice<'a>>,
    /// Present (null until the last chunk) only when `stream_options.include_usage` asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Option<Usage>>,
    /// On the chunk that ends the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) motet: Option<&'a Motet>,
}

/// The choice of a chunk.
#[derive(Debug, Serialize)]
pub(crate) struct ChunkChoice<'a> {
    pub(crate) index: u32,
    pub(crate) delta: Delta<'a>,
    pub(crate) logprobs: Option<()>,
    pub(crate) finish_reason: Option<&'static str>,
}

/// What a chunk adds to the message.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<&'a str>,
}

/// The motet side of an answer: the thread and request it ran as (send the thread back in
/// `X-Motet-Thread` to continue it), and the calls it waits on when a person must answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Motet {
    pub(crate) thread: String,
    pub(crate) request: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) waiting: Vec<WaitingCall>,
}

/// A tool call that waits for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct WaitingCall {
    pub(crate) tool_call_id: String,
    pub(crate) tool: String,
    /// `approval` or `question`.
    pub(crate) kind: &'static str,
}

/// One served agent as a model: `object: "model"`.
#[derive(Debug, Serialize)]
pub(crate) struct Model<'a> {
    pub(crate) id: &'a str,
    pub(crate) object: &'static str,
    pub(crate) created: u64,
    pub(crate) owned_by: &'static str,
}

/// `GET /v1/models`.
#[derive(Debug, Serialize)]
pub(crate) struct ModelList<'a> {
    pub(crate) object: &'static str,
    pub(crate) data: Vec<Model<'a>>,
}

impl<'a> Model<'a> {
    /// The agent `name` as a model, served since `created` (Unix seconds).
    pub(crate) fn agent(name: &'a str, created: u64) -> Self {
        Self {
            id: name,
            object: "model",
            created,
            owned_by: "motet",
        }
    }
}
