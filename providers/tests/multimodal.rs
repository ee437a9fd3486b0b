//! Images, documents and audio: each dialect's body for a multimodal conversation (goldens in
//! tests/golden/<dialect>/multimodal.json, checked by hand against each API's reference: no
//! real recording of a multimodal request exists in the fixtures, so these bodies are
//! hand-built), the same bytes after the conversation is stored and read back, and the typed
//! refusals before anything is sent — a part the dialect has no form for, one a known model
//! cannot read, one past the size limits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;

use motet_directives::{
    AssistantBlock, AssistantMessage, LlmRequest, Message, Part, StopReason, ToolArgs, ToolDef,
    ToolResult,
};
use motet_providers::models::validate;
use motet_providers::{Dialect, ProviderError};
use serde_json::json;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

/// The first bytes of a PNG file (enough for a provider-shaped body; nothing decodes it).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
/// A tiny PDF header.
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n";

/// A conversation with every kind of part a dialect takes, a tool call and a tool result that
/// returned a screenshot.
fn conversation(with_audio: bool) -> Vec<Message> {
    let mut parts = vec![
        Part::text("What do these show?"),
        Part::image_bytes("image/png", PNG),
        Part::image_url("https://example.com/cat.jpg"),
        Part::document_bytes("application/pdf", PDF).with_name("report.pdf"),
    ];
    if with_audio {
        parts.push(Part::audio_bytes("audio/wav", &b"RIFF\0\0\0\0WAVE"[..]));
    }
    vec![
        Message::system("Be brief."),
        Message::user_parts(parts),
        Message::Assistant(AssistantMessage {
            blocks: vec![AssistantBlock::tool_use(
                "call_1",
                "screenshot",
                ToolArgs::from_text(r#"{"url":"https://example.com"}"#),
            )],
            stop_reason: StopReason::ToolUse,
        }),
        Message::ToolResults {
            results: vec![
                ToolResult::ok("call_1", "the page")
                    .with_attachments([Part::image_bytes("image/png", PNG)]),
            ],
        },
        Message::user("And now?"),
    ]
}

fn model(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::OpenAiChat => "openai:gpt-4o",
        Dialect::OpenAiResponses => "openai-responses:gpt-4.1",
        Dialect::Anthropic => "anthropic:claude-sonnet-4-5",
        Dialect::Gemini => "gemini:gemini-2.5-flash",
    }
}

fn request(dialect: Dialect, messages: Vec<Message>) -> LlmRequest {
    LlmRequest::new(model(dialect).parse().unwrap(), messages).with_tools(Arc::from(vec![
        ToolDef::new(
            "screenshot",
            "A screenshot of a page.",
            json!({"type": "object", "properties": {"url": {"type": "string"}}}),
        ),
    ]))
}

fn golden_path(dialect: Dialect) -> String {
    let folder = match dialect {
        Dialect::OpenAiChat => "openai_chat",
        Dialect::OpenAiResponses => "openai_responses",
        Dialect::Anthropic => "anthropic",
        Dialect::Gemini => "gemini",
    };
    format!("{GOLDEN}/{folder}/multimodal.json")
}

#[test]
fn each_dialect_renders_parts_in_its_own_form_as_the_golden() {
    for dialect in Dialect::ALL {
        let req = request(dialect, conversation(false));
        validate(&req).unwrap_or_else(|e| panic!("{dialect}: {e}"));
        let body = String::from_utf8(dialect.encode(&req).unwrap()).unwrap();
        let path = golden_path(dialect);
        if std::env::var_os("MOTET_WRITE_GOLDEN").is_some() {
            std::fs::write(&path, format!("{body}\n")).unwrap();
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(body, golden.trim_end(), "{dialect}");
    }
}

/// A thread stored and read back sends the same bytes in every dialect, and the bytes are
/// shared, not copied, by a clone of the conversation (what a projection does every call).
#[test]
fn a_stored_multimodal_conversation_reloads_and_sends_the_same_bytes() {
    let messages = conversation(false);
    let stored = serde_json::to_string(&messages).unwrap();
    let reloaded: Vec<Message> = serde_json::from_str(&stored).unwrap();
    assert_eq!(reloaded, messages);
    assert_eq!(serde_json::to_string(&reloaded).unwrap(), stored);
    for dialect in Dialect::ALL {
        let before = dialect.encode(&request(dialect, messages.clone())).unwrap();
        let after = dialect.encode(&request(dialect, reloaded.clone())).unwrap();
        assert_eq!(before, after, "{dialect}");
    }
    let copy = messages.clone();
    let blob = |m: &Message| match m {
        Message::User { content } => match content.media().next().and_then(Part::source) {
            Some(motet_directives::MediaSource::Bytes { data, .. }) => data.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert!(blob(&messages[1]).shares_with(&blob(&copy[1])));
}

#[test]
fn audio_goes_as_input_audio_to_chat_and_inline_data_to_gemini_and_is_refused_elsewhere() {
    let chat = LlmRequest::new(
        "openai:gpt-4o-audio-preview".parse().unwrap(),
        vec![Message::user_parts([
            Part::text("Transcribe."),
            Part::audio_bytes("audio/mpeg", &b"ID3"[..]),
        ])],
    );
    validate(&chat).unwrap();
    let body = Dialect::OpenAiChat.render(&chat).unwrap();
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}})
    );
    let gemini = request(Dialect::Gemini, conversation(true));
    validate(&gemini).unwrap();
    let body = Dialect::Gemini.render(&gemini).unwrap();
    assert_eq!(
        body["contents"][0]["parts"][4],
        json!({"inlineData": {"mimeType": "audio/wav", "data": "UklGRgAAAABXQVZF"}})
    );
    for dialect in [Dialect::OpenAiResponses, Dialect::Anthropic] {
        let req = request(dialect, conversation(true));
        for outcome in [validate(&req).map(|_| ()), dialect.render(&req).map(|_| ())] {
            assert!(
                matches!(
                    &outcome,
                    Err(ProviderError::UnsupportedContent { kind: "audio", .. })
                ),
                "{dialect}: {outcome:?}"
            );
        }
    }
}

#[test]
fn a_known_model_that_cannot_read_a_part_is_refused_naming_model_and_kind() {
    let cases = [
        (
            "anthropic:claude-3-haiku-20240307",
            Part::document_bytes("application/pdf", PDF),
            "document",
        ),
        (
            "openai:o3-mini",
            Part::image_bytes("image/png", PNG),
            "image",
        ),
        (
            "openai:gpt-4o-audio-preview",
            Part::image_bytes("image/png", PNG),
            "image",
        ),
        (
            "openai:gpt-4o",
            Part::audio_bytes("audio/wav", &b"RIFF"[..]),
            "audio",
        ),
    ];
    for (model, part, kind) in cases {
        let req = LlmRequest::new(
            model.parse().unwrap(),
            vec![Message::user_parts([Part::text("?"), part])],
        );
        match validate(&req) {
            Err(ProviderError::UnsupportedContent {
                model: named,
                kind: refused,
                ..
            }) => {
                assert_eq!(named, model);
                assert_eq!(refused, kind, "{model}");
            }
            other => panic!("{model}: {other:?}"),
        }
    }
    // A model the table does not know, and any OpenAI-compatible server's, is let through.
    for model in ["openai-compat:smolvlm", "anthropic:claude-next"] {
        let req = LlmRequest::new(
            model.parse().unwrap(),
            vec![Message::user_parts([Part::image_bytes("image/png", PNG)])],
        );
        validate(&req).unwrap_or_else(|e| panic!("{model}: {e}"));
    }
}

#[test]
fn forms_a_dialect_lacks_are_refused_before_sending() {
    let cases = [
        // Chat Completions takes a document as bytes only.
        (
            "openai:gpt-4o",
            Part::document_url("https://example.com/a.pdf"),
        ),
        // OpenAI takes PDFs, not other documents.
        (
            "openai-responses:gpt-4.1",
            Part::document_bytes("text/plain", &b"hi"[..]),
        ),
        // Anthropic takes four image types.
        (
            "anthropic:claude-sonnet-4-5",
            Part::image_bytes("image/tiff", &b"II*"[..]),
        ),
        // Gemini's fileData needs a media type.
        (
            "gemini:gemini-2.5-flash",
            Part::image_url("https://example.com/picture"),
        ),
    ];
    for (model, part) in cases {
        let req = LlmRequest::new(model.parse().unwrap(), vec![Message::user_parts([part])]);
        let outcome = validate(&req);
        assert!(
            matches!(outcome, Err(ProviderError::UnsupportedContent { .. })),
            "{model}: {outcome:?}"
        );
    }
}

#[test]
fn parts_past_the_size_limits_are_a_typed_error_not_a_request() {
    // Anthropic: 5 MB an image (base64); 4 MB of bytes is 5.3 MB sent.
    let big = vec![0_u8; 4 * 1024 * 1024];
    let one = LlmRequest::new(
        "anthropic:claude-sonnet-4-5".parse().unwrap(),
        vec![Message::user_parts([Part::image_bytes("image/png", big)])],
    );
    match validate(&one) {
        Err(ProviderError::ContentTooLarge { size, limit, .. }) => {
            assert_eq!(limit, 5 * 1024 * 1024);
            assert!(size > limit);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Dialect::Anthropic.encode(&one),
        Err(ProviderError::ContentTooLarge { .. })
    ));
    // Gemini: 20 MB a request; three 6 MB images (8 MB each as sent) pass one by one but not
    // together. The bytes are one allocation shared by the three parts.
    let image = Part::image_bytes("image/png", vec![0_u8; 6 * 1024 * 1024]);
    let many = LlmRequest::new(
        "gemini:gemini-2.5-flash".parse().unwrap(),
        vec![Message::user_parts([image.clone(), image.clone(), image])],
    );
    match validate(&many) {
        Err(ProviderError::ContentTooLarge { what, limit, .. }) => {
            assert_eq!(limit, 20 * 1024 * 1024);
            assert!(what.contains("one request"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    let error = validate(&many).unwrap_err();
    assert_eq!(
        error.llm_error_kind(),
        motet_directives::results::LlmErrorKind::InvalidRequest
    );
}
