//! Our [`LlmRequest`] as a Responses API request body.
//!
//! The conversation is replayed statelessly (`store: false`): every earlier item is sent again,
//! in order (seed 004 §3.5).
//! - System messages become `developer` messages in place (a summary inserted later in the
//!   conversation stays where it was), user messages `input_text` messages.
//! - An assistant turn becomes a sequence of items in block order: consecutive text blocks one
//!   assistant message of `output_text` parts, each reasoning block carrying OpenAI meta a
//!   `reasoning` item with its `id`, `encrypted_content` and summary, each tool use a
//!   `function_call` item whose `arguments` is the raw argument text (invalid arguments included,
//!   as the string they are).
//! - Reasoning blocks without OpenAI meta (another provider's thinking) are dropped: OpenAI cannot
//!   verify them. So are OpenAI reasoning items without `encrypted_content`: with `store: false`
//!   the API cannot look their id up and rejects the request ("Items are not persisted when
//!   `store` is set to false"). Text and tool calls are never dropped, whoever produced them.
//! - Item ids of function calls (`fc_…`) and messages (`msg_…`) are not sent: with
//!   `store: false` and encrypted reasoning they are optional, and calls are paired with their
//!   outputs by `call_id`.
//! - An assistant text block carrying `ProviderMeta::OpenAiMessage` was one message item of its
//!   own: it is sent as one, with its `phase`, which OpenAI asks to see again on every assistant
//!   message. Opaque OpenAI blocks (`web_search_call`, `mcp_call`, … items) are sent back as
//!   the item they were, in place; other providers' opaque blocks are dropped.
//! - Tool results become `function_call_output` items. The API has no error flag, so a failed
//!   tool's text is sent as `Error: <text>` (as in Chat Completions) for the model to read.
//! - `include: ["reasoning.encrypted_content"]` is requested when reasoning effort is set or the
//!   model is a reasoning model, so the next request can replay the reasoning; non-reasoning
//!   models reject it. `reasoning: {effort, summary: "auto"}` is sent only when effort is set.
//! - The Responses API has no stop sequences and no thinking token budget; those options are
//!   not sent.
//! - Hosted tools go in `tools` after the function tools: `web_search` (with `filters` and
//!   `user_location`), `code_interpreter` in an `auto` container, `mcp` servers with their
//!   label, URL, allowed tools, `require_approval` and `authorization`. `tool_choice` and
//!   `parallel_tool_calls` are sent whenever `tools` is not empty.

use std::borrow::Cow;

use motet_directives::{
    AssistantBlock, AssistantMessage, HostedTool, LlmRequest, McpApproval, MediaSource, Message,
    Part, ProviderMeta, ReasoningEffort, Secret, ToolChoice as OurToolChoice, UserContent,
};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::ProviderError;

use super::PROVIDER;
use super::wire::{
    Container, FunctionOutput, InputContent, InputItem, Location, ReasoningConfig, Request,
    SearchFilters, SummaryText, Token, Tool, ToolChoice,
};

/// What the API calls the encrypted reasoning state in `include`.
const INCLUDE_ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The request body as sent (see [`crate::Dialect::encode`]).
///
/// The typed body is serialized directly, so an opaque item (a `&RawValue`) is written as the
/// exact text it was received as. Going through [`render`]'s `Value` would parse it again:
/// keys sorted, escapes normalized, numbers reparsed.
pub(crate) fn encode(req: &LlmRequest) -> Result<Vec<u8>, ProviderError> {
    crate::encode::to_json(&body(req)?)
}

/// The full streaming request body as a `Value`, for reading and comparing. Opaque items are
/// equal in meaning but not byte for byte what [`encode`] sends.
pub(crate) fn render(req: &LlmRequest) -> Result<Value, ProviderError> {
    crate::encode::to_value(&body(req)?)
}

/// Parts as Responses content: `input_text`, `input_image` (an `https:` or `data:` URL,
/// `detail: auto`), `input_file` (a PDF's bytes as a `data:` URL in `file_data`, or its
/// `file_url`).
///
/// # Errors
/// [`ProviderError::UnsupportedContent`] for audio, which the Responses API does not take
/// ([`crate::models::validate`] refuses it first).
fn input_parts<'a>(
    parts: &'a [Part],
    req: &LlmRequest,
) -> Result<Vec<InputContent<'a>>, ProviderError> {
    parts
        .iter()
        .map(|part| {
            Ok(match part {
                Part::Text { text } => InputContent::InputText {
                    text: Cow::Borrowed(text),
                },
                Part::Image { source } => InputContent::InputImage {
                    image_url: source.to_url(),
                    detail: "auto",
                },
                Part::Document { source, name } => match source {
                    MediaSource::Url { url, .. } => InputContent::InputFile {
                        filename: name.as_deref(),
                        file_data: None,
                        file_url: Some(url),
                    },
                    MediaSource::Bytes { .. } => InputContent::InputFile {
                        filename: Some(name.as_deref().unwrap_or("document.pdf")),
                        file_data: Some(source.to_url().into_owned()),
                        file_url: None,
                    },
                },
                Part::Audio { .. } => {
                    return Err(ProviderError::UnsupportedContent {
                        dialect: crate::Dialect::OpenAiResponses,
                        model: req.model.to_string(),
                        kind: "audio",
                        reason: "the Responses API has no audio input".to_owned(),
                    });
                }
            })
        })
        .collect()
}

/// The typed request body, borrowing from `req`.
fn body(req: &LlmRequest) -> Result<Request<'_>, ProviderError> {
    let mut input = Vec::with_capacity(req.messages.len());
    for message in &req.messages {
        match message {
            Message::System { content } => input.push(InputItem::Message {
                role: "developer",
                content: vec![InputContent::InputText {
                    text: Cow::Borrowed(content),
                }],
                phase: None,
            }),
            Message::User { content } => input.push(InputItem::Message {
                role: "user",
                content: match content {
                    UserContent::Text(text) => vec![InputContent::InputText {
                        text: Cow::Borrowed(text),
                    }],
                    UserContent::Parts(parts) => input_parts(parts, req)?,
                },
                phase: None,
            }),
            Message::Assistant(turn) => render_assistant(turn, &mut input),
            Message::ToolResults { results } => {
                for result in results {
                    let text = if result.is_error {
                        Cow::Owned(format!("Error: {}", result.content))
                    } else {
                        Cow::Borrowed(result.content.as_str())
                    };
                    let output = if result.attachments.is_empty() {
                        FunctionOutput::Text(text)
                    } else {
                        let mut parts = vec![InputContent::InputText { text }];
                        parts.extend(input_parts(&result.attachments, req)?);
                        FunctionOutput::Parts(parts)
                    };
                    input.push(InputItem::FunctionCallOutput {
                        call_id: &result.tool_use_id,
                        output,
                    });
                }
            }
        }
    }

    let tools: Vec<Tool<'_>> = req
        .tools
        .iter()
        .map(|tool| Tool::Function {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
            strict: false,
        })
        .chain(req.options.hosted_tools.iter().map(hosted_tool))
        .collect();
    let tool_choice = (!tools.is_empty()).then(|| match &req.tool_choice {
        OurToolChoice::Auto => ToolChoice::Mode("auto"),
        OurToolChoice::None => ToolChoice::Mode("none"),
        OurToolChoice::Required => ToolChoice::Mode("required"),
        OurToolChoice::Tool { name } => ToolChoice::Function {
            kind: "function",
            name,
        },
    });

    let options = &req.options;
    let model = req.model.model();
    let reasoning = options.reasoning_effort.map(|effort| ReasoningConfig {
        effort: effort_name(effort),
        summary: "auto",
    });
    let include = if reasoning.is_some() || is_reasoning_model(model) {
        vec![INCLUDE_ENCRYPTED_REASONING]
    } else {
        Vec::new()
    };

    Ok(Request {
        model,
        input,
        parallel_tool_calls: options.parallel_tool_calls.filter(|_| !tools.is_empty()),
        tools,
        tool_choice,
        max_output_tokens: options.max_tokens,
        temperature: options.temperature,
        top_p: options.top_p,
        prompt_cache_key: options.prompt_cache.key.as_deref(),
        reasoning,
        include,
        text: crate::structured::openai_responses(req)?,
        store: false,
        stream: true,
    })
}

/// A hosted tool's entry in `tools`, next to the function tools.
fn hosted_tool(tool: &HostedTool) -> Tool<'_> {
    match tool {
        HostedTool::WebSearch(search) => Tool::WebSearch {
            filters: (!search.allowed_domains.is_empty()).then_some(SearchFilters {
                allowed_domains: &search.allowed_domains,
            }),
            user_location: search.user_location.as_ref().map(|l| Location {
                kind: "approximate",
                city: l.city.as_deref(),
                region: l.region.as_deref(),
                country: l.country.as_deref(),
                timezone: l.timezone.as_deref(),
            }),
        },
        HostedTool::CodeExecution => Tool::CodeInterpreter {
            container: Container { kind: "auto" },
        },
        HostedTool::McpServer(server) => Tool::Mcp {
            server_label: &server.name,
            server_url: &server.url,
            allowed_tools: server.allowed_tools.as_deref(),
            require_approval: match server.approval {
                McpApproval::Never => "never",
                McpApproval::Always => "always",
            },
            authorization: server
                .authorization
                .as_ref()
                .and_then(Secret::expose)
                .map(Token),
        },
    }
}

/// One assistant turn as input items, in block order.
fn render_assistant<'a>(turn: &'a AssistantMessage, input: &mut Vec<InputItem<'a>>) {
    // The assistant message being gathered: its `output_text` parts and its phase.
    let mut text: Vec<InputContent<'a>> = Vec::new();
    let mut phase: Option<&'a str> = None;
    let flush = |text: &mut Vec<InputContent<'a>>,
                 phase: &mut Option<&'a str>,
                 input: &mut Vec<InputItem<'a>>| {
        if !text.is_empty() {
            input.push(InputItem::Message {
                role: "assistant",
                content: std::mem::take(text),
                phase: phase.take(),
            });
        }
        *phase = None;
    };
    for block in &turn.blocks {
        match (block, block.meta()) {
            (AssistantBlock::Text { text: part, .. }, meta) if !part.is_empty() => {
                let block_phase = match meta {
                    Some(ProviderMeta::OpenAiMessage { phase }) => Some(phase.as_str()),
                    _ => None,
                };
                // A phased block was one message item of its own; only phaseless text merges.
                if block_phase.is_some() || phase.is_some() {
                    flush(&mut text, &mut phase, input);
                }
                text.push(InputContent::OutputText { text: part });
                phase = block_phase;
            }
            (
                AssistantBlock::Reasoning { text: summary, .. },
                Some(ProviderMeta::OpenAi {
                    id,
                    encrypted_content: Some(encrypted_content),
                }),
            ) => {
                flush(&mut text, &mut phase, input);
                let summary = if summary.is_empty() {
                    Vec::new()
                } else {
                    vec![SummaryText {
                        kind: "summary_text",
                        text: summary,
                    }]
                };
                input.push(InputItem::Reasoning {
                    id,
                    summary,
                    encrypted_content: Some(encrypted_content),
                });
            }
            (AssistantBlock::ToolUse { id, name, args, .. }, _) => {
                flush(&mut text, &mut phase, input);
                input.push(InputItem::FunctionCall {
                    call_id: id,
                    name,
                    arguments: args.get(),
                });
            }
            (AssistantBlock::Opaque { provider, item }, _) if provider == PROVIDER => {
                flush(&mut text, &mut phase, input);
                match serde_json::from_str::<&RawValue>(item) {
                    Ok(item) => input.push(InputItem::Opaque(item)),
                    // Only a damaged store gets here; the API would reject the item anyway.
                    Err(e) => tracing::warn!("skipping an unreadable stored Responses item: {e}"),
                }
            }
            // Empty text, another provider's reasoning or item, or OpenAI reasoning that cannot
            // be replayed.
            _ => {}
        }
    }
    flush(&mut text, &mut phase, input);
}

fn effort_name(effort: ReasoningEffort) -> &'static str {
    match effort {
        ReasoningEffort::Minimal => "minimal",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    }
}

/// OpenAI's reasoning model families: they return reasoning items whose encrypted state must be
/// requested to be replayable. `gpt-5*-chat` models do not reason.
fn is_reasoning_model(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or(&model);
    (model.starts_with("gpt-5") && !model.contains("chat"))
        || model.starts_with("o1")
        || model.starts_with("o3")
        || model.starts_with("o4")
        || model.contains("codex")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use motet_directives::{LlmOptions, StopReason, ToolArgs, ToolDef, ToolResult};
    use serde_json::json;

    use super::*;

    fn resumed_turn() -> Vec<Message> {
        vec![
            Message::system("You are terse."),
            Message::user("Weather in Paris and time in Tokyo?"),
            Message::Assistant(AssistantMessage {
                blocks: vec![
                    AssistantBlock::reasoning(
                        "**Planning**\n\nTwo lookups.",
                        Some(ProviderMeta::OpenAi {
                            id: "rs_1".into(),
                            encrypted_content: Some("gAAAA-enc".into()),
                        }),
                    ),
                    AssistantBlock::text("Checking both."),
                    AssistantBlock::tool_use(
                        "call_a",
                        "get_weather",
                        ToolArgs::from_text(r#"{"city": "Paris"}"#),
                    ),
                    AssistantBlock::tool_use(
                        "call_b",
                        "get_time",
                        ToolArgs::from_text(r#"{"timezone":"Asia/Tokyo"}"#),
                    ),
                ],
                stop_reason: StopReason::ToolUse,
            }),
            Message::ToolResults {
                results: vec![
                    ToolResult::ok("call_a", "21C, sunny"),
                    ToolResult::error("call_b", "unknown timezone"),
                ],
            },
        ]
    }

    fn request(messages: Vec<Message>) -> LlmRequest {
        LlmRequest::new("openai-responses:gpt-5.2".parse().unwrap(), messages)
    }

    #[test]
    fn resume_round_trip_replays_reasoning_calls_and_results_in_order() {
        let tools: Arc<[ToolDef]> = Arc::from(vec![ToolDef::new(
            "get_weather",
            "Weather for a city",
            json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
        )]);
        let req = request(resumed_turn())
            .with_tools(tools)
            .with_options(LlmOptions {
                max_tokens: Some(512),
                reasoning_effort: Some(ReasoningEffort::Low),
                parallel_tool_calls: Some(true),
                ..LlmOptions::default()
            });
        let body = render(&req).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-5.2",
                "input": [
                    {"type": "message", "role": "developer",
                     "content": [{"type": "input_text", "text": "You are terse."}]},
                    {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "Weather in Paris and time in Tokyo?"}]},
                    {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA-enc",
                     "summary": [{"type": "summary_text", "text": "**Planning**\n\nTwo lookups."}]},
                    {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": "Checking both."}]},
                    {"type": "function_call", "call_id": "call_a", "name": "get_weather",
                     "arguments": "{\"city\": \"Paris\"}"},
                    {"type": "function_call", "call_id": "call_b", "name": "get_time",
                     "arguments": "{\"timezone\":\"Asia/Tokyo\"}"},
                    {"type": "function_call_output", "call_id": "call_a", "output": "21C, sunny"},
                    {"type": "function_call_output", "call_id": "call_b", "output": "Error: unknown timezone"},
                ],
                "tools": [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                           "parameters": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
                           "strict": false}],
                "tool_choice": "auto",
                "parallel_tool_calls": true,
                "max_output_tokens": 512,
                "reasoning": {"effort": "low", "summary": "auto"},
                "include": ["reasoning.encrypted_content"],
                "store": false,
                "stream": true,
            })
        );
    }

    #[test]
    fn another_providers_history_keeps_text_and_calls_and_drops_only_its_meta() {
        let turn = AssistantMessage {
            blocks: vec![
                AssistantBlock::reasoning(
                    "thinking about it",
                    Some(ProviderMeta::Anthropic {
                        signature: "sig".into(),
                    }),
                ),
                AssistantBlock::reasoning(
                    "unreplayable",
                    Some(ProviderMeta::OpenAi {
                        id: "rs_2".into(),
                        encrypted_content: None,
                    }),
                ),
                AssistantBlock::Text {
                    text: "From Gemini.".into(),
                    meta: Some(Box::new(ProviderMeta::Gemini {
                        thought_signature: "ts".into(),
                    })),
                },
                AssistantBlock::ToolUse {
                    id: "call_1".into(),
                    name: "lookup".into(),
                    args: ToolArgs::from_text("{not json"),
                    meta: Some(Box::new(ProviderMeta::Gemini {
                        thought_signature: "ts2".into(),
                    })),
                },
            ],
            stop_reason: StopReason::ToolUse,
        };
        let req = request(vec![Message::user("hi"), Message::Assistant(turn)]);
        let body = render(&req).unwrap();
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "From Gemini."}]},
                {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{not json"},
            ])
        );
        // No tools offered: no tool_choice; a reasoning model still asks for replayable state.
        assert!(body.get("tool_choice").is_none());
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert!(body.get("reasoning").is_none());
    }

    #[test]
    fn non_reasoning_models_do_not_ask_for_encrypted_reasoning() {
        let req = LlmRequest::new(
            "openai-responses:gpt-4o-mini".parse().unwrap(),
            vec![Message::user("hi")],
        )
        .with_tools(Arc::from(vec![ToolDef::new(
            "f",
            "d",
            json!({"type":"object"}),
        )]))
        .with_tool_choice(OurToolChoice::Tool { name: "f".into() });
        let body = render(&req).unwrap();
        assert!(body.get("include").is_none());
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "name": "f"})
        );
    }

    #[test]
    fn reasoning_models_are_recognised_by_family() {
        for model in [
            "gpt-5.2",
            "gpt-5.2-codex",
            "o3-mini",
            "o4-mini",
            "openai/gpt-5",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in ["gpt-4o-mini", "gpt-5-chat-latest", "local", "gpt-4.1"] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }
}
