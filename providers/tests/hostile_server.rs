//! The hostile provider itself ([`motet_providers::testing`]): each scripted behaviour does what
//! it says, seen from a plain HTTP client, so a test built on it fails for the client's
//! reasons, not the server's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::time::{Duration, Instant};

use motet_providers::testing::{End, HostileServer, Reply, SECRETS};

/// Runs a future under a time limit so that a hang fails the test instead of stalling it.
async fn limit<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("hung")
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn replies_go_in_order_the_last_repeats_and_requests_are_recorded() {
    let server = HostileServer::start([
        Reply::json(429, "{}").header("retry-after", "7"),
        Reply::status(200).body("ok"),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1/x?y=1", server.url());
    let mut statuses = Vec::new();
    for n in 0..3 {
        let response = limit(
            http()
                .post(&url)
                .header("x-api-key", "k")
                .body(format!("body {n}"))
                .send(),
        )
        .await
        .unwrap();
        statuses.push(response.status().as_u16());
        if n == 0 {
            assert_eq!(response.headers()["retry-after"], "7");
            assert_eq!(response.headers()["content-type"], "application/json");
        }
    }
    assert_eq!(statuses, [429, 200, 200]);
    assert_eq!(server.hits(), 3);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].path(), "/v1/x?y=1");
    assert!(requests[0].request_line().starts_with("POST "));
    assert_eq!(requests[0].header("X-API-KEY"), Some("k"));
    assert_eq!(requests[2].body_text(), "body 2");
}

#[tokio::test]
async fn a_redirect_names_its_location() {
    let server = HostileServer::start([Reply::redirect(307, "http://elsewhere.invalid/x")])
        .await
        .unwrap();
    let response = limit(http().post(server.url()).send()).await.unwrap();
    assert_eq!(response.status().as_u16(), 307);
    assert_eq!(response.headers()["location"], "http://elsewhere.invalid/x");
}

#[tokio::test]
async fn events_come_in_pieces_with_pauses_and_end_as_scripted() {
    let server = HostileServer::start([
        Reply::events(["data: a\n\n", "data: b\n\n"]).pause(Duration::from_millis(100)),
        Reply::events(["data: a\n\n"]).end(End::Cut),
    ])
    .await
    .unwrap();
    let started = Instant::now();
    let response = limit(http().post(server.url()).send()).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = limit(response.text()).await.unwrap();
    assert_eq!(body, "data: a\n\ndata: b\n\n");
    assert!(started.elapsed() >= Duration::from_millis(200));

    let mut cut = limit(http().post(server.url()).send()).await.unwrap();
    assert_eq!(limit(cut.chunk()).await.unwrap().unwrap(), "data: a\n\n");
    assert!(
        limit(cut.chunk()).await.is_err(),
        "a cut body is an error, not an end"
    );
}

#[tokio::test]
async fn an_endless_stream_runs_until_the_client_hangs_up() {
    let server = HostileServer::start([Reply::events(["data: x\n\n"]).end(End::RepeatLast)])
        .await
        .unwrap();
    let mut response = limit(http().post(server.url()).send()).await.unwrap();
    let mut read = 0;
    while read < 1 << 20 {
        read += limit(response.chunk()).await.unwrap().unwrap().len();
    }
    assert_eq!(server.closed(), 0);
    drop(response);
    limit(server.hung_up(1)).await;
}

#[tokio::test]
async fn a_held_stream_notices_the_client_leave() {
    let server = HostileServer::start([
        Reply::events(["data: x\n\n"]).end(End::Hold(Duration::from_secs(30)))
    ])
    .await
    .unwrap();
    let mut response = limit(http().post(server.url()).send()).await.unwrap();
    limit(response.chunk()).await.unwrap();
    drop(response);
    limit(server.hung_up(1)).await;
}

#[tokio::test]
async fn a_stall_says_nothing_then_closes() {
    let server = HostileServer::start([Reply::stall(Duration::from_millis(200))])
        .await
        .unwrap();
    let started = Instant::now();
    let err = limit(http().post(server.url()).send()).await.unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(200), "{err}");
    assert_eq!(server.requests().len(), 1, "the request was read");

    let delayed = HostileServer::start([Reply::status(204).delay(Duration::from_millis(200))])
        .await
        .unwrap();
    let started = Instant::now();
    let response = limit(http().post(delayed.url()).send()).await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn a_trickled_body_comes_one_byte_at_a_time() {
    let server = HostileServer::start([Reply::status(500)
        .body("abcdef")
        .trickle(Duration::from_millis(20))])
    .await
    .unwrap();
    let mut response = limit(http().post(server.url()).send()).await.unwrap();
    let mut chunks = Vec::new();
    while let Some(chunk) = limit(response.chunk()).await.unwrap() {
        chunks.push(chunk);
    }
    assert_eq!(chunks.concat(), b"abcdef");
    assert!(
        chunks.iter().all(|c| c.len() == 1),
        "{} chunks",
        chunks.len()
    );
}

#[tokio::test]
async fn padded_headers_pass_the_size_asked_for() {
    let server = HostileServer::start([Reply::status(200).pad_headers(20_000)])
        .await
        .unwrap();
    let response = limit(http().post(server.url()).send()).await.unwrap();
    assert_eq!(response.headers()["x-padding"].len(), 20_000);
}

#[tokio::test]
async fn echoed_secrets_are_the_requests_key_headers() {
    let server = HostileServer::start([Reply::json(
        401,
        format!(r#"{{"error":{{"message":"bad key {SECRETS}"}}}}"#),
    )
    .echo_secrets()])
    .await
    .unwrap();
    let response = limit(
        http()
            .post(server.url())
            .header("x-goog-api-key", "AIza-\"quoted\"")
            .header("authorization", "Bearer tok_1")
            .send(),
    )
    .await
    .unwrap();
    let body: serde_json::Value = limit(response.json()).await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "bad key Bearer tok_1 AIza-\"quoted\""
    );
}

#[test]
fn each_dialects_answer_assembles_and_its_partial_is_truncated() {
    use motet_providers::testing::wire;
    use motet_providers::{Dialect, ProviderError, transcript};
    for dialect in Dialect::ALL {
        let whole = wire::answer(dialect, "Hello").concat();
        let r = transcript::assemble(dialect, whole.as_bytes())
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        assert_eq!(r.message.to_string(), "Hello", "{dialect}");
        let partial = wire::partial(dialect, "Hel").concat();
        assert!(
            matches!(
                transcript::assemble(dialect, partial.as_bytes()),
                Err(ProviderError::StreamTruncated { .. })
            ),
            "{dialect}"
        );
        let mut failed = wire::partial(dialect, "Hel");
        failed.push(wire::error_event(dialect, "the model broke"));
        match transcript::assemble(dialect, failed.concat().as_bytes()) {
            Err(ProviderError::Server { status, message }) => {
                assert!(status == 0 || status == 500, "{dialect}: {status}");
                assert_eq!(message, "the model broke", "{dialect}");
            }
            other => panic!("{dialect}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_header_set_twice_is_replaced_and_one_can_be_removed() {
    let server = HostileServer::start([
        Reply::events(["data: x\n\n"]).header("Content-Type", "text/event-stream; charset=utf-8"),
        Reply::events(["data: x\n\n"]).without_header("content-type"),
    ])
    .await
    .unwrap();
    let typed = limit(http().post(server.url()).send()).await.unwrap();
    let types: Vec<_> = typed.headers().get_all("content-type").iter().collect();
    assert_eq!(types, ["text/event-stream; charset=utf-8"]);
    let untyped = limit(http().post(server.url()).send()).await.unwrap();
    assert!(untyped.headers().get("content-type").is_none());
}
