//! The answers of each dialect, as the pieces of an SSE body a [`Reply::events`] sends: where
//! a request goes, the events around a text answer, an error event inside the stream and an
//! error body. Minimal, but in each provider's own format (as in the recorded fixtures).
//!
//! [`Reply::events`]: super::Reply::events

use std::fmt::Display;

use serde_json::json;

use crate::Dialect;

/// One SSE event as the providers write it: an `event:` line when `name` is not empty, one
/// `data:` line, a blank line. The one framer the tests of every crate use.
pub fn sse(name: &str, data: impl Display) -> String {
    if name.is_empty() {
        format!("data: {data}\n\n")
    } else {
        format!("event: {name}\ndata: {data}\n\n")
    }
}

/// A body of `(event name, data)` pairs, each framed by [`sse`].
pub fn sse_body<D: Display>(events: &[(&str, D)]) -> Vec<u8> {
    events
        .iter()
        .map(|(name, data)| sse(name, data))
        .collect::<String>()
        .into_bytes()
}

/// `body` split at `points` (in any order, each at most `body.len()`), as reads that break
/// events, line ends and UTF-8 characters: the replay of a recorded stream at random byte
/// boundaries.
pub fn split_at(body: &[u8], points: impl IntoIterator<Item = usize>) -> Vec<&[u8]> {
    let mut points: Vec<usize> = points.into_iter().map(|p| p.min(body.len())).collect();
    points.sort_unstable();
    let mut chunks = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for p in points {
        chunks.push(&body[start..p]);
        start = p;
    }
    chunks.push(&body[start..]);
    chunks
}

/// The model ref a request to `dialect` names.
pub fn model(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::OpenAiChat => "openai:gpt-4.1",
        Dialect::OpenAiResponses => "openai-responses:gpt-5",
        Dialect::Anthropic => "anthropic:claude-sonnet-4-5",
        Dialect::Gemini => "gemini:gemini-2.5-flash",
    }
}

/// The base URL a client of `dialect` is given for a server at `server` (`/v1` for the
/// OpenAI dialects, the host for the others).
pub fn base_url(dialect: Dialect, server: &str) -> String {
    match dialect {
        Dialect::OpenAiChat | Dialect::OpenAiResponses => format!("{server}/v1"),
        Dialect::Anthropic | Dialect::Gemini => server.to_owned(),
    }
}

/// The path (and query) a request for [`model`] goes to.
pub fn path(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::OpenAiChat => "/v1/chat/completions",
        Dialect::OpenAiResponses => "/v1/responses",
        Dialect::Anthropic => "/v1/messages",
        Dialect::Gemini => "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    }
}

/// The events before the first text.
pub fn opening(dialect: Dialect) -> Vec<String> {
    match dialect {
        Dialect::OpenAiChat | Dialect::Gemini => Vec::new(),
        Dialect::OpenAiResponses => vec![
            sse(
                "response.created",
                json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5", "status": "in_progress"}}),
            ),
            sse(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
            ),
        ],
        Dialect::Anthropic => vec![
            sse(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            ),
            sse(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
        ],
    }
}

/// One text delta.
pub fn text(dialect: Dialect, text: &str) -> String {
    match dialect {
        Dialect::OpenAiChat => sse(
            "",
            json!({"id": "c1", "model": "gpt-4.1", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
        ),
        Dialect::OpenAiResponses => sse(
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": text}),
        ),
        Dialect::Anthropic => sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        Dialect::Gemini => sse(
            "",
            json!({"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}], "modelVersion": "gemini-2.5-flash"}),
        ),
    }
}

/// The events that end a text answer (finish reason, usage, terminator).
pub fn closing(dialect: Dialect) -> Vec<String> {
    match dialect {
        Dialect::OpenAiChat => vec![
            sse(
                "",
                json!({"id": "c1", "model": "gpt-4.1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ),
            "data: [DONE]\n\n".to_owned(),
        ],
        Dialect::OpenAiResponses => vec![sse(
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 2}}}),
        )],
        Dialect::Anthropic => vec![
            sse(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            sse(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
            ),
            sse("message_stop", json!({"type": "message_stop"})),
        ],
        Dialect::Gemini => vec![sse(
            "",
            json!({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2}, "modelVersion": "gemini-2.5-flash"}),
        )],
    }
}

/// A whole answer saying `answer`, in one text delta.
pub fn answer(dialect: Dialect, answer: &str) -> Vec<String> {
    let mut pieces = opening(dialect);
    pieces.push(text(dialect, answer));
    pieces.extend(closing(dialect));
    pieces
}

/// The start of an answer: its text, and no end.
pub fn partial(dialect: Dialect, answer: &str) -> Vec<String> {
    let mut pieces = opening(dialect);
    pieces.push(text(dialect, answer));
    pieces
}

/// An error event inside a 200 stream: the provider failed with a server error.
pub fn error_event(dialect: Dialect, message: &str) -> String {
    match dialect {
        Dialect::OpenAiChat => sse(
            "",
            json!({"error": {"message": message, "type": "server_error"}}),
        ),
        Dialect::OpenAiResponses => sse(
            "response.failed",
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "error": {"code": "server_error", "message": message}}}),
        ),
        Dialect::Anthropic => sse(
            "error",
            json!({"type": "error", "error": {"type": "api_error", "message": message}}),
        ),
        Dialect::Gemini => sse(
            "",
            json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}}),
        ),
    }
}

/// An error event inside a 200 stream that says the request was at fault (a 400 in each
/// dialect's own words: Groq's `tool_use_failed`, Anthropic's and the Responses API's
/// `invalid_request_error`, Gemini's `INVALID_ARGUMENT`): never worth retrying.
pub fn request_error_event(dialect: Dialect, message: &str) -> String {
    match dialect {
        Dialect::OpenAiChat => sse(
            "",
            json!({"error": {"message": message, "type": "invalid_request_error", "code": "tool_use_failed"}}),
        ),
        Dialect::OpenAiResponses => sse(
            "error",
            json!({"type": "error", "code": null, "message": message, "param": null, "error": {"type": "invalid_request_error", "message": message}}),
        ),
        Dialect::Anthropic => sse(
            "error",
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
        ),
        Dialect::Gemini => sse(
            "",
            json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}),
        ),
    }
}

/// An HTTP error body of `dialect` with this message; the status decides its kind.
pub fn error_body(dialect: Dialect, message: &str) -> String {
    match dialect {
        Dialect::OpenAiChat | Dialect::OpenAiResponses => {
            json!({"error": {"message": message, "type": null, "code": null}})
        }
        Dialect::Anthropic => json!({"type": "error", "error": {"message": message}}),
        Dialect::Gemini => json!({"error": {"message": message}}),
    }
    .to_string()
}

/// An event whose data is not JSON, under the name the dialect's text deltas carry.
pub fn malformed(dialect: Dialect) -> String {
    let name = match dialect {
        Dialect::OpenAiChat | Dialect::Gemini => "",
        Dialect::OpenAiResponses => "response.output_text.delta",
        Dialect::Anthropic => "content_block_delta",
    };
    sse(name, r#"{"type": "content_block_delta", "delta": [oops"#)
}
