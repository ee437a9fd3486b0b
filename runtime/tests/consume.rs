//! Agents consuming a durable bus (`AgentSpec::consume`), here the in-process `LocalBus` (the
//! same trait as NATS JetStream; motet-jetstream's tests run these guarantees on a real
//! server): every delivery is committed by the agent's thread before it is acknowledged, a
//! delivery the thread fails comes again and then goes to the dead letters, and a signal
//! delivered twice (same source and id) is handled once, across a restart of the agent too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

#[path = "common/ledger.rs"]
mod ledger;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ledger::{Ledger, REJECTED, item, report_of};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::bus::{ConsumerSpec, LocalBus, SignalBus};
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_runtime::testing::ScriptedModel;
use motet_signals::Signal;

fn consumer(name: &str) -> ConsumerSpec {
    ConsumerSpec::new(name, "work.*".parse().unwrap())
        .with_max_deliver(3)
        .with_backoff(vec![Duration::from_millis(5)])
}

const PATIENCE: Duration = Duration::from_secs(10);

fn runtime(store: Arc<dyn ThreadStore>, bus: Option<LocalBus>) -> Runtime {
    let builder = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(store);
    match bus {
        Some(bus) => builder.signal_bus(Arc::new(bus)),
        None => builder,
    }
    .build()
    .unwrap()
}

#[tokio::test]
async fn every_delivery_is_committed_by_the_agent_in_order() {
    let store = Arc::new(MemoryStore::new());
    let runtime = runtime(store.clone(), None);
    let agent = runtime
        .spawn(AgentSpec::new("ledger", Ledger).consume(consumer("ledger")))
        .await
        .unwrap();
    let ids: Vec<String> = (0..200).map(|n| format!("w{n}")).collect();
    for id in &ids {
        // Published at the pace the consumer settles them: the in-process bus skips a consumer
        // whose deliveries in flight are all taken (documented), a durable one would hold them.
        runtime.signal_bus().publish(&item(id)).await.unwrap();
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let seen = report_of(&agent, ids.len(), PATIENCE).await;
    assert_eq!(seen, ids);
    // Committed: the stored state has them all, as the thread's snapshot.
    let state = store.load_state("ledger/default").await.unwrap().unwrap();
    assert!(state.contains("w199@test-publisher"), "{state}");
}

#[tokio::test]
async fn a_delivery_the_agent_keeps_failing_goes_to_the_dead_letters() {
    let bus = LocalBus::default();
    let runtime = runtime(Arc::new(MemoryStore::new()), Some(bus.clone()));
    let agent = runtime
        .spawn(AgentSpec::new("picky", Ledger).consume(consumer("picky")))
        .await
        .unwrap();
    let before = REJECTED.load(Ordering::SeqCst);
    let bad = Signal::builder("work.bad", "test-publisher")
        .with_id("b1")
        .build()
        .unwrap();
    bus.publish(&bad).await.unwrap();
    bus.publish(&item("fine")).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while bus.dead_letters("picky").is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let dead = bus.dead_letters("picky");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].0.id().as_str(), "b1");
    assert!(
        dead[0].1.contains("failed 3 of 3") && dead[0].1.contains("rejected"),
        "{}",
        dead[0].1
    );
    assert_eq!(REJECTED.load(Ordering::SeqCst) - before, 3);
    // The good one went through meanwhile.
    assert_eq!(
        report_of(&agent, 1, PATIENCE).await,
        vec!["fine".to_owned()]
    );
}

#[tokio::test]
async fn a_signal_delivered_again_is_handled_once_even_after_a_restart() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let bus = LocalBus::default();
    let runtime = runtime(store.clone(), Some(bus.clone()));
    let spec = || AgentSpec::new("once", Ledger).consume(consumer("once"));
    let agent = runtime.spawn(spec()).await.unwrap();
    bus.publish(&item("a")).await.unwrap();
    bus.publish(&item("a")).await.unwrap();
    bus.publish(&item("b")).await.unwrap();
    assert_eq!(report_of(&agent, 2, PATIENCE).await, vec!["a", "b"]);

    // The agent stops and comes back (its thread reloaded from the store); the bus delivers
    // "a" again, as a broker does with a delivery whose acknowledgement was lost.
    runtime.stop_agent("once");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let agent = runtime.spawn(spec()).await.unwrap();
    bus.publish(&item("a")).await.unwrap();
    bus.publish(&item("c")).await.unwrap();
    assert_eq!(report_of(&agent, 3, PATIENCE).await, vec!["a", "b", "c"]);
    assert!(bus.dead_letters("once").is_empty());
}

#[tokio::test]
async fn an_emit_to_the_bus_reaches_another_agents_consumer() {
    let bus = LocalBus::default();
    let runtime = runtime(Arc::new(MemoryStore::new()), Some(bus.clone()));
    let sender = runtime
        .spawn(AgentSpec::new("sender", Ledger))
        .await
        .unwrap();
    let receiver = runtime
        .spawn(AgentSpec::new("receiver", Ledger).consume(consumer("receiver")))
        .await
        .unwrap();
    sender.ask("emit:e1").await.unwrap();
    sender.ask("emit:e2").await.unwrap();
    assert_eq!(report_of(&receiver, 2, PATIENCE).await, vec!["e1", "e2"]);
}

#[tokio::test]
async fn replies_reach_a_consumer_of_the_durable_bus() {
    let bus = LocalBus::default();
    let runtime = runtime(Arc::new(MemoryStore::new()), Some(bus.clone()));
    let asked = runtime
        .spawn(AgentSpec::new("asked", Ledger))
        .await
        .unwrap();
    let watcher = runtime
        .spawn(AgentSpec::new("watcher", Ledger).consume(ConsumerSpec::new(
            "watcher",
            "agent.completed".parse().unwrap(),
        )))
        .await
        .unwrap();
    let reply = asked.ask("report").await.unwrap();
    // The watcher's own report replies reach it too, after the one it was asked about.
    let seen = report_of(&watcher, 1, PATIENCE).await;
    assert_eq!(
        seen.first().map(String::as_str),
        Some(reply.signal.id().as_str()),
        "{seen:?}"
    );
}

/// A broker that takes 20 ms to confirm each publish and remembers what it confirmed.
#[derive(Default)]
struct SlowBroker {
    confirmed: std::sync::Mutex<Vec<String>>,
}

impl SignalBus for SlowBroker {
    fn publish<'a>(
        &'a self,
        signal: &'a Signal,
    ) -> futures::future::BoxFuture<
        'a,
        Result<motet_runtime::bus::Published, motet_runtime::bus::BusError>,
    > {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.confirmed
                .lock()
                .unwrap()
                .push(signal.id().as_str().to_owned());
            Ok(motet_runtime::bus::Published::default())
        })
    }

    fn consume<'a>(
        &'a self,
        spec: &'a ConsumerSpec,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Box<dyn motet_runtime::bus::Inbox>, motet_runtime::bus::BusError>,
    > {
        Box::pin(async move {
            Err(motet_runtime::bus::BusError::Consumer {
                name: spec.name.clone(),
                reason: "this broker only publishes".into(),
            })
        })
    }

    fn kind(&self) -> &'static str {
        "slow"
    }
}

#[tokio::test]
async fn shutdown_waits_for_emits_to_reach_the_durable_bus_in_order() {
    let broker = Arc::new(SlowBroker::default());
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .signal_bus(broker.clone())
        .build()
        .unwrap();
    let sender = runtime
        .spawn(AgentSpec::new("sender", Ledger))
        .await
        .unwrap();
    for n in 0..5 {
        sender.ask(&format!("emit:e{n}")).await.unwrap();
    }
    // Five emits and five replies wait for a broker taking 20 ms each.
    runtime.shutdown().await;
    let confirmed = broker.confirmed.lock().unwrap().clone();
    let emits: Vec<&str> = confirmed
        .iter()
        .map(String::as_str)
        .filter(|id| id.starts_with('e'))
        .collect();
    assert_eq!(emits, ["e0", "e1", "e2", "e3", "e4"], "{confirmed:?}");
    assert_eq!(confirmed.len(), 10, "{confirmed:?}");
}
