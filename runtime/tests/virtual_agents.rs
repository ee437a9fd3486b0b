//! Virtual agents: addressed by kind and key, activated by the first message for them (an ask,
//! a routed bus signal, a timer), deactivated when idle and brought back exactly as they were;
//! the cap deactivating the least recently used idle ones and never a busy one; the directory
//! of agents listed from the store, across a restart, without activating anyone. On SQLite,
//! and on PostgreSQL when `MOTET_DATABASE_URL` names a server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{Env, Strategy, StrategyError};
use motet_directives::{Directive, Emit, EmitTarget, Message, Schedule, ScheduleId};
use motet_providers::ProviderError;
use motet_runtime::agent::{AskOptions, IntoSpec, Runtime, RuntimeBuilder};
use motet_runtime::store::{AgentQuery, SqliteStore, ThreadStore};
use motet_signals::{Delivery, Signal};
use tokio::sync::mpsc;

use common::*;

/// A model that echoes the user messages it was shown (as [`EchoModel`]), holding its answer
/// to a question that is `wait` until released: a request that keeps its agent busy.
#[derive(Clone, Default)]
struct SlowOnWait {
    release: Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for SlowOnWait {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        let seen: Vec<&str> = req
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { content } => content.as_text(),
                _ => None,
            })
            .collect();
        if seen.last() == Some(&"wait") {
            self.release.notified().await;
        }
        let response = turn(vec![motet_directives::AssistantBlock::text(seen.join("|"))])?;
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// The `echo` kind: a ReAct calculator per key, its threads idle after `idle`.
fn echo_kind(builder: RuntimeBuilder, idle: Duration) -> RuntimeBuilder {
    builder.virtual_kind("echo", move |key| {
        calc_agent(key)
            .agent(move |s| s.with_idle_timeout(Some(idle)))
            .into_spec()
            .map_err(|e| e.to_string())
    })
}

/// A temporary SQLite store.
async fn sqlite(dir: &tempfile::TempDir) -> Arc<dyn ThreadStore> {
    Arc::new(
        SqliteStore::open(dir.path().join("virtual.db"))
            .await
            .unwrap(),
    )
}

/// Waits (up to 20 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Addressed, the agent does not exist in memory; the first ask activates it; idle, it is
/// deactivated; the next ask finds its thread as it was; the directory lists it.
async fn activated_deactivated_and_back(store: Arc<dyn ThreadStore>) {
    let runtime = echo_kind(Runtime::builder(), Duration::from_millis(50))
        .llm(EchoModel::default())
        .store(store)
        .build()
        .unwrap();
    let agent = runtime.virtual_agent("echo", "alice").unwrap();
    assert_eq!(agent.name(), "echo:alice");
    assert_eq!(runtime.agent_count(), 0, "a handle activates nothing");
    assert!(!agent.is_active());
    assert_eq!(ask_text(&agent, "one").await, "one");
    // Active while it answered (it may have idled out since: 50 ms).
    assert_eq!(runtime.active_virtual_agents().1, 1);
    until("the idle agent is deactivated", || !agent.is_active()).await;
    assert_eq!(runtime.agent_count(), 0);
    // Back from the store exactly as it was: its thread holds the first question.
    assert_eq!(ask_text(&agent, "two").await, "one|two");
    // Another thread of it, then the directory: one agent, two threads, no one activated.
    let other = AskOptions {
        thread_id: Some("side".to_owned()),
        ..AskOptions::default()
    };
    assert_eq!(agent.ask_with("three", other).await.unwrap().text, "three");
    let listed = runtime
        .stored_agents(&AgentQuery {
            kind: Some("echo".to_owned()),
            ..AgentQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].name, "echo:alice");
    assert_eq!(listed[0].threads, 2);
    assert_eq!(listed[0].kind_and_key(), Some(("echo", "alice")));
    // Bad names are refused with a typed error, an unknown kind too.
    assert!(runtime.virtual_agent("echo", "a/b").is_err());
    assert!(runtime.virtual_agent("nope", "a").is_err());
    // `Runtime::agent` finds a virtual agent by its name, active or not.
    assert!(runtime.agent("echo:bob").is_some());
    assert!(runtime.agent("nope:bob").is_none());
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_is_activated_by_its_first_ask_and_comes_back_as_it_was_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    activated_deactivated_and_back(sqlite(&dir).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_is_activated_by_its_first_ask_and_comes_back_as_it_was_postgres() {
    let Some(db) = pg::TestDb::new("virtual_back").await else {
        return;
    };
    let store = motet_runtime::store::PostgresStore::open(&db.url)
        .await
        .unwrap();
    activated_deactivated_and_back(Arc::new(store)).await;
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_deactivates_the_least_recently_used_idle_agents_never_a_busy_one() {
    let dir = tempfile::tempdir().unwrap();
    // Threads never idle out on their own here: only the cap deactivates.
    let model = SlowOnWait::default();
    let runtime = echo_kind(Runtime::builder(), Duration::from_secs(600))
        .max_active_agents(10)
        .llm(model.clone())
        .store(sqlite(&dir).await)
        .build()
        .unwrap();
    let busy = runtime.virtual_agent("echo", "busy").unwrap();
    let waiting = busy
        .submit("wait", AskOptions::default())
        .await
        .expect("the busy agent's request starts");
    for n in 0..40 {
        let agent = runtime.virtual_agent("echo", &format!("k{n}")).unwrap();
        assert_eq!(ask_text(&agent, &format!("q{n}")).await, format!("q{n}"));
    }
    let (active, most) = runtime.active_virtual_agents();
    assert!(most <= 10, "at most the cap active at once, not {most}");
    assert!(active <= 10);
    // The request in flight was never dropped: its agent stayed.
    assert!(busy.is_active(), "a busy agent is never deactivated");
    model.release.notify_one();
    assert_eq!(waiting.wait().await.unwrap().text, "wait");
    // The least recently used went first; the latest is still here.
    let first = runtime.agent("echo:k0").unwrap();
    let last = runtime.agent("echo:k39").unwrap();
    assert!(
        !first.is_active(),
        "the least recently used was deactivated"
    );
    assert!(last.is_active(), "the most recently used stays");
    // A deactivated agent comes back as it was.
    assert_eq!(ask_text(&first, "again").await, "q0|again");
    runtime.shutdown().await;
}

/// `ring` {ms} schedules `ding` after `ms`; `ding` and a routed `order.placed` are announced on
/// the bus as `heard` with what was heard. Its state counts the signals it handled, committed
/// with each.
struct Bell;

impl Strategy for Bell {
    type State = u32;

    fn init(&self, _env: &dyn Env) -> u32 {
        0
    }

    fn handle(
        &self,
        heard: &mut u32,
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let announce = |what: String| {
            Directive::Emit(Emit {
                signal: Signal::builder("heard", "bell")
                    .with_data(what)
                    .build()
                    .unwrap(),
                target: EmitTarget::Bus,
            })
        };
        *heard += 1;
        Ok(match signal.signal_type().as_str() {
            "ring" => {
                let ms: u64 = signal.data_as().unwrap_or(100);
                vec![Directive::Schedule(Schedule {
                    schedule_id: ScheduleId::new("ding"),
                    delay: Duration::from_millis(ms),
                    signal: Signal::builder("ding", "bell").build().unwrap(),
                })]
            }
            "ding" | "order.placed" => {
                vec![announce(format!(
                    "{} {}",
                    signal.signal_type().as_str(),
                    heard
                ))]
            }
            _ => Vec::new(),
        })
    }
}

/// A runtime with the `bell` kind (threads idle after 50 ms), orders routed to it by subject.
fn bells(store: Arc<dyn ThreadStore>) -> Runtime {
    Runtime::builder()
        .virtual_kind("bell", |_key| {
            Ok(motet_runtime::agent::AgentSpec::new("bell", Bell)
                .with_idle_timeout(Some(Duration::from_millis(50))))
        })
        .route("order.placed".parse().unwrap(), "bell")
        .llm(EchoModel::default())
        .store(store)
        .build()
        .unwrap()
}

/// What the bells announce on `runtime`'s bus.
fn heard(runtime: &Runtime) -> (mpsc::UnboundedReceiver<String>, motet_signals::Subscription) {
    let (tx, rx) = mpsc::unbounded_channel();
    let subscription = runtime
        .bus()
        .subscribe("heard".parse().unwrap(), move |s: &Signal| {
            let _ = tx.send(s.data_as::<String>().unwrap_or_default());
            Delivery::Delivered
        });
    (rx, subscription)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("heard in time")
        .expect("the bus is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_signal_and_a_timer_activate_an_inactive_agent() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = bells(sqlite(&dir).await);
    let (mut rx, _heard) = heard(&runtime);
    // A routed signal, its subject the key: the agent did not exist before.
    let order = Signal::builder("order.placed", "shop")
        .with_subject("door")
        .build()
        .unwrap();
    runtime.bus().publish(&order);
    assert_eq!(next(&mut rx).await, "order.placed 1");
    let door = runtime.agent("bell:door").unwrap();
    // A timer set, then the agent deactivated before it is due: the timer activates it.
    door.send(
        Signal::builder("ring", "test")
            .with_data(1_500u64)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    until("the idle bell is deactivated", || !door.is_active()).await;
    assert_eq!(next(&mut rx).await, "ding 3", "its state came back with it");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_fires_in_a_new_process_with_nothing_addressed_and_the_directory_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    {
        let runtime = bells(sqlite(&dir).await);
        for key in ["a", "b", "c"] {
            let bell = runtime.virtual_agent("bell", key).unwrap();
            let ms: u64 = if key == "b" { 1_500 } else { 600_000 };
            bell.send(
                Signal::builder("ring", "test")
                    .with_data(ms)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        }
        // Each committed its ring before the runtime stops.
        until("three bells stored", || {
            runtime.active_virtual_agents().1 == 3
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        runtime.shutdown().await;
    }
    // A new runtime on the same store: nothing spawned, nothing addressed.
    let store = sqlite(&dir).await;
    let runtime = bells(store);
    let listed = runtime
        .stored_agents(&AgentQuery {
            kind: Some("bell".to_owned()),
            ..AgentQuery::default()
        })
        .await
        .unwrap();
    let names: Vec<&str> = listed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["bell:a", "bell:b", "bell:c"]);
    assert_eq!(runtime.agent_count(), 0, "listed without activating anyone");
    let (mut rx, _heard) = heard(&runtime);
    assert_eq!(next(&mut rx).await, "ding 2");
    assert!(runtime.agent("bell:b").unwrap().is_active() || runtime.active_virtual_agents().1 == 1);
    assert_eq!(
        runtime.active_virtual_agents().1,
        1,
        "only the bell due was activated"
    );
    runtime.shutdown().await;
}

/// A runtime with the `janitor` kind: ReAct with an `rm` tool behind an approval, counted in
/// `runs`, its threads idle after 50 ms.
fn janitors(
    store: Arc<dyn ThreadStore>,
    model: motet_runtime::testing::ScriptedModel,
    runs: Arc<std::sync::atomic::AtomicU32>,
) -> Runtime {
    use motet_runtime::tool::{ToolError, ToolSet, tool_fn};
    Runtime::builder()
        .virtual_kind("janitor", move |_key| {
            let runs = Arc::clone(&runs);
            let rm = tool_fn("rm", "Removes a path.", move |_: serde_json::Value| {
                runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { Ok::<_, ToolError>("removed".to_owned()) }
            });
            let tools = Arc::new(
                ToolSet::builder()
                    .tool(rm)
                    .require_approval("rm", motet_directives::Approval::required())
                    .build()
                    .map_err(|e| e.to_string())?,
            );
            Ok(
                motet_runtime::agent::AgentSpec::new("janitor", react(MODEL, &tools))
                    .with_tools(tools)
                    .with_idle_timeout(Some(Duration::from_millis(50))),
            )
        })
        .llm(model)
        .store(store)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_approval_outlives_its_agent_and_an_answer_brings_it_back() {
    use motet_directives::{AssistantBlock, Response, ToolArgs};
    let dir = tempfile::tempdir().unwrap();
    let model = motet_runtime::testing::ScriptedModel::new(
        [
            vec![AssistantBlock::tool_use(
                "a",
                "rm",
                ToolArgs::from_text(r#"{"path":"/tmp/x"}"#),
            )],
            vec![AssistantBlock::text("done")],
        ]
        .into_iter()
        .map(turn),
    );
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let request = {
        let runtime = janitors(sqlite(&dir).await, model.clone(), Arc::clone(&runs));
        let agent = runtime.virtual_agent("janitor", "j1").unwrap();
        let options = AskOptions {
            keep_running: true,
            ..AskOptions::default()
        };
        let mut ticket = agent.submit("clean up", options).await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_secs(20), ticket.next_waiting())
            .await
            .unwrap()
            .unwrap();
        let id = waiting.request_id.clone();
        runtime.shutdown().await;
        id
    };
    // A new process: nothing addressed; the wait is listed from the store.
    let runtime = janitors(sqlite(&dir).await, model, Arc::clone(&runs));
    let waits = runtime.waiting().await.unwrap();
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert_eq!(waits[0].agent, "janitor:j1");
    assert_eq!(waits[0].request_id, request);
    // A wait is left for its answer to carry on: the start resumed nothing.
    assert_eq!(runtime.agent_count(), 0);
    // The answer activates the agent and its request goes on to its end.
    runtime.respond(&waits[0], Response::Approve).await.unwrap();
    until("the request completes", || {
        runtime
            .request(&request)
            .is_some_and(|r| r.status == motet_runtime::agent::RequestStatus::Completed)
    })
    .await;
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(runtime.waiting().await.unwrap().is_empty());
    runtime.shutdown().await;
}

/// Asks that meet a deactivation — the agent leaving memory as they arrive — are answered by
/// the agent that comes back, in the order asked, none lost: 4 agents, two threads each asked
/// at once, 25 asks a thread, threads idle after 2 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_that_meet_a_deactivation_are_answered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = echo_kind(Runtime::builder(), Duration::from_millis(2))
        .llm(EchoModel::default())
        .store(sqlite(&dir).await)
        .build()
        .unwrap();
    let runtime = &runtime;
    let threads = (0..8).map(|n| async move {
        let agent = runtime
            .virtual_agent("echo", &format!("a{}", n / 2))
            .unwrap();
        let mut asked = Vec::new();
        for q in 0..25 {
            let question = format!("t{n}q{q}");
            let options = AskOptions {
                thread_id: Some(format!("t{}", n % 2)),
                ..AskOptions::default()
            };
            let answer = agent
                .ask_with(question.as_str(), options)
                .await
                .unwrap_or_else(|e| panic!("ask {question} was lost: {e}"));
            asked.push(question);
            assert_eq!(answer.text, asked.join("|"));
            tokio::time::sleep(Duration::from_micros(fastrand::u64(0..4_000))).await;
        }
    });
    futures::future::join_all(threads).await;
    runtime.shutdown().await;
}
