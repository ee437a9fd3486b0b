//! Agents' LLM calls through the runtime's shared limits: a rate limit makes calls wait (and
//! says so on the bus as `llm.waiting`) rather than fail, a person's agent goes before a
//! batch, and a call past the runtime's longest wait fails with a typed error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use motet_directives::{AssistantBlock, Message};
use motet_providers::limits::Rates;
use motet_providers::{Priority, ProviderError};
use motet_runtime::agent::{LLM_WAITING, LlmWaiting, Runtime};

use common::*;

/// A model that answers after `delay` and records the question of each call it starts.
#[derive(Clone, Default)]
struct RecordingModel {
    delay: Duration,
    started: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for RecordingModel {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        let question = req
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content } => Some(content.text().into_owned()),
                _ => None,
            })
            .unwrap_or_default();
        self.started.lock().unwrap().push(question);
        tokio::time::sleep(self.delay).await;
        let events = motet_runtime::testing::events_of(turn(vec![AssistantBlock::text("ok")])?);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[tokio::test]
async fn calls_over_the_rate_wait_their_turn_and_say_so() {
    let model = RecordingModel::default();
    // Two requests a second: a burst of two, then one every 500 ms.
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .llm_limits(
            "openai",
            Rates::unlimited()
                .with_requests_per_minute(2)
                .with_window(Duration::from_secs(1)),
        )
        .build()
        .unwrap();
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = notices.clone();
    let _sub = runtime.bus().subscribe(
        LLM_WAITING.parse().unwrap(),
        move |signal: &motet_signals::Signal| {
            sink.lock()
                .unwrap()
                .push(signal.data_as::<LlmWaiting>().unwrap());
            motet_signals::Delivery::Delivered
        },
    );
    let mut agents = Vec::new();
    for n in 0..4 {
        let spec = calc_agent(format!("a{n}"));
        agents.push(runtime.spawn(spec).await.unwrap());
    }
    let started = Instant::now();
    let asks = agents.iter().map(|a| a.ask("go"));
    for reply in futures::future::join_all(asks).await {
        reply.unwrap();
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(950), "{took:?}");
    let notices = notices.lock().unwrap().clone();
    assert!(!notices.is_empty(), "a wait past 250 ms is published");
    assert!(notices.iter().all(|n| n.account == "openai"), "{notices:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_persons_agent_goes_before_the_batch() {
    let model = RecordingModel {
        delay: Duration::from_millis(30),
        ..RecordingModel::default()
    };
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .llm_concurrency("openai", 1)
        .build()
        .unwrap();
    let mut batch = Vec::new();
    for n in 0..5 {
        let spec = calc_agent(format!("batch{n}")).agent(move |s| s.with_priority(Priority::Low));
        batch.push(runtime.spawn(spec).await.unwrap());
    }
    let person = runtime
        .spawn(calc_agent("chat").agent(move |s| s.with_priority(Priority::High)))
        .await
        .unwrap();
    let asks: Vec<_> = batch
        .iter()
        .enumerate()
        .map(|(n, a)| {
            let a = a.clone();
            tokio::spawn(async move { a.ask(format!("batch {n}")).await })
        })
        .collect();
    // The batch is queued behind the first call by now.
    tokio::time::sleep(Duration::from_millis(10)).await;
    person.ask("person").await.unwrap();
    for ask in asks {
        ask.await.unwrap().unwrap();
    }
    let order = model.started.lock().unwrap().clone();
    let at = order.iter().position(|q| q == "person").unwrap();
    assert!(at <= 1, "{order:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_call_that_waits_past_the_longest_wait_fails_typed() {
    let model = RecordingModel {
        delay: Duration::from_millis(600),
        ..RecordingModel::default()
    };
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .llm_concurrency("openai", 1)
        .llm_max_wait(Duration::from_millis(100))
        .build()
        .unwrap();
    let first = runtime.spawn(calc_agent("first")).await.unwrap();
    let second = runtime.spawn(calc_agent("second")).await.unwrap();
    let held = tokio::spawn(async move { first.ask("one").await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let failed = second.ask("two").await;
    let message = failure_data(failed);
    assert!(message.contains("shared rate limits"), "{message}");
    held.await.unwrap().unwrap();
    runtime.shutdown().await;
}
