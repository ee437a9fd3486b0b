//! ReAct's loop as transcripts (signals in, directives and thread out, table by table): the
//! seeds' example, parallel and out-of-order tool results, duplicates and stale results,
//! arguments that are not JSON, LLM failures retried, cancels, limits and refusals, and the
//! ids it emits.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentCancel, AgentRequest, EntryBody, LlmError, LlmErrorKind, LlmFailed, ReActState, Status,
    StrategyError, ToolResultSignal,
};
use motet_directives::{CallId, Directive, ToolResult};
use serde_json::{Value, json};

use common::*;

#[test]
fn seed_appendix_b_two_plus_two_then_times_three() {
    let mut h = Harness::new(calculator());
    assert_eq!(
        h.ask("r1", "What's 2+2?"),
        ["llm call_1: S:You are a calculator. | U:What's 2+2?"]
    );
    h.script(&[(
        "llm.result",
        llm_text("call_1", "4"),
        &["reply agent.completed r1 answer=4"],
    )]);
    assert_eq!(h.state.status, Status::Completed);
    assert_eq!(
        h.ask("r2", "Now multiply by 3"),
        ["llm call_2: S:You are a calculator. | U:What's 2+2? | A:4 | U:Now multiply by 3"]
    );
    h.script(&[
        (
            "llm.result",
            llm_calls("call_2", &[("tc1", "calculator", r#"{"expr":"4*3"}"#)]),
            &[r#"tool tool_1 tc1 calculator {"expr":"4*3"}"#],
        ),
        (
            "tool.result",
            tool_ok("tool_1", "tc1", "12"),
            &["llm call_3: S:You are a calculator. | U:What's 2+2? | A:4 | U:Now multiply by 3 | A:calls[tc1] | T:[tc1=12]"],
        ),
    ]);
    let replied = h.send("llm.result", llm_text("call_3", "The result is 12"));
    assert_eq!(
        describe_all(&replied),
        ["reply agent.completed r2 answer=The result is 12"]
    );
    assert_eq!(
        h.thread(),
        [
            "0 user What's 2+2?",
            "1 assistant 4",
            "2 user Now multiply by 3",
            "3 assistant calls[tc1]",
            "4 tool_result tc1=12",
            "5 assistant The result is 12",
        ]
    );
    // Usage: per request (two calls of r2) and per thread (all three), as the reply tells.
    let reply = completed(&replied);
    assert_eq!(reply.usage, usage(30, 7));
    assert_eq!(reply.iterations, 2);
    assert_eq!(reply.thread_usage, usage(40, 9));
    assert_eq!(h.state.thread.usage(), usage(40, 9));
    // Answered, the request leaves nothing in the state, as a restart keeps nothing of it;
    // the state (thread included) survives storage as JSON.
    assert!(h.state.request.is_none());
    let stored = serde_json::to_string(&h.state).unwrap();
    assert!(!stored.contains("\"request\""), "{stored}");
    let reloaded: ReActState = serde_json::from_str(&stored).unwrap();
    assert_eq!(reloaded, h.state);
    // The reasoning block and its signature are committed and replayed exactly.
    let EntryBody::Assistant { message, .. } = &h.state.thread.get_entry(3).unwrap().body else {
        panic!("not an assistant entry");
    };
    assert_eq!(
        message.blocks[0].meta(),
        Some(&motet_directives::ProviderMeta::Anthropic {
            signature: "sig==".into()
        })
    );
}

#[test]
fn parallel_tool_calls_answered_out_of_order() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "three sums");
    h.script(&[
        (
            "llm.result",
            llm_calls(
                "call_1",
                &[
                    ("a", "calculator", r#"{"expr":"1+1"}"#),
                    ("b", "calculator", r#"{"expr":"2+2"}"#),
                    ("c", "calculator", r#"{"expr":"3+3"}"#),
                ],
            ),
            &[
                r#"tool tool_1 a calculator {"expr":"1+1"}"#,
                r#"tool tool_2 b calculator {"expr":"2+2"}"#,
                r#"tool tool_3 c calculator {"expr":"3+3"}"#,
            ],
        ),
        ("tool.result", tool_ok("tool_3", "c", "6"), &[]),
        ("tool.result", tool_ok("tool_1", "a", "2"), &[]),
        (
            "tool.result",
            tool_ok("tool_2", "b", "4"),
            &["llm call_2: S:You are a calculator. | U:three sums | A:calls[a,b,c] | T:[a=2,b=4,c=6]"],
        ),
    ]);
    assert_eq!(h.state.status, Status::AwaitingLlm);
    // The thread records arrival order; the projection shows call order.
    assert_eq!(
        h.thread()[2..],
        [
            "2 tool_result c=6",
            "3 tool_result a=2",
            "4 tool_result b=4"
        ]
    );
}

#[test]
fn duplicated_and_stale_results_are_ignored_and_noted() {
    let mut h = two_calculations();
    h.script(&[
        ("tool.result", tool_ok("tool_1", "a", "first"), &[]),
        ("tool.result", tool_ok("tool_1", "a", "again"), &[]),
        ("tool.result", tool_ok("tool_9", "zz", "unknown"), &[]),
        (
            "tool.result",
            tool_ok("tool_2", "b", "ok"),
            &["llm call_2: S:You are a calculator. | U:q | A:calls[a,b] | T:[a=first,b=ok]"],
        ),
        ("tool.result", tool_ok("tool_2", "b", "late"), &[]),
        ("llm.result", llm_text("call_1", "stale"), &[]),
        (
            "llm.result",
            llm_text("call_2", "done"),
            &["reply agent.completed r1 answer=done"],
        ),
        ("llm.result", llm_text("call_2", "done twice"), &[]),
    ]);
    assert_eq!(h.state.ignored, 5);
    let results: Vec<String> = h
        .thread()
        .into_iter()
        .filter(|e| e.contains("tool_result"))
        .collect();
    assert_eq!(results, ["2 tool_result a=first", "5 tool_result b=ok"]);
    assert_eq!(h.thread().iter().filter(|e| e.ends_with("note")).count(), 5);
}

#[test]
fn arguments_that_are_not_json_reach_the_tool_verbatim() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    let broken = r#"{"expr": "1+"#;
    let directives = h.send(
        "llm.result",
        llm_calls(
            "call_1",
            &[("a", "calculator", broken), ("b", "calculator", "not json")],
        ),
    );
    let Directive::ToolExec(exec) = &directives[0] else {
        panic!("expected a tool run, got {directives:?}");
    };
    assert_eq!(exec.args.get(), broken);
    assert!(!exec.args.is_object());
    assert!(exec.args.parse::<Value>().is_err());
    // The tool reports the problem as an error result; so does the dispatcher for a tool it
    // does not know.
    let error = to_value(&ToolResultSignal::new(
        CallId::new("tool_1"),
        ToolResult::error("a", "invalid arguments: EOF while parsing"),
    ));
    h.script(&[
        ("tool.result", error, &[]),
        (
            "tool.result",
            to_value(&ToolResultSignal::new(CallId::new("tool_2"), ToolResult::error("b", "unknown tool `nosuch`"))),
            &["llm call_2: S:You are a calculator. | U:q | A:calls[a,b] | T:[a=!invalid arguments: EOF while parsing,b=!unknown tool `nosuch`]"],
        ),
    ]);
}

#[test]
fn llm_failures_are_retried_within_budget_then_fail_the_request() {
    let mut h = Harness::new(calculator().with_max_llm_retries(1));
    h.ask("r1", "q");
    let failed = |call: &str, retryable: bool| {
        to_value(&LlmFailed {
            call_id: CallId::new(call),
            error: LlmError {
                kind: LlmErrorKind::Overloaded,
                message: "try later".into(),
                retryable,
                soft_limit: None,
            },
        })
    };
    h.script(&[
        (
            "llm.failed",
            failed("call_1", true),
            &["llm call_2: S:You are a calculator. | U:q"],
        ),
        ("llm.failed", failed("call_1", true), &[]),
        (
            "llm.failed",
            failed("call_2", true),
            &["reply agent.failed r1 reason=llm"],
        ),
        ("llm.result", llm_text("call_2", "too late"), &[]),
    ]);
    assert_eq!(h.state.status, Status::Failed);
    // A new request runs normally afterwards.
    assert_eq!(
        h.ask("r2", "again"),
        ["llm call_3: S:You are a calculator. | U:q | U:again"]
    );
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[(
        "llm.failed",
        failed("call_1", false),
        &["reply agent.failed r1 reason=llm"],
    )]);
}

#[test]
fn cancel_closes_pending_calls_so_the_history_stays_whole() {
    let mut h = two_calculations();
    h.script(&[
        ("tool.result", tool_ok("tool_1", "a", "1"), &[]),
        (
            "agent.cancel",
            to_value(&AgentCancel::default()),
            &["reply agent.failed r1 reason=cancelled"],
        ),
        ("tool.result", tool_ok("tool_2", "b", "late"), &[]),
        ("agent.cancel", to_value(&AgentCancel::default()), &[]),
    ]);
    assert_eq!(h.state.status, Status::Cancelled);
    assert_eq!(
        h.ask("r2", "next"),
        [
            "llm call_2: S:You are a calculator. | U:q | A:calls[a,b] | T:[a=1,b=!not run: request cancelled] | U:next"
        ]
    );
}

#[test]
fn a_cancel_naming_another_request_leaves_the_active_one_running() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    // A cancel of a request that is not running (one queued behind r1, say) is noted, not
    // obeyed.
    h.request = "r2".into();
    h.script(&[("agent.cancel", to_value(&AgentCancel::default()), &[])]);
    assert_eq!(h.state.status, Status::AwaitingLlm);
    assert_eq!(h.state.ignored, 1);
    h.request = "r1".into();
    h.script(&[
        (
            "llm.result",
            llm_text("call_1", "done"),
            &["reply agent.completed r1 answer=done"],
        ),
        ("agent.cancel", to_value(&AgentCancel::default()), &[]),
    ]);
    assert_eq!(h.state.status, Status::Completed);
}

#[test]
fn max_iterations_fails_the_request() {
    let mut h = Harness::new(calculator().with_max_iterations(2));
    h.ask("r1", "loop");
    h.script(&[
        (
            "llm.result",
            llm_calls("call_1", &[("a", "calculator", "{}")]),
            &["tool tool_1 a calculator {}"],
        ),
        (
            "tool.result",
            tool_ok("tool_1", "a", "1"),
            &["llm call_2: S:You are a calculator. | U:loop | A:calls[a] | T:[a=1]"],
        ),
        (
            "llm.result",
            llm_calls("call_2", &[("b", "calculator", "{}")]),
            &["tool tool_2 b calculator {}"],
        ),
        (
            "tool.result",
            tool_ok("tool_2", "b", "2"),
            &["reply agent.failed r1 reason=max_iterations"],
        ),
    ]);
    assert_eq!(h.state.status, Status::Failed);
}

#[test]
fn a_second_request_while_one_runs_is_rejected_before_commit() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "first");
    let before = h.state.thread.clone();
    assert_eq!(h.ask("r2", "second"), ["reply agent.failed r2 reason=busy"]);
    assert_eq!(h.state.thread, before);
    assert_eq!(h.state.status, Status::AwaitingLlm);
}

#[test]
fn bad_signals_are_errors_and_change_nothing() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    let before = h.state.clone();
    let err = h.try_send("llm.result", json!({"call": 1})).unwrap_err();
    assert!(
        matches!(err, StrategyError::InvalidData { ref signal_type, .. } if signal_type == "llm.result")
    );
    let err = h.try_send("weather.report", json!({})).unwrap_err();
    assert_eq!(
        err,
        StrategyError::Unhandled {
            signal_type: "weather.report".into()
        }
    );
    assert_eq!(h.state, before);
}

#[test]
fn emitted_signals_carry_ids_from_the_env_and_the_cause() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    let directives = h.send("llm.result", llm_text("call_1", "a"));
    let Directive::Reply(emit) = &directives[0] else {
        panic!("expected a reply");
    };
    assert_eq!(emit.signal.id().as_str(), "sig_1");
    assert_eq!(emit.signal.thread_id(), Some("th"));
    assert_eq!(emit.signal.request_id(), Some("r1"));
    assert_eq!(emit.signal.source(), "motet.react");
    assert_eq!(
        emit.signal.time().map(|t| t.as_millisecond()),
        Some(1_700_000_000_002)
    );
}

#[test]
fn an_empty_question_is_refused_before_commit() {
    let mut h = Harness::new(calculator());
    for (request, query) in [("r1", ""), ("r2", "  \n\t ")] {
        assert_eq!(
            h.ask(request, query),
            [format!("reply agent.failed {request} reason=empty_query")]
        );
    }
    assert!(h.thread().is_empty(), "{:?}", h.thread());
    assert_eq!(h.state.status, Status::Idle);
    // The next real question runs as usual.
    assert_eq!(
        h.ask("r3", "2+2?"),
        ["llm call_1: S:You are a calculator. | U:2+2?"]
    );
}

#[test]
fn tool_call_ids_are_unique_in_the_thread() {
    // Gemini names its calls `call_1`, `call_2`, … afresh in every response.
    let execs = |directives: &[Directive]| -> Vec<(String, String)> {
        directives
            .iter()
            .filter_map(|d| match d {
                Directive::ToolExec(e) => Some((e.call_id.to_string(), e.tool_call_id.clone())),
                _ => None,
            })
            .collect()
    };
    let llm_call = |directives: &[Directive]| -> String {
        match directives {
            [Directive::LlmStream(s)] => s.call_id.to_string(),
            other => panic!("{other:?}"),
        }
    };
    let mut h = Harness::new(calculator());
    h.request = "r1".into();
    let input = to_value(&AgentRequest {
        attachments: Default::default(),
        query: "two sums, then one more".into(),
        context_policy: None,
        response_format: None,
    });
    let first = llm_call(&h.send("agent.request", input));
    let turn = h.send(
        "llm.result",
        llm_calls(
            &first,
            &[
                ("call_1", "calculator", r#"{"expr":"1+1"}"#),
                ("call_1", "calculator", r#"{"expr":"2+2"}"#),
            ],
        ),
    );
    let mut next = Vec::new();
    for (call, tool_call) in execs(&turn) {
        next = h.send("tool.result", tool_ok(&call, &tool_call, "ok"));
    }
    let second = llm_call(&next);
    let turn = h.send(
        "llm.result",
        llm_calls(&second, &[("call_1", "calculator", r#"{"expr":"3+3"}"#)]),
    );
    for (call, tool_call) in execs(&turn) {
        h.send("tool.result", tool_ok(&call, &tool_call, "6"));
    }
    let entries = h.state.thread.to_list();
    let mut ids: Vec<String> = entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { message, .. } => Some(message.clone()),
            _ => None,
        })
        .flat_map(|m| m.tool_calls().map(|c| c.id.to_owned()).collect::<Vec<_>>())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    // The first is kept as the model named it; the repeats are renamed.
    assert_eq!(ids[0], "call_1");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "ids repeat: {ids:?}");
    // Each call has its one result, under the call's committed id.
    let answered = entries
        .iter()
        .filter(|e| {
            matches!(&e.body, EntryBody::ToolResult { result, .. } if ids.iter().any(|id| *id == *result.tool_use_id))
        })
        .count();
    assert_eq!(answered, 3);
}
