//! Our request rendered as a Chat Completions body.
//!
//! Chat Completions carries no reasoning back, except OpenRouter's `reasoning_details`: an
//! assistant turn that came with them from an `openai-compat:` server sends them back, on the
//! assistant message, to the same model there.

use motet_directives::{AssistantBlock, LlmRequest, Message, ProviderMeta, ToolChoice, ToolDef};
use serde_json::{Map, Value, json};

use crate::error::ProviderError;

/// The request body as sent (see [`crate::Dialect::encode`]).
pub(crate) fn encode(req: &LlmRequest) -> Result<Vec<u8>, ProviderError> {
    crate::body::to_json(&render(req)?)
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
