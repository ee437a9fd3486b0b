//! ReAct after a stop, as transcripts: the state a thread comes back with, `agent.resume`
//! owing an LLM call, tool calls (run again only when idempotent, at most so many times) or the
//! reply, and a thread another writer moved on.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentRequest, EntryBody, FixedEnv, ReAct, ReActState, Strategy, ToolResultSignal,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, StopReason, ToolArgs, ToolResult, Usage,
};
use motet_signals::Signal;

use common::*;

#[test]
fn a_state_for_a_thread_names_its_thread() {
    let react = ReAct::new(calculator());
    let env = FixedEnv::new(7);
    let state = react.init_for_thread(&env, "customer-42");
    assert_eq!(state.thread.id(), "customer-42");
    assert_eq!(state.thread.entry_count(), 0);
    assert_ne!(react.init(&env).thread.id(), "customer-42");
}

#[test]
fn a_restored_state_keeps_its_thread_and_is_idle() {
    let react = ReAct::new(calculator());
    let env = FixedEnv::new(7);
    let mut thread = motet_agents::Thread::new("t1", 0);
    thread.append(&env, motet_agents::NewEntry::user("earlier question"));
    let state = react.restore_thread(&env, thread.clone());
    assert_eq!(react.thread(&state), Some(&thread));
    assert!(state.active_request().is_none());
}

#[test]
fn resume_after_the_user_message_owes_an_llm_call() {
    let user =
        motet_agents::NewEntry::user("2 + 2?").with_refs(motet_agents::Refs::request("req-9"));
    let (react, mut state, env) = restored(vec![user]);
    let directives = react.handle(&mut state, &resume_signal(&[]), &env).unwrap();
    assert!(
        matches!(directives.as_slice(), [Directive::LlmStream(_)]),
        "{directives:?}"
    );
    assert_eq!(&*state.active_request().unwrap().request_id, "req-9");
}

#[test]
fn resume_with_missing_results_reruns_idempotent_tools_only() {
    let turn = AssistantMessage {
        blocks: vec![
            AssistantBlock::tool_use("tc_add", "add", ToolArgs::from_text(r#"{"a":1,"b":2}"#)),
            AssistantBlock::tool_use("tc_mail", "send_email", ToolArgs::from_text("{}")),
        ],
        stop_reason: StopReason::ToolUse,
    };
    let refs = motet_agents::Refs::request("req-9").with_iteration(1);
    let (react, mut state, env) = restored(vec![
        motet_agents::NewEntry::user("add and mail").with_refs(refs.clone()),
        motet_agents::NewEntry::assistant(turn, Usage::default()).with_refs(refs),
    ]);
    let directives = react
        .handle(&mut state, &resume_signal(&["add"]), &env)
        .unwrap();
    let exec = match directives.as_slice() {
        [Directive::ToolExec(exec)] => exec.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(exec.tool_call_id, "tc_add");
    // The non-idempotent call got an error result instead of running twice.
    let last = state.thread.last().unwrap();
    match &last.body {
        EntryBody::ToolResult { name, result } => {
            assert_eq!(&**name, "send_email");
            assert_eq!(result.tool_use_id, "tc_mail");
            assert!(result.is_error);
            assert!(result.content.contains("may or may not have run"));
        }
        other => panic!("{other:?}"),
    }
    // When the re-run tool answers, the next LLM call follows.
    let result = Signal::builder(motet_agents::TOOL_RESULT, "test")
        .with_id("r1")
        .with_time(None)
        .with_data(ToolResultSignal::new(
            exec.call_id,
            ToolResult::ok("tc_add", "3"),
        ))
        .build()
        .unwrap();
    let next = react.handle(&mut state, &result, &env).unwrap();
    assert!(
        matches!(next.as_slice(), [Directive::LlmStream(_)]),
        "{next:?}"
    );
}

#[test]
fn resume_of_an_answered_request_replies_again() {
    let refs = motet_agents::Refs::request("req-9").with_iteration(1);
    let (react, mut state, env) = restored(vec![
        motet_agents::NewEntry::user("hi").with_refs(refs.clone()),
        motet_agents::NewEntry::assistant(AssistantMessage::text("hello"), Usage::default())
            .with_refs(refs),
    ]);
    let directives = react.handle(&mut state, &resume_signal(&[]), &env).unwrap();
    match directives.as_slice() {
        [Directive::Reply(emit)] => {
            assert_eq!(
                emit.signal.signal_type().as_str(),
                motet_agents::AGENT_COMPLETED
            );
            let done: motet_agents::ReactCompleted = emit.signal.data_as().unwrap();
            assert_eq!(done.answer, "hello");
            assert_eq!(done.request_id, "req-9");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_call_running_at_every_stop_is_not_run_again() {
    let turn = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "tc1",
            "calculator",
            ToolArgs::from_text(r#"{"expr":"((((1))))"}"#),
        )],
        stop_reason: StopReason::ToolUse,
    };
    let refs = motet_agents::Refs::request("req-9").with_iteration(1);
    let (react, mut state, env) = restored(vec![
        motet_agents::NewEntry::user("deep").with_refs(refs.clone()),
        motet_agents::NewEntry::assistant(turn, Usage::default()).with_refs(refs),
    ]);
    // Twice the call is run again, each time after a committed note; each time the agent
    // stops again while it runs (its input may be what kills the process).
    for rerun in 1..=2 {
        let directives = react
            .handle(&mut state, &resume_signal(&["calculator"]), &env)
            .unwrap();
        assert!(
            matches!(directives.as_slice(), [Directive::ToolExec(e)] if e.tool_call_id == "tc1"),
            "re-run {rerun}: {directives:?}"
        );
        let EntryBody::Note { text } = &state.thread.last().unwrap().body else {
            panic!("no note before re-run {rerun}");
        };
        assert!(
            text.contains(&format!("re-run {rerun} of at most 2")),
            "{text}"
        );
        state = react.restore_thread(&env, state.thread.clone());
    }
    // The third time it gets an error result the model reads, and the request goes on.
    let directives = react
        .handle(&mut state, &resume_signal(&["calculator"]), &env)
        .unwrap();
    assert!(
        matches!(directives.as_slice(), [Directive::LlmStream(_)]),
        "{directives:?}"
    );
    let EntryBody::ToolResult { result, .. } = &state.thread.last().unwrap().body else {
        panic!("no error result");
    };
    assert!(result.is_error && result.tool_use_id == "tc1");
    assert!(result.content.contains("3 times"), "{}", result.content);
}

fn input_signal(request: &str, query: &str) -> Signal {
    Signal::builder(motet_agents::AGENT_REQUEST, "test")
        .with_id(format!("in-{request}"))
        .with_time(None)
        .with_request_id(request)
        .with_data(AgentRequest {
            attachments: Default::default(),
            query: query.into(),
            context_policy: None,
            response_format: None,
        })
        .build()
        .unwrap()
}

/// Whether a new question on a thread reloaded after another writer moved it on is refused
/// as busy (naming the request it found unfinished) or decided.
#[test]
fn a_reloaded_thread_refuses_a_question_while_its_last_request_is_unfinished() {
    use motet_agents::{EntryBody, NewEntry, Refs};
    let req = || Refs::request("req-1");
    let tools = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "tc_1",
            "add",
            ToolArgs::from_text(r#"{"a":1,"b":2}"#),
        )],
        stop_reason: StopReason::ToolUse,
    };
    let error = |message: &str| {
        NewEntry::new(EntryBody::Error {
            message: message.into(),
        })
    };
    let cases: Vec<(&str, Vec<NewEntry>, Option<&str>)> = vec![
        ("an empty thread", vec![], None),
        (
            "a question awaiting the model",
            vec![NewEntry::user("q").with_refs(req())],
            Some("req-1"),
        ),
        (
            "an answered question",
            vec![
                NewEntry::user("q").with_refs(req()),
                NewEntry::assistant(AssistantMessage::text("a"), Usage::default()).with_refs(req()),
            ],
            None,
        ),
        (
            "tool calls awaiting results",
            vec![
                NewEntry::user("q").with_refs(req()),
                NewEntry::assistant(tools.clone(), Usage::default()).with_refs(req()),
            ],
            Some("req-1"),
        ),
        (
            "tool results awaiting the model",
            vec![
                NewEntry::user("q").with_refs(req()),
                NewEntry::assistant(tools, Usage::default()).with_refs(req()),
                NewEntry::tool_result("add", ToolResult::ok("tc_1", "3"))
                    .with_refs(req().with_tool_call_id("tc_1")),
            ],
            Some("req-1"),
        ),
        (
            "a failed request",
            vec![
                NewEntry::user("q").with_refs(req()),
                error("request failed: rate limited").with_refs(req()),
            ],
            None,
        ),
        (
            "a failed call about to be retried",
            vec![
                NewEntry::user("q").with_refs(req()),
                error("llm call c1 failed: overloaded").with_refs(req().with_call_id("c1")),
            ],
            Some("req-1"),
        ),
    ];
    for (case, entries, busy) in cases {
        let react = ReAct::new(calculator());
        let env = FixedEnv::new(7);
        let mut thread = motet_agents::Thread::new("t", 0);
        for entry in entries {
            thread.append(&env, entry);
        }
        let before = thread.entry_count();
        let mut state = react.reload(&env, ReActState::new(thread.clone()));
        let directives = react
            .handle(&mut state, &input_signal("req-2", "next"), &env)
            .unwrap();
        let refused = directives.iter().find_map(|d| match d {
            Directive::Reply(reply) => reply
                .signal
                .data_as::<motet_agents::ReactFailed>()
                .ok()
                .map(|f| f.reason),
            _ => None,
        });
        match busy {
            Some(request) => {
                assert_eq!(
                    refused,
                    Some(motet_agents::FailureReason::Busy {
                        active_request_id: request.into()
                    }),
                    "{case}"
                );
                assert_eq!(
                    state.thread.entry_count(),
                    before,
                    "{case}: nothing committed"
                );
                // Said once: the next question is decided (its commit finds out again).
                let next = react
                    .handle(&mut state, &input_signal("req-3", "again"), &env)
                    .unwrap();
                assert!(
                    matches!(next.as_slice(), [Directive::LlmStream(_)]),
                    "{case}"
                );
            }
            None => assert!(
                matches!(directives.as_slice(), [Directive::LlmStream(_)]),
                "{case}: {directives:?}"
            ),
        }
        // Restored (the agent coming back, not a conflict), the question is decided.
        let mut restored = react.restore_thread(&env, thread);
        let directives = react
            .handle(&mut restored, &input_signal("req-2", "next"), &env)
            .unwrap();
        assert!(
            matches!(directives.as_slice(), [Directive::LlmStream(_)]),
            "{case}"
        );
    }
}
