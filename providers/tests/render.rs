//! Rendering goldens per dialect: a plain request, and a resume round trip — an assistant turn
//! with reasoning from every provider, text, two parallel tool calls with provider meta, and
//! their results — rendered for each provider. The goldens in tests/golden/ are written from
//! each API's reference: the provider's own meta replays byte for byte, another provider's
//! meta (and reasoning it cannot read) is dropped, text and tool calls are always kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;

use motet_directives::{
    AssistantBlock, AssistantMessage, LlmOptions, LlmRequest, Message, ProviderMeta,
    ReasoningEffort, StopReason, ToolArgs, ToolChoice, ToolDef, ToolResult,
};
use motet_providers::Dialect;
use serde_json::{Value, json};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

fn golden(name: &str) -> Value {
    let path = format!("{GOLDEN}/{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn tools() -> Arc<[ToolDef]> {
    Arc::from(vec![ToolDef::new(
        "get_weather",
        "Current weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )])
}

fn plain(model: &str) -> LlmRequest {
    LlmRequest::new(
        model.parse().unwrap(),
        vec![
            Message::system("Be brief."),
            Message::user("Weather in Paris?"),
        ],
    )
    .with_tools(tools())
    .with_tool_choice(ToolChoice::Auto)
    .with_options(LlmOptions {
        max_tokens: Some(512),
        temperature: Some(0.5),
        ..LlmOptions::default()
    })
}

/// An assistant turn as a provider would have produced it, with every provider's meta.
fn turn() -> AssistantMessage {
    AssistantMessage {
        blocks: vec![
            AssistantBlock::reasoning(
                "Two cities, two calls.",
                Some(ProviderMeta::Anthropic {
                    signature: "EqQBCkYIBRgCKkDsig+/==".into(),
                }),
            ),
            AssistantBlock::reasoning(
                "",
                Some(ProviderMeta::AnthropicRedacted {
                    data: "EmwKAhgBEgy3va3pzix/redacted==".into(),
                }),
            ),
            AssistantBlock::reasoning(
                "**Planning**",
                Some(ProviderMeta::OpenAi {
                    id: "rs_0123".into(),
                    encrypted_content: Some("gAAAAAB-encrypted==".into()),
                }),
            ),
            AssistantBlock::text("Checking both."),
            AssistantBlock::ToolUse {
                id: "call_1".into(),
                name: "get_weather".into(),
                args: ToolArgs::from_text(r#"{"city":"Paris"}"#),
                meta: Some(Box::new(ProviderMeta::Gemini {
                    thought_signature: "CiIBgemini-sig==".into(),
                })),
            },
            AssistantBlock::tool_use(
                "call_2",
                "get_weather",
                ToolArgs::from_text(r#"{"city":"Rome"}"#),
            ),
        ],
        stop_reason: StopReason::ToolUse,
    }
}

fn resume(model: &str, options: LlmOptions) -> LlmRequest {
    LlmRequest::new(
        model.parse().unwrap(),
        vec![
            Message::system("Be brief."),
            Message::user("Weather in Paris and Rome?"),
            Message::Assistant(turn()),
            Message::ToolResults {
                results: vec![
                    ToolResult::ok("call_1", "Sunny, 24 °C"),
                    ToolResult::error("call_2", "service unavailable"),
                ],
            },
        ],
    )
    .with_tools(tools())
    .with_options(options)
}

fn check(dialect: Dialect, req: &LlmRequest, name: &str) {
    let rendered = dialect.render(req).unwrap();
    let expected = golden(name);
    assert_eq!(
        rendered,
        expected,
        "{name}: rendered\n{}",
        serde_json::to_string_pretty(&rendered).unwrap()
    );
}

#[test]
fn openai_chat() {
    check(
        Dialect::OpenAiChat,
        &plain("openai:gpt-5.2"),
        "openai_chat/plain.json",
    );
    check(
        Dialect::OpenAiChat,
        &resume("openai-compat:qwen3", LlmOptions::default()),
        "openai_chat/resume.json",
    );
}

#[test]
fn openai_responses() {
    check(
        Dialect::OpenAiResponses,
        &plain("openai-responses:gpt-5.2"),
        "openai_responses/plain.json",
    );
    check(
        Dialect::OpenAiResponses,
        &resume(
            "openai-responses:gpt-5.2",
            LlmOptions {
                reasoning_effort: Some(ReasoningEffort::Medium),
                ..LlmOptions::default()
            },
        ),
        "openai_responses/resume.json",
    );
}

#[test]
fn anthropic() {
    check(
        Dialect::Anthropic,
        &plain("anthropic:claude-sonnet-4-5"),
        "anthropic/plain.json",
    );
    check(
        Dialect::Anthropic,
        &resume(
            "anthropic:claude-sonnet-4-5",
            LlmOptions {
                max_tokens: Some(8000),
                thinking_budget: Some(4000),
                ..LlmOptions::default()
            },
        ),
        "anthropic/resume.json",
    );
}

#[test]
fn gemini() {
    check(
        Dialect::Gemini,
        &plain("gemini:gemini-3-pro-preview"),
        "gemini/plain.json",
    );
    check(
        Dialect::Gemini,
        &resume("gemini:gemini-3-pro-preview", LlmOptions::default()),
        "gemini/resume.json",
    );
}

#[test]
fn replaying_to_another_provider_drops_only_its_meta() {
    // Whatever the target, both calls, both results and the text survive.
    for (dialect, model) in [
        (Dialect::OpenAiChat, "openai:gpt-5.2"),
        (Dialect::OpenAiResponses, "openai-responses:gpt-5.2"),
        (Dialect::Anthropic, "anthropic:claude-sonnet-4-5"),
        (Dialect::Gemini, "gemini:gemini-3-pro-preview"),
    ] {
        let body = dialect
            .render(&resume(model, LlmOptions::default()))
            .unwrap()
            .to_string();
        for needle in [
            "Checking both.",
            "call_1",
            "call_2",
            "Paris",
            "Rome",
            "Sunny, 24 °C",
            "service unavailable",
        ] {
            assert!(
                body.contains(needle),
                "{dialect}: {needle} missing in {body}"
            );
        }
        let own = |m: &str| match dialect {
            Dialect::Anthropic => m.starts_with("Eq") || m.starts_with("Emw"),
            Dialect::OpenAiResponses => m.starts_with("gAAAA"),
            Dialect::Gemini => m.starts_with("CiIB"),
            Dialect::OpenAiChat => false,
        };
        for meta in [
            "EqQBCkYIBRgCKkDsig+/==",
            "EmwKAhgBEgy3va3pzix/redacted==",
            "gAAAAAB-encrypted==",
            "CiIBgemini-sig==",
        ] {
            assert_eq!(body.contains(meta), own(meta), "{dialect}: {meta}");
        }
    }
}
