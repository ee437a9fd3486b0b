//! Agents on a JetStream bus (`RuntimeBuilder::signal_bus` + `AgentSpec::consume`), against the
//! real server from scripts/nats.sh: an agent stopped while a thousand signals are published
//! gets every one of them once it is back, each committed once and in order, and nothing is
//! left unacknowledged; a signal the agent keeps failing lands in the dead-letter stream; an
//! `Emit` from one agent reaches another's consumer through the server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "../../runtime/tests/common/ledger.rs"]
mod ledger;

use std::sync::Arc;
use std::time::Duration;

use ledger::{Ledger, report_of};
use motet_jetstream::JetStreamBus;
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::bus::{ConsumerSpec, SignalBus};
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_runtime::testing::ScriptedModel;
use motet_signals::Signal;

fn runtime(store: Arc<dyn ThreadStore>, bus: Arc<JetStreamBus>) -> Runtime {
    Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(store)
        .signal_bus(bus)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_stopped_while_a_thousand_signals_are_published_gets_all_of_them_once() {
    let Some(bus) = common::bus("agents").await else {
        return;
    };
    let bus = Arc::new(bus);
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(store.clone(), bus.clone());
    let consumer = common::unique("ledger");
    let spec = || {
        AgentSpec::new("ledger", Ledger)
            .consume(ConsumerSpec::new(&consumer, "work.*".parse().unwrap()))
    };
    let agent = runtime.spawn(spec()).await.unwrap();
    let first: Vec<Signal> = (0..10).map(|n| common::signal("work.item", n)).collect();
    for signal in &first {
        bus.publish(signal).await.unwrap();
    }
    assert_eq!(
        report_of(&agent, 10, Duration::from_secs(10)).await.len(),
        10
    );

    runtime.stop_agent("ledger");
    let rest: Vec<Signal> = (10..1010).map(|n| common::signal("work.item", n)).collect();
    for signal in &rest {
        bus.publish(signal).await.unwrap();
    }
    assert_eq!(bus.consumer_state(&consumer).await.unwrap().pending, 1000);

    let agent = runtime.spawn(spec()).await.unwrap();
    let seen = report_of(&agent, 1010, Duration::from_secs(60)).await;
    let expected: Vec<String> = first
        .iter()
        .chain(&rest)
        .map(|s| s.id().as_str().to_owned())
        .collect();
    assert_eq!(seen.len(), expected.len());
    assert_eq!(seen, expected, "every signal once, in the order published");
    // Acknowledged once committed: nothing is left pending or in flight at the server.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let state = loop {
        let state = bus.consumer_state(&consumer).await.unwrap();
        if state.in_flight == 0 || tokio::time::Instant::now() > deadline {
            break state;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!((state.pending, state.in_flight), (0, 0), "{state:?}");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_the_agent_keeps_failing_lands_in_the_dead_letters() {
    let Some(bus) = common::bus("agentsdlq").await else {
        return;
    };
    let bus = Arc::new(bus);
    let runtime = runtime(Arc::new(MemoryStore::new()), bus.clone());
    let consumer = common::unique("picky");
    let agent = runtime
        .spawn(
            AgentSpec::new("picky", Ledger).consume(
                ConsumerSpec::new(&consumer, "work.*".parse().unwrap())
                    .with_max_deliver(2)
                    .with_backoff(vec![Duration::from_millis(20)]),
            ),
        )
        .await
        .unwrap();
    bus.publish(&common::signal("work.bad", 1)).await.unwrap();
    bus.publish(&common::signal("work.item", 2)).await.unwrap();
    assert_eq!(
        report_of(&agent, 1, Duration::from_secs(10)).await,
        vec!["work.item-2".to_owned()]
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let dead = loop {
        let dead = bus.dead_letters(&consumer, 10).await.unwrap();
        if !dead.is_empty() || tokio::time::Instant::now() > deadline {
            break dead;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(dead.len(), 1, "{dead:?}");
    let letter = &dead[0];
    assert_eq!(
        letter.signal.as_ref().map(|s| s.id().as_str()),
        Some("work.bad-1")
    );
    assert!(
        letter.reason.contains("failed 2 of 2") && letter.reason.contains("rejected"),
        "{}",
        letter.reason
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emit_reaches_another_agents_consumer_through_the_server() {
    let Some(bus) = common::bus("agentsemit").await else {
        return;
    };
    let bus = Arc::new(bus);
    // Two runtimes, as two processes would be, sharing only the server.
    let sending = runtime(Arc::new(MemoryStore::new()), bus.clone());
    let receiving = runtime(Arc::new(MemoryStore::new()), bus.clone());
    let sender = sending
        .spawn(AgentSpec::new("sender", Ledger))
        .await
        .unwrap();
    let receiver = receiving
        .spawn(
            AgentSpec::new("receiver", Ledger).consume(ConsumerSpec::new(
                common::unique("rx"),
                "work.*".parse().unwrap(),
            )),
        )
        .await
        .unwrap();
    sender.ask("emit:x").await.unwrap();
    assert_eq!(
        report_of(&receiver, 1, Duration::from_secs(10)).await,
        vec!["x".to_owned()]
    );
    sending.shutdown().await;
    receiving.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bus_comes_from_motet_nats_url() {
    let Some(url) = common::nats_url() else {
        return;
    };
    // The variable is read as the test process has it: set (CI, this test's own guard above).
    assert_eq!(std::env::var(motet_jetstream::NATS_URL_VAR).ok(), Some(url));
    let bus = JetStreamBus::from_env(common::config("fromenv"))
        .await
        .unwrap()
        .expect("MOTET_NATS_URL is set");
    let published = bus.publish(&common::signal("work.item", 1)).await.unwrap();
    assert!(published.sequence.is_some());
}
