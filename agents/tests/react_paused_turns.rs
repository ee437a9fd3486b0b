//! Turns a provider paused (`StopReason::PauseTurn`), as transcripts: sent back and continued
//! as the same turn, counted against `max_iterations`, continued after a stop.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{LlmResult, Strategy};
use motet_directives::{
    AssistantBlock, AssistantMessage, CallId, Directive, LlmResponse, StopReason, Usage,
};
use serde_json::Value;

use common::*;

/// A turn the provider paused (`pause_turn`, while its server tools run): an opaque server
/// block and some text.
fn llm_paused(call: &str, text: &str) -> Value {
    to_value(&LlmResult {
        call_id: CallId::new(call),
        response: LlmResponse::new(
            AssistantMessage {
                blocks: vec![
                    AssistantBlock::Opaque {
                        provider: "anthropic".into(),
                        item: r#"{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}"#.into(),
                    },
                    AssistantBlock::text(text),
                ],
                stop_reason: StopReason::PauseTurn,
            },
            usage(30, 3),
        ),
    })
}

#[test]
fn a_paused_turn_is_sent_back_and_its_continuation_ends_the_same_turn() {
    let mut h = Harness::new(calculator());
    assert_eq!(
        h.ask("r1", "Who won?"),
        ["llm call_1: S:You are a calculator. | U:Who won?"]
    );
    h.script(&[
        (
            "llm.result",
            llm_paused("call_1", "Searching. "),
            // The paused turn goes back as it is, last, for the model to continue.
            &["llm call_2: S:You are a calculator. | U:Who won? | A:Searching. "],
        ),
        (
            "llm.result",
            llm_paused("call_2", "Still searching. "),
            &["llm call_3: S:You are a calculator. | U:Who won? | A:Searching. Still searching. "],
        ),
        (
            "llm.result",
            llm_text("call_3", "Team A."),
            &["reply agent.completed r1 answer=Searching. Still searching. Team A."],
        ),
    ]);
    assert_eq!(
        h.thread(),
        [
            "0 user Who won?",
            "1 assistant Searching. ",
            "2 assistant Still searching. ",
            "3 assistant Team A.",
        ]
    );
    // Projected again, the three calls are one assistant turn with every block in order.
    let next = h.ask("r2", "And second?");
    assert_eq!(
        next,
        [
            "llm call_4: S:You are a calculator. | U:Who won? | A:Searching. Still searching. Team A. | U:And second?"
        ]
    );
    let request = h.state.request.as_ref().unwrap();
    assert_eq!(request.iteration, 1);
}

#[test]
fn pauses_count_against_max_iterations() {
    let mut h = Harness::new(calculator().with_max_iterations(2));
    h.ask("r1", "Who won?");
    h.send("llm.result", llm_paused("call_1", "a"));
    let ended = describe_all(&h.send("llm.result", llm_paused("call_2", "b")));
    assert_eq!(ended, ["reply agent.failed r1 reason=max_iterations"]);
}

#[test]
fn resume_after_a_paused_turn_continues_it() {
    let paused = AssistantMessage {
        blocks: vec![AssistantBlock::text("Searching. ")],
        stop_reason: StopReason::PauseTurn,
    };
    let refs = motet_agents::Refs::request("req-9").with_iteration(1);
    let (react, mut state, env) = restored(vec![
        motet_agents::NewEntry::user("Who won?").with_refs(refs.clone()),
        motet_agents::NewEntry::assistant(paused, Usage::default()).with_refs(refs),
    ]);
    let directives = react.handle(&mut state, &resume_signal(&[]), &env).unwrap();
    let [Directive::LlmStream(call)] = directives.as_slice() else {
        panic!("the paused turn should be continued: {directives:?}");
    };
    assert_eq!(
        describe_message(call.request.messages.last().unwrap()),
        "A:Searching. "
    );
    assert_eq!(&*state.active_request().unwrap().request_id, "req-9");
}
