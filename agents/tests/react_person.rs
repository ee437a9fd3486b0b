//! A person in the loop, as transcripts: approvals, rejections, edits, a tool's questions,
//! deadlines, cancels and steers while a call waits, and waiting calls carried over a restart.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentCancel, AgentRequest, AgentRespond, ReActState, Status, Strategy, ToolPaused,
};
use motet_directives::{Approval, CallId, Directive, OnExpiry, Pause, Response, ToolArgs};
use serde_json::Value;

use common::*;

// A person in the loop: approvals, rejections, edits, questions, deadlines.

fn paused(call: &str, tool_call_id: &str, name: &str, args: &str, pause: Pause) -> Value {
    to_value(&ToolPaused {
        call_id: CallId::new(call),
        tool_call_id: tool_call_id.into(),
        name: name.into(),
        args: ToolArgs::from_text(args),
        pause,
    })
}

fn approval() -> Pause {
    Pause::Approval(Approval::required().because("it deletes"))
}

fn respond(tool_call_id: &str, response: Response) -> Value {
    to_value(&AgentRespond {
        tool_call_id: tool_call_id.into(),
        response,
        by: None,
    })
}

/// A request whose model calls `rm` (a) and `calculator` (b), both asked for.
fn two_calls() -> Harness {
    let mut h = Harness::new(calculator());
    h.ask("r1", "clean up");
    h.script(&[(
        "llm.result",
        llm_calls(
            "call_1",
            &[("a", "rm", r#"{"path":"/"}"#), ("b", "calculator", "{}")],
        ),
        &[
            r#"tool tool_1 a rm {"path":"/"}"#,
            "tool tool_2 b calculator {}",
        ],
    )]);
    h
}

#[test]
fn an_approval_pauses_its_call_while_the_others_run_then_runs_it() {
    let mut h = two_calls();
    h.script(&[(
        "tool.paused",
        paused("tool_1", "a", "rm", r#"{"path":"/"}"#, approval()),
        &["emit agent.waiting r1"],
    )]);
    // b still runs: the request is not waiting on the person alone yet.
    assert_eq!(h.state.status, Status::AwaitingTools);
    h.script(&[("tool.result", tool_ok("tool_2", "b", "4"), &[])]);
    assert_eq!(h.state.status, Status::AwaitingApproval);
    let waiting = h.react.waiting(&h.state);
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        (
            waiting[0].request_id.as_str(),
            waiting[0].tool_call_id.as_str(),
            waiting[0].tool.as_str()
        ),
        ("r1", "a", "rm")
    );
    assert_eq!(waiting[0].args.get(), r#"{"path":"/"}"#);
    h.script(&[
        (
            "agent.respond",
            respond("a", Response::Approve),
            &[r#"tool tool_1 a rm {"path":"/"} approved"#],
        ),
        (
            "tool.result",
            tool_ok("tool_1", "a", "removed"),
            &["llm call_2: S:You are a calculator. | U:clean up | A:calls[a,b] | T:[a=removed,b=4]"],
        ),
    ]);
    assert!(h.react.waiting(&h.state).is_empty());
    let thread = h.thread().join("\n");
    assert!(
        thread.ends_with("2 note\n3 tool_result b=4\n4 note\n5 tool_result a=removed"),
        "{thread}"
    );
}

#[test]
fn a_rejection_is_the_calls_error_result_and_the_model_reads_why() {
    let mut h = two_calls();
    h.script(&[
        ("tool.paused", paused("tool_1", "a", "rm", "{}", approval()), &["emit agent.waiting r1"]),
        ("tool.result", tool_ok("tool_2", "b", "4"), &[]),
        (
            "agent.respond",
            respond("a", Response::Reject { reason: "not the root".into() }),
            &["llm call_2: S:You are a calculator. | U:clean up | A:calls[a,b] | T:[a=!not run: a person rejected the call: not the root,b=4]"],
        ),
    ]);
    assert_eq!(h.state.status, Status::AwaitingLlm);
}

#[test]
fn an_edit_runs_the_persons_arguments_and_the_model_reads_that_they_changed() {
    let mut h = two_calls();
    h.script(&[
        ("tool.result", tool_ok("tool_2", "b", "4"), &[]),
        ("tool.paused", paused("tool_1", "a", "rm", r#"{"path":"/"}"#, approval()), &["emit agent.waiting r1"]),
        (
            "agent.respond",
            respond("a", Response::Edit { args: r#"{"path":"/tmp/x"}"#.into() }),
            &[r#"tool tool_1 a rm {"path":"/tmp/x"} approved"#],
        ),
        (
            "tool.result",
            tool_ok("tool_1", "a", "removed"),
            &[r#"llm call_2: S:You are a calculator. | U:clean up | A:calls[a,b] | T:[a=(run with arguments a person edited: {"path":"/tmp/x"})
removed,b=4]"#],
        ),
    ]);
}

#[test]
fn a_tools_question_waits_for_an_answer_which_is_its_result() {
    let mut h = two_calls();
    let question = Pause::Question {
        text: "which directory?".into(),
    };
    h.script(&[
        ("tool.result", tool_ok("tool_2", "b", "4"), &[]),
        (
            "tool.paused",
            paused("tool_1", "a", "rm", "{}", question),
            &["emit agent.waiting r1"],
        ),
    ]);
    assert_eq!(h.state.status, Status::AwaitingAnswer);
    h.script(&[
        // An approval does not answer a question: noted, nothing changes.
        ("agent.respond", respond("a", Response::Approve), &[]),
        (
            "agent.respond",
            respond(
                "a",
                Response::Answer {
                    text: "/tmp".into(),
                },
            ),
            &["llm call_2: S:You are a calculator. | U:clean up | A:calls[a,b] | T:[a=/tmp,b=4]"],
        ),
        // Twice: the second is noted and changes nothing.
        (
            "agent.respond",
            respond(
                "a",
                Response::Answer {
                    text: "/var".into(),
                },
            ),
            &[],
        ),
    ]);
    assert_eq!(h.state.ignored, 2);
}

#[test]
fn responses_for_no_waiting_call_are_noted_and_change_nothing() {
    let mut h = two_calls();
    h.script(&[
        // b never paused; c does not exist; the request r9 is not running.
        ("agent.respond", respond("b", Response::Approve), &[]),
        ("agent.respond", respond("c", Response::Approve), &[]),
        (
            "tool.paused",
            paused("tool_1", "a", "rm", "{}", approval()),
            &["emit agent.waiting r1"],
        ),
        // An answer for an approval.
        (
            "agent.respond",
            respond("a", Response::Answer { text: "x".into() }),
            &[],
        ),
    ]);
    h.request = "r9".into();
    h.script(&[("agent.respond", respond("a", Response::Approve), &[])]);
    assert_eq!(h.state.ignored, 4);
    assert_eq!(h.react.waiting(&h.state).len(), 1);
}

#[test]
fn a_deadline_is_scheduled_cancelled_by_an_answer_or_decides_on_expiry() {
    let timed = |on_expiry| {
        Pause::Approval(Approval::required().within(std::time::Duration::from_secs(60), on_expiry))
    };
    // Answered in time: the timer is cancelled.
    let mut h = two_calls();
    h.script(&[
        (
            "tool.paused",
            paused("tool_1", "a", "rm", "{}", timed(OnExpiry::Reject)),
            &[
                "emit agent.waiting r1",
                "schedule deadline:a 60000ms agent.respond",
            ],
        ),
        (
            "agent.respond",
            respond("a", Response::Approve),
            &["cancel_schedule deadline:a", "tool tool_1 a rm {} approved"],
        ),
    ]);
    // Expired: the scheduled response decides, as configured.
    for (on_expiry, expected) in [
        (OnExpiry::Reject, "tool.result rejected"),
        (OnExpiry::Approve, "tool tool_1 a rm {} approved"),
    ] {
        let mut h = two_calls();
        let directives = h.send(
            "tool.paused",
            paused("tool_1", "a", "rm", "{}", timed(on_expiry)),
        );
        let Some(Directive::Schedule(timer)) = directives.get(1) else {
            panic!("no deadline timer: {directives:?}");
        };
        h.env.advance_ms(60_000);
        let got = describe_all(&h.react.handle(&mut h.state, &timer.signal, &h.env).unwrap());
        if on_expiry == OnExpiry::Approve {
            assert_eq!(got, [expected]);
        } else {
            assert!(got.is_empty(), "{got:?}");
            let thread = h.thread().join("\n");
            assert!(
                thread.contains("a=!not run: nobody approved the call in time"),
                "{thread}"
            );
        }
    }
}

#[test]
fn a_cancel_while_a_call_waits_answers_it_and_stops_its_timer() {
    let mut h = two_calls();
    let timed = Pause::Approval(
        Approval::required().within(std::time::Duration::from_secs(5), OnExpiry::Approve),
    );
    h.script(&[
        (
            "tool.paused",
            paused("tool_1", "a", "rm", "{}", timed),
            &[
                "emit agent.waiting r1",
                "schedule deadline:a 5000ms agent.respond",
            ],
        ),
        ("tool.result", tool_ok("tool_2", "b", "4"), &[]),
        (
            "agent.cancel",
            to_value(&AgentCancel::default()),
            &[
                "cancel_schedule deadline:a",
                "reply agent.failed r1 reason=cancelled",
            ],
        ),
    ]);
    assert!(h.react.waiting(&h.state).is_empty());
    let thread = h.thread().join("\n");
    assert!(
        thread.contains("tool_result a=!not run: request cancelled"),
        "{thread}"
    );
}

#[test]
fn a_steer_while_a_call_waits_goes_in_after_its_result() {
    let mut h = two_calls();
    h.script(&[
        ("tool.paused", paused("tool_1", "a", "rm", "{}", approval()), &["emit agent.waiting r1"]),
        ("agent.steer", steer("only /tmp"), &[]),
        ("tool.result", tool_ok("tool_2", "b", "4"), &[]),
        (
            "agent.respond",
            respond("a", Response::Reject { reason: "see my note".into() }),
            &["llm call_2: S:You are a calculator. | U:clean up | A:calls[a,b] | T:[a=!not run: a person rejected the call: see my note,b=4] | U:only /tmp"],
        ),
    ]);
}

#[test]
fn a_waiting_call_survives_a_restart_and_is_answered_after_it_without_running_twice() {
    let mut h = two_calls();
    let timed = Pause::Approval(
        Approval::required().within(std::time::Duration::from_secs(60), OnExpiry::Reject),
    );
    h.script(&[
        (
            "tool.paused",
            paused("tool_1", "a", "rm", "{}", timed),
            &[
                "emit agent.waiting r1",
                "schedule deadline:a 60000ms agent.respond",
            ],
        ),
        ("tool.result", tool_ok("tool_2", "b", "4"), &[]),
    ]);
    // The process stops 10 s later: the state as stored, restored, then resumed by the runtime.
    let saved: ReActState = serde_json::from_value(to_value(&h.state)).unwrap();
    h.env.advance_ms(10_000);
    h.state = h.react.restore(&h.env, saved);
    // Listed before it is resumed, as the runtime lists it from the store; it still holds the
    // thread: a new question is refused as busy, and changes nothing.
    assert_eq!(h.react.waiting(&h.state).len(), 1);
    let before = h.state.thread.entry_count();
    h.request = "r2".into();
    let refused = describe_all(&h.send(
        "agent.request",
        to_value(&AgentRequest {
            attachments: Default::default(),
            query: "something else".into(),
            context_policy: None,
            response_format: None,
        }),
    ));
    assert_eq!(refused, ["reply agent.failed r2 reason=busy"]);
    assert_eq!(h.state.thread.entry_count(), before);
    h.request = "r1".into();
    let resumed = describe_all(
        &h.react
            .handle(&mut h.state, &resume_signal(&["rm"]), &h.env)
            .unwrap(),
    );
    // Not run again, even though `rm` is idempotent: announced again, the deadline re-armed
    // for what is left of it.
    assert_eq!(resumed.len(), 2, "{resumed:?}");
    assert!(resumed[0].starts_with("emit agent.waiting"), "{resumed:?}");
    assert!(
        resumed[1].starts_with("schedule deadline:a 4999"),
        "{resumed:?}"
    );
    assert_eq!(h.state.status, Status::AwaitingApproval);
    let directives = describe_all(&h.send("agent.respond", respond("a", Response::Approve)));
    assert_eq!(directives.len(), 2, "{directives:?}");
    assert_eq!(directives[0], "cancel_schedule deadline:a");
    assert!(
        directives[1].ends_with("a rm {} approved"),
        "{directives:?}"
    );
}

#[test]
fn an_approved_call_cut_off_by_a_stop_reruns_as_approved_only_when_idempotent() {
    for idempotent in [true, false] {
        let mut h = two_calls();
        h.script(&[
            ("tool.result", tool_ok("tool_2", "b", "4"), &[]),
            (
                "tool.paused",
                paused("tool_1", "a", "rm", r#"{"path":"/"}"#, approval()),
                &["emit agent.waiting r1"],
            ),
            (
                "agent.respond",
                respond(
                    "a",
                    Response::Edit {
                        args: r#"{"path":"/tmp"}"#.into(),
                    },
                ),
                &[r#"tool tool_1 a rm {"path":"/tmp"} approved"#],
            ),
        ]);
        let saved: ReActState = serde_json::from_value(to_value(&h.state)).unwrap();
        h.state = h.react.restore(&h.env, saved);
        let tools: &[&str] = if idempotent { &["rm"] } else { &[] };
        let resumed = describe_all(
            &h.react
                .handle(&mut h.state, &resume_signal(tools), &h.env)
                .unwrap(),
        );
        if idempotent {
            assert_eq!(resumed.len(), 1, "{resumed:?}");
            assert!(
                resumed[0].ends_with(r#"a rm {"path":"/tmp"} approved"#),
                "{resumed:?}"
            );
        } else {
            assert_eq!(resumed.len(), 1, "{resumed:?}");
            assert!(resumed[0].starts_with("llm "), "{resumed:?}");
            assert!(
                resumed[0].contains("a=!the agent stopped while `rm` was running"),
                "{resumed:?}"
            );
        }
    }
}
