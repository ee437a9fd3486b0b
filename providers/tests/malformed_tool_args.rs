//! A model's tool call whose arguments are not JSON (issue 18): the response assembles, the
//! call keeps the text byte for byte, and replaying the turn renders without failing.
//!
//! The streams are built by hand from each provider's documented event format: no public
//! recording of a malformed call is known to us (the fantasy and pydantic-ai cassettes the
//! recorded fixtures come from hold none). Two kinds of broken text: a call cut off in the
//! middle (`{"a": 1, "b": `, with an ordinary `tool_calls` / `tool_use` finish — the output
//! limit is another case, withheld as `MaxTokensInToolCall`) and Python-style quotes
//! (`{'a': 1}`), arriving in fragments as the providers stream them.
//!
//! Gemini is not here: it sends `functionCall.args` as a JSON object inside a JSON event, so
//! its arguments cannot be broken text (an event that is not JSON is a protocol error).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_directives::{
    AssistantBlock, AssistantMessage, LlmRequest, Message, StopReason, ToolArgs, ToolResult,
};
use motet_providers::testing::wire::sse_body;
use motet_providers::{Dialect, transcript};
use serde_json::json;

/// The broken argument texts, each as the fragments a stream delivers it in.
const BROKEN: [&[&str]; 2] = [&[r#"{"a": 1, "#, r#""b": "#], &["{'a'", ": 1}"]];

/// The one tool call of `body`, assembled whole and re-chunked a byte at a time (a fragment
/// split across reads must come out the same).
fn the_call(dialect: Dialect, body: &[u8]) -> (String, String, ToolArgs) {
    let whole = transcript::assemble(dialect, body).expect("a broken call still assembles");
    let bytes = transcript::assemble_chunked(dialect, body.chunks(1)).expect("re-chunked");
    assert_eq!(whole, bytes);
    assert_eq!(whole.message.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = whole.message.tool_calls().collect();
    assert_eq!(calls.len(), 1, "{:?}", whole.message.blocks);
    let call = calls[0];
    (call.id.to_owned(), call.name.to_owned(), call.args.clone())
}

fn assert_kept(args: &ToolArgs, fragments: &[&str]) {
    assert_eq!(args.get(), fragments.concat(), "byte for byte");
    assert!(!args.is_object());
    assert!(args.problem().is_some());
}

#[test]
fn chat_broken_arguments_are_kept_as_text() {
    for fragments in BROKEN {
        let mut chunks = vec![
            json!({"id": "c1", "model": "gpt-4.1", "choices": [{"index": 0, "delta": {
            "role": "assistant",
            "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": ""}}],
        }, "finish_reason": null}]}),
        ];
        for fragment in fragments {
            chunks.push(
                json!({"id": "c1", "model": "gpt-4.1", "choices": [{"index": 0, "delta": {
                "tool_calls": [{"index": 0, "function": {"arguments": fragment}}],
            }, "finish_reason": null}]}),
            );
        }
        chunks.push(json!({"id": "c1", "model": "gpt-4.1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
        let mut body = sse_body(&chunks.into_iter().map(|c| ("", c)).collect::<Vec<_>>());
        body.extend_from_slice(b"data: [DONE]\n\n");

        let (id, name, args) = the_call(Dialect::OpenAiChat, &body);
        assert_eq!((id.as_str(), name.as_str()), ("call_1", "add"));
        assert_kept(&args, fragments);
    }
}

#[test]
fn anthropic_broken_input_json_is_kept_as_text() {
    for fragments in BROKEN {
        let mut events = vec![
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}}),
            ),
        ];
        for fragment in fragments {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        events.extend([
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);

        let (id, name, args) = the_call(Dialect::Anthropic, &sse_body(&events));
        assert_eq!((id.as_str(), name.as_str()), ("toolu_1", "add"));
        assert_kept(&args, fragments);
    }
}

#[test]
fn responses_broken_arguments_are_kept_as_text() {
    for fragments in BROKEN {
        let whole = fragments.concat();
        let item = |status: &str, arguments: &str| json!({"id": "fc_1", "type": "function_call", "status": status, "arguments": arguments, "call_id": "call_1", "name": "add"});
        let mut events = vec![
            (
                "response.created",
                json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5", "status": "in_progress"}}),
            ),
            (
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0, "item": item("in_progress", "")}),
            ),
        ];
        for fragment in fragments {
            events.push((
                "response.function_call_arguments.delta",
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": fragment}),
            ));
        }
        events.extend([
            (
                "response.function_call_arguments.done",
                json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": whole}),
            ),
            (
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": item("completed", &whole)}),
            ),
            (
                "response.completed",
                json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 9}}}),
            ),
        ]);

        let (id, name, args) = the_call(Dialect::OpenAiResponses, &sse_body(&events));
        assert_eq!((id.as_str(), name.as_str()), ("call_1", "add"));
        assert_kept(&args, fragments);
    }
}

/// The turn holding the broken call, answered, as the next request replays it.
fn replay(model: &str, raw: &str) -> LlmRequest {
    let turn = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "call_1",
            "add",
            ToolArgs::from_text(raw),
        )],
        stop_reason: StopReason::ToolUse,
    };
    LlmRequest::new(
        model.parse().unwrap(),
        vec![
            Message::user("Add 1 and 2."),
            Message::Assistant(turn),
            Message::ToolResults {
                results: vec![ToolResult::error(
                    "call_1",
                    format!("invalid arguments; received: {raw}"),
                )],
            },
        ],
    )
}

#[test]
fn a_turn_with_broken_arguments_replays_in_every_dialect() {
    for raw in BROKEN.map(<[&str]>::concat) {
        // The OpenAI dialects carry arguments as a string: the model's text goes back as is.
        let body = Dialect::OpenAiChat
            .render(&replay("openai:gpt-4.1", &raw))
            .unwrap();
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["arguments"],
            json!(raw)
        );
        let body = Dialect::OpenAiResponses
            .render(&replay("openai-responses:gpt-5", &raw))
            .unwrap();
        let call = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["type"] == "function_call")
            .unwrap();
        assert_eq!(call["arguments"], json!(raw));

        // Anthropic and Gemini require an object there: `{}` goes in its place (the error
        // result after it quotes the text, and the thread keeps it).
        let body = Dialect::Anthropic
            .render(&replay("anthropic:claude-sonnet-4-5", &raw))
            .unwrap();
        assert_eq!(body["messages"][1]["content"][0]["input"], json!({}));
        let body = Dialect::Gemini
            .render(&replay("gemini:gemini-2.5-flash", &raw))
            .unwrap();
        assert_eq!(
            body["contents"][1]["parts"][0]["functionCall"]["args"],
            json!({})
        );
    }
}
