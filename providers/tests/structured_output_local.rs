//! Structured output end to end against a real llama.cpp server (`bash scripts/local-llm.sh
//! start`): Chat Completions' `response_format` as motet renders it (strict, rewritten) is
//! compiled by the server into a grammar, so even the 135M model answers with JSON that
//! matches the caller's schema — enum values it would never write unprompted included.
//!
//! (The server's Responses and Anthropic Messages endpoints accept `text.format` and
//! `output_config.format` but do not enforce them, so only Chat Completions is checked here.)
//!
//! Runs when `MOTET_LOCAL_LLM_URL` is set (CI sets it); otherwise it prints a skip line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use motet_directives::{LlmOptions, LlmRequest, Message, ResponseFormat};
use motet_providers::{Dialect, HttpClient, LlmClient};
use serde_json::json;

fn server() -> Option<String> {
    match std::env::var("MOTET_LOCAL_LLM_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim_end_matches('/').to_owned()),
        _ => {
            common::missing("MOTET_LOCAL_LLM_URL is not set (bash scripts/local-llm.sh start)");
            None
        }
    }
}

#[tokio::test]
async fn chat_completions_answers_match_the_schema() {
    let Some(url) = server() else { return };
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).expect("client");
    let format = ResponseFormat::json_schema(
        "Sky",
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 40},
                "sky": {"enum": ["zqx-clear", "zqx-cloudy"]},
                "high_c": {"type": "integer"},
                "note": {"type": ["string", "null"], "maxLength": 40}
            },
            "required": ["city", "sky", "high_c"]
        }),
    );
    let req = LlmRequest::new(
        "openai-compat:smollm2-135m".parse().unwrap(),
        vec![Message::user("The weather in Lyon today, please.")],
    )
    .with_options(
        LlmOptions {
            max_tokens: Some(120),
            temperature: Some(0.0),
            ..LlmOptions::default()
        }
        .with_response_format(format.clone()),
    );
    let response = client.complete(req).await.expect("the call");
    let text = response.message.to_string();
    let value = format
        .check(&text)
        .unwrap_or_else(|e| panic!("{e}\nanswer: {text}"));
    assert!(
        value["sky"] == "zqx-clear" || value["sky"] == "zqx-cloudy",
        "{value}"
    );
    // Strict made every property required: the optional one is written too.
    assert!(value.get("note").is_some(), "{value}");
}
