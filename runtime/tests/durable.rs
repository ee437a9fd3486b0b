//! Durable agent state: every strategy — with or without a Thread — comes back after a crash,
//! a restart or an idle stop as it committed, and `Runtime::recover` carries on with the
//! requests a stop left running.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{EchoModel, HangingModel, react};
use motet_agents::protocol::{self, Input};
use motet_agents::{Env, Strategy, StrategyError};
use motet_directives::results::Outcome;
use motet_directives::{CallId, Directive, LlmRequest, LlmStream, Message, Usage};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::store::{SqliteStore, ThreadStore};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

/// Keeps a running total and no Thread: `add N` adds, `crash` panics mid-request, `ask` waits
/// for the model before it answers, and a resume asks the model again.
struct Counter;

#[derive(Clone, Default, Serialize, Deserialize)]
struct Tally {
    total: i64,
    /// The LLM call the running request waits for.
    waiting: Option<CallId>,
}

impl Counter {
    fn ask_model(state: &mut Tally, env: &dyn Env) -> Directive {
        let call_id = CallId::new(env.fresh_id("call"));
        state.waiting = Some(call_id.clone());
        let request = LlmRequest::new(
            "openai:gpt-5.2".parse().unwrap(),
            vec![Message::user(format!("the total is {}", state.total))],
        );
        Directive::LlmStream(LlmStream::new(call_id, request))
    }
}

impl Strategy for Counter {
    type State = Tally;

    fn init(&self, _env: &dyn Env) -> Tally {
        Tally::default()
    }

    #[allow(clippy::panic)] // the crash is the test
    fn handle(
        &self,
        state: &mut Tally,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let total = |state: &Tally| state.total.to_string();
        Ok(match Input::of(signal)? {
            Input::Request(request) => match request.query.split_once(' ') {
                Some(("add", n)) => {
                    state.total += n.parse::<i64>().unwrap();
                    vec![protocol::completed(
                        signal,
                        env,
                        total(state),
                        Usage::default(),
                    )?]
                }
                _ if request.query == "crash" => panic!("the counter crashed on purpose"),
                _ => vec![Counter::ask_model(state, env)],
            },
            Input::Outcome(Outcome::Llm(result))
                if state.waiting.as_ref() == Some(&result.call_id) =>
            {
                state.waiting = None;
                let text = format!("{} ({})", total(state), result.response.message);
                vec![protocol::completed(signal, env, text, Usage::default())?]
            }
            Input::Resume(_) if state.waiting.is_some() => vec![Counter::ask_model(state, env)],
            Input::Resume(_) => vec![protocol::failed(signal, env, "nothing was running")?],
            _ => Vec::new(),
        })
    }
}

fn runtime_on(
    store: Arc<dyn ThreadStore>,
    llm: impl motet_providers::LlmClient + 'static,
) -> Runtime {
    Runtime::builder().llm(llm).store(store).build().unwrap()
}

#[tokio::test]
async fn a_strategy_without_a_thread_keeps_its_state_through_a_crash() {
    let store: Arc<dyn ThreadStore> = Arc::new(motet_runtime::store::MemoryStore::new());
    let runtime = runtime_on(store, EchoModel::default());
    let counter = runtime
        .spawn(AgentSpec::new("counter", Counter))
        .await
        .unwrap();
    assert_eq!(counter.ask("add 2").await.unwrap().text, "2");
    assert_eq!(counter.ask("add 3").await.unwrap().text, "5");
    // The thread's actor panics mid-request; the supervisor starts it again from the store.
    assert!(counter.ask("crash").await.is_err());
    let after = counter.ask("add 1").await.unwrap();
    assert_eq!(after.text, "6", "the committed total came back");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_strategy_without_a_thread_comes_back_in_a_new_process_and_after_an_idle_stop() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("durable.db");
    {
        let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
        let runtime = runtime_on(store, EchoModel::default());
        let counter = runtime
            .spawn(AgentSpec::new("counter", Counter))
            .await
            .unwrap();
        counter.ask("add 40").await.unwrap();
        // Not shut down: the process just ends.
    }
    let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
    let runtime = runtime_on(store, EchoModel::default());
    let spec =
        AgentSpec::new("counter", Counter).with_idle_timeout(Some(Duration::from_millis(20)));
    let counter = runtime.spawn(spec).await.unwrap();
    assert_eq!(counter.ask("add 1").await.unwrap().text, "41");
    // The thread's actor stops when idle; its next request brings the total back.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while runtime.thread_count() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the idle thread never stopped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(counter.ask("add 1").await.unwrap().text, "42");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_spawned_agent_never_asked_writes_nothing() {
    let store = Arc::new(motet_runtime::store::MemoryStore::new());
    let runtime = runtime_on(store.clone(), EchoModel::default());
    runtime
        .spawn(AgentSpec::new("counter", Counter))
        .await
        .unwrap();
    runtime.shutdown().await;
    assert!(store.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn recover_resumes_the_request_a_stop_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("recover.db");
    {
        let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
        let model = HangingModel::default();
        let runtime = runtime_on(store, model.clone());
        let counter = runtime
            .spawn(AgentSpec::new("counter", Counter))
            .await
            .unwrap();
        counter.ask("add 7").await.unwrap();
        let options = motet_runtime::agent::AskOptions {
            keep_running: true,
            timeout: Duration::from_millis(1),
            ..Default::default()
        };
        let ticket = counter.submit("ask", options).await.unwrap();
        model.started.notified().await;
        drop(ticket);
        // The process stops while the model call runs.
        runtime.shutdown().await;
    }
    let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
    let runtime = runtime_on(store, EchoModel::default());
    runtime
        .spawn(AgentSpec::new("counter", Counter))
        .await
        .unwrap();
    let resumed = runtime.recover(Duration::from_secs(10)).await.unwrap();
    assert_eq!(resumed.len(), 1, "one request was left running");
    let answer = resumed.into_iter().next().unwrap().wait().await.unwrap();
    assert_eq!(answer.text, "7 (the total is 7)");
    // Nothing is owed any more.
    assert!(
        runtime
            .recover(Duration::from_secs(10))
            .await
            .unwrap()
            .is_empty()
    );
    runtime.shutdown().await;
}

/// A wrapper around ReAct that forwards nothing but `init` and `handle`.
struct Forgetful(motet_agents::ReAct);

impl Strategy for Forgetful {
    type State = motet_agents::ReActState;

    fn init(&self, env: &dyn Env) -> Self::State {
        self.0.init(env)
    }

    fn handle(
        &self,
        state: &mut Self::State,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        self.0.handle(state, signal, env)
    }
}

#[tokio::test]
async fn a_wrapper_that_forwards_nothing_still_keeps_its_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wrapper.db");
    let tools = common::calculator();
    let spawn = |runtime: Runtime| {
        // By hand: a strategy around ReAct is not what `ReActAgent` spawns.
        let spec = AgentSpec::new("wrapped", Forgetful(react("openai:gpt-5.2", &tools)))
            .with_tools(tools.clone());
        async move { runtime.spawn(spec).await.unwrap() }
    };
    {
        let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
        let agent = spawn(runtime_on(store, EchoModel::default())).await;
        assert_eq!(agent.ask("first").await.unwrap().text, "first");
    }
    let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
    let runtime = runtime_on(store, EchoModel::default());
    let agent = spawn(runtime.clone()).await;
    // The echo model shows every question the thread holds.
    assert_eq!(agent.ask("second").await.unwrap().text, "first|second");
    runtime.shutdown().await;
}
