//! Threads kept: summaries over a range of the thread, idle threads stopped and brought back
//! from the store, threads that survive the runtime in SQLite, a thread left mid-request
//! resumed, and an unreadable thread failing closed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{AGENT_COMPLETED, ReactCompleted};
use motet_directives::{AssistantBlock, AssistantMessage, Message, ToolArgs, Usage};
use motet_runtime::agent::{AgentSpec, AskError, Runtime, RuntimeError};

use common::*;

/// Keeps notes in a thread; "summarize" asks the runtime to stream the summary call it built
/// over them (`summary_request`) and answers with the summary.
struct Notes;

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct NotesState {
    thread: motet_agents::Thread,
    waiting: Option<String>,
}

impl motet_agents::Strategy for Notes {
    type State = NotesState;

    fn init(&self, env: &dyn motet_agents::Env) -> NotesState {
        NotesState {
            thread: motet_agents::Thread::create(env),
            waiting: None,
        }
    }

    fn thread<'a>(&self, state: &'a NotesState) -> Option<&'a motet_agents::Thread> {
        Some(&state.thread)
    }

    fn handle(
        &self,
        state: &mut NotesState,
        signal: &motet_signals::Signal,
        env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{CallId, Directive, Reply, Summarize};
        let done = |data: serde_json::Value, request: &str| {
            Directive::Reply(Reply::completed(
                motet_signals::Signal::builder(AGENT_COMPLETED, "notes")
                    .with_request_id(request)
                    .with_data(data)
                    .build()
                    .unwrap(),
            ))
        };
        if let Ok(result) = signal.data_as::<motet_agents::SummaryResult>() {
            let request = state.waiting.take().unwrap();
            return Ok(vec![done(serde_json::json!(result.content), &request)]);
        }
        let input: motet_agents::AgentRequest = signal.data_as().unwrap();
        let request = signal.request_id().unwrap().to_owned();
        if input.query == "summarize" {
            state.waiting = Some(request);
            let last = state.thread.entry_count() as u64;
            let to_seq = last.saturating_sub(1);
            let model = "openai:gpt-5.2".parse().unwrap();
            let instructions = Some("Summarize the notes.");
            let request =
                motet_agents::summary_request(&state.thread, 0, to_seq, model, instructions)
                    .unwrap();
            return Ok(vec![Directive::Summarize(Summarize {
                call_id: CallId::new("sum-1"),
                thread_id: state.thread.id().to_owned(),
                from_seq: 0,
                to_seq,
                request,
            })]);
        }
        state
            .thread
            .append(env, motet_agents::NewEntry::user(input.query));
        Ok(vec![done(serde_json::json!("noted"), &request)])
    }
}

#[tokio::test]
async fn summarize_calls_the_model_over_the_thread_range() {
    let model = scripted([vec![AssistantBlock::text(
        "Two notes: buy milk, call Rome.",
    )]]);
    let store = Arc::new(motet_runtime::store::MemoryStore::new());
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .store(store.clone())
        .build()
        .unwrap();
    let agent = runtime.spawn(AgentSpec::new("notes", Notes)).await.unwrap();
    agent.ask("buy milk").await.unwrap();
    agent.ask("call Rome").await.unwrap();
    let reply = agent.ask("summarize").await.unwrap();
    // The summary call is in the usage ledger, priced, charged to its request and thread.
    use motet_runtime::store::{ThreadStore as _, UsageFilter};
    let ledger = store.usage_records(&UsageFilter::all()).await.unwrap();
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0].kind, motet_providers::CallKind::Summary);
    assert_eq!(ledger[0].request.as_deref(), reply.signal.request_id());
    assert_eq!(
        (ledger[0].agent.as_str(), ledger[0].thread.as_str()),
        ("notes", "default")
    );
    // 10 input tokens at $1.75 / MTok and 5 output tokens at $14 / MTok.
    assert_eq!(
        ledger[0].cost,
        Some(motet_providers::Cost::from_picodollars(
            10 * 1_750_000 + 5 * 14_000_000
        ))
    );
    assert_eq!(
        reply.signal.data_as::<String>().unwrap(),
        "Two notes: buy milk, call Rome."
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].messages[0],
        Message::system("Summarize the notes.")
    );
    match &requests[0].messages[1] {
        Message::User { content } => {
            assert_eq!(content, "User: buy milk\nUser: call Rome\n");
        }
        other => panic!("{other:?}"),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_idle_thread_is_stopped_and_comes_back_from_the_store() {
    let runtime = echo_runtime(Arc::new(motet_runtime::store::MemoryStore::new()));
    let agent = runtime
        .spawn(
            calc_agent("echo")
                .agent(move |s| s.with_idle_timeout(Some(Duration::from_millis(100)))),
        )
        .await
        .unwrap();
    assert_eq!(answer(&agent, "first", "t1").await, "first");
    assert_eq!(runtime.thread_count(), 2);
    // Both threads (t1 and the default one) go idle and stop.
    for _ in 0..100 {
        if runtime.thread_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(runtime.thread_count(), 0, "idle threads were stopped");
    // The stored thread still answers questions about it...
    let stored = agent.get_thread(Some("t1")).await.unwrap().unwrap();
    assert_eq!(stored.id(), "echo/t1");
    assert!(stored.entry_count() >= 2, "the user message and the answer");
    // ...and the next ask brings the actor back with its history.
    assert_eq!(answer(&agent, "second", "t1").await, "first|second");
    runtime.shutdown().await;
}

#[tokio::test]
async fn two_agents_threads_of_the_same_name_do_not_share_history() {
    let runtime = echo_runtime(Arc::new(motet_runtime::store::MemoryStore::new()));
    let a = runtime.spawn(calc_agent("a")).await.unwrap();
    let b = runtime.spawn(calc_agent("b")).await.unwrap();
    assert_eq!(answer(&a, "from a", "shared").await, "from a");
    assert_eq!(answer(&b, "from b", "shared").await, "from b");
    runtime.shutdown().await;
}

#[tokio::test]
async fn threads_survive_the_runtime_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    {
        let store = motet_runtime::store::SqliteStore::open(&path)
            .await
            .unwrap();
        let runtime = echo_runtime(Arc::new(store));
        let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
        assert_eq!(answer(&agent, "one", "chat").await, "one");
        assert_eq!(answer(&agent, "two", "chat").await, "one|two");
        runtime.shutdown().await;
    }
    // A new runtime on the same file: the conversation goes on where it was.
    let store = motet_runtime::store::SqliteStore::open(&path)
        .await
        .unwrap();
    let runtime = echo_runtime(Arc::new(store));
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    assert_eq!(answer(&agent, "three", "chat").await, "one|two|three");
    let thread = agent.get_thread(Some("chat")).await.unwrap().unwrap();
    assert_eq!(thread.id(), "echo/chat");
    // The meta an agent needs to come back is stored with the thread, and so are its totals.
    use motet_runtime::store::ThreadStore as _;
    let store = motet_runtime::store::SqliteStore::open(&path)
        .await
        .unwrap();
    let meta = store.get_meta("echo/chat").await.unwrap().unwrap();
    let key = motet_runtime::store::ThreadKey::new("echo", "chat");
    assert_eq!(meta.key, Some(key));
    let summary = store.summary("echo/chat").await.unwrap().unwrap();
    assert_eq!(summary.entry_count, thread.entry_count() as u64);
    assert_eq!(summary.usage, thread.usage());
    assert!(
        summary.usage.input_tokens > 0,
        "session usage totals are stored"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_thread_left_mid_request_is_resumed_without_running_a_tool_twice() {
    use motet_agents::{NewEntry, Refs, Thread};
    use motet_runtime::store::{MemoryStore, ThreadHeader, ThreadStore};
    // What a killed process left behind: the question and an assistant turn calling `add`,
    // with no result committed.
    let store = Arc::new(MemoryStore::new());
    let env = motet_agents::FixedEnv::new(1);
    let mut thread = Thread::new("echo/default", 0);
    let refs = Refs::request("req-lost").with_iteration(1);
    thread.append(&env, NewEntry::user("add 2 and 3").with_refs(refs.clone()));
    let turn = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "tc_1",
            "add",
            ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
        )],
        stop_reason: motet_directives::StopReason::ToolUse,
    };
    thread.append(
        &env,
        NewEntry::assistant(turn, Usage::default()).with_refs(refs),
    );
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    store.commit(&thread, 0).await.unwrap();

    let runtime = echo_runtime(store.clone());
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    let request = agent
        .resume(None, Duration::from_secs(5))
        .await
        .unwrap()
        .expect("the thread owes a request");
    assert_eq!(request.id(), "req-lost");
    let reply = request.wait().await.unwrap();
    assert_eq!(
        reply.signal.data_as::<ReactCompleted>().unwrap().answer,
        "add 2 and 3"
    );
    // `add` is not declared idempotent: it was answered with an error, not run again.
    let stored = store.load("echo/default").await.unwrap().unwrap();
    let results: Vec<_> = stored
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            motet_agents::EntryBody::ToolResult { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "exactly one result for the call");
    assert!(results[0].is_error);
    assert!(results[0].content.contains("may or may not have run"));
    // Seqs are contiguous and nothing is duplicated.
    for (n, entry) in stored.to_list().iter().enumerate() {
        assert_eq!(u64::from(entry.seq), n as u64);
    }
    // Nothing is owed any more: resuming again replies with the answer.
    let again = agent
        .resume(None, Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        again
            .wait()
            .await
            .unwrap()
            .signal
            .data_as::<ReactCompleted>()
            .unwrap()
            .answer,
        "add 2 and 3"
    );
    runtime.shutdown().await;
}

/// A store whose threads `echo/broken` and `shut/default` cannot be read, as a damaged file
/// would make them.
struct DamagedStore(motet_runtime::store::MemoryStore);

#[async_trait::async_trait]
impl motet_runtime::store::ThreadStore for DamagedStore {
    async fn create(
        &self,
        header: &motet_runtime::store::ThreadHeader,
    ) -> Result<(), motet_runtime::store::StoreError> {
        self.0.create(header).await
    }
    async fn load(
        &self,
        thread_id: &str,
    ) -> Result<Option<motet_agents::Thread>, motet_runtime::store::StoreError> {
        if thread_id == "echo/broken" || thread_id == "shut/default" {
            return Err(motet_runtime::store::StoreError::CorruptEntry {
                thread_id: thread_id.to_owned(),
                seq: 3,
                reason: "expected value at line 1 column 1".into(),
            });
        }
        self.0.load(thread_id).await
    }
    async fn load_after(
        &self,
        thread_id: &str,
        rev: u64,
    ) -> Result<Vec<std::sync::Arc<motet_agents::Entry>>, motet_runtime::store::StoreError> {
        self.0.load_after(thread_id, rev).await
    }
    async fn append(
        &self,
        thread_id: &str,
        entries: &[std::sync::Arc<motet_agents::Entry>],
        expected_rev: u64,
    ) -> Result<u64, motet_runtime::store::StoreError> {
        self.0.append(thread_id, entries, expected_rev).await
    }
    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[std::sync::Arc<motet_agents::Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, motet_runtime::store::StoreError> {
        self.0
            .append_with_state(thread_id, entries, expected_rev, state)
            .await
    }
    async fn load_state(
        &self,
        thread_id: &str,
    ) -> Result<Option<String>, motet_runtime::store::StoreError> {
        self.0.load_state(thread_id).await
    }
    async fn summary(
        &self,
        thread_id: &str,
    ) -> Result<Option<motet_runtime::store::ThreadSummary>, motet_runtime::store::StoreError> {
        self.0.summary(thread_id).await
    }
    async fn list(
        &self,
    ) -> Result<Vec<motet_runtime::store::ThreadSummary>, motet_runtime::store::StoreError> {
        self.0.list().await
    }
    async fn delete(&self, thread_id: &str) -> Result<bool, motet_runtime::store::StoreError> {
        self.0.delete(thread_id).await
    }
    async fn put_meta(
        &self,
        thread_id: &str,
        meta: &motet_runtime::store::ThreadMeta,
    ) -> Result<(), motet_runtime::store::StoreError> {
        self.0.put_meta(thread_id, meta).await
    }
    async fn get_meta(
        &self,
        thread_id: &str,
    ) -> Result<Option<motet_runtime::store::ThreadMeta>, motet_runtime::store::StoreError> {
        self.0.get_meta(thread_id).await
    }
}

#[tokio::test]
async fn an_unreadable_thread_fails_closed_and_is_never_replaced() {
    let runtime = echo_runtime(Arc::new(DamagedStore(
        motet_runtime::store::MemoryStore::new(),
    )));
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    for _ in 0..2 {
        match agent.ask_with("hello", on("broken")).await {
            Err(AskError::ThreadUnavailable {
                thread, message, ..
            }) => {
                assert_eq!(thread, "broken");
                assert!(message.contains("echo/broken"), "{message}");
                assert!(message.contains("seq 3"), "{message}");
                // The store's words, not ractor's: nothing panicked.
                assert!(!message.to_lowercase().contains("panic"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Other threads are fine.
    assert_eq!(answer(&agent, "hello", "fine").await, "hello");
    // An agent whose default thread cannot be read does not start: the store's error.
    match runtime.spawn(calc_agent("shut")).await {
        Err(RuntimeError::Store(failure)) => {
            let message = failure.to_string();
            assert!(message.contains("shut/default"), "{message}");
            assert!(message.contains("seq 3"), "{message}");
            assert!(!message.to_lowercase().contains("panic"), "{message}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_thread_range_is_summarized_on_request_and_projected_in_its_place() {
    let model = scripted([
        vec![AssistantBlock::text("Rome.")],
        vec![AssistantBlock::text("Paris.")],
        vec![AssistantBlock::text("They asked for two capitals.")],
        vec![AssistantBlock::text("Berlin.")],
    ]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("geo")).await;
    ask_each(&agent, "trip", &["capital of Italy?", "capital of France?"]).await;
    let long = Duration::from_secs(5);

    // A range outside the thread is refused with a typed failure and changes nothing.
    let before = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    let err = agent
        .summarize(Some("trip"), 0, 99, long)
        .await
        .unwrap_err();
    match err {
        AskError::Failed { reply } => {
            let failed: motet_agents::ReactFailed = reply.data_as().unwrap();
            assert!(
                matches!(failed.reason, motet_agents::FailureReason::Summary { .. }),
                "{failed:?}"
            );
        }
        other => panic!("{other}"),
    }
    let unchanged = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    assert_eq!(unchanged.entry_count(), before.entry_count());

    // Entries 0..=3 (both questions and answers) become one summary.
    let summary = agent.summarize(Some("trip"), 0, 3, long).await.unwrap();
    assert_eq!(summary, "They asked for two capitals.");
    let requests = model.requests();
    match &requests[2].messages[1] {
        Message::User { content } => assert_eq!(
            content,
            "User: capital of Italy?\nAssistant: Rome.\nUser: capital of France?\nAssistant: Paris.\n"
        ),
        other => panic!("{other:?}"),
    }
    let thread = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    let last = thread.to_list().last().unwrap().clone();
    assert!(
        matches!(
            &last.body,
            motet_agents::EntryBody::Summary { from_seq: 0, to_seq: 3, content, .. }
                if content == "They asked for two capitals."
        ),
        "{last:?}"
    );

    // The next call sees the summary, not the summarized turns.
    agent
        .ask_with("capital of Germany?", on("trip"))
        .await
        .unwrap();
    let next = &model.requests()[3];
    let shown = format!("{:?}", next.messages);
    assert!(shown.contains("They asked for two capitals."), "{shown}");
    assert!(!shown.contains("capital of Italy?"), "{shown}");
    assert!(shown.contains("capital of Germany?"), "{shown}");
    runtime.shutdown().await;
}
