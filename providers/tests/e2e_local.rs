//! End to end against a real llama.cpp server (`bash scripts/local-llm.sh start`): the three
//! dialects it speaks — Chat Completions, Responses, Anthropic Messages — for plain text, a
//! forced tool call, two tool calls in one turn, and the follow-up with the results.
//!
//! Runs when `MOTET_LOCAL_LLM_URL` is set (CI sets it); otherwise each test prints a skip line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;

use motet_directives::{
    AssistantBlock, LlmOptions, LlmRequest, LlmResponse, Message, StopReason, ToolChoice, ToolDef,
    ToolResult,
};
use motet_providers::{Dialect, HttpClient, LlmClient};
use serde_json::{Value, json};

fn server() -> Option<String> {
    match std::env::var("MOTET_LOCAL_LLM_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim_end_matches('/').to_owned()),
        _ => {
            common::missing("MOTET_LOCAL_LLM_URL is not set (bash scripts/local-llm.sh start)");
            None
        }
    }
}

/// The three dialects llama-server speaks, with the model ref each would be reached by.
fn clients(url: &str) -> Vec<(HttpClient, &'static str)> {
    [
        (
            Dialect::OpenAiChat,
            format!("{url}/v1"),
            "openai-compat:smollm2-135m",
        ),
        (
            Dialect::OpenAiResponses,
            format!("{url}/v1"),
            "openai-responses:smollm2-135m",
        ),
        (Dialect::Anthropic, url.to_owned(), "anthropic:smollm2-135m"),
    ]
    .into_iter()
    .map(|(dialect, base, model)| {
        let client = HttpClient::new(dialect, base, None).expect("client");
        (client, model)
    })
    .collect()
}

fn tools() -> Arc<[ToolDef]> {
    Arc::from(vec![
        ToolDef::new(
            "get_weather",
            "Current weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        ToolDef::new(
            "get_time",
            "Current time in a timezone.",
            json!({"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}),
        ),
    ])
}

fn request(model: &str, messages: Vec<Message>) -> LlmRequest {
    LlmRequest::new(model.parse().expect("model ref"), messages).with_options(LlmOptions {
        max_tokens: Some(96),
        temperature: Some(0.0),
        ..LlmOptions::default()
    })
}

fn calls(response: &LlmResponse) -> Vec<(String, String, Value)> {
    response
        .message
        .tool_calls()
        .map(|call| {
            let args: Value = call.parse_args().expect("arguments parse as JSON");
            (call.id.to_owned(), call.name.to_owned(), args)
        })
        .collect()
}

#[tokio::test]
async fn plain_text_in_every_dialect() {
    let Some(url) = server() else { return };
    for (client, model) in clients(&url) {
        let req = request(
            model,
            vec![Message::user("Say hello in one short sentence.")],
        );
        let response = client
            .complete(req)
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
        let text = response.message.to_string();
        assert!(!text.trim().is_empty(), "{model}: empty answer");
        assert!(!response.message.has_tool_calls(), "{model}");
        assert!(
            matches!(
                response.message.stop_reason,
                StopReason::EndTurn | StopReason::MaxTokens
            ),
            "{model}: {:?}",
            response.message.stop_reason
        );
        assert!(response.usage.output_tokens > 0, "{model}: no usage");
    }
}

#[tokio::test]
async fn a_forced_tool_call_then_the_answer_with_its_result() {
    let Some(url) = server() else { return };
    for (client, model) in clients(&url) {
        let question = Message::user("What is the weather in Paris?");
        let req = request(model, vec![question.clone()])
            .with_tools(tools())
            .with_tool_choice(ToolChoice::Required)
            .with_options(LlmOptions {
                max_tokens: Some(96),
                temperature: Some(0.0),
                parallel_tool_calls: Some(false),
                ..LlmOptions::default()
            });
        let first = client
            .complete(req)
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
        let made = calls(&first);
        // llama-server maps `parallel_tool_calls: false` to one call on its OpenAI endpoints;
        // its Anthropic endpoint ignores `disable_parallel_tool_use`, so a second call may come.
        if client.dialect() == Dialect::Anthropic {
            assert!(!made.is_empty(), "{model}: no tool call");
        } else {
            assert_eq!(made.len(), 1, "{model}: {made:?}");
        }
        for (_, name, args) in &made {
            assert!(
                name == "get_weather" || name == "get_time",
                "{model}: {name}"
            );
            assert!(args.is_object(), "{model}: {args}");
        }
        assert_eq!(first.message.stop_reason, StopReason::ToolUse, "{model}");
        let results = made
            .iter()
            .map(|(id, _, _)| ToolResult::ok(id.clone(), "Sunny, 24 °C."))
            .collect();

        // The follow-up carries the assistant turn and the result; the model answers in text.
        let follow = request(
            model,
            vec![
                question,
                Message::Assistant(first.message.clone()),
                Message::ToolResults { results },
            ],
        )
        .with_tools(tools());
        let second = client
            .complete(follow)
            .await
            .unwrap_or_else(|e| panic!("{model} follow-up: {e}"));
        let text = second.message.to_string();
        assert!(
            !text.trim().is_empty() || second.message.has_tool_calls(),
            "{model}: the follow-up said nothing"
        );
    }
}

#[tokio::test]
async fn two_tool_calls_in_one_turn_stay_apart() {
    let Some(url) = server() else { return };
    for (client, model) in clients(&url) {
        let req = request(
            model,
            vec![Message::user(
                "Call get_weather for Paris and get_time for UTC, both now.",
            )],
        )
        .with_tools(tools())
        .with_tool_choice(ToolChoice::Required)
        .with_options(LlmOptions {
            max_tokens: Some(160),
            temperature: Some(0.0),
            parallel_tool_calls: Some(true),
            ..LlmOptions::default()
        });
        let response = client
            .complete(req)
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
        let made = calls(&response);
        // A 135M model decides how many calls it makes; what must hold is the protocol: every
        // call whole, ids unique, arguments JSON objects, blocks in order.
        assert!(!made.is_empty(), "{model}: no tool call");
        let mut ids: Vec<&str> = made.iter().map(|(id, _, _)| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), made.len(), "{model}: duplicate ids {made:?}");
        for (_, _, args) in &made {
            assert!(args.is_object(), "{model}: {args}");
        }
        assert!(
            response
                .message
                .blocks
                .iter()
                .all(|b| !matches!(b, AssistantBlock::Reasoning { .. })),
            "{model}"
        );
        println!("{model}: {} tool calls", made.len());
    }
}

#[tokio::test]
async fn a_named_tool_choice_calls_that_tool() {
    let Some(url) = server() else { return };
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    // The question is about the weather; the choice names the other tool. llama.cpp reads a
    // named `tool_choice` object as `auto`, so only the narrowed request makes this hold.
    for (name, question) in [
        ("get_time", "What is the weather in Paris?"),
        ("get_weather", "What time is it in UTC?"),
    ] {
        let req = request("openai-compat:smollm2-135m", vec![Message::user(question)])
            .with_tools(tools())
            .with_tool_choice(ToolChoice::Tool { name: name.into() });
        let response = client.complete(req).await.unwrap();
        let made = calls(&response);
        assert!(!made.is_empty(), "{name}: no tool call");
        assert!(
            made.iter().all(|(_, called, _)| called == name),
            "{name}: {made:?}"
        );
    }
}
