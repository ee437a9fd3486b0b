//! A person's messages mid-request (`agent.steer`), as transcripts: taken in at the next turn
//! boundary, asked again after an answer, noted when nothing runs, kept on record when the
//! request ends first, carried over a restart.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{AgentCancel, EntryBody, ReActState, Strategy};
use motet_directives::{Directive, Message};

use common::*;

#[test]
fn a_steer_while_tools_run_goes_in_after_their_results_before_the_next_call() {
    let mut h = two_calculations();
    h.script(&[
        ("agent.steer", steer("use base 2"), &[]),
        ("tool.result", tool_ok("tool_1", "a", "1"), &[]),
        // Never between a call and its result: b's result is still owed.
        ("agent.steer", steer("and be brief"), &[]),
        (
            "tool.result",
            tool_ok("tool_2", "b", "2"),
            &["llm call_2: S:You are a calculator. | U:q | A:calls[a,b] | T:[a=1,b=2] | U:use base 2 | U:and be brief"],
        ),
        ("llm.result", llm_text("call_2", "10"), &["reply agent.completed r1 answer=10"]),
    ]);
    assert_eq!(h.state.ignored, 0);
}

#[test]
fn a_steer_while_the_model_answers_keeps_the_answer_and_asks_again() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[
        ("agent.steer", steer("shorter"), &[]),
        ("agent.steer", steer("in French"), &[]),
        (
            "llm.result",
            llm_text("call_1", "a long answer"),
            &["llm call_2: S:You are a calculator. | U:q | A:a long answer | U:shorter | U:in French"],
        ),
    ]);
    let replied = h.send("llm.result", llm_text("call_2", "court"));
    assert_eq!(
        describe_all(&replied),
        ["reply agent.completed r1 answer=court"]
    );
    // The steered call is one more of the request's, under `max_iterations`.
    assert_eq!(completed(&replied).iterations, 2);
}

#[test]
fn a_steer_for_no_running_request_or_saying_nothing_is_noted_and_left_out() {
    let mut h = Harness::new(calculator());
    // Nothing runs.
    h.request = "r0".into();
    h.script(&[("agent.steer", steer("too early"), &[])]);
    h.ask("r1", "q");
    // Another request's, and an empty one.
    h.request = "r2".into();
    h.script(&[("agent.steer", steer("not yours"), &[])]);
    h.request = "r1".into();
    h.script(&[
        ("agent.steer", steer("   "), &[]),
        (
            "llm.result",
            llm_text("call_1", "done"),
            &["reply agent.completed r1 answer=done"],
        ),
        ("agent.steer", steer("too late"), &[]),
    ]);
    assert_eq!(h.state.ignored, 4);
    let thread = h.thread().join("\n");
    assert!(
        !thread.contains("too early") && !thread.contains("not yours"),
        "{thread}"
    );
}

#[test]
fn a_steer_the_request_never_reached_stays_on_record_when_it_ends() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[
        ("agent.steer", steer("try harder"), &[]),
        (
            "agent.cancel",
            to_value(&AgentCancel::default()),
            &["reply agent.failed r1 reason=cancelled"],
        ),
    ]);
    let notes: Vec<String> = h
        .state
        .thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Note { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        notes,
        ["steer not taken in (request cancelled): try harder"]
    );
}

#[test]
fn a_steer_survives_a_restart_and_the_resumed_request_takes_it_in() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[("agent.steer", steer("use base 2"), &[])]);
    // The process stops: the state as stored, restored, then resumed by the runtime.
    let saved: ReActState = serde_json::from_value(to_value(&h.state)).unwrap();
    let mut state = h.react.restore(&h.env, saved);
    let directives = h
        .react
        .handle(&mut state, &resume_signal(&[]), &h.env)
        .unwrap();
    let Some(Directive::LlmStream(call)) = directives.first() else {
        panic!("expected an LLM call, got {directives:?}");
    };
    let users: Vec<String> = call
        .request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["q", "use base 2"]);
    assert!(state.active_request().unwrap().steers.is_empty());
}
