//! Streams no public recording has, written by hand from the provider documentation (the
//! fixture README lists them): mid-stream errors, truncation, redacted thinking, the output
//! limit inside a tool call, servers that omit or reuse tool-call ids, malformed events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_directives::{AssistantBlock, ProviderMeta, StopReason, Usage};
use motet_providers::testing::wire::sse_body;
use motet_providers::{Dialect, ProviderError, transcript};
use serde_json::{Value, json};

fn chat(chunks: &[Value], done: bool) -> Vec<u8> {
    let mut body = sse_body(&chunks.iter().map(|c| ("", c.clone())).collect::<Vec<_>>());
    if done {
        body.extend_from_slice(b"data: [DONE]\n\n");
    }
    body
}

fn chat_delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

// ------------------------------------------------------------- Chat Completions

#[test]
fn chat_mid_stream_error_chunk_is_the_typed_error() {
    let body = chat(
        &[
            chat_delta(json!({"content": "Hel"}), None),
            json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}),
        ],
        false,
    );
    let err = transcript::assemble(Dialect::OpenAiChat, &body).expect_err("error");
    assert!(
        matches!(err, ProviderError::Server { status: 0, ref message } if message.contains("server had an error")),
        "{err:?}"
    );
}

#[test]
fn chat_without_a_finish_reason_is_truncated() {
    let body = chat(&[chat_delta(json!({"content": "Hello"}), None)], false);
    assert!(matches!(
        transcript::assemble(Dialect::OpenAiChat, &body),
        Err(ProviderError::StreamTruncated { .. })
    ));
    // A finish reason without the [DONE] that usually follows is whole.
    let body = chat(
        &[chat_delta(json!({"content": "Hello"}), Some("stop"))],
        false,
    );
    let r = transcript::assemble(Dialect::OpenAiChat, &body).expect("whole");
    assert_eq!(r.message.to_string(), "Hello");
}

/// Azure's prompt-filter chunk (`choices: []`, `id` and `model` empty; recorded in
/// fixtures/openai-chat/azure-prompt-filter-first-chunk-o4-mini.sse), then a content chunk that
/// names no model either (built by hand): the model is taken from the first chunk that names
/// it, the id likewise, and neither is ever "".
#[test]
fn chat_model_and_id_come_from_the_first_chunk_that_names_them() {
    let body = chat(
        &[
            json!({"choices": [], "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]}),
            json!({"id": "", "model": "", "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]}),
            json!({"id": "chatcmpl-1", "model": "", "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]}),
            json!({"id": "chatcmpl-1", "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        true,
    );
    let r = transcript::assemble(Dialect::OpenAiChat, &body).expect("whole");
    assert_eq!(r.message.to_string(), "Hello");
    assert_eq!(r.model.as_deref(), Some("gpt-4o-2024-08-06"));
    assert_eq!(r.response_id.as_deref(), Some("chatcmpl-1"));
}

#[test]
fn chat_servers_that_omit_ids_or_reuse_index_zero_never_merge_two_calls() {
    // No ids at all, both calls on index 0: the second name starts a second call.
    let body = chat(
        &[
            chat_delta(
                json!({"tool_calls": [{"index": 0, "function": {"name": "a", "arguments": "{\"x\":"}}]}),
                None,
            ),
            chat_delta(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
                None,
            ),
            chat_delta(
                json!({"tool_calls": [{"index": 0, "function": {"name": "b", "arguments": "{}"}}]}),
                None,
            ),
            chat_delta(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let r = transcript::assemble(Dialect::OpenAiChat, &body).expect("assembles");
    let calls: Vec<(String, String, String)> = r
        .message
        .tool_calls()
        .map(|c| (c.id.to_owned(), c.name.to_owned(), c.args.get().to_owned()))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        (calls[0].1.as_str(), calls[0].2.as_str()),
        ("a", "{\"x\":1}")
    );
    assert_eq!((calls[1].1.as_str(), calls[1].2.as_str()), ("b", "{}"));
    assert_ne!(calls[0].0, calls[1].0);

    // Ids present, index 0 reused with a new id.
    let body = chat(
        &[
            chat_delta(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "a", "arguments": "{}"}}]}),
                None,
            ),
            chat_delta(
                json!({"tool_calls": [{"index": 0, "id": "call_2", "function": {"name": "a", "arguments": "{\"y\":2}"}}]}),
                None,
            ),
            chat_delta(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let r = transcript::assemble(Dialect::OpenAiChat, &body).expect("assembles");
    let ids: Vec<&str> = r.message.tool_calls().map(|c| c.id).collect();
    assert_eq!(ids, ["call_1", "call_2"]);

    // The same id twice (a server bug) still yields two distinct ids.
    let body = chat(
        &[
            chat_delta(
                json!({"tool_calls": [{"index": 0, "id": "same", "function": {"name": "a", "arguments": "{}"}}]}),
                None,
            ),
            chat_delta(
                json!({"tool_calls": [{"index": 1, "id": "same", "function": {"name": "b", "arguments": "{}"}}]}),
                None,
            ),
            chat_delta(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let r = transcript::assemble(Dialect::OpenAiChat, &body).expect("assembles");
    let ids: Vec<&str> = r.message.tool_calls().map(|c| c.id).collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
}

#[test]
fn chat_length_inside_a_tool_call_is_reported_and_the_call_withheld() {
    let body = chat(
        &[
            chat_delta(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "write_file", "arguments": "{\"path\": \"a.txt\", \"text\": \"long"}}]}),
                None,
            ),
            chat_delta(json!({}), Some("length")),
        ],
        true,
    );
    assert_eq!(
        transcript::assemble(Dialect::OpenAiChat, &body),
        Err(ProviderError::MaxTokensInToolCall {
            tool: "write_file".into()
        })
    );
}

#[test]
fn chat_reasoning_content_becomes_a_reasoning_block() {
    let body = chat(
        &[
            chat_delta(json!({"reasoning_content": "think "}), None),
            chat_delta(json!({"reasoning_content": "more"}), None),
            chat_delta(json!({"content": "answer"}), None),
            chat_delta(json!({}), Some("stop")),
        ],
        true,
    );
    let r = transcript::assemble(Dialect::OpenAiChat, &body).expect("assembles");
    assert_eq!(
        r.message.blocks,
        [
            AssistantBlock::reasoning("think more", None),
            AssistantBlock::text("answer")
        ]
    );
}

#[test]
fn chat_garbage_is_a_protocol_error() {
    let body = b"data: {\"choices\": [\n\ndata: [DONE]\n\n".to_vec();
    assert!(matches!(
        transcript::assemble(Dialect::OpenAiChat, &body),
        Err(ProviderError::Protocol { .. })
    ));
}

// ------------------------------------------------------------- Anthropic

fn start(model: &str) -> (&'static str, Value) {
    (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "model": model, "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 2, "output_tokens": 1}}}),
    )
}

fn block_start(index: u64, block: Value) -> (&'static str, Value) {
    (
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_delta(index: u64, delta: Value) -> (&'static str, Value) {
    (
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: u64) -> (&'static str, Value) {
    (
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_end(reason: &str) -> [(&'static str, Value); 2] {
    [
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 42}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

#[test]
fn anthropic_mid_stream_overloaded_then_close() {
    let body = sse_body(&[
        start("claude-sonnet-4-5"),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "Hi"})),
        (
            "error",
            json!({"type": "error", "error": {"details": null, "type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ]);
    assert_eq!(
        transcript::assemble(Dialect::Anthropic, &body),
        Err(ProviderError::Overloaded {
            message: "Overloaded".into()
        })
    );
}

#[test]
fn anthropic_redacted_thinking_is_kept_as_is_and_usage_counts_the_cache() {
    let mut events = vec![
        start("claude-sonnet-4-5"),
        block_start(
            0,
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}),
        ),
        block_stop(0),
        block_start(
            1,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        block_delta(1, json!({"type": "thinking_delta", "thinking": "hmm"})),
        block_delta(1, json!({"type": "thinking_delta", "thinking": ""})),
        block_delta(
            1,
            json!({"type": "signature_delta", "signature": "c2lnbmF0dXJl"}),
        ),
        block_stop(1),
        block_start(2, json!({"type": "text", "text": ""})),
        block_delta(2, json!({"type": "text_delta", "text": "Done."})),
        block_stop(2),
        ("ping", json!({"type": "ping"})),
    ];
    events.extend(message_end("end_turn"));
    let r = transcript::assemble(Dialect::Anthropic, &sse_body(&events)).expect("assembles");
    assert_eq!(
        r.message.blocks,
        [
            AssistantBlock::reasoning(
                "",
                Some(ProviderMeta::AnthropicRedacted {
                    data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT".into()
                })
            ),
            AssistantBlock::reasoning(
                "hmm",
                Some(ProviderMeta::Anthropic {
                    signature: "c2lnbmF0dXJl".into()
                })
            ),
            AssistantBlock::text("Done."),
        ]
    );
    assert_eq!(
        r.usage.input_tokens, 17,
        "uncached + cache reads + cache writes"
    );
    assert_eq!(r.usage.cache_read_tokens, 5);
    assert_eq!(r.usage.cache_write_tokens, 2);
    assert_eq!(r.usage.output_tokens, 42);
}

/// `message_delta` repeats the input and cache counts as `0` (seen in real streams: a
/// compaction stream reads 55,096 cached tokens in `message_start` and reports
/// `cache_read_input_tokens: 0` in `message_delta`); Anthropic documents its counts as
/// cumulative, so a later zero is "nothing new", never a reset. Built by hand from that shape.
#[test]
fn anthropic_a_zero_in_message_delta_keeps_message_start_counts() {
    let events = vec![
        start("claude-sonnet-4-5"),
        block_start(0, json!({"type": "text", "text": "Hi"})),
        block_stop(0),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 42}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let r = transcript::assemble(Dialect::Anthropic, &sse_body(&events)).expect("assembles");
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 17,
            output_tokens: 42,
            cache_read_tokens: 5,
            cache_write_tokens: 2,
            reasoning_tokens: 0,
        }
    );
}

#[test]
fn anthropic_empty_tool_input_is_an_empty_object() {
    let mut events = vec![
        start("claude-sonnet-4-5"),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}),
        ),
        block_delta(0, json!({"type": "input_json_delta", "partial_json": ""})),
        block_stop(0),
    ];
    events.extend(message_end("tool_use"));
    let r = transcript::assemble(Dialect::Anthropic, &sse_body(&events)).expect("assembles");
    let call = r.message.tool_calls().next().expect("a call");
    assert_eq!(call.args.get(), "{}");
    assert_eq!(r.message.stop_reason, StopReason::ToolUse);
}

#[test]
fn anthropic_max_tokens_inside_a_tool_use_withholds_the_call() {
    let events = vec![
        start("claude-sonnet-4-5"),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}),
        ),
        block_delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": \"a"}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 4096}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    assert_eq!(
        transcript::assemble(Dialect::Anthropic, &sse_body(&events)),
        Err(ProviderError::MaxTokensInToolCall {
            tool: "write_file".into()
        })
    );
    // The same with the block stopped before the message delta.
    let events = vec![
        start("claude-sonnet-4-5"),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}),
        ),
        block_delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": \"a"}),
        ),
        block_stop(0),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 4096}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    assert!(matches!(
        transcript::assemble(Dialect::Anthropic, &sse_body(&events)),
        Err(ProviderError::MaxTokensInToolCall { .. })
    ));
}

#[test]
fn anthropic_truncation_unknown_blocks_and_garbage() {
    let events = vec![
        start("claude-sonnet-4-5"),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "Hi"})),
    ];
    assert!(matches!(
        transcript::assemble(Dialect::Anthropic, &sse_body(&events)),
        Err(ProviderError::StreamTruncated { .. })
    ));
    let events = vec![
        start("claude-sonnet-4-5"),
        block_delta(3, json!({"type": "text_delta", "text": "Hi"})),
    ];
    assert!(matches!(
        transcript::assemble(Dialect::Anthropic, &sse_body(&events)),
        Err(ProviderError::Protocol { .. })
    ));
    let body = b"event: message_start\ndata: {\"type\": \"message_start\", \n\n".to_vec();
    assert!(matches!(
        transcript::assemble(Dialect::Anthropic, &body),
        Err(ProviderError::Protocol { .. })
    ));
    // Server-tool blocks are kept opaquely, their streamed input in place
    // (tests/anthropic_server_blocks.rs).
    let mut events = vec![
        start("claude-sonnet-4-5"),
        block_start(
            0,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
        ),
        block_delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"query\": \"x\"}"}),
        ),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": "Found it."})),
        block_stop(1),
    ];
    events.extend(message_end("end_turn"));
    let r = transcript::assemble(Dialect::Anthropic, &sse_body(&events)).expect("assembles");
    assert_eq!(
        r.message.blocks,
        [
            AssistantBlock::opaque(
                "anthropic",
                r#"{"id":"srvtoolu_1","name":"web_search","type":"server_tool_use","input":{"query": "x"}}"#
            ),
            AssistantBlock::text("Found it.")
        ]
    );
}
