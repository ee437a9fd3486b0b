//! Our request rendered as a Chat Completions body.

use motet_directives::{AssistantBlock, LlmRequest, Message, ToolChoice};
use serde_json::{Map, Value, json};

use crate::error::ProviderError;

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
            Message::Assistant(turn) => messages.push(assistant(turn)),
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
        let tools: Vec<Value> = req
            .tools
            .iter()
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
        body.insert("tool_choice".into(), tool_choice(&req.tool_choice));
        if let Some(parallel) = req.options.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    } else if let ToolChoice::Tool { name } = &req.tool_choice {
        return Err(ProviderError::InvalidRequest {
            status: 0,
            message: format!("tool_choice names `{name}` but no tools are offered"),
        });
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
    if !options.stop.is_empty() {
        body.insert("stop".into(), json!(options.stop));
    }
    if let Some(effort) = options.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    Ok(Value::Object(body))
}

fn assistant(turn: &motet_directives::AssistantMessage) -> Value {
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
    Value::Object(message)
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool { name } => json!({"type": "function", "function": {"name": name}}),
    }
}
