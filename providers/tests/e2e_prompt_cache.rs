//! End to end against a real llama.cpp server with its prompt cache on: the second of two
//! requests with the same prefix reports cached prompt tokens, in all three dialects it speaks,
//! and motet reads them into `Usage::cache_read_tokens`.
//!
//! The server: `MOTET_LOCAL_LLM_CACHE_URL` when set; otherwise, when `MOTET_LOCAL_LLM_URL` says
//! the local server is built and running, this test starts a second one with its cache on
//! (`MOTET_LLM_CACHE=1 bash scripts/local-llm.sh start 8090`, the port from
//! `MOTET_LOCAL_LLM_CACHE_PORT`) and stops it again if it started it. The default server runs
//! without a prompt cache, so that the other end-to-end tests get the same bytes every time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::process::Command;

use motet_directives::{LlmOptions, LlmRequest, Message};
use motet_providers::{Dialect, HttpClient, LlmClient};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/local-llm.sh");

/// A cached server's URL, and the port to stop afterwards when this test started it.
fn server() -> Option<(String, Option<String>)> {
    let set = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().trim_end_matches('/').to_owned())
            .filter(|v| !v.is_empty())
    };
    if let Some(url) = set("MOTET_LOCAL_LLM_CACHE_URL") {
        return Some((url, None));
    }
    if set("MOTET_LOCAL_LLM_URL").is_none() {
        common::missing(
            "neither MOTET_LOCAL_LLM_CACHE_URL nor MOTET_LOCAL_LLM_URL is set \
             (MOTET_LLM_CACHE=1 bash scripts/local-llm.sh start 8090)",
        );
        return None;
    }
    let port = set("MOTET_LOCAL_LLM_CACHE_PORT").unwrap_or_else(|| "8090".to_owned());
    let running = Command::new("bash")
        .args([SCRIPT, "status", &port])
        .output()
        .is_ok_and(|out| out.status.success());
    let started = Command::new("bash")
        .args([SCRIPT, "start", &port])
        .env("MOTET_LLM_CACHE", "1")
        .output()
        .expect("run scripts/local-llm.sh");
    assert!(
        started.status.success(),
        "could not start a cached server: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    let url = String::from_utf8_lossy(&started.stdout).trim().to_owned();
    Some((url, (!running).then_some(port)))
}

fn request(model: &str) -> LlmRequest {
    let system = "You are a terse assistant. You answer questions about geography, history and \
                  science in one short sentence, never more, and you never ask questions back.";
    LlmRequest::new(
        model.parse().unwrap(),
        vec![
            Message::system(system),
            Message::user("Name the capital of France."),
        ],
    )
    .with_options(LlmOptions {
        max_tokens: Some(8),
        temperature: Some(0.0),
        ..LlmOptions::default()
    })
}

#[tokio::test]
async fn a_repeated_prefix_is_reported_cached_in_every_dialect() {
    let Some((url, ours)) = server() else { return };
    let dialects = [
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
        (Dialect::Anthropic, url.clone(), "anthropic:smollm2-135m"),
    ];
    let mut failures = Vec::new();
    for (dialect, base, model) in dialects {
        let client = HttpClient::new(dialect, base, None).unwrap();
        let first = client.complete(request(model)).await.unwrap();
        let second = client.complete(request(model)).await.unwrap();
        println!(
            "{dialect}: first {:?}, second {:?}",
            first.usage, second.usage
        );
        let usage = second.usage;
        if usage.cache_read_tokens == 0 || usage.cache_read_tokens > usage.input_tokens {
            failures.push(format!("{dialect}: {usage:?}"));
        }
    }
    if let Some(port) = ours {
        let _ = Command::new("bash").args([SCRIPT, "stop", &port]).output();
    }
    assert!(
        failures.is_empty(),
        "no cached tokens reported: {failures:?}"
    );
}
