//! A call held at a soft budget limit, as transcripts: the request waits for a person (listed
//! under `motet.budget`), an approval sends the call again carrying it, a rejection fails the
//! request with a `budget` error, a cancel ends the wait, and the wait and the approvals are
//! carried over a restart.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentCancel, AgentRespond, BUDGET_WAIT_TOOL, LlmError, LlmErrorKind, LlmFailed, ReActState,
    Status, Strategy,
};
use motet_directives::budget::{BudgetLevel, Measure, SoftLimit};
use motet_directives::{CallId, Directive, Pause, Response};
use serde_json::Value;

use common::*;

fn held_at(limit: u64, spent: u64) -> SoftLimit {
    SoftLimit {
        level: BudgetLevel::Request,
        measure: Measure::Tokens,
        limit,
        spent,
    }
}

fn held(call: &str, soft: SoftLimit) -> Value {
    to_value(&LlmFailed {
        call_id: CallId::new(call),
        error: LlmError {
            kind: LlmErrorKind::BudgetApproval,
            message: format!(
                "this request has spent {} of {} tokens: continue?",
                soft.spent, soft.limit
            ),
            retryable: false,
            soft_limit: Some(soft),
        },
    })
}

fn respond(tool_call_id: &str, response: Response) -> Value {
    to_value(&AgentRespond {
        tool_call_id: tool_call_id.into(),
        response,
        by: None,
    })
}

/// The calculator asked `q` as `r1`, its first call held at the step of 1,000.
fn waiting() -> Harness {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    let out = describe_all(&h.send("llm.failed", held("call_1", held_at(1_000, 1_200))));
    assert_eq!(out, ["emit agent.waiting r1"]);
    h
}

#[test]
fn a_held_call_waits_for_a_person_and_an_approval_sends_it_again_carrying_it() {
    let mut h = waiting();
    assert_eq!(h.state.status, Status::AwaitingApproval);
    let waits = h.react.waiting(&h.state);
    assert_eq!(waits.len(), 1);
    assert_eq!(
        (waits[0].tool.as_str(), waits[0].tool_call_id.as_str()),
        (BUDGET_WAIT_TOOL, "budget:call_1")
    );
    assert!(matches!(&waits[0].pause,
        Pause::Approval(a) if a.reason.as_deref() == Some("this request has spent 1200 of 1000 tokens: continue?")));
    // Answers that do not fit change nothing (noted, ignored).
    h.send(
        "agent.respond",
        respond("budget:call_1", Response::Answer { text: "x".into() }),
    );
    assert_eq!(h.react.waiting(&h.state).len(), 1);

    let out = h.send("agent.respond", respond("budget:call_1", Response::Approve));
    let call = stream(&out);
    assert_eq!(call.budget_approved, [held_at(1_000, 1_200)]);
    assert_eq!(h.state.status, Status::AwaitingLlm);
    assert!(h.react.waiting(&h.state).is_empty());
    // Held again at the next step: the approvals keep one per place, the latest.
    let call_id = call.call_id.as_str().to_owned();
    h.send("llm.failed", held(&call_id, held_at(2_000, 2_100)));
    let out = h.send(
        "agent.respond",
        respond(&format!("budget:{call_id}"), Response::Approve),
    );
    assert_eq!(stream(&out).budget_approved, [held_at(2_000, 2_100)]);
    let out = describe_all(&h.send("llm.result", llm_text(stream(&out).call_id.as_str(), "4")));
    assert_eq!(out, ["reply agent.completed r1 answer=4"]);
    // Nothing of the answered request is kept (or stored) for a restart.
    assert!(h.state.request.is_none(), "{:?}", h.state.request);
    // The approvals belonged to that request: the next one's call carries none.
    let next = h.ask_with("r2", question("again"));
    assert!(stream(&next).budget_approved.is_empty());
}

#[test]
fn a_rejection_fails_the_request_with_a_budget_error() {
    let mut h = waiting();
    let out = h.send(
        "agent.respond",
        respond(
            "budget:call_1",
            Response::Reject {
                reason: "too dear".into(),
            },
        ),
    );
    assert_eq!(describe_all(&out), ["reply agent.failed r1 reason=llm"]);
    let Directive::Reply(reply) = &out[0] else {
        panic!("a reply");
    };
    let data: Value = reply.signal.data_as().unwrap();
    assert_eq!(data["reason"]["error"]["kind"], "budget");
    let message = data["reason"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("a person declined to go on past a soft limit"),
        "{message}"
    );
    assert!(message.ends_with("too dear"), "{message}");
    assert_eq!(h.state.status, Status::Failed);
    assert!(h.react.waiting(&h.state).is_empty());
}

#[test]
fn a_cancel_ends_the_wait() {
    let mut h = waiting();
    let out = describe_all(&h.send("agent.cancel", to_value(&AgentCancel::default())));
    assert_eq!(out, ["reply agent.failed r1 reason=cancelled"]);
    assert!(h.react.waiting(&h.state).is_empty());
    assert!(h.state.request.is_none(), "{:?}", h.state.request);
}

#[test]
fn the_wait_and_the_approvals_are_carried_over_a_restart() {
    let mut h = waiting();
    let out = h.send("agent.respond", respond("budget:call_1", Response::Approve));
    let call_id = stream(&out).call_id.as_str().to_owned();
    // Held again, now at a dollar step.
    let by_cost = SoftLimit {
        measure: Measure::Cost,
        ..held_at(2_000, 2_500)
    };
    h.send("llm.failed", held(&call_id, by_cost));

    let saved: ReActState = serde_json::from_value(to_value(&h.state)).unwrap();
    h.state = h.react.restore(&h.env, saved);
    // Listed before it is resumed, as the runtime lists it from the store.
    let waits = h.react.waiting(&h.state);
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].tool_call_id, format!("budget:{call_id}"));
    let resumed = describe_all(
        &h.react
            .handle(&mut h.state, &resume_signal(&[]), &h.env)
            .unwrap(),
    );
    // Announced again, nothing sent.
    assert_eq!(resumed, ["emit agent.waiting r1"]);
    assert_eq!(h.state.status, Status::AwaitingApproval);
    let out = h.send(
        "agent.respond",
        respond(&format!("budget:{call_id}"), Response::Approve),
    );
    // Both approvals: the one given before the restart was kept with the request.
    assert_eq!(
        stream(&out).budget_approved,
        [held_at(1_000, 1_200), by_cost]
    );
    assert_eq!(
        stream(&out).request.messages.len(),
        2,
        "system and question"
    );
}
