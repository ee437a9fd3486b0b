//! Token counts as OpenAI-compatible servers really send them (`null`, `12.0`), and chunks after
//! `[DONE]`: a complete answer is never thrown away over its bookkeeping. A count that is not a
//! whole number is dropped with a warning. Every dialect reads its counts the same way, as
//! llama.cpp and others serve the Responses and Anthropic dialects too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::io::Write;
use std::sync::{Arc, Mutex};

use motet_directives::Usage;
use motet_providers::testing::wire;
use motet_providers::{Dialect, transcript};
use serde_json::{Value, json};

/// A whole answer "Hello" whose usage report says `input` and `output` tokens, as written.
fn with_usage(dialect: Dialect, input: &Value, output: &Value) -> String {
    let mut pieces = wire::opening(dialect);
    pieces.push(wire::text(dialect, "Hello"));
    match dialect {
        Dialect::OpenAiChat => {
            pieces.push(wire::sse(
                "",
                json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ));
            pieces.push(wire::sse(
                "",
                json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": null, "prompt_tokens_details": {"cached_tokens": null}, "completion_tokens_details": null}}),
            ));
            pieces.push("data: [DONE]\n\n".to_owned());
        }
        Dialect::OpenAiResponses => pieces.push(wire::sse(
            "response.completed",
            json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": input, "output_tokens": output, "input_tokens_details": {"cached_tokens": null}, "output_tokens_details": {"reasoning_tokens": null}}}}),
        )),
        Dialect::Anthropic => {
            pieces.push(wire::sse(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            pieces.push(wire::sse(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"input_tokens": input, "output_tokens": output, "cache_read_input_tokens": null}}),
            ));
            pieces.push(wire::sse("message_stop", json!({"type": "message_stop"})));
        }
        Dialect::Gemini => pieces.push(wire::sse(
            "",
            json!({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output, "thoughtsTokenCount": null}}),
        )),
    }
    pieces.concat()
}

/// What `body` assembles to in `dialect`, and the log lines written meanwhile.
fn assemble(dialect: Dialect, body: &str) -> (String, Usage, String) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || Sink(sink.clone()))
        .with_ansi(false)
        .finish();
    let r = tracing::subscriber::with_default(subscriber, || {
        transcript::assemble(dialect, body.as_bytes())
    })
    .unwrap_or_else(|e| panic!("{dialect}: {e}\n{body}"));
    let log = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    (r.message.to_string(), r.usage, log)
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_null_count_is_no_count() {
    for dialect in Dialect::ALL {
        let (text, usage, log) = assemble(dialect, &with_usage(dialect, &json!(null), &json!(5)));
        assert_eq!(text, "Hello", "{dialect}");
        assert_eq!(usage.output_tokens, 5, "{dialect}");
        assert!(!log.contains("WARN"), "{dialect}: {log}");
    }
}

#[test]
fn a_whole_number_written_as_a_float_counts() {
    for dialect in Dialect::ALL {
        let (text, usage, _) = assemble(dialect, &with_usage(dialect, &json!(12.0), &json!(3.0)));
        assert_eq!(text, "Hello", "{dialect}");
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (12, 3),
            "{dialect}"
        );
    }
}

#[test]
fn a_fractional_negative_or_odd_count_is_dropped_with_a_warning() {
    for (input, output) in [
        (json!(12.5), json!(-3)),
        (json!("12"), json!([1])),
        (json!(1e300), json!({"n": 1})),
    ] {
        for dialect in Dialect::ALL {
            // As if the server had sent no counts (Anthropic's message_start has some).
            let (_, uncounted, _) =
                assemble(dialect, &with_usage(dialect, &json!(null), &json!(null)));
            let (text, usage, log) = assemble(dialect, &with_usage(dialect, &input, &output));
            assert_eq!(text, "Hello", "{dialect} {input} {output}");
            assert_eq!(usage, uncounted, "{dialect} {input} {output}");
            assert!(
                log.contains("WARN") && log.contains("token count"),
                "{dialect} {input} {output}: {log:?}"
            );
        }
    }
}

#[test]
fn anything_after_done_is_ignored() {
    let mut body = wire::answer(Dialect::OpenAiChat, "Hello");
    // A usage chunk after the end (some servers), then more text and garbage.
    body.push(
        r#"data: {"id":"c1","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#
            .to_owned()
            + "\n\n",
    );
    body.push(wire::text(Dialect::OpenAiChat, " and more"));
    body.push("data: {not json\n\n".to_owned());
    body.push("data: [DONE]\n\n".to_owned());
    let (text, _, _) = assemble(Dialect::OpenAiChat, &body.concat());
    assert_eq!(text, "Hello");
}
