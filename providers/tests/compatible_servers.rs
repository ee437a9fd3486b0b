//! OpenAI-compatible servers as they really stream (OpenRouter, Groq, DeepSeek, Mistral): their
//! reasoning fields, OpenRouter's `reasoning_details` kept and sent back, usage and a repeated
//! finish reason after the finish, and error chunks typed by their code.
//!
//! The recordings are public test suites' (pydantic-ai's OpenRouter cassettes, the Vercel AI
//! SDK's Groq, DeepSeek and Mistral chunk files; see fixtures/README.md). Each is assembled
//! whole, fed one byte per read, and cut in two at every byte boundary (every `stride`-th for
//! the two large ones), all giving the same answer; and every prefix alone ends in the answer,
//! the recording's own error or a typed truncation, never a panic. What the answer should hold
//! is read out of the recording's `data:` lines here, not from the decoder. The error chunks
//! no public recording has (Groq's `tool_use_failed`, vLLM's bare error object, each other
//! dialect's error event with a request fault) are built by hand from the providers' documented
//! shapes, and say so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use motet_directives::{
    AssistantBlock, LlmRequest, LlmResponse, Message, ModelUsage, ProviderMeta, StopReason, Usage,
};
use motet_providers::retry::{Failure, RetryHints};
use motet_providers::{Dialect, ProviderError, RetryPolicy, transcript};
use serde_json::{Value, json};

use common::fixture;

/// The JSON of every `data:` line but `[DONE]`.
fn payloads(raw: &[u8]) -> Vec<Value> {
    std::str::from_utf8(raw)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// The first choice's deltas, in order.
fn deltas(raw: &[u8]) -> Vec<Value> {
    payloads(raw)
        .into_iter()
        .filter_map(|chunk| chunk["choices"].get(0).map(|c| c["delta"].clone()))
        .collect()
}

/// The string field `field` of every delta, joined.
fn joined(raw: &[u8], field: &str) -> String {
    deltas(raw)
        .iter()
        .filter_map(|delta| delta[field].as_str().map(str::to_owned))
        .collect()
}

/// The `usage` object of the recording (the one chunk that has one).
fn recorded_usage(raw: &[u8]) -> Usage {
    let usage = payloads(raw)
        .into_iter()
        .filter_map(|chunk| chunk.get("usage").filter(|u| u.is_object()).cloned())
        .next_back()
        .unwrap();
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    Usage {
        input_tokens: count(&usage["prompt_tokens"]),
        output_tokens: count(&usage["completion_tokens"]),
        cache_read_tokens: count(&usage["prompt_tokens_details"]["cached_tokens"]),
        cache_write_tokens: 0,
        reasoning_tokens: count(&usage["completion_tokens_details"]["reasoning_tokens"]),
    }
}

/// The recording whole, fed one byte per read and cut in two at every `stride`-th boundary:
/// all the same. Every prefix alone is the same answer (the finish reason came), the same
/// error, or a typed truncation.
fn assemble_every_way(name: &str, stride: usize) -> Result<LlmResponse, ProviderError> {
    let raw = fixture(name);
    let whole = transcript::assemble(Dialect::OpenAiChat, &raw);
    let bytewise = transcript::assemble_chunked(Dialect::OpenAiChat, raw.chunks(1));
    assert_eq!(bytewise, whole, "{name}: fed byte by byte");
    // Where an error chunk starts: a prefix that ends before it, after the finish reason, is
    // a whole answer.
    let error_at = raw
        .windows(8)
        .position(|w| w == b"\"error\":")
        .unwrap_or(raw.len());
    for i in (0..=raw.len()).step_by(stride) {
        let cut = transcript::assemble_chunked(Dialect::OpenAiChat, [&raw[..i], &raw[i..]]);
        assert_eq!(cut, whole, "{name}: cut at byte {i}");
        match (transcript::assemble(Dialect::OpenAiChat, &raw[..i]), &whole) {
            (Err(ProviderError::StreamTruncated { .. }), _) => {}
            // The answer is whole at the finish reason; only the usage may still come.
            (Ok(prefix), Ok(whole)) => {
                assert_eq!(prefix.message, whole.message, "{name}: prefix of {i} bytes");
            }
            (Ok(_), Err(_)) => assert!(i < error_at, "{name}: prefix of {i} bytes"),
            (other, _) => assert_eq!(other, whole, "{name}: prefix of {i} bytes"),
        }
    }
    whole
}

fn kinds(response: &LlmResponse) -> Vec<&'static str> {
    response
        .message
        .blocks
        .iter()
        .map(|block| match block {
            AssistantBlock::Text { .. } => "text",
            AssistantBlock::Reasoning { .. } => "reasoning",
            AssistantBlock::ToolUse { .. } => "tool_use",
            _ => "other",
        })
        .collect()
}

fn text(response: &LlmResponse) -> String {
    response.message.text_blocks().collect()
}

fn reasoning(response: &LlmResponse) -> (String, Option<ProviderMeta>) {
    let mut found = response.message.blocks.iter().filter_map(|b| match b {
        AssistantBlock::Reasoning { text, meta } => Some((text.clone(), meta.as_deref().cloned())),
        _ => None,
    });
    let first = found.next().expect("a reasoning block");
    assert!(found.next().is_none(), "one reasoning block");
    first
}

/// The details of an `OpenAiCompatReasoning` meta, parsed, with the model it names.
fn details(meta: Option<ProviderMeta>) -> (String, Vec<Value>) {
    let Some(ProviderMeta::OpenAiCompatReasoning { model, details }) = meta else {
        panic!("no reasoning_details meta: {meta:?}");
    };
    let parsed = details
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    (model, parsed)
}

/// Every `reasoning_details` fragment of the recording, in order.
fn recorded_fragments(raw: &[u8]) -> Vec<Value> {
    deltas(raw)
        .iter()
        .filter_map(|delta| delta["reasoning_details"].as_array().cloned())
        .flatten()
        .collect()
}

/// The next request to `model`, with the assembled turn and a tool-free follow-up.
fn next_request(model: &str, response: &LlmResponse) -> Value {
    let request = LlmRequest::new(
        model.parse().unwrap(),
        vec![
            Message::user("q"),
            Message::Assistant(response.message.clone()),
            Message::user("and?"),
        ],
    );
    Dialect::OpenAiChat.render(&request).unwrap()
}

// ----------------------------------------------------------------------------- OpenRouter

/// Claude through OpenRouter: the reasoning text in `reasoning` and again in
/// `reasoning_details`, an empty signature announced first and the real one in a fragment of
/// its own before the answer; the finish reason, then a chunk with an empty delta carrying
/// the usage.
#[test]
fn openrouter_claude_reasoning_keeps_its_signature_and_goes_back_to_the_same_model() {
    let name = "openai-chat/openrouter-reasoning-details-signature-claude-sonnet-4.5.sse";
    let raw = fixture(name);
    let response = assemble_every_way(name, 1).unwrap();
    assert_eq!(kinds(&response), ["reasoning", "text"]);
    assert_eq!(text(&response), joined(&raw, "content"));
    let (thought, meta) = reasoning(&response);
    assert_eq!(thought, joined(&raw, "reasoning"));
    assert!(!thought.is_empty());
    let (model, merged) = details(meta);
    assert_eq!(model, "anthropic/claude-sonnet-4.5");
    let fragments = recorded_fragments(&raw);
    let signature = fragments
        .iter()
        .filter_map(|f| f["signature"].as_str())
        .find(|s| !s.is_empty())
        .unwrap();
    assert_eq!(
        merged,
        [json!({
            "type": "reasoning.text",
            "text": thought,
            "signature": signature,
            "format": "anthropic-claude-v1",
            "index": 0,
        })]
    );
    assert_eq!(response.usage, recorded_usage(&raw));
    assert_eq!(response.usage.reasoning_tokens, 13);
    assert_eq!(response.message.stop_reason, StopReason::EndTurn);

    // Back to the model that produced them, on the assistant message, as merged.
    let next = next_request("openai-compat:anthropic/claude-sonnet-4.5", &response);
    let assistant = &next["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], json!(text(&response)));
    assert_eq!(assistant["reasoning_details"], json!(merged));
    // Not to another model, and never to OpenAI, which has no such field.
    for elsewhere in ["openai-compat:openai/gpt-5.2", "openai:gpt-5.2"] {
        let next = next_request(elsewhere, &response);
        assert!(
            next["messages"][1].get("reasoning_details").is_none(),
            "{elsewhere}"
        );
    }
    // The turn survives storage: its JSON reads back equal and renders the same details.
    let stored = serde_json::to_string(&response).unwrap();
    let reloaded: LlmResponse = serde_json::from_str(&stored).unwrap();
    assert_eq!(reloaded, response);
    assert_eq!(
        next_request("openai-compat:anthropic/claude-sonnet-4.5", &reloaded),
        next_request("openai-compat:anthropic/claude-sonnet-4.5", &response)
    );
}

/// o3 through OpenRouter: no reasoning text, one `reasoning.encrypted` detail, kept whole.
#[test]
fn openrouter_encrypted_reasoning_is_kept_on_an_empty_reasoning_block() {
    let name = "openai-chat/openrouter-encrypted-reasoning-usage-after-finish-o3.sse";
    let raw = fixture(name);
    let response = assemble_every_way(name, 7).unwrap();
    assert_eq!(kinds(&response), ["reasoning", "text"]);
    assert_eq!(text(&response), joined(&raw, "content"));
    let (thought, meta) = reasoning(&response);
    assert_eq!(thought, "");
    let (model, merged) = details(meta);
    assert_eq!(model, "openai/o3");
    let mut fragments = recorded_fragments(&raw);
    assert_eq!(fragments.len(), 1);
    assert_eq!(merged, [fragments.remove(0)]);
    assert_eq!(merged[0]["type"], "reasoning.encrypted");
    assert_eq!(response.usage, recorded_usage(&raw));
    let next = next_request("openai-compat:openai/o3", &response);
    assert_eq!(next["messages"][1]["reasoning_details"], json!(merged));
}

/// gpt-4o-mini through OpenRouter: the finish reason twice, the usage on the second.
#[test]
fn openrouter_repeated_finish_with_the_usage_is_whole() {
    let name = "openai-chat/openrouter-repeated-finish-usage-gpt-4o-mini.sse";
    let raw = fixture(name);
    let finishes = payloads(&raw)
        .iter()
        .filter(|c| c["choices"][0]["finish_reason"] == "stop")
        .count();
    assert_eq!(finishes, 2, "the recording repeats its finish reason");
    let response = assemble_every_way(name, 1).unwrap();
    assert_eq!(kinds(&response), ["text"]);
    assert_eq!(text(&response), joined(&raw, "content"));
    assert_eq!(response.usage, recorded_usage(&raw));
    assert_eq!(response.message.stop_reason, StopReason::EndTurn);
}

/// A request for one model answered by its fallback (OpenRouter names the model that
/// answered); cached prompt tokens and reasoning tokens in the usage after the finish.
#[test]
fn openrouter_fallback_model_and_cached_usage() {
    let name = "openai-chat/openrouter-fallback-model-cached-usage-grok-4.sse";
    let raw = fixture(name);
    let response = assemble_every_way(name, 5).unwrap();
    assert_eq!(response.model.as_deref(), Some("x-ai/grok-4"));
    assert_eq!(text(&response), joined(&raw, "content"));
    let usage = recorded_usage(&raw);
    assert_eq!(response.usage, usage);
    assert!(usage.cache_read_tokens > 0 && usage.reasoning_tokens > 0);
}

/// Minimax through OpenRouter ran out of tokens: finish reason `length`, repeated, then an
/// error chunk with `"code": 400` (and usage). A 400 is the request's fault: typed as one,
/// never retried.
#[test]
fn openrouter_error_chunk_after_the_finish_is_a_typed_request_error() {
    let name = "openai-chat/openrouter-error-after-finish-minimax-m2.sse";
    let raw = fixture(name);
    let error = payloads(&raw)
        .into_iter()
        .find_map(|c| c.get("error").cloned())
        .unwrap();
    let err = assemble_every_way(name, 1).unwrap_err();
    assert_eq!(
        err,
        ProviderError::InvalidRequest {
            status: u16::try_from(error["code"].as_u64().unwrap()).unwrap(),
            message: error["message"].as_str().unwrap().to_owned(),
        }
    );
    assert_eq!(Failure::of(&err), Failure::Permanent);
    assert_eq!(
        RetryPolicy::default().decide(0, Failure::of(&err), RetryHints::default(), 0.5),
        None
    );
    // The reasoning before it streamed as reasoning, from `reasoning`, not twice.
    let (events, _) = transcript::decode_events(Dialect::OpenAiChat, [raw.as_slice()]);
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            motet_providers::LlmEvent::ReasoningDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, joined(&raw, "reasoning"));
}

// ------------------------------------------------------------------- Groq, DeepSeek, Mistral

/// Qwen3 on Groq: reasoning in `delta.reasoning`, usage (and `x_groq.usage`) on the finish
/// chunk. 295 KB, so cut at every 1,009th byte.
#[test]
fn groq_reasoning_field_is_reasoning() {
    let name = "openai-chat/groq-reasoning-qwen3-32b.RECONSTRUCTED.sse";
    let raw = fixture(name);
    let response = assemble_every_way(name, 1009).unwrap();
    assert_eq!(kinds(&response), ["reasoning", "text"]);
    let (thought, meta) = reasoning(&response);
    assert_eq!(thought, joined(&raw, "reasoning"));
    assert!(meta.is_none());
    assert_eq!(text(&response), joined(&raw, "content"));
    assert_eq!(response.usage, recorded_usage(&raw));
    assert_eq!(response.model.as_deref(), Some("qwen/qwen3-32b"));
}

/// Llama on Groq: one whole tool call in a single delta.
#[test]
fn groq_tool_call_in_one_delta() {
    let name = "openai-chat/groq-tool-call-llama-3.3-70b.RECONSTRUCTED.sse";
    let raw = fixture(name);
    let response = assemble_every_way(name, 1).unwrap();
    let call = &deltas(&raw)[1]["tool_calls"][0];
    let calls: Vec<_> = response.message.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, call["id"].as_str().unwrap());
    assert_eq!(calls[0].name, call["function"]["name"].as_str().unwrap());
    assert_eq!(
        calls[0].args.get(),
        call["function"]["arguments"].as_str().unwrap()
    );
    assert_eq!(response.message.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage, recorded_usage(&raw));
}

/// deepseek-reasoner: `reasoning_content`, with `content: null` beside it, then the answer.
#[test]
fn deepseek_reasoning_content_is_reasoning() {
    let name = "openai-chat/deepseek-reasoning-content-deepseek-reasoner.RECONSTRUCTED.sse";
    let raw = fixture(name);
    let response = assemble_every_way(name, 211).unwrap();
    assert_eq!(kinds(&response), ["reasoning", "text"]);
    assert_eq!(reasoning(&response).0, joined(&raw, "reasoning_content"));
    assert_eq!(text(&response), joined(&raw, "content"));
    assert_eq!(response.usage, recorded_usage(&raw));
}

/// Magistral: `delta.content` is a list of parts, `thinking` parts (holding text parts) for
/// the reasoning and `text` parts for the answer.
#[test]
fn mistral_thinking_parts_are_reasoning_and_text_parts_are_text() {
    let name = "openai-chat/mistral-thinking-parts-magistral-medium.RECONSTRUCTED.sse";
    let raw = fixture(name);
    let (mut thinking, mut answer) = (String::new(), String::new());
    for delta in deltas(&raw) {
        for part in delta["content"].as_array().into_iter().flatten() {
            match part["type"].as_str().unwrap() {
                "thinking" => part["thinking"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .for_each(|t| thinking.push_str(t["text"].as_str().unwrap())),
                _ => answer.push_str(part["text"].as_str().unwrap()),
            }
        }
    }
    let response = assemble_every_way(name, 1).unwrap();
    assert_eq!(kinds(&response), ["reasoning", "text"]);
    assert_eq!(reasoning(&response).0, thinking);
    assert_eq!(text(&response), answer);
    assert_eq!(response.usage, recorded_usage(&raw));
}

// ------------------------------------------------- hand-built: no public recording has these

fn chat_body(chunks: &[Value]) -> Vec<u8> {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// Every prefix of a hand-built body ends typed, never in a panic.
fn prefixes_are_typed(dialect: Dialect, body: &[u8], whole: &Result<LlmResponse, ProviderError>) {
    for i in 0..=body.len() {
        match (transcript::assemble(dialect, &body[..i]), whole) {
            (Err(ProviderError::StreamTruncated { .. }), _) => {}
            // The answer is whole at the finish reason; only the usage may still come.
            (Ok(prefix), Ok(whole)) => {
                assert_eq!(
                    prefix.message, whole.message,
                    "{dialect}: prefix of {i} bytes"
                );
            }
            (other, _) => assert_eq!(&other, whole, "{dialect}: prefix of {i} bytes"),
        }
        let cut = transcript::assemble_chunked(dialect, [&body[..i], &body[i..]]);
        assert_eq!(&cut, whole, "{dialect}: cut at byte {i}");
    }
}

/// Groq's `tool_use_failed` (hand-built from Groq's documented error object: no public
/// recording of it streamed exists): a 400, not retried, its code kept in the message.
#[test]
fn groq_tool_use_failed_mid_stream_is_not_retried() {
    let body = chat_body(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        json!({"error": {"message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.", "type": "invalid_request_error", "code": "tool_use_failed", "failed_generation": "<function=weather{\"city\": \"Paris\"}</function>"}}),
    ]);
    let err = transcript::assemble(Dialect::OpenAiChat, &body).unwrap_err();
    let ProviderError::InvalidRequest { status, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*status, 400);
    assert!(message.ends_with("(tool_use_failed)"), "{message}");
    assert_eq!(Failure::of(&err), Failure::Permanent);
    prefixes_are_typed(Dialect::OpenAiChat, &body, &Err(err));
}

/// A chunk that is itself an error object, as older vLLM servers send (hand-built from vLLM's
/// `ErrorResponse`).
#[test]
fn a_bare_error_object_chunk_is_typed_by_its_code() {
    let body = chat_body(&[
        chunk(json!({"content": "Hel"}), None),
        json!({"object": "error", "message": "Sampled token IDs exceed the max model length", "type": "BadRequestError", "param": null, "code": 400}),
    ]);
    let err = transcript::assemble(Dialect::OpenAiChat, &body).unwrap_err();
    assert_eq!(
        err,
        ProviderError::InvalidRequest {
            status: 400,
            message: "Sampled token IDs exceed the max model length".into()
        }
    );
    prefixes_are_typed(Dialect::OpenAiChat, &body, &Err(err));
}

/// After the finish reason: an empty delta, a repeated finish, a choice-less usage chunk are
/// all accepted; content is still a protocol error (it would be lost).
#[test]
fn only_content_after_the_finish_reason_is_refused() {
    let accepted = chat_body(&[
        chunk(json!({"content": "Hi"}), Some("stop")),
        chunk(json!({"content": ""}), Some("stop")),
        chunk(json!({}), None),
        json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}),
    ]);
    let whole = transcript::assemble(Dialect::OpenAiChat, &accepted);
    let response = whole.as_ref().unwrap();
    assert_eq!(text(response), "Hi");
    assert_eq!(response.usage.input_tokens, 3);
    prefixes_are_typed(Dialect::OpenAiChat, &accepted, &whole);

    for late in [
        json!({"content": "more"}),
        json!({"reasoning": "hm"}),
        json!({"reasoning_details": [{"type": "reasoning.text", "text": "hm", "index": 0}]}),
        json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}),
    ] {
        let body = chat_body(&[
            chunk(json!({"content": "Hi"}), Some("stop")),
            chunk(late.clone(), None),
        ]);
        assert!(
            matches!(
                transcript::assemble(Dialect::OpenAiChat, &body),
                Err(ProviderError::Protocol { .. })
            ),
            "{late}"
        );
    }
}

/// The details of a text block that came after the answer's text started (and a second
/// reasoning text after it) still land on the first reasoning block, merged by index.
#[test]
fn details_arriving_after_the_text_join_the_first_reasoning_block() {
    let detail = |text: &str, signature: &str| json!([{"type": "reasoning.text", "text": text, "signature": signature, "format": "f", "index": 0}]);
    let body = chat_body(&[
        chunk(
            json!({"reasoning": "Think", "reasoning_details": detail("Think", "")}),
            None,
        ),
        chunk(json!({"content": "Answer"}), None),
        chunk(json!({"reasoning_details": detail("", "sig")}), None),
        chunk(json!({}), Some("stop")),
    ]);
    let whole = transcript::assemble(Dialect::OpenAiChat, &body);
    let response = whole.as_ref().unwrap();
    assert_eq!(kinds(response), ["reasoning", "text"]);
    let (thought, meta) = reasoning(response);
    assert_eq!(thought, "Think");
    let (model, merged) = details(meta);
    assert_eq!(model, "m");
    assert_eq!(
        merged,
        [
            json!({"type": "reasoning.text", "text": "Think", "signature": "sig", "format": "f", "index": 0})
        ]
    );
    prefixes_are_typed(Dialect::OpenAiChat, &body, &whole);
}

/// An error event with a request fault in each of the other dialects (hand-built from each
/// provider's documented error shapes): a 4xx, not retried.
#[test]
fn a_request_fault_inside_a_stream_is_not_retried_in_any_dialect() {
    let anthropic = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.1.content.0.tool_use.id: String should match pattern\"}}\n\n",
    );
    let responses = concat!(
        "event: response.created\n",
        "data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5.2\",\"status\":\"in_progress\"}}\n\n",
        "event: response.failed\n",
        "data: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"invalid_image_url\",\"message\":\"Error while downloading https://example.com/a.png.\"}}}\n\n",
    );
    let gemini = "data: {\"error\":{\"code\":400,\"message\":\"Request contains an invalid argument.\",\"status\":\"INVALID_ARGUMENT\"}}\r\n\r\n";
    for (dialect, body) in [
        (Dialect::Anthropic, anthropic),
        (Dialect::OpenAiResponses, responses),
        (Dialect::Gemini, gemini),
    ] {
        let err = transcript::assemble(dialect, body.as_bytes()).unwrap_err();
        assert!(
            matches!(err, ProviderError::InvalidRequest { status: 400, .. }),
            "{dialect}: {err:?}"
        );
        assert_eq!(Failure::of(&err), Failure::Permanent, "{dialect}");
        prefixes_are_typed(dialect, body.as_bytes(), &Err(err));
    }
}

// --------------------------------------------------------------------------- usage per model

/// Anthropic's advisor tool: `usage.iterations` lists the executor's `message` iterations and
/// an `advisor_message` by another model. The total counts both; the split keeps each model's
/// part, to price each at its own rates, and the top-level `thinking_tokens` go to the
/// executor.
#[test]
fn advisor_iterations_are_kept_per_model() {
    let raw = fixture("anthropic/advisor-unknown-block-sonnet-5.sse");
    let events: Vec<Value> = std::str::from_utf8(&raw)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let executor = events
        .iter()
        .find_map(|e| e["message"]["model"].as_str())
        .unwrap()
        .to_owned();
    let usage = events
        .iter()
        .rev()
        .find_map(|e| (e["type"] == "message_delta").then(|| e["usage"].clone()))
        .unwrap();
    let count = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let mut expected: Vec<ModelUsage> = Vec::new();
    for iteration in usage["iterations"].as_array().unwrap() {
        let model = iteration["model"].as_str().unwrap_or(&executor).to_owned();
        let part = Usage {
            input_tokens: count(iteration, "input_tokens")
                + count(iteration, "cache_read_input_tokens")
                + count(iteration, "cache_creation_input_tokens"),
            output_tokens: count(iteration, "output_tokens"),
            cache_read_tokens: count(iteration, "cache_read_input_tokens"),
            cache_write_tokens: count(iteration, "cache_creation_input_tokens"),
            reasoning_tokens: 0,
        };
        match expected.iter_mut().find(|m| m.model == model) {
            Some(sum) => sum.usage += part,
            None => expected.push(ModelUsage { model, usage: part }),
        }
    }
    let thinking = usage["output_tokens_details"]["thinking_tokens"]
        .as_u64()
        .unwrap();
    expected[0].usage.reasoning_tokens = thinking;
    assert_eq!(expected.len(), 2, "the recording has two models");

    let body_every_way = |raw: &[u8]| {
        let whole = transcript::assemble(Dialect::Anthropic, raw).unwrap();
        let bytewise = transcript::assemble_chunked(Dialect::Anthropic, raw.chunks(1)).unwrap();
        assert_eq!(bytewise, whole);
        for i in (0..=raw.len()).step_by(13) {
            let cut = transcript::assemble_chunked(Dialect::Anthropic, [&raw[..i], &raw[i..]]);
            assert_eq!(cut.as_ref(), Ok(&whole), "cut at byte {i}");
            match transcript::assemble(Dialect::Anthropic, &raw[..i]) {
                Err(ProviderError::StreamTruncated { .. }) => {}
                other => assert_eq!(other.as_ref(), Ok(&whole), "prefix of {i} bytes"),
            }
        }
        whole
    };
    let response = body_every_way(&raw);
    assert_eq!(response.usage_by_model, expected);
    let total: Usage = expected.iter().map(|m| m.usage).sum();
    assert_eq!(response.usage, total);
    assert_eq!(response.usage.reasoning_tokens, thinking);

    // One model's iterations (compaction) need no split.
    let compaction = transcript::assemble(
        Dialect::Anthropic,
        &fixture("anthropic/compaction-iterations-cache-read-sonnet-4.6.sse"),
    )
    .unwrap();
    assert!(compaction.usage_by_model.is_empty());

    // What a model's part is, stored with the response, reads back.
    let stored = serde_json::to_string(&response).unwrap();
    assert_eq!(
        serde_json::from_str::<LlmResponse>(&stored).unwrap(),
        response
    );
}
