//! A forced first tool call through the runtime: the model is made to call a tool, then may
//! answer (`reset_tool_choice`), on the scripted model and on the real local server. Without
//! the reset the same request loops until `max_iterations`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use motet_agents::{FailureReason, ReactCompleted, ReactFailed};
use motet_directives::{
    AssistantBlock, AssistantMessage, LlmResponse, StopReason, ToolArgs, ToolChoice, Usage,
};
use motet_providers::{Dialect, HttpClient, LlmClient};
use motet_runtime::agent::{AskError, AskOptions, ReActAgent, Runtime};
use motet_runtime::testing::ScriptedModel;
use motet_runtime::tool::{Tool, ToolError, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Factors {
    a: i64,
    b: i64,
}

/// `multiply`, counting its calls.
fn multiply(calls: Arc<AtomicU32>) -> impl Tool {
    tool_fn(
        "multiply",
        "Multiplies integers a and b.",
        move |f: Factors| {
            calls.fetch_add(1, Ordering::Relaxed);
            async move {
                f.a.checked_mul(f.b)
                    .map(|p| p.to_string())
                    .ok_or_else(|| ToolError::failed("overflow"))
            }
        },
    )
}

/// An agent on `model` with `multiply` (counting into `calls`), made to call a tool as
/// `choice` says, within three LLM calls of short, deterministic answers.
fn multiplier(name: &str, model: &str, calls: &Arc<AtomicU32>, choice: ToolChoice) -> ReActAgent {
    ReActAgent::new(name, model)
        .system("Answer with the tool's result in one short sentence.")
        .tool(multiply(calls.clone()))
        .tool_choice(choice)
        .configure(|mut c| {
            c.options.max_tokens = Some(48);
            c.options.temperature = Some(0.0);
            c.with_max_iterations(3)
        })
}

fn options() -> AskOptions {
    AskOptions {
        timeout: Duration::from_secs(180),
        ..AskOptions::default()
    }
}

#[tokio::test]
async fn the_model_is_made_to_call_first_and_then_may_answer() {
    let usage = Usage::default();
    let call = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "c1",
            "multiply",
            ToolArgs::from_text(r#"{"a":17,"b":23}"#),
        )],
        stop_reason: StopReason::ToolUse,
    };
    let model = Arc::new(ScriptedModel::new([
        Ok(LlmResponse::new(call, usage)),
        Ok(LlmResponse::new(AssistantMessage::text("391"), usage)),
    ]));
    let runtime = Runtime::builder().llm(model.clone()).build().unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let named = ToolChoice::Tool {
        name: "multiply".into(),
    };
    let agent = runtime
        .spawn(multiplier("calc", "openai:gpt-5.2", &calls, named.clone()))
        .await
        .unwrap();
    let reply = agent.ask_with("17 * 23?", options()).await.unwrap();
    assert_eq!(
        reply.signal.data_as::<ReactCompleted>().unwrap().answer,
        "391"
    );
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    let choices: Vec<ToolChoice> = model
        .requests()
        .into_iter()
        .map(|r| r.tool_choice)
        .collect();
    assert_eq!(choices, [named, ToolChoice::Auto]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn with_the_real_model_a_forced_call_runs_the_tool_then_the_request_ends() {
    let Some(url) = common::local_llm() else {
        return;
    };
    let client: Arc<dyn LlmClient> =
        Arc::new(HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap());
    let runtime = Runtime::builder().llm(client).build().unwrap();
    let model = "openai-compat:smollm2-135m";
    let question = "What is 17 times 23?";

    // Forced, then reset: the tool runs, and the request ends within its iterations.
    let calls = Arc::new(AtomicU32::new(0));
    let agent = runtime
        .spawn(multiplier("reset", model, &calls, ToolChoice::Required))
        .await
        .unwrap();
    let reply = agent.ask_with(question, options()).await.unwrap();
    let done: ReactCompleted = reply.signal.data_as().unwrap();
    assert!(calls.load(Ordering::Relaxed) >= 1, "the tool never ran");
    assert!(done.iterations >= 2, "{done:?}");
    println!(
        "forced then auto: {} tool calls, {} LLM calls, answer {:?}",
        calls.load(Ordering::Relaxed),
        done.iterations,
        done.answer
    );

    // Forced on every call: the model can never answer, and the request runs out of
    // iterations — what the reset is there to prevent.
    let calls = Arc::new(AtomicU32::new(0));
    let forced = multiplier("forced", model, &calls, ToolChoice::Required)
        .configure(|c| c.with_reset_tool_choice(false));
    let agent = runtime.spawn(forced).await.unwrap();
    let Err(AskError::Failed { reply }) = agent.ask_with(question, options()).await else {
        panic!("a request forced to call a tool on every call should not complete");
    };
    let failed: ReactFailed = reply.data_as().unwrap();
    assert!(
        matches!(failed.reason, FailureReason::MaxIterations { .. }),
        "{:?}",
        failed.reason
    );
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    runtime.shutdown().await;
}
