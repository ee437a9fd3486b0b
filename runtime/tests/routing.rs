//! Routing between agents: bus subscriptions, groups, and a coordinator fanning work out over
//! the bus and gathering the answers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::AGENT_COMPLETED;
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::testing::ScriptedModel;

/// Remembers the types of the signals it gets; answers `agent.request` "report" with them, and
/// "cast:<group>" by emitting `news.flash` to that group.
struct Recorder;

impl motet_agents::Strategy for Recorder {
    type State = Vec<String>;

    fn init(&self, _env: &dyn motet_agents::Env) -> Vec<String> {
        Vec::new()
    }

    fn handle(
        &self,
        seen: &mut Vec<String>,
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget, Reply};
        let ty = signal.signal_type().as_str().to_owned();
        let Ok(input) = signal.data_as::<motet_agents::AgentRequest>() else {
            seen.push(ty);
            return Ok(Vec::new());
        };
        let reply = |data: serde_json::Value| {
            motet_signals::Signal::builder(AGENT_COMPLETED, "recorder")
                .caused_by(signal)
                .with_data(data)
                .build()
                .unwrap()
        };
        let mut out = Vec::new();
        if let Some(group) = input.query.strip_prefix("cast:") {
            let news = motet_signals::Signal::builder("news.flash", "recorder")
                .caused_by(signal)
                .build()
                .unwrap();
            out.push(Directive::Emit(Emit {
                signal: news,
                target: EmitTarget::Group(group.to_owned()),
            }));
        }
        out.push(Directive::Reply(Reply::completed(reply(
            serde_json::json!(seen.clone()),
        ))));
        Ok(out)
    }
}

async fn report(agent: &motet_runtime::agent::AgentHandle) -> Vec<String> {
    let reply = agent.ask("report").await.unwrap();
    reply.signal.data_as().unwrap()
}

#[tokio::test]
async fn agents_receive_what_they_subscribe_to_and_what_their_group_is_sent() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .unwrap();
    let sports = runtime
        .spawn(
            AgentSpec::new("sports", Recorder)
                .subscribe("news.sports.*".parse().unwrap())
                .join_group("desk"),
        )
        .await
        .unwrap();
    let all = runtime
        .spawn(
            AgentSpec::new("all", Recorder)
                .subscribe("news.**".parse().unwrap())
                .join_group("desk"),
        )
        .await
        .unwrap();
    let caster = runtime
        .spawn(AgentSpec::new("caster", Recorder))
        .await
        .unwrap();

    for ty in ["news.sports.football", "news.weather", "other.thing"] {
        runtime
            .bus()
            .publish(&motet_signals::Signal::builder(ty, "test").build().unwrap());
    }
    // A group emit from another agent reaches both members.
    caster.ask("cast:desk").await.unwrap();
    let mut sports_seen = Vec::new();
    let mut all_seen = Vec::new();
    for _ in 0..100 {
        sports_seen = report(&sports).await;
        all_seen = report(&all).await;
        if sports_seen.len() >= 2 && all_seen.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sports_seen, ["news.sports.football", "news.flash"]);
    assert_eq!(
        all_seen,
        ["news.sports.football", "news.weather", "news.flash"]
    );
    assert!(report(&caster).await.is_empty());
    runtime.shutdown().await;
}

/// Fans "fan" out as one task per worker on the bus (`task.w<k>.assigned`) and answers with
/// the sum of what the workers send back.
struct Coordinator {
    workers: usize,
}

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct Gathering {
    request: Option<String>,
    results: Vec<u64>,
}

impl motet_agents::Strategy for Coordinator {
    type State = Gathering;

    fn init(&self, _env: &dyn motet_agents::Env) -> Gathering {
        Gathering::default()
    }

    fn handle(
        &self,
        state: &mut Gathering,
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget, Reply};
        if signal.signal_type().as_str() == "task.done" {
            state.results.push(signal.data_as::<u64>().unwrap());
            if state.results.len() < self.workers {
                return Ok(Vec::new());
            }
            let sum: u64 = state.results.drain(..).sum();
            let request = state.request.take().unwrap();
            let done = motet_signals::Signal::builder(AGENT_COMPLETED, "coord")
                .with_request_id(request)
                .with_data(sum)
                .build()
                .unwrap();
            return Ok(vec![Directive::Reply(Reply::completed(done))]);
        }
        state.request = signal.request_id().map(str::to_owned);
        Ok((0..self.workers)
            .map(|k| {
                let task = motet_signals::Signal::builder(format!("task.w{k}.assigned"), "coord")
                    .caused_by(signal)
                    .with_data(k as u64)
                    .build()
                    .unwrap();
                Directive::Emit(Emit {
                    signal: task,
                    target: EmitTarget::Bus,
                })
            })
            .collect())
    }
}

/// Squares the task number and sends it to the coordinator.
struct Squarer;

impl motet_agents::Strategy for Squarer {
    type State = ();

    fn init(&self, _env: &dyn motet_agents::Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget};
        let k: u64 = signal.data_as().unwrap();
        let done = motet_signals::Signal::builder("task.done", "worker")
            .caused_by(signal)
            .with_data(k * k)
            .build()
            .unwrap();
        Ok(vec![Directive::Emit(Emit {
            signal: done,
            target: EmitTarget::Agent("coord".into()),
        })])
    }
}

#[tokio::test]
async fn a_coordinator_fans_work_out_over_the_bus_and_gathers_the_answers() {
    const WORKERS: usize = 100;
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .unwrap();
    for k in 0..WORKERS {
        runtime
            .spawn(
                AgentSpec::new(format!("w{k}"), Squarer)
                    .subscribe(format!("task.w{k}.*").parse().unwrap()),
            )
            .await
            .unwrap();
    }
    let coord = runtime
        .spawn(AgentSpec::new("coord", Coordinator { workers: WORKERS }))
        .await
        .unwrap();
    let reply = coord.ask("fan").await.unwrap();
    let expected: u64 = (0..WORKERS as u64).map(|k| k * k).sum();
    assert_eq!(reply.signal.data_as::<u64>().unwrap(), expected);
    // Every task went over the bus, and so did the reply.
    assert_eq!(runtime.bus().stats().published as usize, WORKERS + 1);
    runtime.shutdown().await;
}
