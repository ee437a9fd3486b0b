//! Gemini on the wire: the `GenerateContentRequest` we send and the `GenerateContentResponse`
//! chunks we read. Field names are camelCase; only what motet uses is declared.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

/// The body of `streamGenerateContent`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request<'a> {
    pub(super) contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) generation_config: Option<GenerationConfig<'a>>,
}

/// One turn of the conversation: `user` or `model`.
#[derive(Debug, Serialize)]
pub(super) struct Content<'a> {
    pub(super) role: &'static str,
    pub(super) parts: Vec<ContentPart<'a>>,
}

/// A part of a turn: one motet models, or one Gemini sent that motet keeps as it came
/// (`executableCode`, `codeExecutionResult`, kinds added later), written back as those bytes.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ContentPart<'a> {
    Known(Part<'a>),
    Opaque(&'a RawValue),
}

/// Reads only whether a stored part carries a `thoughtSignature` of its own.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SignatureProbe {
    #[serde(default)]
    pub(super) thought_signature: Option<serde::de::IgnoredAny>,
}

/// `systemInstruction`: a content without a role.
#[derive(Debug, Serialize)]
pub(super) struct SystemInstruction<'a> {
    pub(super) parts: Vec<Part<'a>>,
}

/// One part. Exactly one of `text`, `functionCall`, `functionResponse` is set; a thought
/// signature rides beside `text` and `functionCall`, never beside `functionResponse`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Part<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thought_signature: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) inline_data: Option<Box<InlineData<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) file_data: Option<Box<FileData<'a>>>,
}

/// Bytes in the request: `inlineData {mimeType, data}` (base64).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InlineData<'a> {
    pub(super) mime_type: &'a str,
    pub(super) data: String,
}

/// A file at a URI the model reads: `fileData {mimeType, fileUri}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FileData<'a> {
    pub(super) mime_type: &'a str,
    pub(super) file_uri: &'a str,
}

/// A media part of a function response (Gemini 3's multimodal function responses): exactly
/// one of `inlineData`, `fileData`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MediaPart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) inline_data: Option<Box<InlineData<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) file_data: Option<Box<FileData<'a>>>,
}

/// A call the model made, replayed.
#[derive(Debug, Serialize)]
pub(super) struct FunctionCall<'a> {
    pub(super) name: &'a str,
    pub(super) args: Args<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<&'a str>,
}

/// `args` must be an object: the raw arguments when they are one, `{}` otherwise.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Args<'a> {
    Raw(&'a RawValue),
    Empty(EmptyObject),
}

/// Serializes as `{}`.
#[derive(Debug, Serialize)]
pub(super) struct EmptyObject {}

/// The result of a call.
#[derive(Debug, Serialize)]
pub(super) struct FunctionResponse<'a> {
    pub(super) name: &'a str,
    pub(super) response: ResponseBody<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<&'a str>,
    /// Images and files the tool returned besides its text.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) parts: Vec<MediaPart<'a>>,
}

/// Gemini reads `output` as the function's output and `error` as its failure.
#[derive(Debug, Serialize)]
pub(super) struct ResponseBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) output: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<&'a str>,
}

/// One entry of `tools[]`: every function declaration, or one built-in tool (`googleSearch`,
/// `codeExecution`, each `{}`).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tool<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) function_declarations: Vec<FunctionDeclaration<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) google_search: Option<EmptyObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) code_execution: Option<EmptyObject>,
}

/// A function the model may call. `parametersJsonSchema` takes JSON Schema as is; the older
/// `parameters` field only takes Gemini's OpenAPI subset.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionDeclaration<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) parameters_json_schema: &'a Value,
}

/// `toolConfig`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolConfig<'a> {
    pub(super) function_calling_config: FunctionCallingConfig<'a>,
    /// Gemini 3's tool context circulation, which function tools next to built-in tools need.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) include_server_side_tool_invocations: Option<bool>,
}

/// `toolConfig.functionCallingConfig`: `AUTO`, `ANY` or `NONE`, optionally restricted.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionCallingConfig<'a> {
    pub(super) mode: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) allowed_function_names: Vec<&'a str>,
}

/// `generationConfig`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerationConfig<'a> {
    /// `application/json` for a response format (structured output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_mime_type: Option<&'static str>,
    /// The response format's JSON Schema (`responseJsonSchema` takes JSON Schema;
    /// `responseSchema` only an OpenAPI subset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_json_schema: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) stop_sequences: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_config: Option<ThinkingConfig>,
}

/// `generationConfig.thinkingConfig`. `thinkingBudget` (Gemini 2.5) and `thinkingLevel`
/// (Gemini 3) are mutually exclusive: the API rejects a request with both.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ThinkingConfig {
    pub(super) include_thoughts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_level: Option<&'static str>,
}

// ---------------------------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------------------------

/// One `GenerateContentResponse` chunk.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Chunk {
    #[serde(default)]
    pub(super) candidates: Vec<Candidate>,
    #[serde(default)]
    pub(super) prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub(super) usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub(super) model_version: Option<String>,
    #[serde(default)]
    pub(super) response_id: Option<String>,
    /// An error sent in place of a chunk.
    #[serde(default)]
    pub(super) error: Option<ApiError>,
}

/// One candidate (motet asks for one).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Candidate {
    #[serde(default)]
    pub(super) content: Option<WireContent>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
    #[serde(default)]
    pub(super) index: Option<u32>,
}

/// A candidate's content. Each part is kept as the bytes Gemini sent: the decoder reads the
/// ones it models into [`WirePart`] and passes the others on untouched.
#[derive(Debug, Deserialize)]
pub(super) struct WireContent {
    #[serde(default)]
    pub(super) parts: Vec<Box<RawValue>>,
}

/// The fields of a part that motet reads: a part holding any other field (`executableCode`,
/// `codeExecutionResult`, `inlineData`, …) is kept opaquely instead.
pub(super) const MODELED_PART_FIELDS: [&str; 4] =
    ["text", "thought", "thoughtSignature", "functionCall"];

/// One streamed part of a kind motet models: text, thought text, a function call, or a bare
/// signature.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WirePart {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thought: Option<bool>,
    #[serde(default)]
    pub(super) function_call: Option<WireFunctionCall>,
    #[serde(default)]
    pub(super) thought_signature: Option<String>,
}

/// A whole function call (Gemini never streams arguments in pieces).
#[derive(Debug, Deserialize)]
pub(super) struct WireFunctionCall {
    /// Present from Gemini 3 on.
    #[serde(default)]
    pub(super) id: Option<String>,
    pub(super) name: String,
    /// Kept as the bytes Gemini sent.
    #[serde(default)]
    pub(super) args: Option<Box<RawValue>>,
}

/// Why the prompt was blocked, if it was.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    #[serde(default)]
    pub(super) block_reason: Option<String>,
    #[serde(default)]
    pub(super) block_reason_message: Option<String>,
}

/// Token counts so far. `candidatesTokenCount` excludes the thinking tokens, which are counted
/// in `thoughtsTokenCount`; `promptTokenCount` includes the cached ones.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageMetadata {
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) prompt_token_count: u64,
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) candidates_token_count: u64,
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) thoughts_token_count: u64,
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) cached_content_token_count: u64,
    #[serde(default, deserialize_with = "crate::count::or_zero")]
    pub(super) tool_use_prompt_token_count: u64,
}

/// A Google API error: `{"code": 429, "message": …, "status": "RESOURCE_EXHAUSTED", "details"}`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ApiError {
    #[serde(default)]
    pub(super) code: Option<Value>,
    #[serde(default)]
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) details: Vec<Value>,
}

/// An HTTP error body, `{"error": {…}}` (some endpoints wrap it in an array).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum ErrorBody {
    One { error: ApiError },
    Many(Vec<ErrorBody>),
}
