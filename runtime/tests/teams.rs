//! Teams and guardrails hosted like any strategy, their members ReAct agents on scripted
//! models: answers collected, a member's failure handled by the join rule, a timeout, a cancel
//! of the team's request stopping the members' work, and a parallel guardrail tripping while
//! the model still runs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use motet_agents::guard::{GuardFailed, GuardPoint, Guarded, ParallelCheck};
use motet_agents::team::{
    FanOut, GroupChat, Join, Member, Supervisor, TeamCompleted, TeamFailed, TeamFailure,
};
use motet_agents::{AGENT_REQUEST, ReAct, ReActConfig, Strategy};
use motet_directives::{AssistantBlock, Message};
use motet_providers::{LlmEvents, ProviderError};
use motet_runtime::agent::{AgentSpec, AskError, AskOptions, Runtime};

use common::turn_using;

/// What a member's model does.
#[derive(Clone)]
enum Act {
    /// Answers this text (after the user's last message, for a group chat to show).
    Say(&'static str),
    /// Refuses the call, for good.
    Fail,
    /// Never finishes; counts its streams dropped.
    Hang,
}

/// One model per member, told apart by the model's name (`openai:<member>`).
#[derive(Clone, Default)]
struct Cast {
    acts: Arc<HashMap<String, Act>>,
    dropped: Arc<AtomicUsize>,
    started: Arc<AtomicUsize>,
}

impl Cast {
    fn new(acts: &[(&str, Act)]) -> Self {
        Self {
            acts: Arc::new(
                acts.iter()
                    .map(|(m, a)| ((*m).to_owned(), a.clone()))
                    .collect(),
            ),
            ..Self::default()
        }
    }
}

struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for Cast {
    async fn stream(&self, req: motet_directives::LlmRequest) -> Result<LlmEvents, ProviderError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        match self.acts.get(req.model.model()) {
            Some(Act::Say(text)) => {
                let heard = req
                    .messages
                    .iter()
                    .rev()
                    .find_map(|m| match m {
                        Message::User { content } => content.as_text().map(str::len),
                        _ => None,
                    })
                    .unwrap_or(0);
                let response = turn_using(vec![AssistantBlock::text(*text)], heard as u32, 3)?;
                let events = motet_runtime::testing::events_of(response);
                Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
            }
            Some(Act::Hang) => {
                let flag = Dropped(self.dropped.clone());
                Ok(Box::pin(futures::stream::unfold(flag, |flag| async move {
                    futures::future::pending::<()>().await;
                    Some((
                        Ok(motet_providers::LlmEvent::Done {
                            stop_reason: motet_directives::StopReason::EndTurn,
                        }),
                        flag,
                    ))
                })))
            }
            Some(Act::Fail) | None => Err(ProviderError::InvalidRequest {
                status: 400,
                message: format!("{} refuses", req.model),
            }),
        }
    }
}

/// A runtime on `cast`, with a ReAct member per act (named after it, on its own model).
async fn members(cast: &Cast) -> Runtime {
    let runtime = Runtime::builder()
        .llm(Arc::new(cast.clone()))
        .build()
        .unwrap();
    for name in cast.acts.keys() {
        let react = ReAct::new(ReActConfig::new(format!("openai:{name}").parse().unwrap()));
        runtime
            .spawn(AgentSpec::new(name.as_str(), react))
            .await
            .unwrap();
    }
    runtime
}

/// `team` spawned as `team`: it hears its members' replies as the replies of its asks, with no
/// subscription to anyone's on the bus.
async fn spawn_team<S>(runtime: &Runtime, team: S) -> motet_runtime::agent::AgentHandle
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    runtime.spawn(AgentSpec::new("team", team)).await.unwrap()
}

fn team_failure(result: Result<motet_runtime::agent::Answer, AskError>) -> TeamFailure {
    match result {
        Err(AskError::Failed { reply }) => reply.data_as::<TeamFailed>().unwrap().failure,
        other => panic!("{other:?}"),
    }
}

/// Waits (a few seconds at most) for `count` to reach `n`.
async fn reaches(count: &AtomicUsize, n: usize) -> bool {
    for _ in 0..300 {
        if count.load(Ordering::SeqCst) >= n {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_fan_out_collects_every_members_answer_and_their_usage() {
    let cast = Cast::new(&[
        ("alpha", Act::Say("alpha here")),
        ("beta", Act::Say("beta here")),
    ]);
    let runtime = members(&cast).await;
    let team = spawn_team(&runtime, FanOut::new(["alpha", "beta"])).await;
    let answer = team.ask("roll call").await.unwrap();
    assert_eq!(answer.text, "alpha: alpha here\nbeta: beta here");
    let done: TeamCompleted = answer.signal.data_as().unwrap();
    // Each member read "roll call" (9 tokens in, as the cast counts) and wrote 3.
    assert_eq!(done.usage.input_tokens, 18);
    assert_eq!(done.usage.output_tokens, 6);
    assert_eq!(done.answers.len(), 2);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_members_failure_fails_all_and_is_skipped_by_best_effort() {
    let cast = Cast::new(&[("alpha", Act::Say("alpha here")), ("beta", Act::Fail)]);
    let runtime = members(&cast).await;
    let all = spawn_team(&runtime, FanOut::new(["alpha", "beta"])).await;
    let failure = team_failure(all.ask("roll call").await);
    assert!(
        matches!(&failure, TeamFailure::Member { agent, .. } if agent == "beta"),
        "{failure:?}"
    );
    runtime.shutdown().await;

    let runtime = members(&cast).await;
    let some = spawn_team(
        &runtime,
        FanOut::new(["alpha", "beta"]).with_join(Join::BestEffort),
    )
    .await;
    assert_eq!(some.ask("roll call").await.unwrap().text, "alpha here");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_member_past_its_timeout_is_cancelled_and_its_call_stopped() {
    let cast = Cast::new(&[("alpha", Act::Say("alpha here")), ("slow", Act::Hang)]);
    let runtime = members(&cast).await;
    let fan = FanOut::new(["alpha", "slow"])
        .with_join(Join::AtLeast(1))
        .with_timeout(Duration::from_millis(300));
    let team = spawn_team(&runtime, fan).await;
    // At least one: alpha's answer ends the round, and the slow member is cancelled.
    assert_eq!(team.ask("roll call").await.unwrap().text, "alpha here");
    assert!(
        reaches(&cast.dropped, 1).await,
        "the slow member's call still runs"
    );
    runtime.shutdown().await;

    let runtime = members(&cast).await;
    let fan = FanOut::new(["slow"]).with_timeout(Duration::from_millis(200));
    let team = spawn_team(&runtime, fan).await;
    let failure = team_failure(team.ask("anyone?").await);
    assert_eq!(
        failure,
        TeamFailure::TimedOut {
            agent: "slow".into(),
            timeout_ms: 200
        }
    );
    assert!(
        reaches(&cast.dropped, 2).await,
        "the timed-out call still runs"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_cancel_of_the_teams_request_stops_its_members_work() {
    let cast = Cast::new(&[("one", Act::Hang), ("two", Act::Hang)]);
    let runtime = members(&cast).await;
    let team = spawn_team(&runtime, FanOut::new(["one", "two"])).await;
    let ticket = team.submit("work", AskOptions::default()).await.unwrap();
    assert!(reaches(&cast.started, 2).await, "both members started");
    ticket.cancel("never mind").await.unwrap();
    let failure = team_failure(ticket.wait().await);
    assert_eq!(
        failure,
        TeamFailure::Cancelled {
            reason: Some("never mind".into())
        }
    );
    assert!(
        reaches(&cast.dropped, 2).await,
        "the members' calls still run"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_supervisor_routes_and_a_group_chat_takes_turns() {
    let cast = Cast::new(&[
        ("math", Act::Say("42")),
        ("geo", Act::Say("Paris")),
        ("critic", Act::Say("APPROVED")),
    ]);
    let runtime = members(&cast).await;
    let supervisor =
        Supervisor::new([Member::new("math", "numbers"), Member::new("geo", "places")]).route_with(
            |request, _| {
                vec![
                    if request.query.contains('*') {
                        "math"
                    } else {
                        "geo"
                    }
                    .to_owned(),
                ]
            },
        );
    let boss = spawn_team(&runtime, supervisor).await;
    assert_eq!(boss.ask("What is 6 * 7?").await.unwrap().text, "42");
    assert_eq!(boss.ask("Capital of France?").await.unwrap().text, "Paris");
    runtime.shutdown().await;

    let runtime = members(&cast).await;
    let chat = GroupChat::new(["geo", "critic"])
        .with_max_turns(6)
        .with_stop_phrase("APPROVED");
    let chat = spawn_team(&runtime, chat).await;
    let answer = chat.ask("Name a capital.").await.unwrap();
    let done: TeamCompleted = answer.signal.data_as().unwrap();
    let turns: Vec<(&str, &str)> = done
        .answers
        .iter()
        .map(|t| (t.agent.as_str(), t.answer.as_str()))
        .collect();
    assert_eq!(turns, [("geo", "Paris"), ("critic", "APPROVED")]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_parallel_guardrail_that_trips_fails_the_request_and_stops_the_model_call() {
    let cast = Cast::new(&[("agent", Act::Hang), ("moderator", Act::Say("FLAGGED"))]);
    let runtime = Runtime::builder()
        .llm(Arc::new(cast.clone()))
        .build()
        .unwrap();
    let check = ParallelCheck::flagged_by(
        "openai:moderator".parse().unwrap(),
        "Say FLAGGED if the text is abusive.",
        "flagged",
        4,
    );
    let guarded = Guarded::new(ReAct::new(ReActConfig::new(
        "openai:agent".parse().unwrap(),
    )))
    .input_in_parallel(check);
    let agent = runtime
        .spawn(AgentSpec::new("guarded", guarded))
        .await
        .unwrap();
    let reply = match agent.ask("something rude").await {
        Err(AskError::Failed { reply }) => reply,
        other => panic!("{other:?}"),
    };
    let failed: GuardFailed = reply.data_as().unwrap();
    assert_eq!(failed.reason.point, GuardPoint::ParallelInput);
    assert_eq!(
        cast.started.load(Ordering::SeqCst),
        2,
        "both calls started at once"
    );
    assert!(
        reaches(&cast.dropped, 1).await,
        "the model's call still runs"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_tool_guardrail_sends_the_call_to_a_person_and_runs_it_once_approved() {
    use motet_agents::guard::ToolVerdict;
    use motet_directives::{Approval, Response, ToolArgs};
    use motet_runtime::testing::ScriptedModel;

    let model = ScriptedModel::new([
        common::turn(vec![AssistantBlock::tool_use(
            "a",
            "add",
            ToolArgs::from_text(r#"{"a":2,"b":3}"#),
        )]),
        common::turn(vec![AssistantBlock::text("5")]),
    ]);
    let runtime = Runtime::builder().llm(Arc::new(model)).build().unwrap();
    let tools = common::calculator();
    let react = ReAct::new(
        ReActConfig::new(common::MODEL.parse().unwrap()).with_tools(tools.definitions()),
    );
    // The tool itself needs no approval: the guardrail asks for it.
    let guarded = Guarded::new(react).tool(|call| {
        ToolVerdict::Approval(Approval::required().because(format!("{} runs", call.name)))
    });
    let agent = runtime
        .spawn(AgentSpec::new("guarded", guarded).with_tools(tools))
        .await
        .unwrap();
    let mut ticket = agent.submit("2 + 3?", AskOptions::default()).await.unwrap();
    let waiting = tokio::time::timeout(Duration::from_secs(5), ticket.next_waiting())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (waiting.tool.as_str(), waiting.tool_call_id.as_str()),
        ("add", "a")
    );
    assert_eq!(
        agent.waiting(None).await.unwrap().len(),
        1,
        "listed as waiting"
    );
    ticket.respond("a", Response::Approve).await.unwrap();
    let answer = ticket.wait().await.unwrap();
    assert_eq!(answer.text, "5");
    let thread = agent.get_thread(None).await.unwrap().unwrap();
    assert!(
        format!("{:?}", thread.to_list()).contains("content: \"5\""),
        "the tool ran once approved"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_team_hears_its_own_members_replies_and_no_one_elses() {
    let cast = Cast::new(&[("slow", Act::Hang), ("other", Act::Say("not yours"))]);
    let runtime = members(&cast).await;
    let team = spawn_team(&runtime, FanOut::new(["slow"])).await;
    let ticket = team.submit("work", AskOptions::default()).await.unwrap();
    assert!(reaches(&cast.started, 1).await, "the member started");
    // Another agent answers a request of the very id the team's member works on: that reply
    // is published on the bus, and is not the team's to hear.
    let stray = motet_signals::Signal::builder(AGENT_REQUEST, "test")
        .with_request_id(format!("{}.0", ticket.id()))
        .with_thread_id("stray")
        .with_data(serde_json::json!({ "query": "hello" }))
        .build()
        .unwrap();
    let other = runtime.agent("other").unwrap();
    let reply = other
        .ask_signal(stray, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        reply.request_id(),
        Some(format!("{}.0", ticket.id()).as_str())
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    ticket.cancel("enough").await.unwrap();
    let failure = team_failure(ticket.wait().await);
    assert!(
        matches!(failure, TeamFailure::Cancelled { .. }),
        "the stray reply was heard: {failure:?}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_member_that_cannot_be_asked_fails_its_ask_at_once() {
    let cast = Cast::new(&[("alpha", Act::Say("alpha here"))]);
    let runtime = members(&cast).await;
    let team = spawn_team(&runtime, FanOut::new(["alpha", "ghost"])).await;
    let options = AskOptions {
        timeout: Duration::from_secs(60),
        ..AskOptions::default()
    };
    let failure = team_failure(team.ask_with("roll call", options).await);
    match &failure {
        TeamFailure::Member { agent, message } => {
            assert_eq!(agent, "ghost");
            assert!(message.contains("could not be asked"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    runtime.shutdown().await;
}
