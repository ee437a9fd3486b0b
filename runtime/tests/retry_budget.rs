//! One retry budget for an LLM call: the HTTP client retries a failure before content with its
//! backoff; the strategy does not try the same call again on top (that multiplied one overload
//! into 3 × 3 requests). Against a real HTTP server on loopback that is always overloaded.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use motet_agents::{FailureReason, LlmErrorKind, ReactFailed};
use motet_providers::retry::RetryPolicy;
use motet_providers::{Dialect, HttpClient};
use motet_runtime::agent::{AskError, AskOptions, ReActAgent, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server that answers every request `503 overloaded`, counting them.
async fn overloaded() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = socket.read(&mut buf).await;
                let body = r#"{"error":{"message":"the engine is overloaded","type":"server_is_overloaded"}}"#;
                let reply = format!(
                    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (url, hits)
}

#[tokio::test]
async fn an_overload_costs_the_clients_retries_and_no_more() {
    let (url, hits) = overloaded().await;
    let retry = RetryPolicy {
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(40),
        ..RetryPolicy::default()
    };
    let client = HttpClient::new(Dialect::OpenAiChat, url, None)
        .unwrap()
        .with_retry(retry);
    let runtime = Runtime::builder().llm(Arc::new(client)).build().unwrap();
    // ReAct's own budget stays at its default (2 retries of a retryable failure).
    let agent = runtime
        .spawn(ReActAgent::new("a", "openai-compat:m"))
        .await
        .unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(60),
        ..AskOptions::default()
    };
    let Err(AskError::Failed { reply }) = agent.ask_with("hello", options).await else {
        panic!("an overloaded server must fail the request");
    };
    let failed: ReactFailed = reply.data_as().unwrap();
    let FailureReason::Llm { error } = &failed.reason else {
        panic!("{:?}", failed.reason);
    };
    // The real cause, not a timeout.
    assert_eq!(error.kind, LlmErrorKind::Overloaded, "{error:?}");
    assert!(error.message.contains("overloaded"), "{error:?}");
    // The first try and the client's two retries: 3 requests, not 9.
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    runtime.shutdown().await;
}
