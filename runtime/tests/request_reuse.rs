//! A request id that meets its own interrupted request: a program that stopped mid-request
//! (a crash, a kill, a deploy) and sends the same request again on restart — as a batch that
//! names its requests does — has it carried on once, its question stored once and its answer
//! stored, never asked a second time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use motet_agents::{AGENT_COMPLETED, AGENT_REQUEST, AgentRequest, EntryBody};
use motet_runtime::agent::Runtime;
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_signals::Signal;

fn request(id: &str, thread: &str, query: &str) -> Signal {
    Signal::builder(AGENT_REQUEST, "test")
        .with_request_id(id)
        .with_thread_id(thread)
        .with_data(AgentRequest {
            attachments: Default::default(),
            query: query.to_owned(),
            context_policy: None,
            response_format: None,
        })
        .build()
        .unwrap()
}

async fn spawn(runtime: &Runtime) -> motet_runtime::agent::AgentHandle {
    runtime.spawn(calc_agent("batch")).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_sent_again_after_its_process_stopped_is_carried_on_once() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    // The first process commits the question, then stops while its LLM call runs.
    let hanging = HangingModel::default();
    let first = Runtime::builder()
        .llm(hanging.clone())
        .store(store.clone())
        .build()
        .unwrap();
    let agent = spawn(&first).await;
    let started = hanging.started.notified();
    let asked = {
        let agent = agent.clone();
        tokio::spawn(async move {
            agent
                .ask_signal(
                    request("task-1.A", "t", "What is 2 + 2?"),
                    Duration::from_secs(60),
                )
                .await
        })
    };
    tokio::time::timeout(Duration::from_secs(10), started)
        .await
        .unwrap();
    first.shutdown().await;
    asked.abort();

    // The second process gets the same request again (same id, same question).
    let second = Runtime::builder()
        .llm(EchoModel::default())
        .store(store.clone())
        .build()
        .unwrap();
    let agent = spawn(&second).await;
    let reply = agent
        .ask_signal(
            request("task-1.A", "t", "What is 2 + 2?"),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    assert_eq!(reply.signal_type().as_str(), AGENT_COMPLETED, "{reply:?}");
    second.shutdown().await;

    let thread = store.load("batch/t").await.unwrap().unwrap();
    let questions = thread
        .to_list()
        .iter()
        .filter(|e| matches!(e.body, EntryBody::User { .. }))
        .count();
    assert_eq!(questions, 1, "{:#?}", thread.to_list());
    let last = thread.to_list().last().cloned().unwrap();
    assert!(
        matches!(&last.body, EntryBody::Assistant { message, .. } if message.to_string() == "What is 2 + 2?"),
        "{last:?}"
    );
    assert_eq!(last.refs.request_id.as_deref(), Some("task-1.A"));
    // Nothing is left owing: a resume finds nothing to carry on.
    let third = Runtime::builder()
        .llm(EchoModel::default())
        .store(store.clone())
        .build()
        .unwrap();
    spawn(&third).await;
    assert!(
        third
            .recover(Duration::from_secs(5))
            .await
            .unwrap()
            .is_empty()
    );
    third.shutdown().await;
}
