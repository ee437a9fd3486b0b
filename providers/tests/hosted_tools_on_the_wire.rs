//! The MCP server's token and the hosted tools' headers on their way out: the token never
//! prints, never serializes (a stored request reads back without it and is not sent until it
//! is set again), reaches only the body sent to the provider, and is scrubbed from any error the
//! provider quotes it in; Anthropic gets every beta it needs in one header; Chat Completions
//! sends nothing at all.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use common::hosted::{TOKEN, deepwiki, only, request, unsupported};
use motet_directives::{HostedTool, LlmRequest, Secret, WebSearch};
use motet_providers::testing::{HostileServer, Reply, wire};
use motet_providers::{ApiKey, Dialect, HttpClient, LlmClient, ProviderError, RetryPolicy, models};

#[test]
fn the_token_never_prints_nor_serializes_but_reaches_the_wire() {
    for model in ["anthropic:claude-sonnet-4-5", "openai-responses:gpt-5.2"] {
        let req = request(model, vec![HostedTool::McpServer(deepwiki())]);
        assert!(!format!("{req:?}").contains(TOKEN));
        assert!(!format!("{req:#?}").contains(TOKEN));
        let stored = serde_json::to_string(&req).unwrap();
        assert!(!stored.contains(TOKEN), "{stored}");
        let dialect = models::dialect_for(&req.model).unwrap();
        let sent = String::from_utf8(dialect.encode(&req).unwrap()).unwrap();
        assert!(
            sent.contains(TOKEN),
            "{model}: the token is not in the body"
        );

        // A stored request reads back without the token, and is not sent until it is set
        // again.
        let back: LlmRequest = serde_json::from_str(&stored).unwrap();
        for error in [
            models::validate(&back).unwrap_err(),
            dialect.encode(&back).unwrap_err(),
        ] {
            let ProviderError::InvalidRequest { status: 0, message } = &error else {
                panic!("{model}: {error:?}");
            };
            assert!(message.contains("withheld"), "{message}");
        }
        let mut again = back.clone();
        let HostedTool::McpServer(server) = &mut again.options.hosted_tools[0] else {
            panic!("not an MCP server");
        };
        server.authorization = Some(Secret::new(TOKEN));
        assert_eq!(again, req);
    }
}

#[test]
fn anthropic_asks_for_every_beta_in_one_header() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dialect = Dialect::Anthropic;
        let server = HostileServer::start([Reply::events(wire::answer(dialect, "ok"))])
            .await
            .unwrap();
        let client = client_for(dialect, &server);
        let mut req = request(
            wire::model(dialect),
            vec![HostedTool::CodeExecution, HostedTool::McpServer(deepwiki())],
        );
        req.options.thinking_budget = Some(2048);
        client.complete(req).await.unwrap();
        let sent = &server.requests()[0];
        assert_eq!(
            sent.header("anthropic-beta"),
            Some("interleaved-thinking-2025-05-14,code-execution-2025-08-25,mcp-client-2025-04-04")
        );
        assert!(sent.body_text().contains(TOKEN));

        // Web search alone needs no beta.
        let server = HostileServer::start([Reply::events(wire::answer(dialect, "ok"))])
            .await
            .unwrap();
        let req = request(
            wire::model(dialect),
            vec![HostedTool::WebSearch(WebSearch::default())],
        );
        client_for(dialect, &server).complete(req).await.unwrap();
        assert_eq!(server.requests()[0].header("anthropic-beta"), None);
    });
}

fn client_for(dialect: Dialect, server: &HostileServer) -> HttpClient {
    HttpClient::new(
        dialect,
        wire::base_url(dialect, server.url()),
        Some(ApiKey::new("sk-test-key")),
    )
    .unwrap()
    .with_retry(RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    })
}

/// The error of a request with the deepwiki MCP server, sent to `server` as `dialect`.
async fn mcp_call_failing(dialect: Dialect, server: &HostileServer) -> ProviderError {
    let req = request(
        wire::model(dialect),
        vec![HostedTool::McpServer(deepwiki())],
    );
    client_for(dialect, server).complete(req).await.unwrap_err()
}

#[test]
fn a_provider_error_quoting_the_token_is_scrubbed_and_chat_completions_sends_nothing() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for dialect in [Dialect::Anthropic, Dialect::OpenAiResponses] {
            let echo = format!("MCP server deepwiki rejected token {TOKEN} (401)");
            let server = HostileServer::start([Reply::json(400, wire::error_body(dialect, &echo))])
                .await
                .unwrap();
            let error = mcp_call_failing(dialect, &server).await;
            let message = error.to_string();
            assert!(
                matches!(error, ProviderError::InvalidRequest { status: 400, .. }),
                "{error:?}"
            );
            assert!(!message.contains(&TOKEN[4..]), "{dialect}: {message}");
            assert!(
                message.contains("rejected token [redacted]"),
                "{dialect}: {message}"
            );

            // And in an error event after content, once the stream is flowing.
            let mut events = wire::opening(dialect);
            events.push(wire::text(dialect, "Asking the server…"));
            events.push(wire::error_event(dialect, &echo));
            let server = HostileServer::start([Reply::events(events)]).await.unwrap();
            let message = mcp_call_failing(dialect, &server).await.to_string();
            assert!(!message.contains(&TOKEN[4..]), "{dialect}: {message}");
            assert!(
                message.contains("rejected token [redacted]"),
                "{dialect}: {message}"
            );
        }

        let server = HostileServer::start([Reply::events(wire::answer(Dialect::OpenAiChat, "ok"))])
            .await
            .unwrap();
        let req = only("openai:gpt-4.1", HostedTool::CodeExecution);
        let error = client_for(Dialect::OpenAiChat, &server)
            .complete(req)
            .await
            .unwrap_err();
        assert!(unsupported(Dialect::OpenAiChat, "code_execution")(&error));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(server.hits(), 0, "a refused request reached the server");
    });
}
