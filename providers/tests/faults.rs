//! Faults, against a scripted HTTP server on 127.0.0.1: each gives the documented typed error
//! or retry — never a panic, never a hang (every test runs under a time limit).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::time::{Duration, Instant};

use futures::StreamExt;
use motet_directives::{LlmRequest, Message};
use motet_providers::retry::RetryPolicy;
use motet_providers::testing::{End, HostileServer, Reply};
use motet_providers::{
    ApiKey, Dialect, HttpClient, Limits, LlmClient, LlmEvent, ProviderError, ProviderKind,
    Providers, ProvidersConfig, Timeouts,
};
use tokio::net::TcpListener;

/// A scripted server answering with `replies` in order (the last repeats).
async fn serve(replies: impl IntoIterator<Item = Reply>) -> HostileServer {
    HostileServer::start(replies).await.expect("bind")
}

fn chat_chunk(content: &str) -> String {
    format!(
        "data: {}\n\n",
        serde_json::json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
    )
}

fn chat_end() -> String {
    format!(
        "data: {}\n\ndata: [DONE]\n\n",
        serde_json::json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    )
}

fn ok_stream() -> Reply {
    Reply::events([chat_chunk("Hello"), chat_end()])
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        ..RetryPolicy::default()
    }
}

fn client(url: &str) -> HttpClient {
    HttpClient::new(
        Dialect::OpenAiChat,
        format!("{url}/v1"),
        Some(ApiKey::new("sk-test-SECRET-123")),
    )
    .expect("client")
    .with_retry(fast_retries())
    .with_timeouts(Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_millis(500),
        idle: Duration::from_millis(300),
    })
    .expect("timeouts")
}

fn request() -> LlmRequest {
    LlmRequest::new(
        "openai-compat:test".parse().expect("ref"),
        vec![Message::user("hi")],
    )
}

/// Runs a future under a time limit so that a hang fails the test instead of stalling it.
async fn limit<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the client hung")
}

#[tokio::test]
async fn rate_limited_then_ok_honours_retry_after() {
    let server = serve([
        Reply::status(429)
            .header("retry-after-ms", "300")
            .body(r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#),
        ok_stream(),
    ])
    .await;
    let started = Instant::now();
    let r = limit(client(server.url()).complete(request()))
        .await
        .expect("retried");
    assert_eq!(r.message.to_string(), "Hello");
    assert_eq!(server.hits(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "waited {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn rate_limited_every_time_gives_up_with_the_hint() {
    let server = serve([Reply::status(429)
        .header("retry-after", "0")
        .body(r#"{"error":{"message":"slow down","code":"rate_limit_exceeded"}}"#)])
    .await;
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("gives up");
    assert_eq!(
        err,
        ProviderError::RateLimited {
            retry_after: Some(Duration::ZERO),
            message: "slow down".into()
        }
    );
    assert_eq!(server.hits(), 3, "1 try + 2 retries");
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    for status in [500, 529, 503] {
        let server = serve([Reply::status(status).body("oops"), ok_stream()]).await;
        let r = limit(client(server.url()).complete(request()))
            .await
            .expect("retried");
        assert_eq!(r.message.to_string(), "Hello", "{status}");
        assert_eq!(server.hits(), 2, "{status}");
    }
}

#[tokio::test]
async fn x_should_retry_false_is_obeyed() {
    let server = serve([
        Reply::status(500)
            .header("x-should-retry", "false")
            .body("no"),
        ok_stream(),
    ])
    .await;
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("no retry");
    assert!(
        matches!(err, ProviderError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn an_html_error_page_is_a_typed_error_with_its_status() {
    let page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
    let server = serve([Reply::status(502)
        .header("content-type", "text/html")
        .body(page)])
    .await;
    let err = limit(
        client(server.url())
            .with_retry(RetryPolicy::none())
            .complete(request()),
    )
    .await
    .expect_err("error");
    match err {
        ProviderError::Server { status, message } => {
            assert_eq!(status, 502);
            assert!(message.contains("502 Bad Gateway"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let server = serve([Reply::status(400)
        .body(r#"{"error":{"message":"bad field `x`","type":"invalid_request_error"}}"#)])
    .await;
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("error");
    assert_eq!(
        err,
        ProviderError::InvalidRequest {
            status: 400,
            message: "bad field `x`".into()
        }
    );
    assert_eq!(server.hits(), 1, "400 is not retried");
}

#[tokio::test]
async fn closing_mid_stream_after_content_is_a_typed_error_not_a_retry() {
    // A body that ends cleanly without a finish reason, and a connection cut mid-body.
    // Both are a truncated stream: the server was reached and answered.
    for (end, why) in [
        (End::Clean, "without a finish_reason"),
        (End::Cut, "broke off after the server answered"),
    ] {
        let server = serve([
            Reply::events([chat_chunk("Hel"), chat_chunk("lo")])
                .pause(Duration::from_millis(10))
                .end(end),
            ok_stream(),
        ])
        .await;
        let mut stream = limit(client(server.url()).stream(request()))
            .await
            .expect("starts");
        let mut got = Vec::new();
        let mut errors = Vec::new();
        while let Some(item) = limit(stream.next()).await {
            match item {
                Ok(event) => got.push(event),
                Err(e) => errors.push(e),
            }
        }
        assert!(got.iter().any(|e| matches!(e, LlmEvent::TextDelta { .. })));
        match errors.as_slice() {
            [ProviderError::StreamTruncated { reason }] => {
                assert!(reason.contains(why), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.hits(), 1, "no silent retry after content");
    }
}

#[tokio::test]
async fn closing_before_any_content_is_retried() {
    let server = serve([Reply::events([": keep-alive\n\n"]), ok_stream()]).await;
    let r = limit(client(server.url()).complete(request()))
        .await
        .expect("retried");
    assert_eq!(r.message.to_string(), "Hello");
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn malformed_json_in_a_data_line_is_a_protocol_error() {
    let server = serve([Reply::events([
        chat_chunk("Hi"),
        "data: {\"choices\": [oops\n\n".into(),
    ])])
    .await;
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("error");
    assert!(matches!(err, ProviderError::Protocol { .. }), "{err:?}");
}

#[tokio::test]
async fn an_error_event_mid_stream_is_typed() {
    let server = serve([Reply::events([
        chat_chunk("Hi"),
        "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n"
            .into(),
    ])])
    .await;
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("error");
    assert!(
        matches!(err, ProviderError::Server { status: 0, .. }),
        "{err:?}"
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn stalling_between_events_hits_the_idle_timeout() {
    let server =
        serve([Reply::events([chat_chunk("Hi")]).end(End::Hold(Duration::from_secs(10)))]).await;
    let started = Instant::now();
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("timeout");
    assert_eq!(
        err,
        ProviderError::Timeout {
            phase: "next event".into()
        }
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn stalling_before_the_headers_hits_the_first_byte_timeout_after_retries() {
    let server = serve([Reply::stall(Duration::from_secs(10))]).await;
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("timeout");
    assert_eq!(
        err,
        ProviderError::Timeout {
            phase: "first byte".into()
        }
    );
    assert_eq!(server.hits(), 3, "timeouts are retried");
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let err = limit(client(&url).complete(request()))
        .await
        .expect_err("connect");
    assert!(matches!(err, ProviderError::Connect { .. }), "{err:?}");
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let server =
        serve([Reply::events([chat_chunk("Hi")]).end(End::Hold(Duration::from_secs(10)))]).await;
    let mut stream = limit(client(server.url()).stream(request()))
        .await
        .expect("starts");
    let first = limit(stream.next()).await;
    assert!(matches!(first, Some(Ok(_))));
    drop(stream);
    limit(server.hung_up(1)).await;
}

#[tokio::test]
async fn the_key_never_appears_in_errors_and_travels_only_in_its_header() {
    // A 401 whose body echoes the key, as OpenAI does (masked) and a proxy might (whole).
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test-SECRET-123. You can find your API key at https://platform.openai.com.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let server = serve([Reply::status(401).body(body)]).await;
    let err = limit(client(server.url()).complete(request()))
        .await
        .expect_err("401");
    let printed = format!("{err} {err:?}");
    assert!(!printed.contains("SECRET"), "{printed}");
    assert!(matches!(
        err,
        ProviderError::Authentication { status: 401, .. }
    ));
    let head = server.requests().remove(0).head;
    assert!(
        head.contains("authorization: Bearer sk-test-SECRET-123"),
        "{head}"
    );
    assert!(
        !head.lines().next().unwrap_or("").contains("SECRET"),
        "not in the URL"
    );

    // Gemini: the key goes in x-goog-api-key, never in the URL.
    let server = serve([Reply::status(400).body("{}")]).await;
    let config = ProvidersConfig::new()
        .with_api_key(ProviderKind::Gemini, ApiKey::new("AIza-SECRET-456"))
        .with_base_url(ProviderKind::Gemini, server.url())
        .with_retry(RetryPolicy::none());
    let providers = Providers::new(config).expect("providers");
    let gemini = LlmRequest::new(
        "gemini:gemini-3-pro-preview".parse().expect("ref"),
        vec![Message::user("hi")],
    );
    let err = limit(providers.complete(gemini)).await.expect_err("400");
    assert!(!format!("{err} {err:?} {providers:?}").contains("SECRET"));
    let head = server.requests().remove(0).head;
    let request_line = head.lines().next().unwrap_or("");
    assert!(
        request_line
            .starts_with("POST /v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse "),
        "{request_line}"
    );
    assert!(!request_line.contains("SECRET"));
    assert!(head.contains("x-goog-api-key: AIza-SECRET-456"));
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_the_key_stays_home() {
    let dialects = [
        (Dialect::OpenAiChat, "/v1", "openai:gpt-4.1"),
        (Dialect::OpenAiResponses, "/v1", "openai-responses:gpt-5"),
        (Dialect::Anthropic, "", "anthropic:claude-sonnet-4-5"),
        (Dialect::Gemini, "", "gemini:gemini-2.5-flash"),
    ];
    for (dialect, suffix, model) in dialects {
        let elsewhere = serve([ok_stream()]).await;
        let home = serve([Reply::redirect(307, format!("{}/collect", elsewhere.url()))]).await;
        let client = HttpClient::new(
            dialect,
            format!("{}{suffix}", home.url()),
            Some(ApiKey::new("sk-ant-test-SECRET-123")),
        )
        .unwrap()
        .with_retry(fast_retries());
        let req = LlmRequest::new(model.parse().unwrap(), vec![Message::user("my secret")]);
        let err = limit(client.complete(req)).await.expect_err("refused");
        let ProviderError::Config { message } = &err else {
            panic!("{dialect}: {err:?}");
        };
        assert!(
            message.contains("307") && message.contains("/collect"),
            "{dialect}: {message}"
        );
        assert_eq!(home.hits(), 1, "{dialect}: not retried");
        assert_eq!(
            elsewhere.hits(),
            0,
            "{dialect}: the other origin was reached"
        );
        assert!(elsewhere.requests().is_empty(), "{dialect}");
    }
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let server = serve([Reply::redirect(307, "/v2/chat/completions"), ok_stream()]).await;
    let r = limit(client(server.url()).complete(request()))
        .await
        .expect("followed");
    assert_eq!(r.message.to_string(), "Hello");
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn an_endless_stream_stops_at_the_response_limit() {
    // 64 KiB text deltas, 200 of them (12.5 MiB), against a 1 MiB limit.
    let delta = "x".repeat(64 << 10);
    let pieces = vec![chat_chunk(&delta); 200];
    let server = serve([Reply::events(pieces)]).await;
    let limits = Limits {
        max_response_bytes: 1 << 20,
    };
    let err = limit(client(server.url()).with_limits(limits).complete(request()))
        .await
        .expect_err("stopped");
    assert_eq!(err, ProviderError::ResponseTooLarge { limit: 1 << 20 });
    // Not retried (content had arrived), and the connection was dropped, not drained.
    assert_eq!(server.hits(), 1);
    let closed = tokio::time::timeout(Duration::from_secs(5), server.hung_up(1)).await;
    assert!(closed.is_ok(), "the server never saw the client hang up");
}

#[tokio::test]
async fn a_response_under_the_limit_is_whole() {
    let server = serve([ok_stream()]).await;
    let limits = Limits {
        max_response_bytes: 5,
    };
    let r = limit(client(server.url()).with_limits(limits).complete(request()))
        .await
        .expect("five bytes fit");
    assert_eq!(r.message.to_string(), "Hello");
}

#[tokio::test]
async fn a_token_echoed_in_an_error_is_not_repeated() {
    // An OpenAI-compatible server's token has no known prefix; this one echoes it without
    // its first characters, the way some proxies mask keys.
    let token = "tok_live_4f9a2c7e1b3d5a";
    let server = serve([Reply::status(401).body(format!(
        r#"{{"error":{{"message":"token ...{} is revoked; full: {token}"}}}}"#,
        &token[9..]
    ))])
    .await;
    let client = HttpClient::new(
        Dialect::OpenAiChat,
        format!("{}/v1", server.url()),
        Some(ApiKey::new(token)),
    )
    .unwrap();
    let err = limit(client.complete(request())).await.expect_err("401");
    let text = err.to_string();
    assert!(
        matches!(err, ProviderError::Authentication { .. }),
        "{err:?}"
    );
    assert!(
        !text.contains(&token[9..]) && !text.contains(token),
        "{text}"
    );
    assert!(text.contains("is revoked"), "{text}");
}
