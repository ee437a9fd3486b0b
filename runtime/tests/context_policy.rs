//! The context rows through the runtime: the agent's layer of the context policy set through
//! its handle (kept across a restart, recorded in the thread's stored meta and with each call),
//! and the `thread.updated` / `context.warning` signals on the bus.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use motet_agents::{
    CONTEXT_WARNING, ContextPolicy, ContextWarning, ContextWarningReason, EntryBody,
    THREAD_UPDATED, ThreadUpdated, WindowMode,
};
use motet_runtime::agent::Runtime;
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_signals::{Delivery, Signal};

const WAIT: Duration = Duration::from_secs(10);

fn runtime(store: Arc<dyn ThreadStore>) -> Runtime {
    Runtime::builder()
        .llm(EchoModel::default())
        .store(store)
        .build()
        .unwrap()
}

/// The policies recorded with the thread's calls, oldest first.
fn recorded(thread: &motet_agents::Thread) -> Vec<ContextPolicy> {
    thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { basis, .. } => basis.as_ref()?.policy.as_deref().cloned(),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_policy_is_set_through_its_handle_kept_and_recorded() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let first = runtime(store.clone());
    let spec = || calc_agent("calc");
    let agent = first.spawn(spec()).await.unwrap();
    // The strategy's configured policy (keep_last_turns 0) is in force at first.
    let configured = ContextPolicy::new().with_keep_last_turns(0);
    assert_eq!(agent.ask_with("q1", on("t")).await.unwrap().text, "q1");
    let meta = store.get_meta("calc/t").await.unwrap().unwrap();
    assert_eq!(
        meta.policy,
        Some(serde_json::to_value(&configured).unwrap())
    );

    // The agent's layer: one turn of history from now on (a sliding window, which commits no
    // boundary, so clearing it brings the whole history back).
    let agent_policy = ContextPolicy::new()
        .with_keep_last_turns(1)
        .with_window(WindowMode::Sliding);
    agent
        .set_context_policy(Some("t"), Some(agent_policy.clone()), WAIT)
        .await
        .unwrap();
    assert_eq!(agent.ask_with("q2", on("t")).await.unwrap().text, "q2");
    let meta = store.get_meta("calc/t").await.unwrap().unwrap();
    assert_eq!(
        meta.policy,
        Some(serde_json::to_value(&agent_policy).unwrap())
    );
    first.shutdown().await;

    // A new process: the thread comes back with the agent's policy in force.
    let second = runtime(store.clone());
    let agent = second.spawn(spec()).await.unwrap();
    assert_eq!(agent.ask_with("q3", on("t")).await.unwrap().text, "q3");
    // Cleared, the configured policy (the whole history) applies again.
    agent
        .set_context_policy(Some("t"), None, WAIT)
        .await
        .unwrap();
    assert_eq!(
        agent.ask_with("q4", on("t")).await.unwrap().text,
        "q1|q2|q3|q4"
    );
    let thread = agent.get_thread(Some("t")).await.unwrap().unwrap();
    assert_eq!(
        recorded(&thread),
        [configured.clone(), agent_policy, configured]
    );
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_and_full_contexts_are_published_on_the_bus() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let runtime = runtime(store);
    let seen: Arc<Mutex<Vec<Signal>>> = Arc::default();
    let sink = seen.clone();
    let _sub = runtime
        .bus()
        .subscribe("**".parse().unwrap(), move |signal: &Signal| {
            sink.lock().unwrap().push(signal.clone());
            Delivery::Delivered
        });
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    agent.ask_with("q1", on("t")).await.unwrap();
    // A window of one message: the second ask drops the first turn, and says so.
    agent
        .set_context_policy(
            Some("t"),
            Some(ContextPolicy::new().with_max_messages(1)),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(agent.ask_with("q2", on("t")).await.unwrap().text, "q2");
    runtime.shutdown().await;

    let seen = seen.lock().unwrap();
    let updates: Vec<ThreadUpdated> = seen
        .iter()
        .filter(|s| s.signal_type().as_str() == THREAD_UPDATED)
        .map(|s| s.data_as().unwrap())
        .collect();
    // Each ask commits its question, then its answer.
    let revs: Vec<u64> = updates.iter().map(|u| u.rev).collect();
    assert!(revs.contains(&2) && revs.contains(&4), "{revs:?}");
    assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
    assert!(
        updates
            .iter()
            .all(|u| u.thread_id == "t" && u.agent == "calc" && u.appended > 0)
    );
    assert!(updates.last().unwrap().estimated_tokens > 0);
    let warnings: Vec<ContextWarning> = seen
        .iter()
        .filter(|s| s.signal_type().as_str() == CONTEXT_WARNING)
        .map(|s| s.data_as().unwrap())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].reason, ContextWarningReason::Truncated);
}
