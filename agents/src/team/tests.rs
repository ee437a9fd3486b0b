//! Transcripts of the teams: signals in, directives and state out.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::time::Duration;

use motet_directives::results::{LLM_FAILED, LLM_RESULT, LlmError, LlmErrorKind};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, LlmResponse, ReplyStatus, StopReason, ToolArgs,
    ToolChoice, Usage,
};
use motet_signals::Signal;
use serde_json::json;

use super::*;
use crate::env::FixedEnv;
use crate::protocol::{AGENT_CANCEL, AGENT_COMPLETED, AGENT_FAILED, AGENT_REQUEST};
use crate::strategy::Strategy;

fn request(query: &str) -> Signal {
    Signal::builder(AGENT_REQUEST, "caller")
        .with_id("req-signal")
        .with_request_id("r1")
        .with_thread_id("main")
        .with_data(json!({ "query": query }))
        .build()
        .unwrap()
}

fn usage(n: u64) -> Usage {
    Usage {
        input_tokens: n,
        output_tokens: n,
        ..Usage::default()
    }
}

fn answer(request_id: &str, text: &str, tokens: u64) -> Signal {
    Signal::builder(AGENT_COMPLETED, "member")
        .with_request_id(request_id)
        .with_data(json!({ "answer": text, "usage": usage(tokens) }))
        .build()
        .unwrap()
}

fn failure(request_id: &str, why: &str) -> Signal {
    Signal::builder(AGENT_FAILED, "member")
        .with_request_id(request_id)
        .with_data(json!({ "message": why }))
        .build()
        .unwrap()
}

fn cancel(request_id: &str) -> Signal {
    Signal::builder(AGENT_CANCEL, "caller")
        .with_request_id(request_id)
        .with_data(json!({ "reason": "enough" }))
        .build()
        .unwrap()
}

fn timeout(request_id: &str) -> Signal {
    Signal::builder(TEAM_TIMEOUT, "motet.team")
        .with_data(TeamTimeout {
            request_id: request_id.to_owned(),
        })
        .build()
        .unwrap()
}

/// An emitted signal, as `(agent, type, request id, query)`.
fn emits(out: &[Directive]) -> Vec<(String, String, String, String)> {
    out.iter()
        .filter_map(|d| match d {
            Directive::Emit(emit) => {
                let motet_directives::EmitTarget::Agent(agent) = &emit.target else {
                    panic!("a team emits to agents: {emit:?}");
                };
                assert_eq!(emit.signal.thread_id(), emit.signal.request_id());
                let data: serde_json::Value = emit.signal.data_as().unwrap_or_default();
                Some((
                    agent.clone(),
                    emit.signal.signal_type().as_str().to_owned(),
                    emit.signal.request_id().unwrap_or_default().to_owned(),
                    data["query"].as_str().unwrap_or_default().to_owned(),
                ))
            }
            _ => None,
        })
        .collect()
}

fn asked(out: &[Directive]) -> Vec<(String, String)> {
    emits(out)
        .into_iter()
        .filter(|(_, ty, _, _)| ty == AGENT_REQUEST)
        .map(|(agent, _, id, _)| (agent, id))
        .collect()
}

fn cancelled(out: &[Directive]) -> Vec<String> {
    emits(out)
        .into_iter()
        .filter(|(_, ty, _, _)| ty == AGENT_CANCEL)
        .map(|(agent, ..)| agent)
        .collect()
}

fn completed(out: &[Directive]) -> TeamCompleted {
    let Some(Directive::Reply(reply)) = out.last() else {
        panic!("no reply: {out:?}");
    };
    assert_eq!(reply.status, ReplyStatus::Completed, "{reply:?}");
    assert_eq!(reply.signal.request_id(), Some("r1"));
    assert_eq!(reply.signal.thread_id(), Some("main"));
    // Readable as the protocol's `agent.completed` by any caller.
    let _: crate::AgentCompleted = reply.signal.data_as().unwrap();
    reply.signal.data_as().unwrap()
}

fn failed(out: &[Directive]) -> TeamFailure {
    let Some(Directive::Reply(reply)) = out.last() else {
        panic!("no reply: {out:?}");
    };
    assert_eq!(reply.status, ReplyStatus::Failed, "{reply:?}");
    let failed: TeamFailed = reply.signal.data_as().unwrap();
    assert_eq!(failed.message, failed.failure.to_string());
    failed.failure
}

fn replies(out: &[Directive]) -> usize {
    out.iter()
        .filter(|d| matches!(d, Directive::Reply(_)))
        .count()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

// ---- fan-out -------------------------------------------------------------------------------

#[test]
fn a_fan_out_asks_every_member_at_once_and_joins_the_answers_in_task_order() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b"]);
    let mut state = team.init(&env);
    let out = team
        .handle(&mut state, &request("sum it up"), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("a", "r1.0"), ("b", "r1.1")]));
    assert!(emits(&out).iter().all(|(.., query)| query == "sum it up"));
    assert_eq!(replies(&out), 0);

    // Answers in any order; the team answers once both are in.
    let out = team
        .handle(&mut state, &answer("r1.1", "from b", 2), &env)
        .unwrap();
    assert!(out.is_empty(), "{out:?}");
    let out = team
        .handle(&mut state, &answer("r1.0", "from a", 3), &env)
        .unwrap();
    let done = completed(&out);
    assert_eq!(done.answer, "a: from a\nb: from b");
    assert_eq!(done.usage, usage(5));
    assert_eq!(done.answers.len(), 2);
    assert!(!state.is_open());
    // A reply nobody waits for changes nothing.
    assert!(
        team.handle(&mut state, &answer("r1.0", "again", 1), &env)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_failed_ask_is_asked_again_of_the_member_reassign_picks_until_attempts_run_out() {
    let env = FixedEnv::new(0);
    // The next attempt goes to the next member up, the task's words unchanged.
    let team = FanOut::new(["a", "b", "c"])
        .with_attempts(2)
        .with_reassign(|task, up| {
            let next = up.iter().cycle().skip_while(|m| **m != task.agent).nth(1)?;
            Some(Task::new(next, &task.query))
        });
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let out = team
        .handle(&mut state, &failure("r1.0", "crashed"), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("b", "r1.0.1")]));
    assert_eq!(replies(&out), 0);
    let again = state.ask("r1.0.1").unwrap();
    assert_eq!(
        (again.slot, again.attempt, again.agent, again.open),
        (0, 1, "b", true)
    );
    // A late reply to the attempt replaced is not heard.
    assert!(state.ask("r1.0").is_none());
    assert!(
        team.handle(&mut state, &answer("r1.0", "late", 9), &env)
            .unwrap()
            .is_empty()
    );
    team.handle(&mut state, &answer("r1.0.1", "from b", 1), &env)
        .unwrap();
    team.handle(&mut state, &answer("r1.1", "b too", 1), &env)
        .unwrap();
    // Out of attempts: the failure stands, and under `All` it fails the round.
    let out = team
        .handle(&mut state, &failure("r1.2", "no"), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("a", "r1.2.1")]));
    let out = team
        .handle(&mut state, &failure("r1.2.1", "still no"), &env)
        .unwrap();
    assert_eq!(
        failed(&out),
        TeamFailure::Member {
            agent: "a".into(),
            message: "still no".into()
        }
    );
}

#[test]
fn a_lost_ask_and_a_member_gone_are_failures_asked_again_elsewhere() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b"])
        .with_join(Join::BestEffort)
        .with_attempts(3)
        .with_reassign(|task, up| {
            let other = up.iter().find(|m| **m != task.agent).or(up.first())?;
            Some(Task::new(other, &task.query))
        });
    let mut state = team.init(&env);
    let start = Signal::builder("swarm.run", "caller")
        .with_request_id("r1")
        .with_thread_id("main")
        .build()
        .unwrap();
    let out = team
        .start(
            &mut state,
            &start,
            vec![Task::new("a", "one"), Task::new("a", "two")],
            &env,
        )
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("a", "r1.0"), ("a", "r1.1")]));
    // A second start while one is open is refused typed.
    let busy = team.start(&mut state, &start, vec![Task::new("b", "x")], &env);
    assert!(matches!(failed(&busy.unwrap()), TeamFailure::Busy { .. }));
    // Its member's thread restarted: the ask is lost, and asked again of b.
    let out = team.lost(&mut state, "r1.0", "restarted", &env).unwrap();
    assert_eq!(asked(&out), pairs(&[("b", "r1.0.1")]));
    // Nothing for an ask that is not open.
    assert!(
        team.lost(&mut state, "r1.0", "again", &env)
            .unwrap()
            .is_empty()
    );
    // a stops for good: its other ask moves to b, and nothing more goes to a.
    let out = team.member_gone(&mut state, "a", "stopped", &env).unwrap();
    assert_eq!(asked(&out), pairs(&[("b", "r1.1.1")]));
    let out = team
        .handle(&mut state, &failure("r1.1.1", "oops"), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("b", "r1.1.2")]));
    team.handle(&mut state, &answer("r1.0.1", "1", 1), &env)
        .unwrap();
    let out = team
        .handle(&mut state, &answer("r1.1.2", "2", 1), &env)
        .unwrap();
    let done = completed(&out);
    assert_eq!(done.answer, "b: 1\nb: 2");
}

#[test]
fn a_window_asks_a_few_at_a_time_and_each_settled_ask_lets_the_next_go() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b", "c", "d", "e"])
        .with_window(2)
        .with_attempts(2)
        .with_timeout(Duration::from_secs(5));
    let mut state = team.init(&env);
    let out = team.handle(&mut state, &request("q"), &env).unwrap();
    assert_eq!(asked(&out), pairs(&[("a", "r1.0"), ("b", "r1.1")]));
    // A timer only for the asks sent: a waiting task's time starts when it is asked.
    let timers = |out: &[Directive]| {
        out.iter()
            .filter(|d| matches!(d, Directive::Schedule(_)))
            .count()
    };
    assert_eq!(timers(&out), 2);
    let view = state.asks();
    assert_eq!(view.len(), 5);
    assert!(view[2].open && view[2].queued && !view[1].queued);
    // An answer lets the next one go.
    let out = team
        .handle(&mut state, &answer("r1.1", "b", 1), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("c", "r1.2")]));
    assert_eq!(timers(&out), 1);
    // A failure asked again keeps its place: nothing more goes.
    let out = team
        .handle(&mut state, &failure("r1.0", "oops"), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("a", "r1.0.1")]));
    // Out of attempts, under All, the failure ends the round: c is cancelled, and d and e,
    // never sent, have nothing to cancel.
    let out = team
        .handle(&mut state, &failure("r1.0.1", "no"), &env)
        .unwrap();
    assert_eq!(replies(&out), 1, "{out:?}");
    assert_eq!(cancelled(&out), ["c"]);
    assert!(asked(&out).is_empty());
    assert_eq!(
        failed(&out),
        TeamFailure::Member {
            agent: "a".into(),
            message: "no".into()
        }
    );
    assert!(!state.is_open());
}

#[test]
fn a_windowed_best_effort_round_asks_every_task_in_turn_and_gives_up_a_gone_members() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b", "c"])
        .with_join(Join::BestEffort)
        .with_window(1);
    let mut state = team.init(&env);
    let out = team.handle(&mut state, &request("q"), &env).unwrap();
    assert_eq!(asked(&out), pairs(&[("a", "r1.0")]));
    // b stops before its turn: nothing is cancelled, and its task is given up when it comes.
    let out = team.member_gone(&mut state, "b", "stopped", &env).unwrap();
    assert!(out.is_empty(), "{out:?}");
    let out = team
        .handle(&mut state, &answer("r1.0", "A", 1), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("c", "r1.2")]));
    let out = team
        .handle(&mut state, &answer("r1.2", "C", 1), &env)
        .unwrap();
    let done = completed(&out);
    assert_eq!(done.answer, "a: A\nc: C");
    assert!(!state.is_open());
}

#[test]
fn under_all_the_first_failure_fails_the_request_and_cancels_the_rest() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b", "c"]);
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    team.handle(&mut state, &answer("r1.0", "ok", 1), &env)
        .unwrap();
    let out = team
        .handle(&mut state, &failure("r1.1", "no tool"), &env)
        .unwrap();
    assert_eq!(cancelled(&out), ["c"]);
    assert_eq!(
        failed(&out),
        TeamFailure::Member {
            agent: "b".into(),
            message: "no tool".into()
        }
    );
    assert!(!state.is_open());
}

#[test]
fn at_least_k_is_done_at_the_kth_answer_and_fails_when_k_can_no_longer_come() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b", "c"]).with_join(Join::AtLeast(2));
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let out = team
        .handle(&mut state, &failure("r1.0", "down"), &env)
        .unwrap();
    assert!(out.is_empty(), "one failure leaves two to answer: {out:?}");
    team.handle(&mut state, &answer("r1.1", "one", 1), &env)
        .unwrap();
    let out = team
        .handle(&mut state, &answer("r1.2", "two", 1), &env)
        .unwrap();
    assert_eq!(completed(&out).answer, "b: one\nc: two");

    // Two failures of three: two answers can no longer come.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    team.handle(&mut state, &failure("r1.0", "down"), &env)
        .unwrap();
    let out = team
        .handle(&mut state, &failure("r1.2", "down"), &env)
        .unwrap();
    assert_eq!(cancelled(&out), ["b"]);
    assert_eq!(
        failed(&out),
        TeamFailure::TooFew {
            needed: 2,
            answered: 0,
            failed: 2
        }
    );

    // Done early: the member still working is cancelled.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    team.handle(&mut state, &answer("r1.0", "x", 1), &env)
        .unwrap();
    let out = team
        .handle(&mut state, &answer("r1.2", "y", 1), &env)
        .unwrap();
    assert_eq!(cancelled(&out), ["b"]);
    assert_eq!(completed(&out).answers.len(), 2);
}

#[test]
fn best_effort_waits_for_everyone_and_fails_only_when_nobody_answered() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b"]).with_join(Join::BestEffort);
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    assert!(
        team.handle(&mut state, &failure("r1.0", "down"), &env)
            .unwrap()
            .is_empty()
    );
    let out = team
        .handle(&mut state, &answer("r1.1", "b's", 1), &env)
        .unwrap();
    assert_eq!(completed(&out).answer, "b's");

    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    team.handle(&mut state, &failure("r1.0", "down"), &env)
        .unwrap();
    let out = team
        .handle(&mut state, &failure("r1.1", "down"), &env)
        .unwrap();
    assert!(matches!(
        failed(&out),
        TeamFailure::TooFew {
            needed: 1,
            answered: 0,
            failed: 2
        }
    ));
}

#[test]
fn a_member_past_its_timeout_is_cancelled_and_counts_as_failed() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b"])
        .with_join(Join::BestEffort)
        .with_timeout(Duration::from_secs(5));
    let mut state = team.init(&env);
    let out = team.handle(&mut state, &request("q"), &env).unwrap();
    let timers: Vec<_> = out
        .iter()
        .filter_map(|d| match d {
            Directive::Schedule(s) => Some((s.schedule_id.to_string(), s.delay)),
            _ => None,
        })
        .collect();
    assert_eq!(
        timers,
        [
            ("team.timeout.r1.0".to_owned(), Duration::from_secs(5)),
            ("team.timeout.r1.1".to_owned(), Duration::from_secs(5))
        ]
    );
    // An answer in time cancels its timer.
    let out = team
        .handle(&mut state, &answer("r1.0", "fast", 1), &env)
        .unwrap();
    assert!(
        matches!(&out[..], [Directive::CancelSchedule(c)] if c.schedule_id.as_str() == "team.timeout.r1.0")
    );
    // The other's timer fires: it is cancelled, and best effort answers with what came.
    let out = team.handle(&mut state, &timeout("r1.1"), &env).unwrap();
    assert_eq!(cancelled(&out), ["b"]);
    assert_eq!(completed(&out).answer, "fast");
    // A timer of an ask that answered changes nothing.
    assert!(
        team.handle(&mut state, &timeout("r1.0"), &env)
            .unwrap()
            .is_empty()
    );

    // Under `All`, a timeout is the failure.
    let team = FanOut::new(["a"]).with_timeout(Duration::from_secs(1));
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let out = team.handle(&mut state, &timeout("r1.0"), &env).unwrap();
    assert_eq!(
        failed(&out),
        TeamFailure::TimedOut {
            agent: "a".into(),
            timeout_ms: 1000
        }
    );
}

#[test]
fn a_cancel_of_the_teams_request_cancels_every_member_still_working() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["a", "b", "c"]).with_timeout(Duration::from_secs(9));
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    team.handle(&mut state, &answer("r1.1", "done", 1), &env)
        .unwrap();
    // A cancel of another request is not this one's.
    assert!(
        team.handle(&mut state, &cancel("r9"), &env)
            .unwrap()
            .is_empty()
    );
    let out = team.handle(&mut state, &cancel("r1"), &env).unwrap();
    assert_eq!(cancelled(&out), ["a", "c"]);
    let timers = out
        .iter()
        .filter(|d| matches!(d, Directive::CancelSchedule(_)))
        .count();
    assert_eq!(timers, 2, "the open asks' timers go too: {out:?}");
    assert_eq!(
        failed(&out),
        TeamFailure::Cancelled {
            reason: Some("enough".into())
        }
    );
    assert!(!state.is_open());
}

#[test]
fn a_split_gives_each_member_its_own_task_and_a_reduce_makes_the_answer() {
    let env = FixedEnv::new(0);
    let team = FanOut::new(["en", "fr"])
        .with_split(|request, members| {
            members
                .iter()
                .map(|m| {
                    Task::new(m, format!("{m}: {}", request.query)).with_field("lang", json!(m))
                })
                .collect()
        })
        .with_reduce(|answers| {
            answers
                .iter()
                .map(|a| a.answer.as_str())
                .collect::<Vec<_>>()
                .join(" / ")
        });
    let mut state = team.init(&env);
    let out = team.handle(&mut state, &request("hello"), &env).unwrap();
    let queries: Vec<String> = emits(&out).into_iter().map(|e| e.3).collect();
    assert_eq!(queries, ["en: hello", "fr: hello"]);
    let Directive::Emit(first) = &out[0] else {
        panic!()
    };
    assert_eq!(
        first.signal.data_as::<serde_json::Value>().unwrap()["lang"],
        "en"
    );
    team.handle(&mut state, &answer("r1.0", "hello", 0), &env)
        .unwrap();
    let out = team
        .handle(&mut state, &answer("r1.1", "bonjour", 0), &env)
        .unwrap();
    assert_eq!(completed(&out).answer, "hello / bonjour");

    // A second request while one is open is refused; one the split makes nothing of fails.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("one"), &env).unwrap();
    let second = Signal::builder(AGENT_REQUEST, "caller")
        .with_request_id("r2")
        .with_data(json!({"query": "two"}))
        .build()
        .unwrap();
    let out = team.handle(&mut state, &second, &env).unwrap();
    assert_eq!(
        failed(&out),
        TeamFailure::Busy {
            active_request_id: "r1".into()
        }
    );
    assert!(state.is_open());
    let empty = FanOut::new(Vec::<String>::new());
    let mut state = empty.init(&env);
    let out = empty.handle(&mut state, &request("q"), &env).unwrap();
    assert!(matches!(failed(&out), TeamFailure::NoRoute { .. }));
}

// ---- supervisor ----------------------------------------------------------------------------

fn members() -> Vec<Member> {
    vec![
        Member::new("math", "arithmetic"),
        Member::new("geo", "capitals and countries"),
    ]
}

#[test]
fn a_supervisor_routes_by_a_function_and_collects_the_answer() {
    let env = FixedEnv::new(0);
    let team = Supervisor::new(members()).route_with(|request, _| {
        let math = request.query.chars().any(|c| c.is_ascii_digit());
        vec![
            if math { "math" } else { "geo" }.to_owned(),
            "nobody".to_owned(),
        ]
    });
    let mut state = team.init(&env);
    let out = team
        .handle(&mut state, &request("What is 6 * 7?"), &env)
        .unwrap();
    assert_eq!(
        asked(&out),
        pairs(&[("math", "r1.0")]),
        "unknown names are dropped"
    );
    let out = team
        .handle(&mut state, &answer("r1.0", "42", 4), &env)
        .unwrap();
    let done = completed(&out);
    assert_eq!(done.answer, "42");
    assert_eq!(done.usage, usage(4));

    let team = Supervisor::new(members()).route_with(|_, _| Vec::new());
    let mut state = team.init(&env);
    let out = team.handle(&mut state, &request("q"), &env).unwrap();
    assert!(matches!(failed(&out), TeamFailure::NoRoute { .. }));
}

fn llm_result(call_id: &str, blocks: Vec<AssistantBlock>, tokens: u64) -> Signal {
    let stop_reason = if blocks
        .iter()
        .any(|b| matches!(b, AssistantBlock::ToolUse { .. }))
    {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    let response = LlmResponse::new(
        AssistantMessage {
            blocks,
            stop_reason,
        },
        usage(tokens),
    );
    Signal::builder(LLM_RESULT, "runtime")
        .with_request_id("r1")
        .with_data(json!({ "call_id": call_id, "response": response }))
        .build()
        .unwrap()
}

#[test]
fn a_supervisor_routes_by_a_models_choice_of_the_route_tool() {
    let env = FixedEnv::new(0);
    let team = Supervisor::new(members()).route_by_model("openai:router".parse().unwrap(), 32);
    assert_eq!(
        team.model().map(ToString::to_string).as_deref(),
        Some("openai:router")
    );
    let mut state = team.init(&env);
    let out = team
        .handle(&mut state, &request("Capital of France?"), &env)
        .unwrap();
    let [Directive::LlmStream(call)] = &out[..] else {
        panic!("one routing call: {out:?}");
    };
    assert_eq!(
        call.request.tool_choice,
        ToolChoice::Tool {
            name: "route".into()
        }
    );
    assert_eq!(call.request.options.max_tokens, Some(32));
    assert_eq!(call.request.options.parallel_tool_calls, Some(false));
    let schema = &call.request.tools[0].parameters;
    assert_eq!(
        schema["properties"]["members"]["items"]["enum"],
        json!(["math", "geo"])
    );
    let system = format!("{:?}", call.request.messages[0]);
    assert!(system.contains("geo: capitals and countries"), "{system}");

    let routed =
        AssistantBlock::tool_use("t1", "route", ToolArgs::from_text(r#"{"member":"geo"}"#));
    let out = team
        .handle(
            &mut state,
            &llm_result(call.call_id.as_str(), vec![routed], 3),
            &env,
        )
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("geo", "r1.0")]));
    assert_eq!(emits(&out)[0].3, "Capital of France?");
    let out = team
        .handle(&mut state, &answer("r1.0", "Paris", 2), &env)
        .unwrap();
    let done = completed(&out);
    assert_eq!(done.answer, "Paris");
    assert_eq!(done.usage, usage(5), "the routing call's usage counts");
}

#[test]
fn a_routing_model_that_names_no_member_or_fails_fails_the_request_typed() {
    let env = FixedEnv::new(0);
    let team = Supervisor::new(members()).route_by_model("openai:router".parse().unwrap(), 32);
    // Words instead of a tool call: the members it names are asked.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let out = team
        .handle(
            &mut state,
            &llm_result("call_1", vec![AssistantBlock::text("ask math")], 1),
            &env,
        )
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("math", "r1.0")]));
    // Off the schema: the first member named in the arguments is asked.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let routed = AssistantBlock::tool_use(
        "t1",
        "route",
        ToolArgs::from_text(r#"{"members":["nobody","geo","math"]}"#),
    );
    let out = team
        .handle(&mut state, &llm_result("call_2", vec![routed], 1), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("geo", "r1.0")]));
    // Nobody named.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let out = team
        .handle(
            &mut state,
            &llm_result("call_3", vec![AssistantBlock::text("hmm")], 1),
            &env,
        )
        .unwrap();
    assert!(matches!(failed(&out), TeamFailure::NoRoute { .. }));
    // The call failed.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let error = LlmError {
        kind: LlmErrorKind::Overloaded,
        message: "later".into(),
        retryable: true,
        soft_limit: None,
    };
    let failed_call = Signal::builder(LLM_FAILED, "runtime")
        .with_request_id("r1")
        .with_data(json!({ "call_id": "call_4", "error": error }))
        .build()
        .unwrap();
    let out = team.handle(&mut state, &failed_call, &env).unwrap();
    assert!(matches!(failed(&out), TeamFailure::NoRoute { message } if message.contains("later")));
    // A cancel while routing answers at once.
    let mut state = team.init(&env);
    team.handle(&mut state, &request("q"), &env).unwrap();
    let out = team.handle(&mut state, &cancel("r1"), &env).unwrap();
    assert!(matches!(failed(&out), TeamFailure::Cancelled { .. }));
}

// ---- group chat ----------------------------------------------------------------------------

#[test]
fn a_round_robin_chat_takes_turns_seeing_the_conversation_until_max_turns() {
    let env = FixedEnv::new(0);
    let chat = GroupChat::new(["writer", "critic"]).with_max_turns(3);
    let mut state = chat.init(&env);
    let out = chat.handle(&mut state, &request("a haiku"), &env).unwrap();
    assert_eq!(asked(&out), pairs(&[("writer", "r1.0")]));
    assert_eq!(
        emits(&out)[0].3,
        GroupChat::prompt("a haiku", &[], "writer")
    );

    let out = chat
        .handle(&mut state, &answer("r1.0", "draft one", 1), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("critic", "r1.1")]));
    let prompt = &emits(&out)[0].3;
    assert!(
        prompt.contains("[writer] draft one") && prompt.contains("You are critic"),
        "{prompt}"
    );

    let out = chat
        .handle(&mut state, &answer("r1.1", "too long", 1), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("writer", "r1.2")]));
    let out = chat
        .handle(&mut state, &answer("r1.2", "draft two", 1), &env)
        .unwrap();
    let done = completed(&out);
    assert_eq!(done.answer, "draft two");
    assert_eq!(done.usage, usage(3));
    let speakers: Vec<&str> = done.answers.iter().map(|t| t.agent.as_str()).collect();
    assert_eq!(speakers, ["writer", "critic", "writer"]);
}

#[test]
fn a_chat_ends_at_the_stop_phrase_or_the_predicate_and_a_selector_picks_speakers() {
    let env = FixedEnv::new(0);
    let chat = GroupChat::new(["writer", "critic"])
        .with_max_turns(10)
        .with_stop_phrase("APPROVED");
    let mut state = chat.init(&env);
    chat.handle(&mut state, &request("q"), &env).unwrap();
    chat.handle(&mut state, &answer("r1.0", "draft", 0), &env)
        .unwrap();
    let out = chat
        .handle(&mut state, &answer("r1.1", "APPROVED", 0), &env)
        .unwrap();
    assert_eq!(completed(&out).answers.len(), 2);

    // A selector that always asks the writer, stopped by a predicate after two turns.
    let chat = GroupChat::new(["writer", "critic"])
        .with_max_turns(10)
        .with_selector(|_, _| Some("writer".to_owned()))
        .with_stop_when(|turns| turns.len() == 2);
    let mut state = chat.init(&env);
    chat.handle(&mut state, &request("q"), &env).unwrap();
    let out = chat
        .handle(&mut state, &answer("r1.0", "one", 0), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("writer", "r1.1")]));
    let out = chat
        .handle(&mut state, &answer("r1.1", "two", 0), &env)
        .unwrap();
    assert_eq!(completed(&out).answer, "two");

    // A selector naming nobody ends the chat; before any turn, that is a failure.
    let chat = GroupChat::new(["writer"]).with_selector(|_, _| Some("ghost".to_owned()));
    let mut state = chat.init(&env);
    let out = chat.handle(&mut state, &request("q"), &env).unwrap();
    assert!(matches!(failed(&out), TeamFailure::NoRoute { .. }));
}

#[test]
fn a_speaker_that_fails_or_times_out_fails_the_chat() {
    let env = FixedEnv::new(0);
    let chat = GroupChat::new(["a", "b"]).with_timeout(Duration::from_secs(2));
    let mut state = chat.init(&env);
    chat.handle(&mut state, &request("q"), &env).unwrap();
    let out = chat
        .handle(&mut state, &answer("r1.0", "hi", 0), &env)
        .unwrap();
    assert_eq!(asked(&out), pairs(&[("b", "r1.1")]));
    let out = chat.handle(&mut state, &timeout("r1.1"), &env).unwrap();
    assert_eq!(cancelled(&out), ["b"]);
    assert_eq!(
        failed(&out),
        TeamFailure::TimedOut {
            agent: "b".into(),
            timeout_ms: 2000
        }
    );
    let mut state = chat.init(&env);
    chat.handle(&mut state, &request("q"), &env).unwrap();
    let out = chat
        .handle(&mut state, &failure("r1.0", "broke"), &env)
        .unwrap();
    assert!(matches!(failed(&out), TeamFailure::Member { agent, .. } if agent == "a"));
    assert!(state.turns().is_empty());
}

#[test]
fn a_react_members_failure_reads_as_its_reason() {
    let failed = Signal::builder(AGENT_FAILED, "react")
        .with_request_id("r1.0")
        .with_data(json!({
            "request_id": "r1.0",
            "reason": {"kind": "max_iterations", "max_iterations": 4},
            "usage": usage(2),
        }))
        .build()
        .unwrap();
    assert_eq!(
        heard(&failed).unwrap(),
        Some(Heard::Failure {
            request_id: "r1.0".into(),
            message: "no answer after 4 llm calls".into(),
            usage: usage(2),
        })
    );
    let bad = Signal::builder(AGENT_COMPLETED, "x")
        .with_request_id("r1")
        .with_data(json!({"text": "no answer field"}))
        .build()
        .unwrap();
    assert!(heard(&bad).is_err());
}
