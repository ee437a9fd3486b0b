//! The same spans over OTLP/HTTP with protobuf bodies (`OTEL_EXPORTER_OTLP_PROTOCOL=
//! http/protobuf`), set up from environment-style variables, to a real receiver.
//!
//! One test per file: the tracing subscriber is global to the process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use motet_directives::{AssistantMessage, LlmResponse, Usage};
use motet_runtime::agent::ReActAgent;
use motet_runtime::telemetry::Telemetry;
use motet_runtime::testing::ScriptedModel;
use motet_runtime::testing::otlp::OtlpReceiver;

use common::spawned;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_over_http_protobuf_from_the_environment() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let endpoint = receiver.http_endpoint();
    let guard = Telemetry::from_vars(|key| match key {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
        "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("http/protobuf".into()),
        "OTEL_SERVICE_NAME" => Some("motet-http".into()),
        _ => None,
    })
    .unwrap()
    .without_log()
    .install()
    .unwrap();

    let answer = LlmResponse::new(
        AssistantMessage::text("hello"),
        Usage {
            input_tokens: 4,
            output_tokens: 1,
            ..Usage::default()
        },
    );
    let (runtime, agent) = spawned(
        ScriptedModel::new([Ok(answer)]),
        ReActAgent::new("greeter", "anthropic:claude-sonnet-4-5"),
    )
    .await;
    agent.ask("hi").await.unwrap();
    runtime.shutdown().await;
    guard.shutdown().unwrap();

    let spans = receiver
        .wait_for(Duration::from_secs(5), |s| !s.is_empty())
        .await;
    let request = spans
        .iter()
        .find(|s| s.name == "invoke_agent greeter")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(request.service_name, "motet-http");
    let chat = spans
        .iter()
        .find(|s| s.name == "chat claude-sonnet-4-5")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(chat.parent_span_id, request.span_id);
    assert_eq!(chat.trace_id, request.trace_id);
    assert_eq!(chat.attr("gen_ai.provider.name"), Some("anthropic"));
    assert_eq!(chat.attr("gen_ai.usage.input_tokens"), Some("4"));
}

#[test]
fn bad_settings_are_typed_errors_naming_the_variable() {
    let err = Telemetry::from_vars(|key| {
        (key == "OTEL_EXPORTER_OTLP_PROTOCOL").then(|| "http/json".to_owned())
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
        "{err}"
    );
    let err = Telemetry::from_vars(|key| {
        (key == "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").then(|| "yes".to_owned())
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
        "{err}"
    );
    for key in [
        "OTEL_BSP_MAX_QUEUE_SIZE",
        "OTEL_BSP_SCHEDULE_DELAY",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    ] {
        let err = Telemetry::from_vars(|k| (k == key).then(|| "lots".to_owned())).unwrap_err();
        assert!(err.to_string().contains(key), "{err}");
    }
}
