//! Our request rendered as a Chat Completions body.
//!
//! Chat Completions carries no reasoning back, except OpenRouter's `reasoning_details`: an
//! assistant turn that came with them from an `openai-compat:` server sends them back, on the
//! assistant message, to the same model there.

use motet_directives::{
    AssistantBlock, LlmRequest, MediaSource, Message, Part, ProviderMeta, ToolChoice, ToolDef,
    UserContent,
};
use serde_json::{Map, Value, json};

use crate::error::ProviderError;

/// The request body as sent (see [`crate::Dialect::encode`]).
pub(crate) fn encode(req: &LlmRequest) -> Result<Vec<u8>, ProviderError> {
    crate::encode::to_json(&render(req)?)
}

/// Renders the streaming request body.
///
/// The output limit goes in `max_completion_tokens` for OpenAI itself (its reasoning models
/// reject `max_tokens`) and in `max_tokens` for compatible servers, which read that one.
pub(crate) fn render(req: &LlmRequest) -> Result<Value, ProviderError> {
    let mut messages = Vec::with_capacity(req.messages.len());
    for message in &req.messages {
        match message {
            Message::System { content } => {
                messages.push(json!({"role": "system", "content": content}));
            }
            Message::User { content } => {
                let content = match content {
                    UserContent::Text(text) => json!(text),
                    UserContent::Parts(parts) => Value::Array(user_parts(parts, req)?),
                };
                messages.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(turn) => messages.push(assistant(turn, req)),
            Message::ToolResults { results } => {
                for result in results {
                    let content = if result.is_error {
                        // The API has no error flag on tool messages; say it in words.
                        format!("Error: {}", result.content)
                    } else {
                        result.content.clone()
                    };
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": result.tool_use_id,
                        "content": content,
                    }));
                }
                // A tool message holds text only: what the tools returned besides text follows
                // the results as one user message, each result's parts after a line naming it.
                let mut attached = Vec::new();
                for result in results.iter().filter(|r| !r.attachments.is_empty()) {
                    attached.push(json!({
                        "type": "text",
                        "text": format!("Attached to the result of tool call {}:", result.tool_use_id),
                    }));
                    attached.extend(user_parts(&result.attachments, req)?);
                }
                if !attached.is_empty() {
                    messages.push(json!({"role": "user", "content": attached}));
                }
            }
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model.model()));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !req.tools.is_empty() {
        let (offered, choice) = offered_tools(req);
        let tools: Vec<Value> = offered
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), choice);
        if let Some(parallel) = req.options.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    let options = &req.options;
    if let Some(max) = options.max_tokens {
        let field = if req.model.provider() == "openai" {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), json!(max));
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = options.top_p {
        body.insert("top_p".into(), json!(p));
    }
    // OpenAI routes requests sharing a key (and a prefix) to the same prompt cache. Compatible
    // servers keep their own caches (llama.cpp: per slot) and some refuse unknown fields.
    if let Some(key) = &options.prompt_cache.key
        && req.model.provider() == "openai"
    {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if !options.stop.is_empty() {
        body.insert("stop".into(), json!(options.stop));
    }
    if let Some(effort) = options.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if let Some(format) = crate::structured::openai_chat(req)? {
        body.insert("response_format".into(), format);
    }
    Ok(Value::Object(body))
}

/// A user message's parts as Chat Completions content parts: `text`, `image_url` (a `data:`
/// URL for bytes), `input_audio` (base64 with its format, `wav` or `mp3`), `file` (a PDF as a
/// `data:` URL in `file_data`, with its file name).
///
/// # Errors
/// [`ProviderError::UnsupportedContent`] for audio or a document at a URL, or audio that is not
/// WAV or MP3 (which [`crate::models::validate`] refuses first).
fn user_parts(parts: &[Part], req: &LlmRequest) -> Result<Vec<Value>, ProviderError> {
    let refuse = |kind: &'static str, reason: &str| ProviderError::UnsupportedContent {
        dialect: crate::Dialect::OpenAiChat,
        model: req.model.to_string(),
        kind,
        reason: reason.to_owned(),
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        out.push(match part {
            Part::Text { text } => json!({"type": "text", "text": text}),
            Part::Image { source } => {
                json!({"type": "image_url", "image_url": {"url": source.to_url()}})
            }
            Part::Audio { source } => {
                let MediaSource::Bytes { media_type, data } = source else {
                    return Err(refuse("audio", "audio goes as bytes only"));
                };
                let format = crate::media::audio_format(media_type)
                    .ok_or_else(|| refuse("audio", "only WAV or MP3 audio"))?;
                json!({
                    "type": "input_audio",
                    "input_audio": {"data": data.to_base64(), "format": format},
                })
            }
            Part::Document { source, name } => {
                if matches!(source, MediaSource::Url { .. }) {
                    return Err(refuse("document", "a document goes as bytes only"));
                }
                let mut file = Map::new();
                file.insert(
                    "filename".into(),
                    json!(name.as_deref().unwrap_or("document.pdf")),
                );
                file.insert("file_data".into(), json!(source.to_url()));
                json!({"type": "file", "file": file})
            }
        });
    }
    Ok(out)
}

fn assistant(turn: &motet_directives::AssistantMessage, req: &LlmRequest) -> Value {
    let text: String = turn.text_blocks().collect();
    let calls: Vec<Value> = turn
        .blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::ToolUse { id, name, args, .. } => Some(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": args.get()},
            })),
            _ => None,
        })
        .collect();
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let details = reasoning_details(turn, req);
    if !details.is_empty() {
        message.insert("reasoning_details".into(), Value::Array(details));
    }
    Value::Object(message)
}

/// The `reasoning_details` an OpenAI-compatible server (OpenRouter) streamed with this turn,
/// to send back with it: only to `openai-compat:` (OpenAI's own API has no such field) and only
/// when the request names the model that produced them (a signature or encrypted reasoning is
/// valid for that model alone). A detail whose stored text is not a JSON object is left out.
fn reasoning_details(turn: &motet_directives::AssistantMessage, req: &LlmRequest) -> Vec<Value> {
    if req.model.provider() != "openai-compat" {
        return Vec::new();
    }
    turn.blocks
        .iter()
        .filter_map(|block| match block.meta() {
            Some(ProviderMeta::OpenAiCompatReasoning { model, details })
                if model == req.model.model() =>
            {
                Some(details)
            }
            _ => None,
        })
        .flatten()
        .filter_map(|detail| {
            serde_json::from_str::<Value>(detail)
                .ok()
                .filter(Value::is_object)
        })
        .collect()
}

/// The tools to list and the `tool_choice` to send.
///
/// OpenAI takes a named function as `tool_choice`. Compatible servers do not all read that
/// form: llama.cpp's server takes only the strings `auto`, `none` and `required` and falls back
/// to `auto` on anything else, so the name would be dropped without a word. For them a named
/// choice is sent as `required` with only that tool listed, which means the same to any server.
fn offered_tools(req: &LlmRequest) -> (impl Iterator<Item = &ToolDef>, Value) {
    let named = match &req.tool_choice {
        ToolChoice::Tool { name } => Some(name.as_str()),
        _ => None,
    };
    let narrow = named.filter(|_| req.model.provider() != "openai");
    let choice = match (&req.tool_choice, narrow) {
        (_, Some(_)) | (ToolChoice::Required, None) => json!("required"),
        (ToolChoice::Auto, _) => json!("auto"),
        (ToolChoice::None, _) => json!("none"),
        (ToolChoice::Tool { name }, None) => {
            json!({"type": "function", "function": {"name": name}})
        }
    };
    let tools = req
        .tools
        .iter()
        .filter(move |tool| narrow.is_none_or(|name| tool.name == name));
    (tools, choice)
}
