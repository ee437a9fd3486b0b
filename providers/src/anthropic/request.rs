//! Our request rendered as a Messages body.
//!
//! Replay (seed 004 §3.5): a reasoning block carrying an Anthropic signature goes back as a
//! `thinking` block with that signature, byte for byte; redacted thinking goes back as a
//! `redacted_thinking` block with its data; reasoning from another provider (no Anthropic
//! meta) is dropped, since Anthropic would reject it unsigned. Text and tool calls are always
//! kept. Tool results become `tool_result` blocks of a user turn, in order.
//!
//! A text block with [`ProviderMeta::AnthropicCitations`] goes back as a `text` block with its
//! `citations`, each citation's JSON text written byte for byte by [`encode`] (parsed in
//! [`render`]'s `Value`); Anthropic wants them on the text they support. Other dialects drop
//! them and keep the text.
//!
//! Blocks kept opaquely from an Anthropic stream (`AssistantBlock::Opaque` with provider
//! `anthropic`: server tool calls and their results, MCP calls, compaction, …) go back in their
//! place among the turn's blocks; [`encode`] writes their JSON text byte for byte, [`render`]
//! parses it into the `Value`. Another provider's opaque blocks are dropped.
//!
//! Hosted tools: web search (`web_search_20250305`) and code execution
//! (`code_execution_20250825`, with its beta) go in `tools` after the function tools; remote
//! MCP servers in the top-level `mcp_servers` (with the `mcp-client-2025-04-04` beta).
//!
//! Prompt caching: Anthropic caches a prefix only up to a block marked `cache_control`, at most
//! four marks a request, in the order tools, system, messages. With
//! [`PromptCache::breakpoints`] on, the marks go on the last tool, the system prompt (then sent
//! as one text block) and, inside the request's stable prefix
//! ([`LlmRequest::stable_prefix`]), on its last user turn (text or tool results) and the user
//! turn before that one: the first is where the next call will read from, the second is where
//! the previous call ended, so a turn that added more than the 20 blocks the API looks back
//! over still reads the previous call's cache. Assistant turns are never marked (thinking
//! blocks cannot be).

use motet_directives::{
    AssistantBlock, CacheTtl, HostedTool, LlmRequest, MediaSource, Message, PromptCache,
    ProviderMeta, Secret, ToolChoice, UserContent, UserLocation,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::PROVIDER;
use super::wire::{Body, CitedText, Content, Part, Turn};
use crate::error::ProviderError;

/// The output limit when the request sets none (the API requires one).
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The beta that lets Claude think between tool calls.
const INTERLEAVED_THINKING: &str = "interleaved-thinking-2025-05-14";

/// The web search tool's version.
const WEB_SEARCH: &str = "web_search_20250305";

/// The code execution tool's version (bash and file editing in a sandbox), and its beta.
const CODE_EXECUTION: &str = "code_execution_20250825";
const CODE_EXECUTION_BETA: &str = "code-execution-2025-08-25";

/// The beta of the MCP connector (`mcp_servers`).
const MCP_CLIENT_BETA: &str = "mcp-client-2025-04-04";

/// The beta that introduced the one-hour cache TTL (sent with it; the API accepts it still).
const EXTENDED_CACHE_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

/// How many user turns of the stable prefix are marked for caching: its end and the end of
/// the call before (with tools and system, the API's limit of four marks).
const HISTORY_BREAKPOINTS: usize = 2;

/// The request body as sent (see [`crate::Dialect::encode`]).
pub(crate) fn encode(req: &LlmRequest) -> Result<Vec<u8>, ProviderError> {
    crate::encode::to_json(&body(req)?)
}

/// Renders the streaming request body, opaque blocks parsed.
pub(crate) fn render(req: &LlmRequest) -> Result<Value, ProviderError> {
    crate::encode::to_value(&body(req)?)
}

fn body(req: &LlmRequest) -> Result<Body<'_>, ProviderError> {
    let mut system = Vec::new();
    let mut messages = Vec::with_capacity(req.messages.len());
    // For each turn, the index of the message it came from (system messages make no turn).
    let mut origins = Vec::with_capacity(req.messages.len());
    for (index, message) in req.messages.iter().enumerate() {
        match message {
            Message::System { content } => system.push(content.as_str()),
            Message::User { content } => messages.push(Turn {
                content: match content {
                    UserContent::Text(text) => Content::Text(text),
                    UserContent::Parts(parts) => Content::Blocks(
                        parts
                            .iter()
                            .map(|part| content_block(part, req).map(Part::Built))
                            .collect::<Result<_, _>>()?,
                    ),
                },
                role: "user",
            }),
            Message::Assistant(turn) => {
                let content = assistant_blocks(&turn.blocks);
                // A turn with nothing Anthropic can read (only another provider's reasoning)
                // would be an empty assistant turn, which the API rejects.
                if !content.is_empty() {
                    messages.push(Turn {
                        content: Content::Blocks(content),
                        role: "assistant",
                    });
                }
            }
            Message::ToolResults { results } => {
                let mut content = Vec::with_capacity(results.len());
                for r in results {
                    // With attachments, the content is a list of blocks: the text, then them.
                    let result_content = if r.attachments.is_empty() {
                        json!(r.content)
                    } else {
                        let mut blocks = vec![json!({"type": "text", "text": r.content})];
                        for part in &r.attachments {
                            blocks.push(content_block(part, req)?);
                        }
                        Value::Array(blocks)
                    };
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": r.tool_use_id,
                        "content": result_content,
                    });
                    if r.is_error {
                        block["is_error"] = json!(true);
                    }
                    content.push(Part::Built(block));
                }
                messages.push(Turn {
                    content: Content::Blocks(content),
                    role: "user",
                });
            }
        }
        origins.resize(messages.len(), index);
    }

    let options = &req.options;
    let mark = cache_mark(&options.prompt_cache);
    if let (Some(mark), Some(stable)) = (&mark, req.stable_prefix) {
        mark_stable_turns(&mut messages, &origins, stable, mark);
    }
    let thinking = options.thinking_budget;
    let max_tokens = options.max_tokens.unwrap_or(match thinking {
        Some(budget) => DEFAULT_MAX_TOKENS.max(budget.saturating_add(DEFAULT_MAX_TOKENS)),
        None => DEFAULT_MAX_TOKENS,
    });
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model.model()));
    body.insert("max_tokens".into(), json!(max_tokens));
    if !system.is_empty() {
        let text = system.join("\n\n");
        let system = match &mark {
            Some(mark) => json!([{"type": "text", "text": text, "cache_control": mark}]),
            None => json!(text),
        };
        body.insert("system".into(), system);
    }
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.parameters,
            })
        })
        .chain(options.hosted_tools.iter().filter_map(hosted_tool))
        .collect();
    if let (Some(mark), Some(Value::Object(last))) = (&mark, tools.last_mut()) {
        last.insert("cache_control".into(), mark.clone());
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        let mut choice = match &req.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool { name } => json!({"type": "tool", "name": name}),
        };
        if options.parallel_tool_calls == Some(false) && req.tool_choice != ToolChoice::None {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        body.insert("tool_choice".into(), choice);
    }
    let servers: Vec<Value> = options.hosted_tools.iter().filter_map(mcp_server).collect();
    if !servers.is_empty() {
        body.insert("mcp_servers".into(), Value::Array(servers));
    }
    if let Some(budget) = thinking {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = options.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if !options.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(options.stop));
    }
    if let Some(config) = crate::structured::anthropic(req)? {
        body.insert("output_config".into(), config);
    }
    body.insert("stream".into(), json!(true));
    Ok(Body {
        fields: body,
        messages,
    })
}

/// A user part as an Anthropic content block: `text`, `image` or `document`, the source
/// `base64` (with its media type), `url`, or for a plain-text document `text` (its bytes read
/// as UTF-8, invalid sequences replaced).
///
/// # Errors
/// [`ProviderError::UnsupportedContent`] for audio, which Anthropic does not take
/// ([`crate::models::validate`] refuses it first).
fn content_block(part: &motet_directives::Part, req: &LlmRequest) -> Result<Value, ProviderError> {
    use motet_directives::Part as P;
    let source = |source: &MediaSource| match source {
        MediaSource::Url { url, .. } => json!({"type": "url", "url": url}),
        MediaSource::Bytes { media_type, data } if media_type == "text/plain" => json!({
            "type": "text",
            "media_type": media_type,
            "data": String::from_utf8_lossy(data.as_bytes()),
        }),
        MediaSource::Bytes { media_type, data } => json!({
            "type": "base64",
            "media_type": media_type,
            "data": data.to_base64(),
        }),
    };
    Ok(match part {
        P::Text { text } => json!({"type": "text", "text": text}),
        P::Image { source: from } => json!({"type": "image", "source": source(from)}),
        P::Document { source: from, name } => {
            let mut block = json!({"type": "document", "source": source(from)});
            if let Some(name) = name {
                block["title"] = json!(name);
            }
            block
        }
        P::Audio { .. } => {
            return Err(ProviderError::UnsupportedContent {
                dialect: crate::Dialect::Anthropic,
                model: req.model.to_string(),
                kind: "audio",
                reason: "Anthropic has no audio input".to_owned(),
            });
        }
    })
}

/// The `cache_control` value to mark blocks with, when caching is asked for.
fn cache_mark(cache: &PromptCache) -> Option<Value> {
    cache.breakpoints.then(|| match cache.ttl {
        // The API's default; leaving `ttl` out keeps the body as small as it was.
        CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
        CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
    })
}

/// Marks the last [`HISTORY_BREAKPOINTS`] user turns that came from the first `stable`
/// messages: on a text turn's text (then sent as one text block), on a tool-results turn's last
/// result. An empty text turn is left as it is (the API rejects an empty text block).
fn mark_stable_turns(turns: &mut [Turn<'_>], origins: &[usize], stable: usize, mark: &Value) {
    let marked = turns
        .iter_mut()
        .zip(origins)
        .filter(|(turn, origin)| turn.role == "user" && **origin < stable)
        .map(|(turn, _)| turn)
        .rev()
        .take(HISTORY_BREAKPOINTS);
    for turn in marked {
        match &mut turn.content {
            Content::Text(text) if !text.is_empty() => {
                let block = json!({"type": "text", "text": text, "cache_control": mark});
                turn.content = Content::Blocks(vec![Part::Built(block)]);
            }
            Content::Blocks(parts) => {
                if let Some(Part::Built(Value::Object(last))) = parts.last_mut() {
                    last.insert("cache_control".into(), mark.clone());
                }
            }
            Content::Text(_) => {}
        }
    }
}

fn assistant_blocks(blocks: &[AssistantBlock]) -> Vec<Part<'_>> {
    blocks
        .iter()
        .filter_map(|block| match (block, block.meta()) {
            (AssistantBlock::Opaque { provider, item }, _) if provider == PROVIDER => {
                match serde_json::from_str::<&RawValue>(item) {
                    Ok(item) => Some(Part::Kept(item)),
                    // Only a damaged store gets here; the API would reject the block anyway.
                    Err(e) => {
                        tracing::warn!("skipping an unreadable stored Anthropic block: {e}");
                        None
                    }
                }
            }
            (
                AssistantBlock::Text { text, .. },
                Some(ProviderMeta::AnthropicCitations { citations }),
            ) if !text.is_empty() => Some(cited_text(text, citations)),
            (block, _) => built_block(block).map(Part::Built),
        })
        .collect()
}

/// A text block with its citations; one that is not JSON (only a damaged store holds one) is
/// left out, which the API would reject anyway.
fn cited_text<'a>(text: &'a str, citations: &'a [String]) -> Part<'a> {
    let citations: Vec<&RawValue> = citations
        .iter()
        .filter_map(
            |citation| match serde_json::from_str::<&RawValue>(citation) {
                Ok(citation) => Some(citation),
                Err(e) => {
                    tracing::warn!("skipping an unreadable stored Anthropic citation: {e}");
                    None
                }
            },
        )
        .collect();
    if citations.is_empty() {
        return Part::Built(json!({"type": "text", "text": text}));
    }
    Part::Cited(CitedText {
        citations,
        text,
        kind: "text",
    })
}

/// A modeled block in its Anthropic form, if it has one.
fn built_block(block: &AssistantBlock) -> Option<Value> {
    match block {
        // The API rejects empty text blocks.
        AssistantBlock::Text { text, .. } if text.is_empty() => None,
        AssistantBlock::Text { text, .. } => Some(json!({"type": "text", "text": text})),
        AssistantBlock::Reasoning { text, meta } => match meta.as_deref() {
            Some(ProviderMeta::Anthropic { signature }) => Some(json!({
                "type": "thinking",
                "thinking": text,
                "signature": signature,
            })),
            Some(ProviderMeta::AnthropicRedacted { data }) => {
                Some(json!({"type": "redacted_thinking", "data": data}))
            }
            _ => None,
        },
        AssistantBlock::ToolUse { id, name, args, .. } => {
            // `input` must be an object; arguments that were not one were answered with an
            // error result already, and replay as `{}`.
            let input = match args.as_raw() {
                Some(raw) if args.is_object() => {
                    serde_json::from_str::<Value>(raw.get()).unwrap_or_else(|_| json!({}))
                }
                _ => json!({}),
            };
            Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
        }
        // Another provider's opaque blocks, and block kinds added to the vocabulary later.
        _ => None,
    }
}

/// A hosted tool's entry in `tools`; MCP servers go in `mcp_servers` instead.
fn hosted_tool(tool: &HostedTool) -> Option<Value> {
    match tool {
        HostedTool::WebSearch(search) => {
            let mut entry = json!({"type": WEB_SEARCH, "name": "web_search"});
            if let Some(max_uses) = search.max_uses {
                entry["max_uses"] = json!(max_uses);
            }
            if !search.allowed_domains.is_empty() {
                entry["allowed_domains"] = json!(search.allowed_domains);
            }
            if !search.blocked_domains.is_empty() {
                entry["blocked_domains"] = json!(search.blocked_domains);
            }
            if let Some(location) = &search.user_location {
                entry["user_location"] = user_location(location);
            }
            Some(entry)
        }
        HostedTool::CodeExecution => {
            Some(json!({"type": CODE_EXECUTION, "name": "code_execution"}))
        }
        HostedTool::McpServer(_) => None,
    }
}

/// `{"type": "approximate", …}` with the parts that are set.
fn user_location(location: &UserLocation) -> Value {
    let mut entry = json!({"type": "approximate"});
    for (key, part) in [
        ("city", &location.city),
        ("region", &location.region),
        ("country", &location.country),
        ("timezone", &location.timezone),
    ] {
        if let Some(part) = part {
            entry[key] = json!(part);
        }
    }
    entry
}

/// An MCP server's entry in `mcp_servers`, its token included: this is the wire body.
fn mcp_server(tool: &HostedTool) -> Option<Value> {
    let HostedTool::McpServer(server) = tool else {
        return None;
    };
    let mut entry = json!({"type": "url", "url": server.url, "name": server.name});
    if let Some(token) = server.authorization.as_ref().and_then(Secret::expose) {
        entry["authorization_token"] = json!(token);
    }
    if let Some(allowed) = &server.allowed_tools {
        entry["tool_configuration"] = json!({
            "enabled": !allowed.is_empty(),
            "allowed_tools": allowed,
        });
    }
    Some(entry)
}

/// Headers this request needs besides authentication: `anthropic-version`, and one
/// `anthropic-beta` header naming, comma-separated, the betas its features need
/// (interleaved thinking, code execution, the MCP connector, the one-hour cache TTL).
pub(crate) fn extra_headers(req: &LlmRequest) -> Vec<(&'static str, String)> {
    let mut headers = vec![("anthropic-version", "2023-06-01".to_owned())];
    let hosted = &req.options.hosted_tools;
    let betas: Vec<&str> = [
        (req.options.thinking_budget.is_some(), INTERLEAVED_THINKING),
        (
            hosted
                .iter()
                .any(|t| matches!(t, HostedTool::CodeExecution)),
            CODE_EXECUTION_BETA,
        ),
        (
            hosted.iter().any(|t| matches!(t, HostedTool::McpServer(_))),
            MCP_CLIENT_BETA,
        ),
        (
            req.options.prompt_cache.breakpoints
                && req.options.prompt_cache.ttl == CacheTtl::OneHour,
            EXTENDED_CACHE_TTL_BETA,
        ),
    ]
    .into_iter()
    .filter_map(|(wanted, beta)| wanted.then_some(beta))
    .collect();
    if !betas.is_empty() {
        headers.push(("anthropic-beta", betas.join(",")));
    }
    headers
}

#[cfg(test)]
mod tests {
    use motet_directives::{LlmOptions, Message};

    use super::*;

    #[test]
    fn the_interleaved_thinking_beta_only_with_thinking() {
        let plain = LlmRequest::new(
            "anthropic:claude-sonnet-4-5".parse().unwrap(),
            vec![Message::user("hi")],
        );
        assert_eq!(
            extra_headers(&plain),
            [("anthropic-version", "2023-06-01".to_owned())]
        );
        let thinking = plain.with_options(LlmOptions {
            thinking_budget: Some(1024),
            ..LlmOptions::default()
        });
        assert_eq!(
            extra_headers(&thinking),
            [
                ("anthropic-version", "2023-06-01".to_owned()),
                ("anthropic-beta", INTERLEAVED_THINKING.to_owned())
            ]
        );
        // Without a max_tokens, room is left for the answer after the thinking budget.
        let body = render(&thinking).unwrap();
        assert_eq!(body["max_tokens"], 1024 + DEFAULT_MAX_TOKENS);
        assert_eq!(
            body["thinking"],
            serde_json::json!({"type": "enabled", "budget_tokens": 1024})
        );
    }

    #[test]
    fn the_extended_cache_ttl_beta_only_with_a_one_hour_ttl_that_is_used() {
        let plain = LlmRequest::new(
            "anthropic:claude-sonnet-4-5".parse().unwrap(),
            vec![Message::user("hi")],
        );
        let beta = |req: &LlmRequest| {
            extra_headers(req)
                .into_iter()
                .any(|(name, value)| name == "anthropic-beta" && value == EXTENDED_CACHE_TTL_BETA)
        };
        assert!(!beta(&plain));
        let mut hour = plain.clone();
        hour.options.prompt_cache.ttl = CacheTtl::OneHour;
        assert!(beta(&hour));
        hour.options.prompt_cache.breakpoints = false;
        assert!(!beta(&hour), "no marks, no TTL to announce");
    }
}
