//! Supervision: a panicking thread is restarted within its agent's intensity and the agent is
//! stopped past it (children too), both published on the bus; parents spawn, talk to and stop
//! child agents.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{AGENT_COMPLETED, ReAct, ReactCompleted};
use motet_runtime::agent::{AgentSpec, AskError, AskOptions, Runtime};
use motet_runtime::testing::ScriptedModel;

use common::*;

/// ReAct that panics on the query "boom": a bug in a strategy.
struct Fragile(ReAct);

impl motet_agents::Strategy for Fragile {
    type State = motet_agents::ReActState;

    fn init(&self, env: &dyn motet_agents::Env) -> Self::State {
        self.0.init(env)
    }

    fn init_for_thread(&self, env: &dyn motet_agents::Env, thread: &str) -> Self::State {
        self.0.init_for_thread(env, thread)
    }

    fn restore(&self, env: &dyn motet_agents::Env, saved: Self::State) -> Self::State {
        self.0.restore(env, saved)
    }

    fn thread<'a>(&self, state: &'a Self::State) -> Option<&'a motet_agents::Thread> {
        self.0.thread(state)
    }

    fn thread_mut<'a>(&self, state: &'a mut Self::State) -> Option<&'a mut motet_agents::Thread> {
        self.0.thread_mut(state)
    }

    fn handle(
        &self,
        state: &mut Self::State,
        signal: &motet_signals::Signal,
        env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        if let Ok(input) = signal.data_as::<motet_agents::AgentRequest>()
            && input.query == "boom"
        {
            panic!("a bug in the strategy");
        }
        self.0.handle(state, signal, env)
    }
}

#[tokio::test]
async fn a_panicking_strategy_restarts_its_thread_and_the_ask_gets_a_typed_error() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .build()
        .unwrap();
    // By hand: a strategy around ReAct is not what `ReActAgent` spawns.
    let tools = calculator();
    let agent = runtime
        .spawn(
            AgentSpec::new("fragile", Fragile(react("openai:gpt-5.2", &tools))).with_tools(tools),
        )
        .await
        .unwrap();
    let options = || AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    agent.ask_with("first", options()).await.unwrap();
    let err = agent.ask_with("boom", options()).await.unwrap_err();
    assert!(matches!(err, AskError::AgentRestarted { .. }), "{err:?}");
    // The thread was restarted from the store: the next ask is answered, with the history
    // committed before the failure.
    let mut answered = None;
    for _ in 0..50 {
        match agent.ask_with("hello", options()).await {
            Ok(reply) => {
                answered = Some(reply);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let reply = answered.expect("answered after the restart");
    assert_eq!(
        reply.signal.data_as::<ReactCompleted>().unwrap().answer,
        "first|hello"
    );
    assert_eq!(runtime.agent_count(), 1);
    runtime.shutdown().await;
}

/// A `Fragile` agent allowed one restart a minute. By hand, as every spec of a strategy around
/// ReAct: `ReActAgent` spawns ReAct itself.
async fn spawn_fragile_once(runtime: &Runtime) -> motet_runtime::agent::AgentHandle {
    let tools = calculator();
    runtime
        .spawn(
            AgentSpec::new("fragile", Fragile(react("openai:gpt-5.2", &tools)))
                .with_tools(tools)
                .with_restart_intensity(motet_runtime::supervisor::Intensity {
                    max_restarts: 1,
                    within: Duration::from_secs(60),
                }),
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn past_its_restart_intensity_the_agent_is_stopped() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .build()
        .unwrap();
    let agent = spawn_fragile_once(&runtime).await;
    let options = || AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    assert!(agent.ask_with("boom", options()).await.is_err());
    // Wait for the restart, then fail again: one restart too many.
    for _ in 0..50 {
        if runtime.thread_count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = agent.ask_with("boom", options()).await;
    for _ in 0..100 {
        if runtime.agent_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(runtime.agent_count(), 0, "the agent was stopped");
    let err = agent.ask_with("hello", options()).await.unwrap_err();
    assert!(matches!(err, AskError::AgentStopped { .. }), "{err:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn restarts_and_a_stopped_agent_are_published_on_the_bus() {
    use motet_runtime::agent::{AGENT_STOPPED, THREAD_RESTARTED, ThreadFailure};
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel(8);
    let _watch = runtime.bus().subscribe("agent.**".parse().unwrap(), tx);
    let agent = spawn_fragile_once(&runtime).await;
    let options = AskOptions {
        thread_id: Some("t1".into()),
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    let err = agent.ask_with("boom", options.clone()).await.unwrap_err();
    assert!(matches!(err, AskError::AgentRestarted { .. }), "{err:?}");
    let restarted = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(restarted.signal_type().as_str(), THREAD_RESTARTED);
    let failure: ThreadFailure = restarted.data_as().unwrap();
    assert_eq!(
        (failure.agent.as_str(), failure.thread.as_str()),
        ("fragile", "t1")
    );
    assert!(
        failure.error.contains("a bug in the strategy"),
        "{}",
        failure.error
    );
    // A second failure is past the intensity: the agent stops, and says so.
    let _ = agent.ask_with("boom", options).await;
    let stopped = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(stopped.signal_type().as_str(), AGENT_STOPPED);
    assert_eq!(stopped.data_as::<ThreadFailure>().unwrap().agent, "fragile");
    assert_eq!(runtime.agent_count(), 0);
    runtime.shutdown().await;
}

/// Hires a worker on "hire", sends it work when it has started, and answers the request with
/// what the worker reported to its parent; "fire" stops it; "boom" crashes the boss.
struct Boss;

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct BossState {
    request: Option<String>,
}

impl motet_agents::Strategy for Boss {
    type State = BossState;

    fn init(&self, _env: &dyn motet_agents::Env) -> BossState {
        BossState::default()
    }

    fn handle(
        &self,
        state: &mut BossState,
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{ChildSpec, Directive, Emit, EmitTarget, Reply, Spawn, StopChild};
        use motet_runtime::agent::{CHILD_STARTED, ChildEvent};
        let reply = |request: &str, data: serde_json::Value| {
            Directive::Reply(Reply::completed(
                motet_signals::Signal::builder(AGENT_COMPLETED, "boss")
                    .with_request_id(request)
                    .with_data(data)
                    .build()
                    .unwrap(),
            ))
        };
        match signal.signal_type().as_str() {
            CHILD_STARTED => {
                let child: ChildEvent = signal.data_as().unwrap();
                let work = motet_signals::Signal::builder("work.do", "boss")
                    .build()
                    .unwrap();
                Ok(vec![Directive::Emit(Emit {
                    signal: work,
                    target: EmitTarget::Agent(child.name),
                })])
            }
            "work.done" => {
                let request = state.request.take().unwrap();
                Ok(vec![reply(&request, serde_json::json!(signal.source()))])
            }
            _ => {
                let input: motet_agents::AgentRequest = signal.data_as().unwrap();
                let request = signal.request_id().unwrap().to_owned();
                if input.query == "boom" {
                    panic!("a bug in the boss");
                }
                if input.query == "fire" {
                    return Ok(vec![
                        Directive::StopChild(StopChild {
                            tag: "w1".into(),
                            reason: "done".into(),
                        }),
                        reply(&request, serde_json::json!("fired")),
                    ]);
                }
                state.request = Some(request);
                Ok(vec![Directive::Spawn(Spawn {
                    tag: "w1".into(),
                    spec: ChildSpec {
                        kind: "worker".into(),
                        name: None,
                        config: serde_json::json!({"skill": "sums"}),
                    },
                })])
            }
        }
    }
}

/// A worker: answers any `work.do` by telling its parent `work.done`, signed with its skill.
struct Worker {
    skill: String,
}

impl motet_agents::Strategy for Worker {
    type State = ();

    fn init(&self, _env: &dyn motet_agents::Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget};
        if signal.signal_type().as_str() != "work.do" {
            return Ok(Vec::new());
        }
        let done = motet_signals::Signal::builder("work.done", format!("worker.{}", self.skill))
            .build()
            .unwrap();
        Ok(vec![Directive::Emit(Emit {
            signal: done,
            target: EmitTarget::Parent,
        })])
    }
}

/// The `worker` kind of the tests that need no skill of their own: one that sums.
fn sums_worker(_: &serde_json::Value) -> Result<AgentSpec<Worker>, String> {
    Ok(AgentSpec::new(
        "ignored",
        Worker {
            skill: "sums".into(),
        },
    ))
}

#[tokio::test]
async fn a_parent_spawns_a_child_kind_talks_to_it_and_stops_it() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .kind("worker", |config: &serde_json::Value| {
            let skill = config["skill"].as_str().ok_or("a worker needs a skill")?;
            Ok(AgentSpec::new(
                "ignored",
                Worker {
                    skill: skill.to_owned(),
                },
            ))
        })
        .build()
        .unwrap();
    let boss = runtime.spawn(AgentSpec::new("boss", Boss)).await.unwrap();
    let reply = boss.ask("hire").await.unwrap();
    assert_eq!(reply.signal.data_as::<String>().unwrap(), "worker.sums");
    assert!(
        runtime.agent("boss/w1").is_some(),
        "the child is named <parent>/<tag>"
    );
    assert_eq!(runtime.agent_count(), 2);
    let reply = boss.ask("fire").await.unwrap();
    assert_eq!(reply.signal.data_as::<String>().unwrap(), "fired");
    assert_eq!(runtime.agent_count(), 1);
    // Stopping the parent stops its children too.
    boss.ask("hire").await.unwrap();
    assert_eq!(runtime.agent_count(), 2);
    runtime.stop_agent("boss");
    assert_eq!(runtime.agent_count(), 0);
    runtime.shutdown().await;
}

/// The parent's thread idles out between the spawn and the stop: its new actor holds no map of
/// its children, and the tag is found in the registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_is_stopped_by_tag_after_its_parent_thread_idled() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .kind("worker", sums_worker)
        .build()
        .unwrap();
    let boss = runtime
        .spawn(AgentSpec::new("boss", Boss).with_idle_timeout(Some(Duration::from_millis(100))))
        .await
        .unwrap();
    boss.ask("hire").await.unwrap();
    assert_eq!(runtime.agent_count(), 2);
    // Only the child's thread is left running once the boss's idles out.
    for _ in 0..300 {
        if runtime.thread_count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(runtime.thread_count(), 1, "the boss's thread did not idle");
    let reply = boss.ask("fire").await.unwrap();
    assert_eq!(reply.signal.data_as::<String>().unwrap(), "fired");
    assert_eq!(runtime.agent_count(), 1, "the child outlived its stop");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_parent_stopped_past_its_restart_intensity_takes_its_children_along() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .kind("worker", sums_worker)
        .build()
        .unwrap();
    let boss = runtime
        .spawn(AgentSpec::new("boss", Boss).with_restart_intensity(
            motet_runtime::supervisor::Intensity {
                max_restarts: 0,
                within: Duration::from_secs(60),
            },
        ))
        .await
        .unwrap();
    boss.ask("hire").await.unwrap();
    assert_eq!(runtime.agent_count(), 2);
    let options = AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    assert!(boss.ask_with("boom", options).await.is_err());
    for _ in 0..100 {
        if runtime.agent_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(runtime.agent("boss").is_none(), "the boss was stopped");
    assert!(runtime.agent("boss/w1").is_none(), "its worker outlived it");
    runtime.shutdown().await;
}

/// A runtime on `store` with the boss spawned and its worker kind registered, as each process
/// of an application would start.
async fn boss_on(
    store: Arc<dyn motet_runtime::store::ThreadStore>,
) -> (Runtime, motet_runtime::agent::AgentHandle) {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(store)
        .kind("worker", sums_worker)
        .build()
        .unwrap();
    let boss = runtime.spawn(AgentSpec::new("boss", Boss)).await.unwrap();
    (runtime, boss)
}

/// Three processes on one store: the first hires a worker; in the second the boss's thread
/// remembers it (started again from its stored spec) and stops it by tag; in the third the stop
/// is remembered too, and no worker comes back.
async fn children_outlive_their_parents_process(
    open: impl AsyncFn() -> Arc<dyn motet_runtime::store::ThreadStore>,
) {
    let (runtime, boss) = boss_on(open().await).await;
    let reply = boss.ask("hire").await.unwrap();
    assert_eq!(reply.signal.data_as::<String>().unwrap(), "worker.sums");
    assert_eq!(runtime.agent_count(), 2);
    runtime.shutdown().await;

    let (runtime, boss) = boss_on(open().await).await;
    assert!(
        runtime.agent("boss/w1").is_some(),
        "the boss's thread started without its remembered worker"
    );
    let reply = boss.ask("fire").await.unwrap();
    assert_eq!(reply.signal.data_as::<String>().unwrap(), "fired");
    assert!(
        runtime.agent("boss/w1").is_none(),
        "the remembered worker outlived its stop by tag"
    );
    runtime.shutdown().await;

    let (runtime, boss) = boss_on(open().await).await;
    // The boss's thread is running (a step on it proves it started): no worker came back.
    boss.ask("fire").await.unwrap();
    assert_eq!(runtime.agent_count(), 1, "a stopped worker came back");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_is_stopped_by_tag_after_its_parents_process_restarted_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("children.db");
    children_outlive_their_parents_process(async || {
        let store = motet_runtime::store::SqliteStore::open(&path)
            .await
            .unwrap();
        Arc::new(store) as Arc<dyn motet_runtime::store::ThreadStore>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_is_stopped_by_tag_after_its_parents_process_restarted_postgres() {
    let Some(db) = pg::TestDb::new("children_restart").await else {
        return;
    };
    let url = db.url.clone();
    children_outlive_their_parents_process(async || {
        let store = motet_runtime::store::PostgresStore::open(&url)
            .await
            .unwrap();
        Arc::new(store) as Arc<dyn motet_runtime::store::ThreadStore>
    })
    .await;
    db.drop_now().await;
}
