//! Our [`LlmRequest`] as a Gemini `GenerateContentRequest` (seed 004 §2.3, §3.5).
//!
//! - System messages become `systemInstruction` parts, in order (Gemini has no system role
//!   inside `contents`).
//! - User messages are `user` contents with one text part.
//! - An assistant turn is one `model` content whose parts follow the blocks: text (with its
//!   `thoughtSignature` when the block carries Gemini meta, even when the text is empty — that
//!   is how Gemini hands out a signature at the end of a turn), `functionCall {name, args, id}`
//!   with its signature beside it. Signatures are replayed exactly where they came: only the
//!   first call of a parallel batch has one, and no signature is ever invented for the others.
//! - Reasoning: thought summaries are not needed for continuity, the signatures are. A
//!   reasoning block with Gemini meta (a signature that arrived on a thought part) is replayed as
//!   that thought part; one without Gemini meta (a summary, or another provider's thinking) is
//!   dropped.
//! - A turn with tool calls but no Gemini signature anywhere — a history produced by another
//!   provider, or written by hand — gets Google's documented placeholder signature
//!   `skip_thought_signature_validator` on its first call, because Gemini 3 rejects a current
//!   turn whose calls carry no signature. Turns Gemini produced are replayed untouched.
//! - Tool results are a `user` content of `functionResponse` parts (never with a signature),
//!   named after the call they answer — found in the preceding assistant turns — with the
//!   call's id, and `{"output": text}` or, for a failed tool, `{"error": text}`.
//! - Opaque Gemini blocks (parts motet does not model: `executableCode`, `codeExecutionResult`,
//!   …) go back in the model turn in their place, as the bytes Gemini sent, thought signature
//!   included; other providers' opaque blocks are dropped. A signature inside such a part counts
//!   as the turn's signature: its calls then get no placeholder.
//! - Hosted tools are built-in tools, one `tools` entry each: `{"googleSearch": {}}`,
//!   `{"codeExecution": {}}`. Next to function declarations, `toolConfig` also sets
//!   `includeServerSideToolInvocations` (Gemini 3's tool context circulation; the tool call and
//!   response parts it streams are kept opaquely and replayed).
//! - `args` must be a JSON object: arguments that are not one are sent as `{}`. [`encode`]
//!   writes the arguments and opaque parts byte for byte; [`render`]'s `Value` parses them, so
//!   there whitespace and key order do not survive.

use motet_directives::{
    AssistantBlock, AssistantMessage, HostedTool, LlmRequest, MediaSource, Message, ProviderMeta,
    ReasoningEffort, ToolChoice, UserContent,
};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::ProviderError;

use super::PROVIDER;
use super::wire::{
    Args, Content, ContentPart, EmptyObject, FileData, FunctionCall, FunctionCallingConfig,
    FunctionDeclaration, FunctionResponse, GenerationConfig, InlineData, MediaPart, Part, Request,
    ResponseBody, SignatureProbe, SystemInstruction, ThinkingConfig, Tool, ToolConfig,
};

/// Google's documented placeholder for calls that have no signature of their own.
pub(crate) const PLACEHOLDER_SIGNATURE: &str = "skip_thought_signature_validator";

/// The request body as sent (see [`crate::Dialect::encode`]): the typed body serialized
/// directly, so raw arguments and opaque parts go out byte for byte.
pub(crate) fn encode(req: &LlmRequest) -> Result<Vec<u8>, ProviderError> {
    crate::encode::to_json(&body(req)?)
}

/// Renders the full streaming request body (the model and `alt=sse` go in the URL) as a
/// `Value`: the same body as [`encode`], with raw JSON parsed.
pub(crate) fn render(req: &LlmRequest) -> Result<Value, ProviderError> {
    crate::encode::to_value(&body(req)?)
}

/// The typed body, borrowing from the request.
fn body(req: &LlmRequest) -> Result<Request<'_>, ProviderError> {
    let mut system = Vec::new();
    let mut contents = Vec::with_capacity(req.messages.len());
    for (at, message) in req.messages.iter().enumerate() {
        match message {
            Message::System { content } => system.push(text_part(content)),
            Message::User { content } => contents.push(Content {
                role: "user",
                parts: match content {
                    UserContent::Text(text) => vec![ContentPart::Known(text_part(text))],
                    UserContent::Parts(parts) => parts
                        .iter()
                        .map(|part| user_part(part, req).map(ContentPart::Known))
                        .collect::<Result<_, _>>()?,
                },
            }),
            Message::Assistant(turn) => {
                let parts = model_parts(turn);
                if !parts.is_empty() {
                    contents.push(Content {
                        role: "model",
                        parts,
                    });
                }
            }
            Message::ToolResults { results } => {
                let earlier = req.messages.get(..at).unwrap_or_default();
                let mut parts = Vec::with_capacity(results.len());
                for result in results {
                    let name = call_name(earlier, &result.tool_use_id).ok_or_else(|| {
                        ProviderError::InvalidRequest {
                            status: 0,
                            message: format!(
                                "tool result `{}` answers no tool call of an earlier turn; \
                                 Gemini needs the call's name",
                                result.tool_use_id
                            ),
                        }
                    })?;
                    let response = if result.is_error {
                        ResponseBody {
                            output: None,
                            error: Some(&result.content),
                        }
                    } else {
                        ResponseBody {
                            output: Some(&result.content),
                            error: None,
                        }
                    };
                    parts.push(ContentPart::Known(Part {
                        function_response: Some(FunctionResponse {
                            name,
                            response,
                            id: Some(&result.tool_use_id),
                            parts: result
                                .attachments
                                .iter()
                                .filter_map(|part| Some((part.source()?, part.kind())))
                                .map(|(source, kind)| media(source, kind, req))
                                .collect::<Result<_, _>>()?,
                        }),
                        ..Part::default()
                    }));
                }
                if !parts.is_empty() {
                    contents.push(Content {
                        role: "user",
                        parts,
                    });
                }
            }
        }
    }

    let mut tools = Vec::new();
    if !req.tools.is_empty() {
        tools.push(Tool {
            function_declarations: req
                .tools
                .iter()
                .map(|tool| FunctionDeclaration {
                    name: &tool.name,
                    description: &tool.description,
                    parameters_json_schema: &tool.parameters,
                })
                .collect(),
            ..Tool::default()
        });
    }
    let hosted = &req.options.hosted_tools;
    tools.extend(hosted.iter().filter_map(built_in_tool));
    // A function calling config without function declarations is rejected.
    let tool_config = (!req.tools.is_empty()).then(|| {
        let (mode, allowed_function_names) = match &req.tool_choice {
            ToolChoice::Auto => ("AUTO", Vec::new()),
            ToolChoice::None => ("NONE", Vec::new()),
            ToolChoice::Required => ("ANY", Vec::new()),
            ToolChoice::Tool { name } => ("ANY", vec![name.as_str()]),
        };
        ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode,
                allowed_function_names,
            },
            include_server_side_tool_invocations: (!hosted.is_empty()).then_some(true),
        }
    });

    Ok(Request {
        contents,
        system_instruction: (!system.is_empty()).then_some(SystemInstruction { parts: system }),
        tools,
        tool_config,
        generation_config: generation_config(req, crate::structured::gemini(req)?),
    })
}

/// A hosted tool as a Gemini built-in tool: `{"googleSearch": {}}`, `{"codeExecution": {}}`.
/// Gemini has no MCP servers and no search options; the dialect check refused those already.
fn built_in_tool<'a>(tool: &HostedTool) -> Option<Tool<'a>> {
    match tool {
        HostedTool::WebSearch(_) => Some(Tool {
            google_search: Some(EmptyObject {}),
            ..Tool::default()
        }),
        HostedTool::CodeExecution => Some(Tool {
            code_execution: Some(EmptyObject {}),
            ..Tool::default()
        }),
        HostedTool::McpServer(_) => None,
    }
}

/// A user part as a Gemini part: `text`, `inlineData` for bytes, `fileData` for a URL.
fn user_part<'a>(
    part: &'a motet_directives::Part,
    req: &LlmRequest,
) -> Result<Part<'a>, ProviderError> {
    let Some(source) = part.source() else {
        return Ok(match part {
            motet_directives::Part::Text { text } => text_part(text),
            _ => Part::default(),
        });
    };
    let MediaPart {
        inline_data,
        file_data,
    } = media(source, part.kind(), req)?;
    Ok(Part {
        inline_data,
        file_data,
        ..Part::default()
    })
}

/// A source as `inlineData` (bytes, base64) or `fileData` (a URL with its media type), in a
/// function response's media part (a user part takes the same two fields).
///
/// # Errors
/// [`ProviderError::UnsupportedContent`] for a URL whose media type is neither given nor
/// known from its extension ([`crate::models::validate`] refuses it first).
fn media<'a>(
    source: &'a MediaSource,
    kind: motet_directives::PartKind,
    req: &LlmRequest,
) -> Result<MediaPart<'a>, ProviderError> {
    Ok(match source {
        MediaSource::Bytes { media_type, data } => MediaPart {
            inline_data: Some(Box::new(InlineData {
                mime_type: media_type,
                data: data.to_base64(),
            })),
            file_data: None,
        },
        MediaSource::Url { url, .. } => {
            let mime_type = crate::media::url_media_type(source).ok_or_else(|| {
                ProviderError::UnsupportedContent {
                    dialect: crate::Dialect::Gemini,
                    model: req.model.to_string(),
                    kind: kind.as_str(),
                    reason: format!("fileData needs a media type, and `{url}` names none"),
                }
            })?;
            MediaPart {
                inline_data: None,
                file_data: Some(Box::new(FileData {
                    mime_type,
                    file_uri: url,
                })),
            }
        }
    })
}

fn text_part(text: &str) -> Part<'_> {
    Part {
        text: Some(text),
        ..Part::default()
    }
}

fn gemini_signature(meta: Option<&ProviderMeta>) -> Option<&str> {
    match meta {
        Some(ProviderMeta::Gemini { thought_signature }) => Some(thought_signature),
        _ => None,
    }
}

/// The parts of one assistant turn, in block order.
fn model_parts(turn: &AssistantMessage) -> Vec<ContentPart<'_>> {
    let mut parts = Vec::with_capacity(turn.blocks.len());
    let mut first_call = None;
    let mut signed = false;
    for block in &turn.blocks {
        match block {
            AssistantBlock::Text { text, meta } => {
                let signature = gemini_signature(meta.as_deref());
                if text.is_empty() && signature.is_none() {
                    continue;
                }
                signed |= signature.is_some();
                parts.push(ContentPart::Known(Part {
                    text: Some(text),
                    thought_signature: signature,
                    ..Part::default()
                }));
            }
            AssistantBlock::Reasoning { text, meta } => {
                if let Some(signature) = gemini_signature(meta.as_deref()) {
                    signed = true;
                    parts.push(ContentPart::Known(Part {
                        text: Some(text),
                        thought: Some(true),
                        thought_signature: Some(signature),
                        ..Part::default()
                    }));
                }
            }
            AssistantBlock::ToolUse {
                id,
                name,
                args,
                meta,
            } => {
                let signature = gemini_signature(meta.as_deref());
                signed |= signature.is_some();
                first_call.get_or_insert(parts.len());
                let args = match args.as_raw() {
                    Some(raw) => Args::Raw(raw),
                    None => Args::Empty(EmptyObject {}),
                };
                parts.push(ContentPart::Known(Part {
                    function_call: Some(FunctionCall {
                        name,
                        args,
                        id: Some(id),
                    }),
                    thought_signature: signature,
                    ..Part::default()
                }));
            }
            AssistantBlock::Opaque { provider, item } if provider == PROVIDER => {
                match serde_json::from_str::<&RawValue>(item) {
                    Ok(raw) => {
                        // A signature Gemini put on a code part signs the turn as well as one
                        // on a call would.
                        signed |= carries_signature(raw);
                        parts.push(ContentPart::Opaque(raw));
                    }
                    // Only a damaged store gets here; Gemini would reject the part anyway.
                    Err(e) => tracing::warn!("skipping an unreadable stored Gemini part: {e}"),
                }
            }
            // Another provider's opaque item, or blocks a later version adds: nothing Gemini
            // could read.
            _ => {}
        }
    }
    if !signed && let Some(ContentPart::Known(part)) = first_call.and_then(|at| parts.get_mut(at)) {
        part.thought_signature = Some(PLACEHOLDER_SIGNATURE);
    }
    parts
}

/// Whether a stored Gemini part carries a thought signature of its own.
fn carries_signature(part: &RawValue) -> bool {
    serde_json::from_str::<SignatureProbe>(part.get())
        .is_ok_and(|probe| probe.thought_signature.is_some())
}

/// The name of the call `id`, searched in the assistant turns before a result.
fn call_name<'a>(earlier: &'a [Message], id: &str) -> Option<&'a str> {
    earlier.iter().rev().find_map(|message| match message {
        Message::Assistant(turn) => turn.get_tool_use(id).map(|call| call.name),
        _ => None,
    })
}

/// `generationConfig`, with the response format's MIME type and schema when one is asked for.
fn generation_config<'a>(
    req: &'a LlmRequest,
    format: Option<(&'static str, Option<Value>)>,
) -> Option<GenerationConfig<'a>> {
    let options = &req.options;
    // Budget (Gemini 2.5) wins over level (Gemini 3): the API rejects both at once.
    let thinking_config = match (options.thinking_budget, options.reasoning_effort) {
        (Some(budget), _) => Some(ThinkingConfig {
            include_thoughts: true,
            thinking_budget: Some(budget),
            thinking_level: None,
        }),
        (None, Some(effort)) => Some(ThinkingConfig {
            include_thoughts: true,
            thinking_budget: None,
            thinking_level: Some(thinking_level(effort)),
        }),
        (None, None) => None,
    };
    let (response_mime_type, response_json_schema) = format.unzip();
    let config = GenerationConfig {
        response_mime_type,
        response_json_schema: response_json_schema.flatten(),
        max_output_tokens: options.max_tokens,
        temperature: options.temperature,
        top_p: options.top_p,
        stop_sequences: options.stop.iter().map(String::as_str).collect(),
        thinking_config,
    };
    let empty = config.max_output_tokens.is_none()
        && config.temperature.is_none()
        && config.top_p.is_none()
        && config.stop_sequences.is_empty()
        && config.thinking_config.is_none()
        && config.response_mime_type.is_none();
    (!empty).then_some(config)
}

/// Gemini 3's `thinkingLevel`. Gemini 3 Pro accepts only `low` and `high`; Flash all four.
fn thinking_level(effort: ReasoningEffort) -> &'static str {
    match effort {
        ReasoningEffort::Minimal => "minimal",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use motet_directives::{LlmOptions, StopReason, ToolArgs, ToolDef, ToolResult};
    use serde_json::json;

    use super::*;

    fn gemini(signature: &str) -> Option<Box<ProviderMeta>> {
        Some(Box::new(ProviderMeta::Gemini {
            thought_signature: signature.into(),
        }))
    }

    fn request(messages: Vec<Message>) -> LlmRequest {
        LlmRequest::new("gemini:gemini-3-pro-preview".parse().unwrap(), messages)
    }

    #[test]
    fn resume_round_trip_puts_signatures_where_they_came_and_names_the_results() {
        let turn = AssistantMessage {
            blocks: vec![
                AssistantBlock::reasoning("**Planning** both lookups", None),
                AssistantBlock::ToolUse {
                    id: "8hd01vsf".into(),
                    name: "add".into(),
                    args: ToolArgs::from_text(r#"{"a": 2,"b": 3}"#),
                    meta: gemini("EsINCr8N"),
                },
                AssistantBlock::tool_use(
                    "k0srpqrc",
                    "multiply",
                    ToolArgs::from_text(r#"{"b": 3,"a": 2}"#),
                ),
            ],
            stop_reason: StopReason::ToolUse,
        };
        let answer = AssistantMessage {
            blocks: vec![
                AssistantBlock::text("5 and 6."),
                AssistantBlock::Text {
                    text: String::new(),
                    meta: gemini("c2ln"),
                },
            ],
            stop_reason: StopReason::EndTurn,
        };
        let req = request(vec![
            Message::system("Use both tools at once."),
            Message::user("Add and multiply 2 and 3"),
            Message::Assistant(turn),
            Message::ToolResults {
                results: vec![
                    ToolResult::ok("8hd01vsf", "5"),
                    ToolResult::error("k0srpqrc", "multiply is down"),
                ],
            },
            Message::Assistant(answer),
            Message::user("Thanks"),
        ])
        .with_tools(Arc::from(vec![ToolDef::new(
            "add",
            "Add two numbers",
            json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}),
        )]))
        .with_options(LlmOptions {
            max_tokens: Some(4000),
            temperature: Some(1.0),
            stop: vec!["END".into()],
            reasoning_effort: Some(ReasoningEffort::High),
            ..LlmOptions::default()
        });
        assert_eq!(
            render(&req).unwrap(),
            json!({
                "contents": [
                    {"role": "user", "parts": [{"text": "Add and multiply 2 and 3"}]},
                    {"role": "model", "parts": [
                        {"functionCall": {"name": "add", "args": {"a": 2, "b": 3}, "id": "8hd01vsf"},
                         "thoughtSignature": "EsINCr8N"},
                        {"functionCall": {"name": "multiply", "args": {"a": 2, "b": 3}, "id": "k0srpqrc"}},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "add", "response": {"output": "5"}, "id": "8hd01vsf"}},
                        {"functionResponse": {"name": "multiply", "response": {"error": "multiply is down"}, "id": "k0srpqrc"}},
                    ]},
                    {"role": "model", "parts": [
                        {"text": "5 and 6."},
                        {"text": "", "thoughtSignature": "c2ln"},
                    ]},
                    {"role": "user", "parts": [{"text": "Thanks"}]},
                ],
                "systemInstruction": {"parts": [{"text": "Use both tools at once."}]},
                "tools": [{"functionDeclarations": [{
                    "name": "add",
                    "description": "Add two numbers",
                    "parametersJsonSchema": {"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false},
                }]}],
                "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
                "generationConfig": {
                    "maxOutputTokens": 4000,
                    "temperature": 1.0,
                    "stopSequences": ["END"],
                    "thinkingConfig": {"includeThoughts": true, "thinkingLevel": "high"},
                },
            })
        );
    }

    #[test]
    fn signed_thoughts_are_replayed_as_thought_parts() {
        let turn = AssistantMessage {
            blocks: vec![
                AssistantBlock::reasoning("Weighing it", gemini("c2lnLXQ=").map(|m| *m)),
                AssistantBlock::text("Answer"),
            ],
            stop_reason: StopReason::EndTurn,
        };
        let body = render(&request(vec![Message::user("q"), Message::Assistant(turn)])).unwrap();
        assert_eq!(
            body["contents"][1],
            json!({"role": "model", "parts": [
                {"text": "Weighing it", "thought": true, "thoughtSignature": "c2lnLXQ="},
                {"text": "Answer"},
            ]})
        );
        assert!(body.get("generationConfig").is_none());
        assert!(body.get("tools").is_none() && body.get("toolConfig").is_none());
    }

    #[test]
    fn another_providers_turn_keeps_text_and_calls_with_a_placeholder_signature() {
        let turn = AssistantMessage {
            blocks: vec![
                AssistantBlock::reasoning(
                    "thinking",
                    Some(ProviderMeta::Anthropic {
                        signature: "anthropic-sig".into(),
                    }),
                ),
                AssistantBlock::reasoning(
                    "summary",
                    Some(ProviderMeta::OpenAi {
                        id: "rs_1".into(),
                        encrypted_content: Some("enc".into()),
                    }),
                ),
                AssistantBlock::text("Looking it up."),
                AssistantBlock::tool_use("toolu_1", "lookup", ToolArgs::from_text("{broken")),
                AssistantBlock::tool_use("toolu_2", "lookup", ToolArgs::from_text(r#"{"q":"b"}"#)),
            ],
            stop_reason: StopReason::ToolUse,
        };
        let req = request(vec![
            Message::user("q"),
            Message::Assistant(turn),
            Message::ToolResults {
                results: vec![
                    ToolResult::ok("toolu_1", "a"),
                    ToolResult::ok("toolu_2", "b"),
                ],
            },
        ]);
        let body = render(&req).unwrap();
        assert_eq!(
            body["contents"][1],
            json!({"role": "model", "parts": [
                {"text": "Looking it up."},
                {"functionCall": {"name": "lookup", "args": {}, "id": "toolu_1"},
                 "thoughtSignature": PLACEHOLDER_SIGNATURE},
                {"functionCall": {"name": "lookup", "args": {"q": "b"}, "id": "toolu_2"}},
            ]})
        );
        assert_eq!(
            body["contents"][2]["parts"][1],
            json!({"functionResponse": {"name": "lookup", "response": {"output": "b"}, "id": "toolu_2"}})
        );
    }

    #[test]
    fn tool_choice_and_thinking_budget() {
        let tools: Arc<[ToolDef]> =
            Arc::from(vec![ToolDef::new("f", "d", json!({"type":"object"}))]);
        let base = request(vec![Message::user("q")]).with_tools(tools);
        let mode = |choice: ToolChoice| {
            render(&base.clone().with_tool_choice(choice)).unwrap()["toolConfig"].clone()
        };
        assert_eq!(
            mode(ToolChoice::None),
            json!({"functionCallingConfig": {"mode": "NONE"}})
        );
        assert_eq!(
            mode(ToolChoice::Required),
            json!({"functionCallingConfig": {"mode": "ANY"}})
        );
        assert_eq!(
            mode(ToolChoice::Tool { name: "f".into() }),
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}})
        );
        let budget = base.with_options(LlmOptions {
            thinking_budget: Some(128),
            reasoning_effort: Some(ReasoningEffort::Low),
            ..LlmOptions::default()
        });
        assert_eq!(
            render(&budget).unwrap()["generationConfig"],
            json!({"thinkingConfig": {"includeThoughts": true, "thinkingBudget": 128}})
        );
    }

    #[test]
    fn a_result_without_its_call_is_refused_before_sending() {
        let req = request(vec![
            Message::user("q"),
            Message::ToolResults {
                results: vec![ToolResult::ok("nowhere", "x")],
            },
        ]);
        assert!(matches!(
            render(&req),
            Err(ProviderError::InvalidRequest { status: 0, .. })
        ));
    }
}
