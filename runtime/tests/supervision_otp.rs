//! Supervision as an agent's spec chooses it (`AgentSpec::with_supervision`): which of an
//! agent's threads restart with a failed one (one-for-one, one-for-all, rest-for-one), which
//! exits restart a thread (transient, permanent, temporary), a restart's backoff, and a parent
//! told when its child stops.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use motet_agents::{AGENT_COMPLETED, AgentRequest, Env, Strategy, StrategyError};
use motet_directives::{Directive, Reply, Stop};
use motet_runtime::agent::{
    AgentHandle, AskOptions, CHILD_STOPPED, ChildEvent, Runtime, THREAD_RESTARTED, ThreadFailure,
};
use motet_runtime::agent::{AgentSpec, AskError};
use motet_runtime::supervisor::{Backoff, Intensity, Restart, RestartStrategy, Supervision};
use motet_runtime::testing::ScriptedModel;
use motet_signals::Signal;

/// Answers each question with itself; "boom" panics (a bug), "stop" answers then stops its
/// thread (a `Stop` directive: a normal exit).
struct Probe;

fn completed(request: &Signal, answer: &str) -> Directive {
    let reply = Signal::builder(AGENT_COMPLETED, "probe")
        .with_request_id(request.request_id().unwrap())
        .with_data(serde_json::json!(answer))
        .build()
        .unwrap();
    Directive::Reply(Reply::completed(reply))
}

impl Strategy for Probe {
    type State = ();

    fn init(&self, _env: &dyn Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Ok(input) = signal.data_as::<AgentRequest>() else {
            return Ok(Vec::new());
        };
        match input.query.as_str() {
            "boom" => panic!("a bug in the probe"),
            "stop" => Ok(vec![
                completed(signal, "stopping"),
                Directive::Stop(Stop {
                    reason: "done".into(),
                }),
            ]),
            query => Ok(vec![completed(signal, query)]),
        }
    }
}

fn runtime() -> Runtime {
    Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .unwrap()
}

/// Every `agent.thread.restarted` from now on.
fn restarts(runtime: &Runtime) -> (Receiver<Signal>, motet_signals::Subscription) {
    let (tx, rx) = std::sync::mpsc::sync_channel(64);
    let watch = runtime
        .bus()
        .subscribe(THREAD_RESTARTED.parse().unwrap(), tx);
    (rx, watch)
}

/// The threads restarted within `wait`, in the order they were (read without blocking the
/// test's runtime, which runs the supervisor too).
async fn restarted_threads(rx: &Receiver<Signal>, wait: Duration) -> Vec<String> {
    let deadline = Instant::now() + wait;
    let mut threads = Vec::new();
    while Instant::now() < deadline {
        match rx.try_recv() {
            Ok(signal) => threads.push(signal.data_as::<ThreadFailure>().unwrap().thread),
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    threads
}

async fn ask(agent: &AgentHandle, thread: &str, query: &str) -> Result<String, AskError> {
    let options = AskOptions {
        thread_id: Some(thread.into()),
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    let answer = agent.ask_with(query, options).await?;
    Ok(answer.signal.data_as::<String>().unwrap())
}

async fn probe(runtime: &Runtime, supervision: Supervision) -> AgentHandle {
    runtime
        .spawn(AgentSpec::new("probe", Probe).with_supervision(supervision))
        .await
        .unwrap()
}

/// The agent's threads a, b and c, started in that order, then `failing` fails.
async fn three_threads_then_boom(strategy: RestartStrategy, failing: &str) -> Vec<String> {
    let runtime = runtime();
    let (rx, _watch) = restarts(&runtime);
    let supervision = Supervision {
        strategy,
        ..Supervision::default()
    };
    let agent = probe(&runtime, supervision).await;
    for thread in ["a", "b", "c"] {
        assert_eq!(ask(&agent, thread, "hi").await.unwrap(), "hi");
    }
    let err = ask(&agent, failing, "boom").await.unwrap_err();
    assert!(matches!(err, AskError::AgentRestarted { .. }), "{err:?}");
    let mut threads = restarted_threads(&rx, Duration::from_millis(800)).await;
    // Every thread answers again afterwards.
    for thread in ["a", "b", "c"] {
        assert_eq!(ask(&agent, thread, "again").await.unwrap(), "again");
    }
    runtime.shutdown().await;
    threads.sort();
    threads
}

#[tokio::test]
async fn one_for_one_restarts_the_failed_thread_alone() {
    let restarted = three_threads_then_boom(RestartStrategy::OneForOne, "b").await;
    assert_eq!(restarted, ["b"]);
}

#[tokio::test]
async fn one_for_all_restarts_every_thread_of_the_agent() {
    let restarted = three_threads_then_boom(RestartStrategy::OneForAll, "b").await;
    assert_eq!(restarted, ["a", "b", "c"]);
}

#[tokio::test]
async fn rest_for_one_restarts_the_failed_thread_and_those_started_after_it() {
    let restarted = three_threads_then_boom(RestartStrategy::RestForOne, "b").await;
    assert_eq!(restarted, ["b", "c"]);
}

#[tokio::test]
async fn a_sibling_stopped_for_one_for_all_answers_its_open_ask_with_a_typed_error() {
    // A request open on a sibling when the agent restarts all its threads is not left hanging.
    struct Slow;
    impl Strategy for Slow {
        type State = ();
        fn init(&self, _env: &dyn Env) {}
        fn handle(
            &self,
            state: &mut (),
            signal: &Signal,
            env: &dyn Env,
        ) -> Result<Vec<Directive>, StrategyError> {
            match signal.data_as::<AgentRequest>() {
                // Never answered: it stays open.
                Ok(input) if input.query == "wait" => Ok(Vec::new()),
                _ => Probe.handle(state, signal, env),
            }
        }
    }
    let runtime = runtime();
    let supervision = Supervision {
        strategy: RestartStrategy::OneForAll,
        ..Supervision::default()
    };
    let agent = runtime
        .spawn(AgentSpec::new("slow", Slow).with_supervision(supervision))
        .await
        .unwrap();
    let waiting = {
        let agent = agent.clone();
        tokio::spawn(async move { ask(&agent, "a", "wait").await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = ask(&agent, "b", "boom").await;
    let outcome = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the open ask is answered")
        .unwrap();
    assert!(
        matches!(outcome, Err(AskError::AgentStopped { .. })),
        "{outcome:?}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_temporary_thread_is_not_restarted_and_a_later_ask_starts_it_again() {
    let runtime = runtime();
    let (rx, _watch) = restarts(&runtime);
    let supervision = Supervision {
        restart: Restart::Temporary,
        ..Supervision::default()
    };
    let agent = probe(&runtime, supervision).await;
    assert_eq!(ask(&agent, "a", "hi").await.unwrap(), "hi");
    let _ = ask(&agent, "a", "boom").await;
    assert_eq!(
        restarted_threads(&rx, Duration::from_millis(500)).await,
        Vec::<String>::new()
    );
    assert_eq!(ask(&agent, "a", "later").await.unwrap(), "later");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_permanent_thread_that_stops_itself_is_restarted_and_a_transient_one_is_not() {
    for (restart, expected) in [
        (Restart::Permanent, vec!["a".to_owned()]),
        (Restart::Transient, Vec::new()),
    ] {
        let runtime = runtime();
        let (rx, _watch) = restarts(&runtime);
        let supervision = Supervision {
            restart,
            ..Supervision::default()
        };
        let agent = probe(&runtime, supervision).await;
        assert_eq!(ask(&agent, "a", "stop").await.unwrap(), "stopping");
        assert_eq!(
            restarted_threads(&rx, Duration::from_millis(500)).await,
            expected,
            "{restart:?}"
        );
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_restart_waits_out_its_backoff_and_so_do_messages_for_the_thread() {
    let runtime = runtime();
    let (rx, _watch) = restarts(&runtime);
    let backoff = Backoff::exponential(Duration::from_millis(400), Duration::from_secs(2));
    let supervision = Supervision {
        backoff,
        intensity: Intensity {
            max_restarts: 5,
            within: Duration::from_secs(60),
        },
        ..Supervision::default()
    };
    let agent = probe(&runtime, supervision).await;
    assert_eq!(ask(&agent, "a", "hi").await.unwrap(), "hi");
    let failed = Instant::now();
    let _ = ask(&agent, "a", "boom").await;
    // Asked at once, answered only once the thread has restarted.
    assert_eq!(ask(&agent, "a", "after").await.unwrap(), "after");
    let answered = failed.elapsed();
    assert!(
        answered >= Duration::from_millis(390),
        "answered {answered:?} after the failure, inside the backoff"
    );
    assert_eq!(restarted_threads(&rx, Duration::from_secs(2)).await, ["a"]);
    // The second restart in the window waits twice as long.
    let failed = Instant::now();
    let _ = ask(&agent, "a", "boom").await;
    assert_eq!(ask(&agent, "a", "after").await.unwrap(), "after");
    let answered = failed.elapsed();
    assert!(
        answered >= Duration::from_millis(790),
        "answered {answered:?} after the second failure"
    );
    runtime.shutdown().await;
}

/// Spawns a `Probe` child tagged "p1" on its first request, then reports each
/// `agent.child.stopped` it hears as the answer to its second request.
struct Parent;

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct ParentState {
    waiting: Option<String>,
    heard: Option<ChildEvent>,
}

impl Strategy for Parent {
    type State = ParentState;

    fn init(&self, _env: &dyn Env) -> ParentState {
        ParentState::default()
    }

    fn handle(
        &self,
        state: &mut ParentState,
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        use motet_directives::{ChildSpec, Spawn};
        let ty = signal.signal_type().as_str();
        if ty == CHILD_STOPPED {
            state.heard = signal.data_as().ok();
        } else if ty == motet_agents::AGENT_REQUEST {
            let input: AgentRequest = signal.data_as().unwrap();
            if input.query == "hire" {
                let spawn = Directive::Spawn(Spawn {
                    tag: "p1".into(),
                    spec: ChildSpec {
                        kind: "probe".into(),
                        name: None,
                        config: serde_json::Value::Null,
                    },
                });
                return Ok(vec![spawn, completed(signal, "hired")]);
            }
            state.waiting = Some(signal.request_id().unwrap().to_owned());
        }
        match (&state.waiting, &state.heard) {
            (Some(request), Some(heard)) => {
                let reply = Signal::builder(AGENT_COMPLETED, "parent")
                    .with_request_id(request)
                    .with_data(heard)
                    .build()
                    .unwrap();
                state.waiting = None;
                Ok(vec![Directive::Reply(Reply::completed(reply))])
            }
            _ => Ok(Vec::new()),
        }
    }
}

async fn parent_with_a_child(intensity: Intensity) -> (Runtime, AgentHandle) {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .kind("probe", move |_: &serde_json::Value| {
            let supervision = Supervision {
                intensity,
                ..Supervision::default()
            };
            Ok(AgentSpec::new("ignored", Probe).with_supervision(supervision))
        })
        .build()
        .unwrap();
    let parent = runtime.spawn(AgentSpec::new("boss", Parent)).await.unwrap();
    parent.ask("hire").await.unwrap();
    for _ in 0..100 {
        if runtime.agent("boss/p1").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(runtime.agent("boss/p1").is_some(), "the child started");
    (runtime, parent)
}

#[tokio::test]
async fn a_parent_is_told_when_its_child_stops_past_its_restart_intensity() {
    let never = Intensity {
        max_restarts: 0,
        within: Duration::from_secs(60),
    };
    let (runtime, parent) = parent_with_a_child(never).await;
    let hearing = {
        let parent = parent.clone();
        tokio::spawn(async move { parent.ask("what happened?").await })
    };
    let child = runtime.agent("boss/p1").unwrap();
    let _ = ask(&child, "default", "boom").await;
    let heard = hearing.await.unwrap().unwrap();
    let event: ChildEvent = heard.signal.data_as().unwrap();
    assert_eq!((event.tag.as_str(), event.name.as_str()), ("p1", "boss/p1"));
    assert_eq!(event.message.as_deref(), Some("restart intensity exceeded"));
    assert!(runtime.agent("boss/p1").is_none());
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_parent_is_told_when_the_application_stops_its_child() {
    let (runtime, parent) = parent_with_a_child(Intensity::default()).await;
    let hearing = {
        let parent = parent.clone();
        tokio::spawn(async move { parent.ask("what happened?").await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    runtime.stop_agent("boss/p1");
    let heard = hearing.await.unwrap().unwrap();
    let event: ChildEvent = heard.signal.data_as().unwrap();
    assert_eq!(event.name, "boss/p1");
    assert_eq!(event.message.as_deref(), Some("stopped by the application"));
    runtime.shutdown().await;
}
