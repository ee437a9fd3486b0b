//! Shared limits against the hostile server enforcing an account limit the way the real APIs
//! do: callers share one backoff after a 429, and headers learned from the first answers slow
//! callers down before any 429.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::time::{Duration, Instant};

use motet_directives::{LlmRequest, Message, ModelRef};
use motet_providers::limits::{Claim, LimitError, RateObserver, Rates, SharedLimits, Spent};
use motet_providers::testing::{HostileServer, Reply, ServerLimit, wire};
use motet_providers::{Dialect, HttpClient, LlmClient, Priority, RetryPolicy};

const DIALECT: Dialect = Dialect::OpenAiChat;

fn model() -> ModelRef {
    wire::model(DIALECT).parse().unwrap()
}

fn answer() -> Reply {
    Reply::events(wire::answer(DIALECT, "ok"))
}

fn client(server: &HostileServer, limits: &SharedLimits, retry: RetryPolicy) -> HttpClient {
    HttpClient::new(DIALECT, wire::base_url(DIALECT, server.url()), None)
        .unwrap()
        .with_retry(retry)
        .with_rate_observer(Arc::new(limits.clone()))
}

/// One call through the limiter, as the runtime makes it.
async fn call(limits: &SharedLimits, client: &HttpClient, agent: &str) -> Result<(), String> {
    let model = model();
    let permit = limits
        .acquire(&model, Claim::new(agent, 10, 20))
        .await
        .map_err(|e| e.to_string())?;
    let request = LlmRequest::new(model, vec![Message::user("hi")]);
    let outcome = client.complete(request).await;
    permit.finish(Spent {
        input_tokens: 10,
        output_tokens: 5,
    });
    outcome.map(|_| ()).map_err(|e| e.to_string())
}

#[tokio::test]
async fn after_a_429_every_caller_waits_out_one_shared_backoff() {
    let server = HostileServer::start([
        Reply::json(429, wire::error_body(DIALECT, "slow down")).header("retry-after-ms", "600"),
        answer(),
    ])
    .await
    .unwrap();
    let limits = SharedLimits::new();
    let lone = client(&server, &limits, RetryPolicy::none());
    let started = Instant::now();
    // Made before the 429: building an HTTP client takes a few milliseconds.
    let shared = client(&server, &limits, RetryPolicy::default());
    let first = call(&limits, &lone, "first").await;
    assert!(first.is_err(), "{first:?}");
    assert!(limits.backoff(&model()) > Duration::from_millis(400));
    let callers: Vec<_> = (0..20)
        .map(|n| {
            let limits = limits.clone();
            let client = shared.clone();
            tokio::spawn(async move { call(&limits, &client, &format!("agent{n}")).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.hits(), 1, "nobody went during the backoff");
    assert_eq!(limits.waiting(&model()), 20);
    for caller in callers {
        tokio::time::timeout(Duration::from_secs(10), caller)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert_eq!(server.hits(), 21, "one 429, then each caller once");
}

#[tokio::test]
async fn the_clients_own_retry_waits_for_the_shared_backoff_too() {
    let server = HostileServer::start([
        Reply::json(429, wire::error_body(DIALECT, "slow down")).header("retry-after-ms", "10"),
        answer(),
    ])
    .await
    .unwrap();
    let limits = SharedLimits::new();
    let client = client(&server, &limits, RetryPolicy::default());
    // Another caller's 429 a moment ago said a second: the retry of this one waits for it,
    // not for its own 10 ms.
    limits.observed(&model(), 429, &[("retry-after-ms", "1000")]);
    let started = Instant::now();
    let request = LlmRequest::new(model(), vec![Message::user("hi")]);
    // Past the shared backoff the first attempt goes (the limiter is not asked here).
    tokio::time::timeout(Duration::from_secs(10), client.complete(request))
        .await
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn learned_headers_slow_callers_before_any_429() {
    // 20 requests a "minute" of 2 s: ten a second once the burst is spent.
    let limit = ServerLimit::per_minute(20, 1_000_000).with_minute(Duration::from_secs(2));
    let server = HostileServer::limited(limit, [answer()]).await.unwrap();
    // Nothing configured but the window: the limit is learned from the first answer.
    let limits = SharedLimits::new().with_defaults(Rates::unlimited().with_window(limit.minute));
    let first = client(&server, &limits, RetryPolicy::none());
    call(&limits, &first, "first").await.unwrap();
    let started = Instant::now();
    let callers: Vec<_> = (0..39)
        .map(|n| {
            let limits = limits.clone();
            let client = first.clone();
            tokio::spawn(async move { call(&limits, &client, &format!("agent{n}")).await })
        })
        .collect();
    for caller in callers {
        tokio::time::timeout(Duration::from_secs(20), caller)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
    assert_eq!(server.rejected(), 0, "no caller met a 429");
    // 19 left of the burst, then 20 more at ten a second.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1800), "{took:?}");
    assert_eq!(server.hits(), 40);
}

#[tokio::test]
async fn without_learning_the_same_callers_meet_429s() {
    let limit = ServerLimit::per_minute(20, 1_000_000).with_minute(Duration::from_secs(2));
    let server = HostileServer::limited(limit, [answer()]).await.unwrap();
    let bare = HttpClient::new(DIALECT, wire::base_url(DIALECT, server.url()), None)
        .unwrap()
        .with_retry(RetryPolicy::none());
    let callers: Vec<_> = (0..40)
        .map(|_| {
            let client = bare.clone();
            tokio::spawn(async move {
                client
                    .complete(LlmRequest::new(model(), vec![Message::user("hi")]))
                    .await
            })
        })
        .collect();
    let mut failed = 0;
    for caller in callers {
        failed += usize::from(caller.await.unwrap().is_err());
    }
    assert!(failed >= 15, "{failed}");
    assert_eq!(server.rejected(), failed);
}

#[tokio::test]
async fn a_call_past_its_deadline_gets_a_typed_error_not_a_hang() {
    let limits = SharedLimits::new().with_account("openai", Rates::unlimited().with_concurrent(1));
    let held = limits
        .acquire(&model(), Claim::new("holder", 0, 0))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_millis(100);
    let late = limits
        .acquire(&model(), Claim::new("late", 0, 0).with_deadline(deadline))
        .await;
    match late {
        Err(LimitError::DeadlinePassed { account, waited }) => {
            assert_eq!(account, "openai");
            assert!(waited >= Duration::from_millis(90), "{waited:?}");
        }
        other => panic!("{other:?}"),
    }
    let error: motet_providers::ProviderError = LimitError::DeadlinePassed {
        account: "openai".to_owned(),
        waited: Duration::from_millis(100),
    }
    .into();
    assert!(matches!(
        error,
        motet_providers::ProviderError::RateLimited { .. }
    ));
    drop(held);
    assert_eq!(limits.waiting(&model()), 0);
}

#[tokio::test]
async fn a_high_priority_call_overtakes_the_queue() {
    let limits = SharedLimits::new().with_account("openai", Rates::unlimited().with_concurrent(1));
    let held = limits
        .acquire(&model(), Claim::new("holder", 0, 0))
        .await
        .unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for (name, priority) in [
        ("batch", Priority::Low),
        ("agent", Priority::Normal),
        ("person", Priority::High),
    ] {
        let limits = limits.clone();
        let order = order.clone();
        waiters.push(tokio::spawn(async move {
            let permit = limits
                .acquire(&model(), Claim::new(name, 0, 0).with_priority(priority))
                .await
                .unwrap();
            order.lock().unwrap().push(name);
            tokio::time::sleep(Duration::from_millis(5)).await;
            permit.finish(Spent::default());
        }));
        // Each queued before the next arrives.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(held);
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), ["person", "agent", "batch"]);
}

#[tokio::test]
async fn a_caller_that_stops_waiting_gives_its_place_up() {
    let limits = SharedLimits::new().with_account("openai", Rates::unlimited().with_concurrent(1));
    let held = limits
        .acquire(&model(), Claim::new("holder", 0, 0))
        .await
        .unwrap();
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        limits.acquire(&model(), Claim::new("impatient", 0, 0)),
    )
    .await;
    assert!(gave_up.is_err());
    assert_eq!(limits.waiting(&model()), 0);
    drop(held);
    let next = tokio::time::timeout(
        Duration::from_secs(1),
        limits.acquire(&model(), Claim::new("next", 0, 0)),
    )
    .await;
    assert!(matches!(next, Ok(Ok(_))));
}
