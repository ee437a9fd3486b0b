//! Every failure class a hostile provider can throw, in each of the four dialects: the same
//! scripted misbehaviour (a [`HostileServer`] speaking the dialect's own wire format) must give
//! the same typed error, retried or not, in all of them. The dialects run side by side in each
//! test, every one under a time limit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use motet_directives::{LlmRequest, Message};
use motet_providers::retry::RetryPolicy;
use motet_providers::testing::{End, HostileServer, Reply, SECRETS, wire};
use motet_providers::{
    ApiKey, Dialect, HttpClient, Limits, LlmClient, LlmEvent, ProviderError, Timeouts,
};

/// A key with no known prefix: only redaction of the configured key can hide it.
const TOKEN: &str = "tok_live_4f9a2c7e1b3d5a";

const TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(2),
    first_byte: Duration::from_millis(400),
    idle: Duration::from_millis(300),
};

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        max_retry_after: Duration::from_millis(50),
        ..RetryPolicy::default()
    }
}

fn client(dialect: Dialect, server: &HostileServer) -> HttpClient {
    HttpClient::new(
        dialect,
        wire::base_url(dialect, server.url()),
        Some(ApiKey::new(TOKEN)),
    )
    .unwrap()
    .with_retry(fast_retries())
    .with_timeouts(TIMEOUTS)
    .unwrap()
}

fn request(dialect: Dialect) -> LlmRequest {
    LlmRequest::new(
        wire::model(dialect).parse().unwrap(),
        vec![Message::user("hi")],
    )
}

async fn serve(replies: impl IntoIterator<Item = Reply>) -> HostileServer {
    HostileServer::start(replies).await.expect("bind")
}

/// Runs `case` for every dialect at once, each under a time limit.
async fn each_dialect<F: Future<Output = ()>>(case: impl Fn(Dialect) -> F) {
    let cases = Dialect::ALL.map(|dialect| {
        let run = case(dialect);
        async move {
            tokio::time::timeout(Duration::from_secs(20), run)
                .await
                .unwrap_or_else(|_| panic!("{dialect}: the client hung"));
        }
    });
    futures::future::join_all(cases).await;
}

/// What a streamed call gave: the events, then the error that ended it (if any).
async fn outcome(client: &HttpClient, req: LlmRequest) -> (Vec<LlmEvent>, Option<ProviderError>) {
    let mut stream = match client.stream(req).await {
        Ok(stream) => stream,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// Serves `first`, then a whole answer: the call must come back with the answer, on its second
/// request (`case` names the case in a failure).
async fn answered_on_the_retry(dialect: Dialect, first: Reply, case: &str) {
    let server = serve([first, Reply::events(wire::answer(dialect, "Hello"))]).await;
    let r = client(dialect, &server)
        .complete(request(dialect))
        .await
        .unwrap_or_else(|e| panic!("{dialect} {case}: {e}"));
    assert_eq!(r.message.to_string(), "Hello", "{dialect} {case}");
    assert_eq!(server.hits(), 2, "{dialect} {case}");
}

fn text_of(events: &[LlmEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            LlmEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_dialect_answers_through_the_hostile_server_at_its_own_path() {
    each_dialect(|dialect| async move {
        let server = serve([Reply::events(wire::answer(dialect, "Hello"))]).await;
        let r = client(dialect, &server)
            .complete(request(dialect))
            .await
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        assert_eq!(r.message.to_string(), "Hello", "{dialect}");
        let requests = server.requests();
        assert_eq!(requests[0].path(), wire::path(dialect), "{dialect}");
    })
    .await;
}

#[tokio::test]
async fn rate_limited_with_retry_after_is_retried_even_when_the_wait_is_absurd() {
    each_dialect(|dialect| async move {
        // Seconds, milliseconds, and 1e30 seconds (cut to the policy's cap, not a panic).
        for (name, value, at_least) in [
            ("retry-after", "0.2", Duration::from_millis(50)),
            ("retry-after-ms", "40", Duration::from_millis(40)),
            ("retry-after", "1e30", Duration::from_millis(50)),
            ("retry-after-ms", "1e300", Duration::from_millis(50)),
        ] {
            let first =
                Reply::json(429, wire::error_body(dialect, "slow down")).header(name, value);
            let started = Instant::now();
            answered_on_the_retry(dialect, first, &format!("{name}: {value}")).await;
            let waited = started.elapsed();
            assert!(waited >= at_least, "{dialect} {name}: {value}: {waited:?}");
            assert!(
                waited < Duration::from_secs(5),
                "{dialect} {name}: {value}: {waited:?}"
            );
        }
        // Every time: the rate limit, with its message, after the retries.
        let server =
            serve([Reply::json(429, wire::error_body(dialect, "slow down"))
                .header("retry-after", "1e30")])
            .await;
        let err = client(dialect, &server)
            .complete(request(dialect))
            .await
            .expect_err("gives up");
        assert_eq!(
            err,
            ProviderError::RateLimited {
                retry_after: Some(Duration::MAX),
                message: "slow down".into()
            },
            "{dialect}"
        );
        assert_eq!(server.hits(), 3, "{dialect}: 1 try + 2 retries");
    })
    .await;
}

#[tokio::test]
async fn a_server_error_then_an_answer_is_retried() {
    each_dialect(|dialect| async move {
        for status in [500, 502, 503, 529] {
            let first = Reply::json(status, wire::error_body(dialect, "oops"));
            answered_on_the_retry(dialect, first, &status.to_string()).await;
        }
    })
    .await;
}

#[tokio::test]
async fn authentication_failures_are_typed_and_not_retried() {
    each_dialect(|dialect| async move {
        for status in [401, 403] {
            let server = serve([Reply::json(status, wire::error_body(dialect, "no access"))]).await;
            let err = client(dialect, &server)
                .complete(request(dialect))
                .await
                .expect_err("refused");
            assert_eq!(
                err,
                ProviderError::Authentication {
                    status,
                    message: "no access".into()
                },
                "{dialect}"
            );
            assert_eq!(server.hits(), 1, "{dialect} {status}");
        }
    })
    .await;
}

#[tokio::test]
async fn an_html_error_page_keeps_its_status_and_an_excerpt() {
    each_dialect(|dialect| async move {
        let page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
        let server = serve([Reply::status(502)
            .header("content-type", "text/html")
            .body(page)])
        .await;
        let err = client(dialect, &server)
            .with_retry(RetryPolicy::none())
            .complete(request(dialect))
            .await
            .expect_err("error");
        match err {
            ProviderError::Server { status, message } => {
                assert_eq!(status, 502, "{dialect}");
                assert!(message.contains("502 Bad Gateway"), "{dialect}: {message}");
            }
            other => panic!("{dialect}: {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_stream_that_ends_after_content_without_its_end_is_truncated_not_retried() {
    each_dialect(|dialect| async move {
        let server = serve([
            Reply::events(wire::partial(dialect, "Hel")),
            Reply::events(wire::answer(dialect, "Hello")),
        ])
        .await;
        let (events, err) = outcome(&client(dialect, &server), request(dialect)).await;
        assert_eq!(text_of(&events), "Hel", "{dialect}");
        assert!(
            matches!(err, Some(ProviderError::StreamTruncated { .. })),
            "{dialect}: {err:?}"
        );
        assert_eq!(server.hits(), 1, "{dialect}: no silent retry after content");
    })
    .await;
}

#[tokio::test]
async fn a_stream_cut_before_any_content_is_retried() {
    each_dialect(|dialect| async move {
        for end in [End::Clean, End::Cut] {
            // The opening events (or only a keep-alive), then the connection ends.
            let mut opening = wire::opening(dialect);
            opening.insert(0, ": keep-alive\n\n".to_owned());
            let first = Reply::events(opening).end(end);
            answered_on_the_retry(dialect, first, &format!("{end:?}")).await;
        }
    })
    .await;
}

#[tokio::test]
async fn malformed_json_in_an_event_is_a_protocol_error() {
    each_dialect(|dialect| async move {
        let mut pieces = wire::partial(dialect, "Hi");
        pieces.push(wire::malformed(dialect));
        let server = serve([Reply::events(pieces)]).await;
        let (events, err) = outcome(&client(dialect, &server), request(dialect)).await;
        assert_eq!(text_of(&events), "Hi", "{dialect}");
        assert!(
            matches!(err, Some(ProviderError::Protocol { .. })),
            "{dialect}: {err:?}"
        );
        assert_eq!(server.hits(), 1, "{dialect}");
    })
    .await;
}

/// An error event before any content that says the request was at fault (a 400: Groq's
/// `tool_use_failed`, `invalid_request_error`, `INVALID_ARGUMENT`) is not retried: sending the
/// same request again would fail the same way. A server fault there is.
#[tokio::test]
async fn a_request_fault_in_the_stream_is_not_retried_and_a_server_fault_is() {
    each_dialect(|dialect| async move {
        let mut refused = wire::opening(dialect);
        refused.push(wire::request_error_event(
            dialect,
            "the call does not parse",
        ));
        let server = serve([
            Reply::events(refused),
            Reply::events(wire::answer(dialect, "Hello")),
        ])
        .await;
        let err = client(dialect, &server)
            .complete(request(dialect))
            .await
            .expect_err("a request fault");
        let ProviderError::InvalidRequest { status, message } = &err else {
            panic!("{dialect}: {err:?}");
        };
        assert_eq!(*status, 400, "{dialect}");
        assert!(
            message.starts_with("the call does not parse"),
            "{dialect}: {message}"
        );
        assert_eq!(server.hits(), 1, "{dialect}: retried a request fault");

        let mut failed = wire::opening(dialect);
        failed.push(wire::error_event(dialect, "the model broke"));
        answered_on_the_retry(dialect, Reply::events(failed), "server fault").await;
    })
    .await;
}

#[tokio::test]
async fn an_error_event_mid_stream_is_typed_and_not_retried() {
    each_dialect(|dialect| async move {
        let mut pieces = wire::partial(dialect, "Hi");
        pieces.push(wire::error_event(dialect, "the model broke"));
        let server = serve([Reply::events(pieces)]).await;
        let (events, err) = outcome(&client(dialect, &server), request(dialect)).await;
        assert_eq!(text_of(&events), "Hi", "{dialect}");
        match err {
            Some(ProviderError::Server { message, .. }) => {
                assert_eq!(message, "the model broke", "{dialect}");
            }
            other => panic!("{dialect}: {other:?}"),
        }
        assert_eq!(server.hits(), 1, "{dialect}");
    })
    .await;
}

#[tokio::test]
async fn a_stall_between_events_hits_the_idle_timeout() {
    each_dialect(|dialect| async move {
        let server = serve([
            Reply::events(wire::partial(dialect, "Hi")).end(End::Hold(Duration::from_secs(10)))
        ])
        .await;
        let started = Instant::now();
        let (events, err) = outcome(&client(dialect, &server), request(dialect)).await;
        assert_eq!(text_of(&events), "Hi", "{dialect}");
        assert_eq!(
            err,
            Some(ProviderError::Timeout {
                phase: "next event".into()
            }),
            "{dialect}"
        );
        assert!(started.elapsed() < Duration::from_secs(3), "{dialect}");
        assert_eq!(server.hits(), 1, "{dialect}");
        tokio::time::timeout(Duration::from_secs(5), server.hung_up(1))
            .await
            .unwrap_or_else(|_| panic!("{dialect}: the connection was kept"));
    })
    .await;
}

#[tokio::test]
async fn a_stall_before_the_headers_hits_the_first_byte_timeout_after_retries() {
    each_dialect(|dialect| async move {
        let server = serve([Reply::stall(Duration::from_secs(10))]).await;
        let err = client(dialect, &server)
            .complete(request(dialect))
            .await
            .expect_err("timeout");
        assert_eq!(
            err,
            ProviderError::Timeout {
                phase: "first byte".into()
            },
            "{dialect}"
        );
        assert_eq!(server.hits(), 3, "{dialect}: timeouts are retried");

        // Headers in time, then no body: the same wait, the same error.
        let server =
            serve([Reply::events(Vec::<String>::new()).end(End::Hold(Duration::from_secs(10)))])
                .await;
        let err = client(dialect, &server)
            .with_retry(RetryPolicy::none())
            .complete(request(dialect))
            .await
            .expect_err("timeout");
        assert_eq!(
            err,
            ProviderError::Timeout {
                phase: "first byte".into()
            },
            "{dialect}"
        );
    })
    .await;
}

#[tokio::test]
async fn an_endless_stream_stops_at_the_response_limit() {
    each_dialect(|dialect| async move {
        // 16 KiB text deltas without end, against a 256 KiB limit.
        let mut pieces = wire::opening(dialect);
        pieces.push(wire::text(dialect, &"x".repeat(16 << 10)));
        let server = serve([Reply::events(pieces).end(End::RepeatLast)]).await;
        let limits = Limits {
            max_response_bytes: 256 << 10,
        };
        let (events, err) = outcome(
            &client(dialect, &server).with_limits(limits),
            request(dialect),
        )
        .await;
        assert_eq!(
            err,
            Some(ProviderError::ResponseTooLarge { limit: 256 << 10 }),
            "{dialect}"
        );
        assert!(text_of(&events).len() <= 256 << 10, "{dialect}");
        assert_eq!(server.hits(), 1, "{dialect}: not retried");
        tokio::time::timeout(Duration::from_secs(5), server.hung_up(1))
            .await
            .unwrap_or_else(|_| panic!("{dialect}: the stream was drained, not dropped"));
    })
    .await;
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed_with_the_key() {
    // A redirect to another origin is refused in every dialect: see faults.rs.
    each_dialect(|dialect| async move {
        let server = serve([
            Reply::redirect(307, "/moved"),
            Reply::events(wire::answer(dialect, "Hello")),
        ])
        .await;
        let r = client(dialect, &server)
            .complete(request(dialect))
            .await
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        assert_eq!(r.message.to_string(), "Hello", "{dialect}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{dialect}");
        assert_eq!(requests[1].path(), "/moved", "{dialect}");
        assert!(
            requests[1].head.contains(TOKEN),
            "{dialect}: the key goes along"
        );
    })
    .await;
}

#[tokio::test]
async fn a_key_echoed_back_is_never_repeated() {
    each_dialect(|dialect| async move {
        // In an error body, whole and without its first characters.
        let message = format!("key {SECRETS} is revoked (...{})", &TOKEN[9..]);
        let server =
            serve([Reply::json(401, wire::error_body(dialect, &message)).echo_secrets()]).await;
        let err = client(dialect, &server)
            .complete(request(dialect))
            .await
            .expect_err("401");
        let printed = format!("{err} {err:?}");
        assert!(
            matches!(err, ProviderError::Authentication { .. }),
            "{dialect}: {err:?}"
        );
        assert!(printed.contains("is revoked"), "{dialect}: {printed}");
        assert!(!printed.contains(&TOKEN[9..]), "{dialect}: {printed}");
        let sent = &server.requests()[0];
        assert!(sent.head.contains(TOKEN), "{dialect}: the echo had a key");

        // In an error event after content.
        let mut pieces = wire::partial(dialect, "Hi");
        pieces.push(wire::error_event(dialect, &format!("bad key {SECRETS}")));
        let server = serve([Reply::events(pieces).echo_secrets()]).await;
        let (_, err) = outcome(&client(dialect, &server), request(dialect)).await;
        let err = err.unwrap_or_else(|| panic!("{dialect}: no error"));
        let printed = format!("{err} {err:?}");
        assert!(printed.contains("bad key"), "{dialect}: {printed}");
        assert!(!printed.contains(&TOKEN[9..]), "{dialect}: {printed}");
    })
    .await;
}

#[tokio::test]
async fn a_connection_cut_mid_body_after_content_is_a_truncated_stream_not_unreachable() {
    each_dialect(|dialect| async move {
        let server = serve([
            Reply::events(wire::partial(dialect, "Hel")).end(End::Cut),
            Reply::events(wire::answer(dialect, "Hello")),
        ])
        .await;
        let (events, err) = outcome(&client(dialect, &server), request(dialect)).await;
        assert_eq!(text_of(&events), "Hel", "{dialect}");
        match err {
            Some(ProviderError::StreamTruncated { reason }) => {
                assert!(
                    reason.contains("broke off after the server answered"),
                    "{dialect}: {reason}"
                );
            }
            other => panic!("{dialect}: {other:?}"),
        }
        assert_eq!(server.hits(), 1, "{dialect}: no silent retry after content");
    })
    .await;
}

#[tokio::test]
async fn response_headers_past_the_clients_limit_are_a_protocol_error_not_unreachable() {
    each_dialect(|dialect| async move {
        let server =
            serve([Reply::events(wire::answer(dialect, "Hello")).pad_headers(1 << 20)]).await;
        let err = client(dialect, &server)
            .complete(request(dialect))
            .await
            .expect_err("refused");
        match err {
            ProviderError::Protocol { message } => {
                assert!(message.contains("headers"), "{dialect}: {message}");
                assert!(message.contains("too large"), "{dialect}: {message}");
            }
            other => panic!("{dialect}: {other:?}"),
        }
        assert_eq!(
            server.hits(),
            1,
            "{dialect}: the same headers would come again"
        );
    })
    .await;
}

#[tokio::test]
async fn a_200_that_is_not_an_event_stream_says_what_it_was() {
    each_dialect(|dialect| async move {
        // A captive portal's page, and a JSON body echoing the key (a wrong base URL).
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>Sign in to the hotel Wi-Fi</title></head><body>{}</body></html>",
            "<p>Accept the terms.</p>".repeat(2_000)
        );
        let cases = [
            (
                Reply::status(200)
                    .header("content-type", "text/html; charset=utf-8")
                    .body(page),
                "text/html; charset=utf-8",
                "Sign in to the hotel Wi-Fi",
            ),
            (
                Reply::json(200, format!(r#"{{"object":"list","token":"{SECRETS}"}}"#))
                    .echo_secrets(),
                "application/json",
                r#"{"object":"list""#,
            ),
        ];
        for (reply, kind, quoted) in cases {
            let server = serve([reply]).await;
            // Patient: on a loaded machine a first byte later than `TIMEOUTS` allows would be
            // retried, and the page served twice for a reason this case is not about.
            let patient = Timeouts {
                first_byte: Duration::from_secs(10),
                idle: Duration::from_secs(10),
                ..TIMEOUTS
            };
            let err = client(dialect, &server)
                .with_timeouts(patient)
                .unwrap()
                .complete(request(dialect))
                .await
                .expect_err("not a stream");
            let ProviderError::Protocol { message } = &err else {
                panic!("{dialect}: {err:?}");
            };
            assert!(
                message.contains(&format!("the server answered with {kind}, not an event stream")),
                "{dialect}: {message}"
            );
            assert!(message.contains(quoted), "{dialect}: {message}");
            assert!(message.len() < 1_000, "{dialect}: {} bytes", message.len());
            assert!(!message.contains(&TOKEN[9..]), "{dialect}: {message}");
            assert_eq!(server.hits(), 1, "{dialect}: the same page would come again");
        }
    })
    .await;
}

#[tokio::test]
async fn an_event_stream_is_recognised_whatever_its_parameters_and_case() {
    each_dialect(|dialect| async move {
        for kind in [
            "text/event-stream; charset=utf-8",
            "Text/Event-Stream;charset=UTF-8",
            " text/event-stream ",
        ] {
            let server =
                serve([Reply::events(wire::answer(dialect, "Hello")).header("content-type", kind)])
                    .await;
            let r = client(dialect, &server)
                .complete(request(dialect))
                .await
                .unwrap_or_else(|e| panic!("{dialect} {kind}: {e}"));
            assert_eq!(r.message.to_string(), "Hello", "{dialect} {kind}");
            assert_eq!(server.hits(), 1, "{dialect} {kind}");
        }
        // Some minimal servers name no type at all: the body decides.
        let server =
            serve([Reply::events(wire::answer(dialect, "Hello")).without_header("content-type")])
                .await;
        let r = client(dialect, &server)
            .complete(request(dialect))
            .await
            .unwrap_or_else(|e| panic!("{dialect} untyped: {e}"));
        assert_eq!(r.message.to_string(), "Hello", "{dialect}");
    })
    .await;
}

#[tokio::test]
async fn an_error_body_trickled_byte_by_byte_is_read_for_a_bounded_time() {
    each_dialect(|dialect| async move {
        // 70 KB at one byte every 10 ms (under the idle timeout): twelve minutes unbounded.
        let body = "upstream busy; ".repeat(5_000);
        let server = serve([Reply::status(500)
            .body(body.clone())
            .trickle(Duration::from_millis(10))])
        .await;
        let started = Instant::now();
        let err = client(dialect, &server)
            .with_retry(RetryPolicy::none())
            .complete(request(dialect))
            .await
            .expect_err("500");
        let waited = started.elapsed();
        let ProviderError::Server { status, message } = &err else {
            panic!("{dialect}: {err:?}");
        };
        assert_eq!(*status, 500, "{dialect}");
        assert!(message.starts_with("upstream"), "{dialect}: {message}");
        assert!(body.starts_with(message.as_str()), "{dialect}: {message}");
        // The first-byte timeout (400 ms here) caps the whole body.
        assert!(waited < Duration::from_secs(2), "{dialect}: {waited:?}");
    })
    .await;
}
