//! Model refs to dialects, the capability table, and the validation of seed 004 §1.3.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_directives::{LlmOptions, LlmRequest, Message, ModelRef, ReasoningEffort};
use motet_providers::models::{capabilities, dialect_for, validate};
use motet_providers::{Dialect, ProviderError};

fn model(s: &str) -> ModelRef {
    s.parse().unwrap()
}

fn asking(model_ref: &str, options: LlmOptions) -> LlmRequest {
    LlmRequest::new(model(model_ref), vec![Message::user("hi")]).with_options(options)
}

#[test]
fn provider_parts_select_dialects() {
    for (r, d) in [
        ("openai:gpt-5.2", Dialect::OpenAiChat),
        ("openai-compat:qwen3:8b", Dialect::OpenAiChat),
        ("openai-responses:gpt-5.2", Dialect::OpenAiResponses),
        ("anthropic:claude-sonnet-4-5", Dialect::Anthropic),
        ("gemini:gemini-3-pro-preview", Dialect::Gemini),
    ] {
        assert_eq!(dialect_for(&model(r)).unwrap(), d, "{r}");
    }
    assert!(matches!(
        dialect_for(&model("cohere:command")),
        Err(ProviderError::Config { .. })
    ));
}

#[test]
fn capabilities_match_dated_snapshots_by_the_longest_prefix() {
    let sonnet45 = capabilities(&model("anthropic:claude-sonnet-4-5-20250929")).unwrap();
    assert!(sonnet45.reasoning_replay);
    assert_eq!(sonnet45.context_window, 200_000);
    // claude-sonnet-4 (4.0) is a shorter prefix of 4.5 and must not win.
    let sonnet40 = capabilities(&model("anthropic:claude-sonnet-4-20250514")).unwrap();
    assert!(!sonnet40.reasoning_replay);
    assert!(
        capabilities(&model("openai-responses:gpt-5.2-pro"))
            .unwrap()
            .reasoning_replay
    );
    assert!(
        !capabilities(&model("openai:gpt-5.1"))
            .unwrap()
            .reasoning_replay
    );
    assert!(
        capabilities(&model("gemini:gemini-3-flash-preview"))
            .unwrap()
            .reasoning_replay
    );
    assert!(
        !capabilities(&model("gemini:gemini-2.5-pro"))
            .unwrap()
            .reasoning_replay
    );
    assert_eq!(capabilities(&model("openai-compat:gpt-5.2")), None);
    assert_eq!(capabilities(&model("anthropic:claude-next")), None);
}

#[test]
fn plain_chat_works_with_any_model() {
    for r in [
        "openai:gpt-4o",
        "anthropic:claude-3-5-haiku-latest",
        "gemini:gemini-2.0-flash",
        "openai-compat:whatever",
        "anthropic:claude-next",
    ] {
        validate(&asking(r, LlmOptions::default())).unwrap();
    }
}

#[test]
fn reasoning_on_a_model_that_cannot_replay_it_is_refused_with_the_reason() {
    let thinking = LlmOptions {
        thinking_budget: Some(2048),
        ..LlmOptions::default()
    };
    let effort = LlmOptions {
        reasoning_effort: Some(ReasoningEffort::High),
        ..LlmOptions::default()
    };
    for (r, options) in [
        ("anthropic:claude-sonnet-4-20250514", &thinking),
        ("anthropic:claude-3-7-sonnet-latest", &thinking),
        ("gemini:gemini-2.5-flash", &thinking),
        ("openai-responses:gpt-5.1", &effort),
        ("openai-responses:o3", &effort),
    ] {
        match validate(&asking(r, options.clone())) {
            Err(ProviderError::UnsupportedModel { model, reason }) => {
                assert_eq!(model, r);
                assert!(reason.contains("replay"), "{reason}");
            }
            other => panic!("{r}: {other:?}"),
        }
    }
    // Chat Completions cannot carry reasoning back, whatever the model.
    match validate(&asking("openai:gpt-5.2", effort.clone())) {
        Err(ProviderError::UnsupportedModel { reason, .. }) => {
            assert!(reason.contains("openai-responses:gpt-5.2"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    for (r, options) in [
        ("anthropic:claude-sonnet-4-5", &thinking),
        ("anthropic:claude-opus-4-6", &thinking),
        ("openai-responses:gpt-5.2", &effort),
        ("gemini:gemini-3-pro-preview", &thinking),
        ("openai-compat:deepseek-r1", &effort),
    ] {
        validate(&asking(r, options.clone())).unwrap_or_else(|e| panic!("{r}: {e}"));
    }
}
