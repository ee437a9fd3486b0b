//! A commit that fails (the store briefly down, a connection lost) fails its request with a
//! typed error and leaves the thread usable: the thread goes back to what is stored, and the
//! next ask runs — never "request … is still running" for a request that ended.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "common/flaky_store.rs"]
mod flaky_store;
#[path = "common/pg.rs"]
mod pg;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use motet_agents::EntryBody;
use motet_runtime::agent::{AgentHandle, AskError, Runtime};
use motet_runtime::store::ThreadStore;

use common::*;
use flaky_store::FlakyStore;
use motet_directives::{AssistantBlock, ToolArgs};

/// An echo agent on `store`.
async fn echo_on(store: Arc<dyn ThreadStore>) -> (Runtime, AgentHandle) {
    let runtime = common::echo_runtime(store);
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    (runtime, agent)
}

/// Asks `query` on `thread`, expecting the store's failure.
async fn store_failure(agent: &AgentHandle, query: &str, thread: &str) -> String {
    match agent.ask_with(query, on(thread)).await {
        Err(AskError::Store(failure)) => failure.to_string(),
        other => panic!("expected a store failure, got {other:?}"),
    }
}

/// The kinds of the stored thread's entries, in order.
async fn stored_kinds(store: &FlakyStore, thread: &str) -> Vec<String> {
    let stored = store
        .inner
        .load(&format!("echo/{thread}"))
        .await
        .unwrap()
        .unwrap();
    stored
        .to_list()
        .iter()
        .map(|e| format!("{:?}", e.body.kind()).to_lowercase())
        .collect()
}

/// The user messages of the stored thread, in order.
async fn stored_questions(store: &dyn ThreadStore, thread: &str) -> Vec<String> {
    let stored = store
        .load(&format!("echo/{thread}"))
        .await
        .unwrap()
        .unwrap();
    stored
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::User { content } => Some(content.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_failed_first_commit_fails_its_request_and_the_thread_takes_the_next() {
    let store = Arc::new(FlakyStore::default());
    let (runtime, agent) = echo_on(store.clone()).await;
    assert_eq!(answer(&agent, "one", "t").await, "one");

    // The request's first commit (its question) fails: nothing of it is stored.
    store.fail_writes(0, 1);
    let message = store_failure(&agent, "two", "t").await;
    assert!(message.contains("the test's outage"), "{message}");

    // The next ask runs, on the thread as stored: "two" was never part of it.
    assert_eq!(answer(&agent, "three", "t").await, "one|three");
    assert_eq!(
        stored_questions(store.as_ref(), "t").await,
        ["one", "three"]
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_answer_whose_commit_failed_is_not_in_the_thread_and_the_next_ask_runs() {
    let store = Arc::new(FlakyStore::default());
    let (runtime, agent) = echo_on(store.clone()).await;
    assert_eq!(answer(&agent, "one", "t").await, "one");

    // The question is committed, the answer's commit fails: the request fails, typed.
    store.fail_writes(1, 1);
    store_failure(&agent, "two", "t").await;

    // The next ask runs and sees the committed question; the answer nobody was given is not
    // in the thread (it was not stored, and is not written later with the next commit).
    assert_eq!(answer(&agent, "three", "t").await, "one|two|three");
    assert_eq!(
        stored_kinds(store.as_ref(), "t").await,
        ["user", "assistant", "user", "user", "assistant"]
    );
    runtime.shutdown().await;
}

/// An agent whose model answers "first", asks for a tool, then answers "third" and "fourth".
async fn tool_agent(store: Arc<FlakyStore>) -> (Runtime, AgentHandle) {
    let model = scripted([
        vec![AssistantBlock::text("first")],
        vec![AssistantBlock::tool_use(
            "call_1",
            "add",
            ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
        )],
        vec![AssistantBlock::text("third")],
        vec![AssistantBlock::text("fourth")],
    ]);
    let runtime = Runtime::builder().llm(model).store(store).build().unwrap();
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    (runtime, agent)
}

#[tokio::test]
async fn a_tool_turn_whose_commit_failed_leaves_no_request_running() {
    let store = Arc::new(FlakyStore::default());
    let (runtime, agent) = tool_agent(store.clone()).await;
    assert_eq!(answer(&agent, "one", "t").await, "first");

    // The turn asking for the tool is not stored: the request fails there, its tool never runs.
    store.fail_writes(1, 1);
    store_failure(&agent, "two", "t").await;

    // Not "request … is still running", for this ask or any later one.
    assert_eq!(answer(&agent, "three", "t").await, "third");
    assert_eq!(answer(&agent, "four", "t").await, "fourth");
    assert_eq!(
        stored_kinds(store.as_ref(), "t").await,
        [
            "user",
            "assistant",
            "user",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_conflicting_commit_while_the_store_cannot_be_read_leaves_no_request_running() {
    let store = Arc::new(FlakyStore::default());
    let (runtime, agent) = tool_agent(store.clone()).await;
    assert_eq!(answer(&agent, "one", "t").await, "first");

    // The tool turn's commit is refused as a conflict, and the thread cannot be reloaded.
    store.conflicting.store(true, Ordering::SeqCst);
    store.reads_down.store(true, Ordering::SeqCst);
    store.fail_writes(1, 1);
    store_failure(&agent, "two", "t").await;

    // Once the store reads again, the thread is what it holds: no request of it runs.
    store.reads_down.store(false, Ordering::SeqCst);
    assert_eq!(answer(&agent, "three", "t").await, "third");
    runtime.shutdown().await;
}

#[tokio::test]
async fn while_the_store_stays_down_each_ask_fails_typed_and_the_first_after_it_runs() {
    let store = Arc::new(FlakyStore::default());
    let (runtime, agent) = echo_on(store.clone()).await;
    assert_eq!(answer(&agent, "one", "t").await, "one");

    // Down for writes and reads: the thread cannot even be read back after the failure.
    store.fail_writes(1, usize::MAX);
    store.reads_down.store(true, Ordering::SeqCst);
    store_failure(&agent, "two", "t").await;
    for query in ["three", "four"] {
        let message = store_failure(&agent, query, "t").await;
        assert!(!message.contains("still running"), "{message}");
    }

    // The store is back: the next ask runs on the thread as stored.
    store.fail_writes(0, 0);
    store.reads_down.store(false, Ordering::SeqCst);
    assert_eq!(answer(&agent, "five", "t").await, "one|two|five");
    runtime.shutdown().await;
}

/// The echo model, and a way to break the store's database at its next call: the store's
/// connections are ended and new ones refused, as when the server goes down between the
/// request's first commit and its answer's.
#[derive(Clone)]
struct BreakingModel {
    admin_url: String,
    database: String,
    armed: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for BreakingModel {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, motet_providers::ProviderError> {
        if self.armed.swap(false, Ordering::SeqCst) {
            set_allow_connections(&self.admin_url, &self.database, false).await;
            pg::connect(&self.admin_url)
                .await
                .execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                    &[&self.database],
                )
                .await
                .unwrap();
        }
        EchoModel::default().stream(req).await
    }
}

async fn set_allow_connections(admin_url: &str, database: &str, allow: bool) {
    pg::connect(admin_url)
        .await
        .batch_execute(&format!(
            "ALTER DATABASE {database} WITH ALLOW_CONNECTIONS {allow}"
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_commit_cut_off_by_the_server_fails_and_the_next_ask_runs() {
    let Some(db) = pg::TestDb::new("outage").await else {
        return;
    };
    let store = motet_runtime::store::PostgresStore::open_with(
        &db.url,
        motet_runtime::store::PostgresConfig::default()
            .with_pool_size(2)
            .with_connect_timeout(Duration::from_secs(2))
            .with_wait_timeout(Duration::from_secs(2)),
    )
    .await
    .unwrap();
    let model = BreakingModel {
        admin_url: db.admin_url.clone(),
        database: db.name.clone(),
        armed: Arc::default(),
    };
    let runtime = Runtime::builder()
        .llm(model.clone())
        .store(Arc::new(store))
        .build()
        .unwrap();
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    assert_eq!(answer(&agent, "one", "t").await, "one");

    model.armed.store(true, Ordering::SeqCst);
    store_failure(&agent, "two", "t").await;
    // Still down: refused, typed, not "still running".
    let message = store_failure(&agent, "three", "t").await;
    assert!(!message.contains("still running"), "{message}");

    set_allow_connections(&db.admin_url, &db.name, true).await;
    assert_eq!(answer(&agent, "four", "t").await, "one|two|four");
    runtime.shutdown().await;
    db.drop_now().await;
}
