//! Every recorded real stream in tests/fixtures through the full offline path (SSE framing →
//! dialect decoder → block assembler), fed whole and re-chunked at random byte boundaries.
//!
//! Expectations come from the recordings themselves (the fixture README and the bytes:
//! signatures and encrypted content are read out of the raw events), never from our output.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_directives::{AssistantBlock, LlmResponse, ProviderMeta, StopReason, Usage};
use motet_providers::testing::wire::split_at;
use motet_providers::{Dialect, ProviderError, transcript};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every JSON payload of the recording's `data:` lines.
fn payloads(raw: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(raw)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// Every non-empty string value under `key`, anywhere in the payloads, in order.
fn strings_under(raw: &[u8], key: &str) -> Vec<String> {
    fn walk(v: &Value, key: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    match child {
                        Value::String(s) if k == key && !s.is_empty() => out.push(s.clone()),
                        _ => walk(child, key, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, key, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    payloads(raw).iter().for_each(|p| walk(p, key, &mut out));
    out
}

/// Splits `raw` at `cuts` random positions (so events, CRLFs and UTF-8 characters break).
fn rechunk<'a>(raw: &'a [u8], rng: &mut fastrand::Rng, cuts: usize) -> Vec<&'a [u8]> {
    split_at(raw, (0..cuts).map(|_| rng.usize(0..=raw.len())))
}

/// The response of a recording, checked to be identical under 64 random chunkings (and one
/// byte at a time).
fn assembled(dialect: Dialect, name: &str) -> LlmResponse {
    let raw = bytes(name);
    let whole = transcript::assemble(dialect, &raw);
    let mut rng = fastrand::Rng::with_seed(0x5eed ^ raw.len() as u64);
    for round in 0..64 {
        let cuts = 1 + round * 3;
        let chunked = transcript::assemble_chunked(dialect, rechunk(&raw, &mut rng, cuts));
        assert_eq!(
            chunked, whole,
            "{name}: differs when cut {cuts} times (round {round})"
        );
    }
    let bytewise = transcript::assemble_chunked(dialect, raw.chunks(1));
    assert_eq!(bytewise, whole, "{name}: differs when fed byte by byte");
    whole.unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn kinds(r: &LlmResponse) -> Vec<&'static str> {
    r.message
        .blocks
        .iter()
        .map(|b| match b {
            AssistantBlock::Text { .. } => "text",
            AssistantBlock::Reasoning { .. } => "reasoning",
            AssistantBlock::ToolUse { .. } => "tool_use",
            _ => "other",
        })
        .collect()
}

fn calls(r: &LlmResponse) -> Vec<(String, Value)> {
    r.message
        .tool_calls()
        .map(|c| {
            (
                c.name.to_owned(),
                c.parse_args::<Value>().expect("args parse"),
            )
        })
        .collect()
}

fn reasoning_text(r: &LlmResponse) -> String {
    r.message
        .blocks
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::Reasoning { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn usage(input: u64, output: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: reasoning,
    }
}

// ---------------------------------------------------------------- OpenAI Chat Completions

#[test]
fn chat_parallel_tool_calls_gpt_4o() {
    let r = assembled(
        Dialect::OpenAiChat,
        "openai-chat/parallel-tool-calls-gpt-4o.sse",
    );
    assert_eq!(kinds(&r), ["tool_use", "tool_use"]);
    assert_eq!(
        calls(&r),
        [
            ("add".to_owned(), json!({"a": 2, "b": 3})),
            ("multiply".to_owned(), json!({"a": 2, "b": 3}))
        ]
    );
    let ids: Vec<&str> = r.message.tool_calls().map(|c| c.id).collect();
    assert_eq!(
        ids,
        strings_under(&bytes("openai-chat/parallel-tool-calls-gpt-4o.sse"), "id")
            .into_iter()
            .filter(|id| id.starts_with("call_"))
            .collect::<Vec<_>>()
    );
    assert_eq!(r.message.stop_reason, StopReason::ToolUse);
    assert_eq!(r.usage, usage(106, 50, 0));
    assert_eq!(r.model.as_deref(), Some("gpt-4o-2024-08-06"));
}

#[test]
fn chat_text_with_reasoning_usage_gpt_5() {
    let r = assembled(Dialect::OpenAiChat, "openai-chat/text-usage-gpt-5.sse");
    assert_eq!(kinds(&r), ["text"]);
    let text = r.message.to_string();
    assert!(
        text.starts_with("It’s currently about 40°C (104°F) in Florence, Italy."),
        "{text}"
    );
    let expected: String =
        strings_under(&bytes("openai-chat/text-usage-gpt-5.sse"), "content").concat();
    assert_eq!(text, expected);
    assert_eq!(r.message.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage, usage(176, 228, 192));
}

/// Azure OpenAI opens with a chunk that carries only `prompt_filter_results`, with `id` and
/// `model` empty: the model and id come from the first chunk that names them.
#[test]
fn chat_azure_prompt_filter_chunk_does_not_blank_the_model() {
    let name = "openai-chat/azure-prompt-filter-first-chunk-o4-mini.sse";
    let raw = bytes(name);
    let first = &payloads(&raw)[0];
    assert_eq!((&first["id"], &first["model"]), (&json!(""), &json!("")));
    assert_eq!(first["choices"], json!([]));
    let r = assembled(Dialect::OpenAiChat, name);
    assert_eq!(r.message.to_string(), "Oi!");
    assert_eq!(r.message.stop_reason, StopReason::EndTurn);
    assert_eq!(r.model.as_deref(), Some("o4-mini-2025-04-16"));
    let id = strings_under(&raw, "id").remove(0);
    assert!(id.starts_with("chatcmpl-"), "{id}");
    assert_eq!(r.response_id.as_deref(), Some(id.as_str()));
    assert_eq!(r.usage, usage(19, 149, 128));
}

#[test]
fn chat_llama_cpp_recordings() {
    let text = assembled(Dialect::OpenAiChat, "llama-cpp/chat_auto_text_stream.sse");
    assert_eq!(
        text.message.to_string(),
        "I'm here to help with your data analysis needs."
    );
    assert_eq!(text.usage, usage(200, 12, 0));

    let parallel = assembled(Dialect::OpenAiChat, "llama-cpp/chat_parallel_stream.sse");
    assert_eq!(
        calls(&parallel),
        [
            ("get_weather".to_owned(), json!({"city": "Paris"})),
            ("get_time".to_owned(), json!({"timezone": "UTC"}))
        ]
    );
    assert_eq!(parallel.message.stop_reason, StopReason::ToolUse);

    // The same call twice: two calls with their own ids, never one merged call.
    let twice = assembled(Dialect::OpenAiChat, "llama-cpp/chat_required_stream.sse");
    assert_eq!(calls(&twice).len(), 2);
    let ids: Vec<&str> = twice.message.tool_calls().map(|c| c.id).collect();
    assert_ne!(ids[0], ids[1]);

    let one = assembled(
        Dialect::OpenAiChat,
        "llama-cpp/chat_required_noparallel_stream.sse",
    );
    assert_eq!(
        calls(&one),
        [("get_weather".to_owned(), json!({"city": "Paris"}))]
    );

    let follow = assembled(Dialect::OpenAiChat, "llama-cpp/chat_followup_stream.sse");
    assert_eq!(
        follow.message.to_string(),
        "The weather in Paris is quite beautiful."
    );
    assemble_ok(Dialect::OpenAiChat, "llama-cpp/chat_no_tools_stream.sse");
    // A non-streaming JSON body is not a stream.
    assert!(matches!(
        transcript::assemble(
            Dialect::OpenAiChat,
            &bytes("llama-cpp/chat_required_nonstream.sse")
        ),
        Err(ProviderError::StreamTruncated { .. })
    ));
}

fn assemble_ok(dialect: Dialect, name: &str) {
    let r = assembled(dialect, name);
    assert!(!r.message.blocks.is_empty(), "{name}");
}

/// `raw` up to the middle of its last `data:` line that carries JSON: a body that broke off
/// inside its last event.
fn cut_inside_last_event(raw: &[u8]) -> &[u8] {
    let text = String::from_utf8_lossy(raw);
    let start = text.rfind("data: {").expect("a JSON data line");
    let end = text[start..]
        .find(['\r', '\n'])
        .map_or(raw.len(), |e| start + e);
    &raw[..start + (end - start) / 2]
}

/// The body ends halfway through the usage chunk that follows the finish reason: the answer
/// looks whole, and the SSE rules would drop the cut line without a word, taking the usage with
/// it. That is a truncation (retried like one), whole and fed byte by byte.
#[test]
fn chat_a_body_cut_inside_its_usage_chunk_is_truncated_not_an_answer_without_usage() {
    let raw = bytes("openai-chat/text-usage-gpt-5.sse");
    let cut = cut_inside_last_event(&raw);
    assert!(
        payloads(&raw)
            .last()
            .is_some_and(|p| p["usage"].is_object()),
        "the last JSON event of the recording is its usage chunk"
    );
    for (how, result) in [
        ("whole", transcript::assemble(Dialect::OpenAiChat, cut)),
        (
            "byte by byte",
            transcript::assemble_chunked(Dialect::OpenAiChat, cut.chunks(1)),
        ),
    ] {
        assert!(
            matches!(result, Err(ProviderError::StreamTruncated { ref reason }) if reason.contains("inside its last event")),
            "{how}: {result:?}"
        );
    }
    // Cut in the middle of a UTF-8 character (`°` in a content delta): a truncation too, not a
    // line that is not UTF-8.
    let degree = raw
        .windows(2)
        .position(|w| w == "°".as_bytes())
        .expect("a degree sign");
    let result = transcript::assemble(Dialect::OpenAiChat, &raw[..=degree]);
    assert!(
        matches!(result, Err(ProviderError::StreamTruncated { .. })),
        "{result:?}"
    );
    // Whole but for the line end of its last line (`data: [DONE]` and nothing after): nothing
    // is lost, and the answer is the recording's.
    let unterminated = raw.strip_suffix(b"\n\n").expect("ends with a blank line");
    assert_eq!(
        transcript::assemble(Dialect::OpenAiChat, unterminated),
        transcript::assemble(Dialect::OpenAiChat, &raw)
    );
}

/// Every dialect ends its body through the same path: a recording of each, cut inside its last
/// event, is a truncation, never an answer.
#[test]
fn every_dialect_cut_inside_its_last_event_is_truncated() {
    for (dialect, name) in [
        (
            Dialect::OpenAiChat,
            "openai-chat/parallel-tool-calls-gpt-4o.sse",
        ),
        (
            Dialect::OpenAiResponses,
            "openai-responses/text-gpt-4o-mini.sse",
        ),
        (
            Dialect::Anthropic,
            "anthropic/parallel-tool-use-sonnet-4.sse",
        ),
        (Dialect::Gemini, "gemini/text-usage-gemini-2.0-flash.sse"),
    ] {
        let raw = bytes(name);
        let cut = cut_inside_last_event(&raw);
        for result in [
            transcript::assemble(dialect, cut),
            transcript::assemble_chunked(dialect, cut.chunks(1)),
        ] {
            assert!(
                matches!(result, Err(ProviderError::StreamTruncated { .. })),
                "{name}: {result:?}"
            );
        }
    }
}

// ---------------------------------------------------------------- OpenAI Responses

#[test]
fn responses_reasoning_then_function_call_keeps_the_final_encrypted_content() {
    let name = "openai-responses/reasoning-summary-encrypted-function-call-gpt-5.sse";
    let raw = bytes(name);
    let r = assembled(Dialect::OpenAiResponses, name);
    assert_eq!(kinds(&r), ["reasoning", "tool_use"]);
    // encrypted_content changes between output_item.added and .done (and is re-encrypted once
    // more in response.completed): the item's final form, from output_item.done, is kept.
    let done = payloads(&raw)
        .into_iter()
        .find(|p| p["type"] == "response.output_item.done" && p["item"]["type"] == "reasoning")
        .expect("reasoning item done");
    let last = done["item"]["encrypted_content"]
        .as_str()
        .expect("encrypted")
        .to_owned();
    assert_ne!(
        Some(&last),
        strings_under(&raw, "encrypted_content").first(),
        "the recording changes it"
    );
    let reasoning_id = strings_under(&raw, "id")
        .into_iter()
        .find(|id| id.starts_with("rs_"))
        .expect("reasoning id");
    match &r.message.blocks[0] {
        AssistantBlock::Reasoning { text, meta } => {
            assert!(text.starts_with("**Getting weather info**"), "{text}");
            assert_eq!(
                meta.as_deref(),
                Some(&ProviderMeta::OpenAi {
                    id: reasoning_id,
                    encrypted_content: Some(last),
                })
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        calls(&r),
        [("weather".to_owned(), json!({"location": "Florence, Italy"}))]
    );
    assert_eq!(r.message.stop_reason, StopReason::ToolUse);
    assert_eq!(r.usage, usage(63, 121, 64));
}

#[test]
fn responses_reasoning_then_text() {
    let name = "openai-responses/reasoning-summary-encrypted-text-gpt-5.sse";
    let r = assembled(Dialect::OpenAiResponses, name);
    assert_eq!(kinds(&r), ["reasoning", "text"]);
    assert!(reasoning_text(&r).starts_with("**Finalizing the response**"));
    assert!(
        r.message
            .to_string()
            .starts_with("Right now in Florence, Italy, it’s about")
    );
    assert_eq!(r.message.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage, usage(92, 456, 384));
}

#[test]
fn responses_parallel_function_calls_after_an_empty_reasoning_item() {
    let r = assembled(
        Dialect::OpenAiResponses,
        "openai-responses/parallel-function-calls-gpt-5.sse",
    );
    assert_eq!(kinds(&r), ["reasoning", "tool_use", "tool_use"]);
    assert_eq!(reasoning_text(&r), "");
    assert_eq!(
        calls(&r),
        [
            ("add".to_owned(), json!({"a": 2, "b": 3})),
            ("multiply".to_owned(), json!({"a": 2, "b": 3}))
        ]
    );
    assert_eq!(r.usage, usage(109, 223, 128));
}

#[test]
fn responses_text_and_llama_cpp_recordings() {
    let r = assembled(
        Dialect::OpenAiResponses,
        "openai-responses/text-gpt-4o-mini.sse",
    );
    assert_eq!(r.message.to_string(), "Hi in Portuguese is \"Oi!\"");
    assert_eq!(r.usage, usage(20, 8, 0));
    let parallel = assembled(
        Dialect::OpenAiResponses,
        "llama-cpp/responses_parallel_stream.sse",
    );
    assert_eq!(
        calls(&parallel),
        [
            ("get_weather".to_owned(), json!({"city": "Paris"})),
            ("get_time".to_owned(), json!({"timezone": "UTC"}))
        ]
    );
    let twice = assembled(
        Dialect::OpenAiResponses,
        "llama-cpp/responses_required_stream.sse",
    );
    assert_eq!(calls(&twice).len(), 2);
    assemble_ok(
        Dialect::OpenAiResponses,
        "llama-cpp/responses_text_stream.sse",
    );
    assemble_ok(
        Dialect::OpenAiResponses,
        "llama-cpp/responses_followup_stream.sse",
    );
}

#[test]
fn responses_mid_stream_quota_error_is_typed() {
    let raw = bytes("openai-responses/error-insufficient-quota-gpt-5-nano.RECONSTRUCTED.sse");
    let err = transcript::assemble(Dialect::OpenAiResponses, &raw).expect_err("an error stream");
    match err {
        ProviderError::Authentication { message, .. } => {
            assert!(message.contains("exceeded your current quota"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------- Anthropic

#[test]
fn anthropic_text_then_parallel_tool_use() {
    let r = assembled(
        Dialect::Anthropic,
        "anthropic/parallel-tool-use-sonnet-4.sse",
    );
    assert_eq!(kinds(&r), ["text", "tool_use", "tool_use"]);
    assert_eq!(
        r.message.to_string(),
        "I'll add and multiply the numbers 2 and 3 for you."
    );
    assert_eq!(
        calls(&r),
        [
            ("add".to_owned(), json!({"a": 2, "b": 3})),
            ("multiply".to_owned(), json!({"a": 2, "b": 3}))
        ]
    );
    assert_eq!(r.message.stop_reason, StopReason::ToolUse);
    assert_eq!(r.usage, usage(502, 137, 0));
}

#[test]
fn anthropic_thinking_keeps_its_signature_byte_for_byte() {
    for (name, next) in [
        (
            "anthropic/thinking-signature-tool-use-sonnet-4.sse",
            "tool_use",
        ),
        ("anthropic/thinking-signature-text-sonnet-4.sse", "text"),
    ] {
        let raw = bytes(name);
        let r = assembled(Dialect::Anthropic, name);
        assert_eq!(kinds(&r), ["reasoning", next], "{name}");
        let signature = strings_under(&raw, "signature").concat();
        assert!(signature.len() > 100, "{name}");
        let thinking = strings_under(&raw, "thinking").concat();
        match &r.message.blocks[0] {
            AssistantBlock::Reasoning { text, meta } => {
                assert_eq!(text, &thinking, "{name}");
                assert_eq!(
                    meta.as_deref(),
                    Some(&ProviderMeta::Anthropic { signature }),
                    "{name}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    let tool = assembled(
        Dialect::Anthropic,
        "anthropic/thinking-signature-tool-use-sonnet-4.sse",
    );
    assert_eq!(
        calls(&tool),
        [("weather".to_owned(), json!({"location": "Florence, Italy"}))]
    );
    assert_eq!(tool.usage, usage(424, 119, 0));
    let text = assembled(
        Dialect::Anthropic,
        "anthropic/thinking-signature-text-sonnet-4.sse",
    );
    assert_eq!(text.message.stop_reason, StopReason::EndTurn);
    assert!(
        text.message
            .to_string()
            .starts_with("Here are the basic steps")
    );
}

/// Server-side compaction ran before the answer: `message_start` reports the compaction
/// iteration's 55,096 cache reads, `message_delta` the answer's own counts with
/// `cache_read_input_tokens: 0`, and `usage.iterations` lists both. What was used is the sum
/// of the iterations, read out of the recording.
#[test]
fn anthropic_compaction_usage_sums_the_iterations_and_keeps_the_cache_reads() {
    let name = "anthropic/compaction-iterations-cache-read-sonnet-4.6.sse";
    let raw = bytes(name);
    let r = assembled(Dialect::Anthropic, name);
    assert_eq!(
        kinds(&r),
        ["other", "text"],
        "the compaction block is kept opaquely (tests/anthropic_server_blocks.rs)"
    );
    assert_eq!(r.message.to_string(), "Hello! \u{1F44B}");
    assert_eq!(r.message.stop_reason, StopReason::EndTurn);
    let delta = payloads(&raw)
        .into_iter()
        .find(|p| p["type"] == "message_delta")
        .expect("message_delta");
    let iterations = delta["usage"]["iterations"].as_array().expect("iterations");
    assert_eq!(iterations.len(), 2);
    let sum = |field: &str| -> u64 { iterations.iter().filter_map(|i| i[field].as_u64()).sum() };
    assert_eq!(
        (
            sum("input_tokens"),
            sum("output_tokens"),
            sum("cache_read_input_tokens")
        ),
        (281, 91, 55_096)
    );
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 281 + 55_096,
            output_tokens: 91,
            cache_read_tokens: 55_096,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        }
    );
    assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-6"));
}

#[test]
fn anthropic_llama_cpp_recordings() {
    let parallel = assembled(Dialect::Anthropic, "llama-cpp/messages_parallel_stream.sse");
    assert_eq!(
        calls(&parallel),
        [
            ("get_weather".to_owned(), json!({"city": "Paris"})),
            ("get_time".to_owned(), json!({"timezone": "UTC"}))
        ]
    );
    assert_eq!(parallel.usage, usage(284, 73, 0));
    let twice = assembled(Dialect::Anthropic, "llama-cpp/messages_any_stream.sse");
    assert_eq!(calls(&twice).len(), 2);
    for name in [
        "llama-cpp/messages_text_stream.sse",
        "llama-cpp/messages_followup_stream.sse",
        "llama-cpp/messages_tool_stream.sse",
    ] {
        assemble_ok(Dialect::Anthropic, name);
    }
}

// ---------------------------------------------------------------- Gemini

#[test]
fn gemini_parallel_calls_in_separate_chunks_signature_on_the_first_only() {
    let name = "gemini/parallel-function-calls-thought-signature-gemini-3.1-pro.sse";
    let raw = bytes(name);
    let r = assembled(Dialect::Gemini, name);
    assert_eq!(kinds(&r), ["tool_use", "tool_use"]);
    let signatures = strings_under(&raw, "thoughtSignature");
    assert_eq!(signatures.len(), 1);
    let metas: Vec<Option<&ProviderMeta>> = r.message.blocks.iter().map(|b| b.meta()).collect();
    assert_eq!(
        metas,
        [
            Some(&ProviderMeta::Gemini {
                thought_signature: signatures[0].clone()
            }),
            None
        ]
    );
    // Gemini 3 sends call ids; they are kept.
    let wire_ids = strings_under(&raw, "id");
    let ids: Vec<String> = r.message.tool_calls().map(|c| c.id.to_owned()).collect();
    assert!(
        ids.iter().all(|id| wire_ids.contains(id)),
        "{ids:?} vs {wire_ids:?}"
    );
    assert_eq!(
        calls(&r),
        [
            ("add".to_owned(), json!({"a": 2, "b": 3})),
            ("multiply".to_owned(), json!({"a": 2, "b": 3}))
        ]
    );
    assert_eq!(r.message.stop_reason, StopReason::ToolUse);
}

#[test]
fn gemini_parallel_calls_in_one_chunk() {
    let name = "gemini/parallel-function-calls-single-chunk-gemini-2.5-flash.sse";
    let raw = bytes(name);
    let r = assembled(Dialect::Gemini, name);
    assert_eq!(kinds(&r), ["tool_use", "tool_use"]);
    let signature = strings_under(&raw, "thoughtSignature").remove(0);
    assert_eq!(
        r.message.blocks[0].meta(),
        Some(&ProviderMeta::Gemini {
            thought_signature: signature
        })
    );
    assert_eq!(r.message.blocks[1].meta(), None);
    let ids: Vec<&str> = r.message.tool_calls().map(|c| c.id).collect();
    assert_ne!(ids[0], ids[1], "generated ids must differ");
}

#[test]
fn gemini_thought_part_then_a_signed_function_call() {
    let name = "gemini/thought-part-function-call-gemini-2.5-pro.sse";
    let raw = bytes(name);
    let r = assembled(Dialect::Gemini, name);
    assert_eq!(kinds(&r), ["reasoning", "tool_use"]);
    assert!(reasoning_text(&r).starts_with("**Mapping the Inquiry**"));
    let signature = strings_under(&raw, "thoughtSignature").remove(0);
    assert_eq!(
        r.message.blocks[1].meta(),
        Some(&ProviderMeta::Gemini {
            thought_signature: signature
        })
    );
    assert_eq!(
        calls(&r),
        [("weather".to_owned(), json!({"location": "Florence, Italy"}))]
    );
}

#[test]
fn gemini_text_with_usage_on_every_chunk() {
    let r = assembled(Dialect::Gemini, "gemini/text-usage-gemini-2.0-flash.sse");
    assert_eq!(r.message.to_string(), "The capital of France is Paris.\n");
    assert_eq!(r.message.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage, usage(13, 8, 0));
}
