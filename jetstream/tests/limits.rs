//! The server's limits, against the real server from scripts/nats.sh: a signal over its
//! `max_payload` (1 MiB by default) is refused at once with a typed error, and an agent's answer
//! over it is not retried and lost: whoever waits on the bus for it gets an `agent.failed` in its
//! place, naming the size and the limit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use motet_agents::{AGENT_COMPLETED, AGENT_FAILED, AGENT_REQUEST, Strategy, StrategyError};
use motet_directives::{Directive, Reply};
use motet_jetstream::{JetStreamBus, wire};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::bus::{BusError, ConsumerSpec, Inbox, Published, SignalBus};
use motet_runtime::store::MemoryStore;
use motet_runtime::testing::ScriptedModel;
use motet_signals::Signal;

/// Two MiB: twice the server's default `max_payload`.
const BIG: usize = 2 << 20;

/// The JetStream bus, counting the publishes it is asked for.
struct Counting {
    inner: JetStreamBus,
    publishes: AtomicUsize,
}

impl SignalBus for Counting {
    fn publish<'a>(&'a self, signal: &'a Signal) -> BoxFuture<'a, Result<Published, BusError>> {
        self.publishes.fetch_add(1, Ordering::SeqCst);
        self.inner.publish(signal)
    }

    fn consume<'a>(
        &'a self,
        spec: &'a ConsumerSpec,
    ) -> BoxFuture<'a, Result<Box<dyn Inbox>, BusError>> {
        self.inner.consume(spec).boxed()
    }

    fn kind(&self) -> &'static str {
        "counting"
    }
}

/// Answers every request with two MiB.
struct Big;

impl Strategy for Big {
    type State = ();

    fn init(&self, _env: &dyn motet_agents::Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        if signal.signal_type().as_str() != AGENT_REQUEST {
            return Ok(Vec::new());
        }
        let reply = Signal::builder(AGENT_COMPLETED, "big")
            .caused_by(signal)
            .with_data(serde_json::json!({ "answer": "x".repeat(BIG) }))
            .build()
            .unwrap();
        Ok(vec![Directive::Reply(Reply::completed(reply))])
    }
}

/// A signal whose data is `n` bytes of text, and its size on the wire. It has no `time`: the
/// current time's fractional seconds vary in length, so the size would too.
fn padded(n: usize) -> (Signal, usize) {
    let signal = Signal::builder("work.big", "/tests/jetstream")
        .with_id("big")
        .with_time(None)
        .with_data("x".repeat(n))
        .build()
        .unwrap();
    let (headers, payload) =
        wire::encode(&signal, &motet_jetstream::subject::message_id(&signal)).unwrap();
    let size = wire::size(&headers, &payload);
    (signal, size)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_over_max_payload_is_refused_at_once_and_one_at_it_is_stored() {
    let Some(bus) = common::bus("maxpayload").await else {
        return;
    };
    let limit = bus.client().server_info().max_payload;
    assert_eq!(limit, 1 << 20, "the test server's default max_payload");
    let (_, base) = padded(0);
    let (at_limit, size) = padded(limit - base);
    assert_eq!(size, limit);
    bus.publish(&at_limit).await.unwrap();
    let (over, size) = padded(limit - base + 1);
    assert_eq!(
        bus.publish(&over).await,
        Err(BusError::TooLarge {
            id: over.id().as_str().to_owned(),
            size,
            limit
        })
    );
    let (two_mib, size) = padded(BIG);
    match bus.publish(&two_mib).await {
        Err(error @ BusError::TooLarge { .. }) => {
            assert!(error.is_permanent());
            assert_eq!(
                error.to_string(),
                format!(
                    "signal big is {size} bytes on the wire, over the bus's limit of 1048576 bytes"
                )
            );
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // The connection is still good (the server never saw the oversized one).
    bus.publish(&common::signal("work.small", 1)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_payload_limit_fails_its_asker_at_once_and_is_not_retried() {
    let Some(bus) = common::bus("toolarge").await else {
        return;
    };
    let bus = Arc::new(Counting {
        inner: bus,
        publishes: AtomicUsize::new(0),
    });
    // The asker, as another process would be: it waits on the bus for the answer.
    let spec = ConsumerSpec::new(common::unique("asker"), "agent.*".parse().unwrap());
    let mut replies = bus.consume(&spec).await.unwrap();
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(Arc::new(MemoryStore::new()))
        .signal_bus(bus.clone())
        .build()
        .unwrap();
    let agent = runtime.spawn(AgentSpec::new("big", Big)).await.unwrap();
    let answer = agent.ask("answer big").await.unwrap();
    let request = answer.signal.request_id().unwrap().to_owned();

    // Well before any asker's timeout: the publisher's retries alone would take half a minute.
    let delivered = common::next_within(&mut replies, Duration::from_secs(5))
        .await
        .expect("the asker heard nothing of its answer");
    let failure = &delivered.signal;
    assert_eq!(failure.signal_type().as_str(), AGENT_FAILED);
    assert_eq!(failure.request_id(), Some(request.as_str()));
    assert_eq!(failure.thread_id(), answer.signal.thread_id());
    let data: serde_json::Value = failure.data_as().unwrap();
    let message = data["message"].as_str().unwrap();
    assert!(
        message.contains("1048576") && message.contains(answer.signal.id().as_str()),
        "{message}"
    );
    assert_eq!(data["limit"], 1_048_576, "{data}");
    assert!(data["size"].as_u64().unwrap() > BIG as u64, "{data}");
    delivered
        .settle(motet_runtime::bus::Settle::Ack)
        .await
        .unwrap();
    // The refused answer once, its stand-in once: no retries.
    assert_eq!(bus.publishes.load(Ordering::SeqCst), 2);
    runtime.shutdown().await;
}
