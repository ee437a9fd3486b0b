//! The Responses API on the wire: the request body we send and the streaming events we read.
//!
//! Only the fields motet uses are declared; everything else the API sends (`sequence_number`,
//! `output_index`, `obfuscation`, `logprobs`, llama.cpp's `timings`, …) is ignored, and none of
//! the declared fields is required unless the event is meaningless without it. llama.cpp omits
//! `sequence_number` and `output_index`, so nothing here depends on them: items are keyed by id.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

/// The body of `POST /v1/responses`.
#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    pub(super) model: &'a str,
    pub(super) input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<f64>,
    /// Routes requests sharing it (and a prefix) to the same prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reasoning: Option<ReasoningConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) include: Vec<&'static str>,
    /// `{format: …}`: the response format (structured output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<serde_json::Value>,
    pub(super) store: bool,
    pub(super) stream: bool,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum InputItem<'a> {
    /// A system (`developer`), user or assistant message.
    Message {
        role: &'static str,
        content: Vec<InputContent<'a>>,
        /// An assistant message's `phase` (`commentary`, `final_answer`), as it was received.
        #[serde(skip_serializing_if = "Option::is_none")]
        phase: Option<&'a str>,
    },
    /// A reasoning item replayed statelessly.
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
    },
    /// A tool call the model made.
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    /// The result of a tool call.
    FunctionCallOutput {
        call_id: &'a str,
        output: FunctionOutput<'a>,
    },
    /// An output item motet does not model, sent back as it was received.
    #[serde(untagged)]
    Opaque(&'a RawValue),
}

/// A `function_call_output`'s `output`: text, or a list of content parts when the tool
/// returned images or files besides its text.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum FunctionOutput<'a> {
    Text(std::borrow::Cow<'a, str>),
    Parts(Vec<InputContent<'a>>),
}

/// One content part of an input message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum InputContent<'a> {
    /// Text from the system or the user.
    InputText { text: std::borrow::Cow<'a, str> },
    /// Text the assistant produced earlier.
    OutputText { text: &'a str },
    /// An image: an `https:` URL or a `data:` URL of its bytes.
    InputImage {
        image_url: std::borrow::Cow<'a, str>,
        detail: &'static str,
    },
    /// A file (a PDF): its bytes as a `data:` URL in `file_data`, or its `file_url`.
    InputFile {
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
    },
}

/// A reasoning summary part.
#[derive(Debug, Serialize)]
pub(super) struct SummaryText<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) text: &'a str,
}

/// One entry of `tools`: a function, or a tool OpenAI runs itself.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Tool<'a> {
    /// A function tool. Flat, unlike Chat Completions' `{"type":"function","function":{…}}`.
    Function {
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
        /// The Responses API makes function tools strict unless told otherwise, which rejects
        /// any schema that is not closed (`additionalProperties: false`, every property
        /// required).
        strict: bool,
    },
    /// Web search (the generally available `web_search`, not `web_search_preview`).
    WebSearch {
        #[serde(skip_serializing_if = "Option::is_none")]
        filters: Option<SearchFilters<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        user_location: Option<Location<'a>>,
    },
    /// Code interpreter, in a container OpenAI creates for the call.
    CodeInterpreter { container: Container },
    /// A remote MCP server.
    Mcp {
        server_label: &'a str,
        server_url: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        allowed_tools: Option<&'a [String]>,
        require_approval: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        authorization: Option<Token<'a>>,
    },
}

/// `filters` of a web search.
#[derive(Debug, Serialize)]
pub(super) struct SearchFilters<'a> {
    pub(super) allowed_domains: &'a [String],
}

/// `user_location`: `{"type": "approximate", …}` with the parts that are set.
#[derive(Debug, Serialize)]
pub(super) struct Location<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) city: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) region: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) country: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) timezone: Option<&'a str>,
}

/// A code interpreter's `container`: `{"type": "auto"}`.
#[derive(Debug, Serialize)]
pub(super) struct Container {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
}

/// An MCP server's token: written as it is into the body, `[redacted]` when debug-printed.
#[derive(Serialize)]
#[serde(transparent)]
pub(super) struct Token<'a>(pub(super) &'a str);

impl std::fmt::Debug for Token<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// `tool_choice`: a mode string or one named function.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolChoice<'a> {
    /// `auto`, `none` or `required`.
    Mode(&'static str),
    /// `{"type":"function","name":…}`.
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
    },
}

/// `reasoning`: effort and summaries.
#[derive(Debug, Serialize)]
pub(super) struct ReasoningConfig {
    pub(super) effort: &'static str,
    pub(super) summary: &'static str,
}

// ---------------------------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------------------------

/// One streaming event, by its `type`. Types motet does not use are [`StreamEvent::Other`].
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum StreamEvent {
    #[serde(rename = "response.created", alias = "response.in_progress")]
    Created { response: ResponseObject },
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded { item: OutputItem },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone { item: OutputItem },
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded {
        item_id: String,
        #[serde(default)]
        summary_index: u64,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        item_id: String,
        #[serde(default)]
        summary_index: u64,
        delta: String,
    },
    /// Raw reasoning text (open-weight reasoning models served through the Responses API).
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta { item_id: String, delta: String },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta { item_id: String, delta: String },
    #[serde(rename = "response.output_text.done")]
    OutputTextDone { item_id: String, text: String },
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta { item_id: String, delta: String },
    #[serde(rename = "response.refusal.done")]
    RefusalDone { item_id: String, refusal: String },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta { item_id: String, delta: String },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone { item_id: String, arguments: String },
    #[serde(rename = "response.completed")]
    Completed { response: ResponseObject },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: ResponseObject },
    #[serde(rename = "response.failed")]
    Failed { response: ResponseObject },
    #[serde(rename = "error")]
    Error(ErrorEvent),
    #[serde(other)]
    Other,
}

/// The `response` object carried by the lifecycle events.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ResponseObject {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(super) error: Option<ApiError>,
}

/// Why a response is `incomplete`.
#[derive(Debug, Deserialize)]
pub(super) struct IncompleteDetails {
    #[serde(default)]
    pub(super) reason: Option<String>,
}

/// One output item, as announced by `output_item.added` and finished by `output_item.done`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum OutputItem {
    #[serde(rename = "reasoning")]
    Reasoning {
        id: String,
        #[serde(default)]
        summary: Vec<SummaryPart>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    #[serde(rename = "function_call")]
    FunctionCall {
        /// The item id (`fc_…`) that argument deltas refer to.
        #[serde(default)]
        id: Option<String>,
        /// The id a `function_call_output` must echo.
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: Option<String>,
    },
    #[serde(rename = "message")]
    Message {
        id: String,
        #[serde(default)]
        content: Vec<ContentPart>,
        /// `commentary` or `final_answer` (gpt-5.3 and later); absent on older models.
        #[serde(default)]
        phase: Option<String>,
    },
    /// Anything else (`web_search_call`, `mcp_call`, …): read again whole, as [`ItemDone`].
    #[serde(other)]
    Other,
}

/// `response.output_item.done` read for its item's exact JSON text. A separate, untagged
/// struct because a borrowed [`RawValue`] cannot sit inside the internally tagged
/// [`StreamEvent`] (serde buffers those).
#[derive(Debug, Deserialize)]
pub(super) struct ItemDone<'a> {
    #[serde(borrow)]
    pub(super) item: &'a RawValue,
}

/// A reasoning summary part of a finished reasoning item.
#[derive(Debug, Deserialize)]
pub(super) struct SummaryPart {
    #[serde(default)]
    pub(super) text: String,
}

/// A content part of a finished message item.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum ContentPart {
    #[serde(rename = "output_text")]
    OutputText {
        #[serde(default)]
        text: String,
    },
    #[serde(rename = "refusal")]
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

/// Token counts of `response.completed` / `response.incomplete`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) input_tokens: u64,
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) output_tokens: u64,
    #[serde(default)]
    pub(super) input_tokens_details: Option<InputTokensDetails>,
    #[serde(default)]
    pub(super) output_tokens_details: Option<OutputTokensDetails>,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct InputTokensDetails {
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) cached_tokens: u64,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct OutputTokensDetails {
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) reasoning_tokens: u64,
}

/// The `error` event. OpenAI documents `code` and `message` at the top level; recorded streams
/// nest them in an `error` object. Both are read.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ErrorEvent {
    #[serde(default)]
    pub(super) code: Option<Value>,
    #[serde(default)]
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) error: Option<ApiError>,
}

/// An error object: `{"type", "code", "message", "param"}` (HTTP bodies wrap it in `error`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct ApiError {
    #[serde(default, rename = "type")]
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) code: Option<Value>,
    #[serde(default)]
    pub(super) message: Option<String>,
}

/// An HTTP error body: `{"error": {…}}`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub(super) error: Option<ApiError>,
}

/// A JSON `code` as text: strings as they are, numbers printed, anything else ignored.
pub(super) fn code_text(code: Option<&Value>) -> Option<String> {
    match code? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
