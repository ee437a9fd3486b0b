//! `Providers::context_window` against a server on loopback: a llama.cpp server's `/props`
//! gives the window one slot serves; anything else — no such page, a page that is not JSON, one
//! that never ends — gives none, quickly and without taking memory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::time::{Duration, Instant};

use motet_directives::ModelRef;
use motet_providers::testing::{End, HostileServer, Reply};
use motet_providers::{ProviderKind, Providers, ProvidersConfig};

async fn window_from(reply: Reply) -> (Option<u32>, String) {
    let server = HostileServer::start([reply]).await.unwrap();
    let providers = Providers::new(
        ProvidersConfig::new().with_base_url(ProviderKind::OpenAiCompat, server.url()),
    )
    .unwrap();
    let model: ModelRef = "openai-compat:local".parse().unwrap();
    let window = providers.context_window(&model).await;
    let path = server
        .requests()
        .first()
        .map(|r| r.path().to_owned())
        .unwrap_or_default();
    (window, path)
}

#[tokio::test]
async fn a_llama_server_reports_its_slot_and_nothing_else_reports_a_window() {
    let props = r#"{"default_generation_settings":{"n_ctx":2048},"total_slots":2}"#;
    let (window, path) = window_from(Reply::json(200, props)).await;
    assert_eq!(window, Some(2048));
    assert_eq!(path, "/props");

    assert_eq!(window_from(Reply::status(404)).await.0, None);
    assert_eq!(window_from(Reply::events(["data: {}\n\n"])).await.0, None);

    // A JSON page that never ends is given up past 1 MiB, well before the 2 s bound.
    let endless = Reply::events([format!("[{}", "0,".repeat(4096))])
        .without_header("content-type")
        .header("content-type", "application/json")
        .end(End::RepeatLast);
    let started = Instant::now();
    assert_eq!(window_from(endless).await.0, None);
    assert!(started.elapsed() < Duration::from_secs(5));

    // A known model's window comes from the table, without asking anything.
    let providers = Providers::new(ProvidersConfig::new()).unwrap();
    let model: ModelRef = "anthropic:claude-sonnet-4-5".parse().unwrap();
    assert_eq!(providers.context_window(&model).await, Some(200_000));
}
