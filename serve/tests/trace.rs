//! Every HTTP request in a span joined to its run's trace, exported over OTLP to a real
//! receiver: a native run started under the caller's `traceparent` continues the caller's
//! trace; the requests that read the run, stream its events and cancel it sit in that trace,
//! under the request that started it; an OpenAI-compatible completion is the root of its run's
//! trace.
//!
//! One test per file: the tracing subscriber is global to the process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use common::{Sse, json_of, serve, text};
use motet_runtime::telemetry::Telemetry;
use motet_runtime::testing::otlp::{OtlpReceiver, ReceivedSpan};
use motet_serve::{RunLimits, Tokens};

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// The `http.request` span of `method path`.
fn request_span<'a>(spans: &'a [ReceivedSpan], method: &str, path: &str) -> &'a ReceivedSpan {
    spans
        .iter()
        .find(|s| {
            s.name == "http.request"
                && s.attr("method") == Some(method)
                && s.attr("path") == Some(path)
        })
        .unwrap_or_else(|| panic!("no span for {method} {path}: {spans:#?}"))
}

/// The `invoke_agent` span of request `id`.
fn run_span<'a>(spans: &'a [ReceivedSpan], id: &str) -> &'a ReceivedSpan {
    spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent") && s.attr("motet.request.id") == Some(id))
        .unwrap_or_else(|| panic!("no invoke_agent span for {id}: {spans:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_about_a_run_is_in_the_runs_trace() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let endpoint = receiver.http_endpoint();
    let guard = Telemetry::from_vars(|key| match key {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
        "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("http/protobuf".into()),
        "OTEL_SERVICE_NAME" => Some("motet-serve".into()),
        _ => None,
    })
    .unwrap()
    .without_log()
    .install()
    .unwrap();

    let server = serve(Tokens::open(), RunLimits::default()).await;
    server.model.push(vec![text("all clean")]);
    server.model.push(vec![text("5")]);

    // A native run, started inside the caller's trace.
    let started = server
        .http
        .post(server.at("/api/agents/janitor/threads/new/runs"))
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&serde_json::json!({"query": "clean up"}))
        .send()
        .await
        .unwrap();
    let run = json_of(started, 201).await;
    let id = run["id"].as_str().unwrap().to_owned();
    let run_path = format!("/api/agents/janitor/runs/{id}");
    let events_path = format!("{run_path}/events");
    let events = Sse::open(&server.http, &server.at(&events_path), None, None)
        .await
        .rest()
        .await;
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("answer"));
    let read = server.http.get(server.at(&run_path)).send().await.unwrap();
    json_of(read, 200).await;
    let cancel_path = format!("{run_path}/cancel");
    let late = server
        .http
        .post(server.at(&cancel_path))
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 409);

    // An OpenAI-compatible completion, with no caller trace.
    let completion = server
        .http
        .post(server.at("/v1/chat/completions"))
        .json(&serde_json::json!({"model": "janitor", "messages": [{"role": "user", "content": "2 + 3?"}]}))
        .send()
        .await
        .unwrap();
    let completion = json_of(completion, 200).await;
    let asked = completion["motet"]["request"].as_str().unwrap().to_owned();

    let runtime = server.runtime.clone();
    server.stop().await;
    runtime.shutdown().await;
    guard.shutdown().unwrap();
    let spans = receiver
        .wait_for(Duration::from_secs(10), |spans| {
            spans.iter().filter(|s| s.name == "http.request").count() >= 5
        })
        .await;

    let start = request_span(&spans, "POST", "/api/agents/janitor/threads/new/runs");
    assert_eq!(
        start.trace_id, CALLER_TRACE,
        "the caller's trace is continued"
    );
    assert_eq!(start.parent_span_id, CALLER_SPAN);
    assert_eq!(start.attr("run"), Some(id.as_str()));
    let invoked = run_span(&spans, &id);
    assert_eq!(
        invoked.trace_id, CALLER_TRACE,
        "the run is in the request's trace"
    );
    for (method, path) in [
        ("GET", &events_path),
        ("GET", &run_path),
        ("POST", &cancel_path),
    ] {
        let span = request_span(&spans, method, path);
        assert_eq!(
            span.trace_id, CALLER_TRACE,
            "{method} {path} joins the run's trace"
        );
        assert_eq!(span.parent_span_id, start.span_id, "{method} {path}");
        assert_eq!(span.attr("run"), Some(id.as_str()));
    }

    let completed = request_span(&spans, "POST", "/v1/chat/completions");
    assert_ne!(completed.trace_id, CALLER_TRACE);
    assert!(
        completed.parent_span_id.is_empty() || completed.parent_span_id.chars().all(|c| c == '0')
    );
    assert_eq!(run_span(&spans, &asked).trace_id, completed.trace_id);
}
