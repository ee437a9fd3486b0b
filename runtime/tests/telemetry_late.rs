//! Telemetry installed after a runtime has already run a request: the runtime's metrics go to
//! the meter provider installed later, not to the no-op one it first saw.
//!
//! One test per file: the meter provider is global to the process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use motet_directives::{AssistantMessage, LlmResponse, Usage};
use motet_runtime::agent::ReActAgent;
use motet_runtime::telemetry::Telemetry;
use motet_runtime::testing::ScriptedModel;
use motet_runtime::testing::otlp::OtlpReceiver;

use common::spawned;

fn answer() -> Result<LlmResponse, motet_providers::ProviderError> {
    Ok(LlmResponse::new(
        AssistantMessage::text("hello"),
        Usage {
            input_tokens: 3,
            output_tokens: 1,
            ..Usage::default()
        },
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_used_before_init_reports_to_the_provider_installed_later() {
    let (runtime, agent) = spawned(
        ScriptedModel::new([answer(), answer()]),
        ReActAgent::new("early", "openai:gpt-5.2"),
    )
    .await;
    // Before any telemetry: the metrics of this request go nowhere.
    agent.ask("one").await.unwrap();

    let receiver = OtlpReceiver::start().await.unwrap();
    let endpoint = receiver.grpc_endpoint();
    let (_dispatch, guard) = tokio::task::spawn_blocking(move || {
        Telemetry::from_vars(|_| None)
            .unwrap()
            .with_endpoint(endpoint)
            .without_log()
            .into_dispatch()
            .unwrap()
    })
    .await
    .unwrap();
    agent.ask("two").await.unwrap();
    runtime.shutdown().await;
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();

    let names = receiver.metric_names();
    for metric in ["gen_ai.client.token.usage", "motet.requests"] {
        assert!(names.iter().any(|n| n == metric), "{metric} in {names:?}");
    }
}
