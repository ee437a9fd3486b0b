//! Structured answers through the front door: `AgentHandle::ask_structured::<T>` sends `T`'s
//! JSON Schema with the request, ReAct's calls carry it, and the answer comes back decoded
//! into `T` — after tool use, after a nonconforming answer sent back to the model, or as a
//! typed failure once the retries are spent. The real llama.cpp server runs it end to end when
//! MOTET_LOCAL_LLM_URL is set: its grammar makes even the 135M model conform.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{FailureReason, ReactFailed};
use motet_directives::{AssistantBlock, Message, ResponseFormat, ToolArgs};
use motet_providers::{Dialect, HttpClient};
use motet_runtime::agent::{AskError, AskOptions, ReActAgent, Runtime, StructuredError};
use motet_runtime::testing::ScriptedModel;
use schemars::JsonSchema;
use serde::Deserialize;

use common::*;

/// What the calculator agent is asked for.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Sum {
    a: i64,
    b: i64,
    sum: i64,
}

fn text(answer: &str) -> Result<motet_directives::LlmResponse, motet_providers::ProviderError> {
    turn(vec![AssistantBlock::text(answer)])
}

fn last_user_message(request: &motet_directives::LlmRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => Some(content.to_string()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn ask_structured_decodes_the_answer_after_tool_use() {
    let model = ScriptedModel::new([
        turn(vec![AssistantBlock::tool_use(
            "call_1",
            "add",
            ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
        )]),
        text(r#"{"a": 2, "b": 3, "sum": 5}"#),
    ]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("calc")).await;

    let sum: Sum = agent.ask_structured("What is 2 + 3?").await.unwrap();
    assert_eq!(sum, Sum { a: 2, b: 3, sum: 5 });

    // Both calls carried Sum's schema, the tools offered beside it.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.options.response_format,
            Some(ResponseFormat::for_type::<Sum>())
        );
        assert_eq!(request.tools.len(), 1);
    }
    // A plain ask on the same agent sends no format.
    model.push(text("5"));
    agent.ask("And again?").await.unwrap();
    assert_eq!(model.requests()[2].options.response_format, None);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_nonconforming_answer_is_sent_back_and_the_fixed_one_decoded() {
    let model = ScriptedModel::new([text("2 + 3 = 5"), text(r#"{"a": 2, "b": 3, "sum": 5}"#)]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("calc")).await;

    let sum: Sum = agent.ask_structured("What is 2 + 3?").await.unwrap();
    assert_eq!(sum.sum, 5);
    let retry = last_user_message(&model.requests()[1]);
    assert!(
        retry.starts_with("Your answer does not have the required format: the answer is not JSON"),
        "{retry}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn answers_that_never_conform_fail_with_a_typed_reason() {
    let model = ScriptedModel::new([
        text(r#"{"a": 2, "b": 3}"#),
        text(r#"{"a": 2, "b": 3, "sum": "five"}"#),
    ]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let calc =
        ReActAgent::new("calc", "openai:gpt-5.2").configure(|c| c.with_max_format_retries(1));
    let agent = runtime.spawn(calc).await.unwrap();

    let error = agent
        .ask_structured::<Sum>("What is 2 + 3?")
        .await
        .unwrap_err();
    let StructuredError::Ask(AskError::Failed { reply }) = error else {
        panic!("{error:?}");
    };
    let failed: ReactFailed = reply.data_as().unwrap();
    assert_eq!(
        failed.reason,
        FailureReason::Nonconforming {
            message:
                "the answer does not match the schema at $.sum: expected integer, found a string"
                    .into(),
            attempts: 2,
        }
    );
    assert_eq!(model.requests().len(), 2);
    runtime.shutdown().await;
}

/// What the local model is asked for: an enum it would never write unprompted, so a value
/// back means the grammar held.
///
/// The city is bounded: the grammar fixes the shape, not the length, and a small model left
/// alone in a string writes until its token limit.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code, reason = "read through Debug")]
struct Weather {
    #[schemars(length(max = 40))]
    city: String,
    sky: Sky,
    high_c: i32,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Sky {
    ZqxClear,
    ZqxCloudy,
}

#[tokio::test]
async fn with_the_real_model() {
    let Some(url) = local_llm() else { return };
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    let runtime = Runtime::builder().llm(Arc::new(client)).build().unwrap();
    let weather = ReActAgent::new("weather", "openai-compat:smollm2-135m").configure(|mut c| {
        c.options.max_tokens = Some(120);
        c.options.temperature = Some(0.0);
        c
    });
    let agent = runtime.spawn(weather).await.unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(120),
        ..AskOptions::default()
    };
    let weather: Weather = agent
        .ask_structured_with("The weather in Lyon today, please.", options)
        .await
        .unwrap();
    assert!(matches!(weather.sky, Sky::ZqxClear | Sky::ZqxCloudy));
    println!("decoded from the local model: {weather:?}");
    runtime.shutdown().await;
}
