//! ReAct's tool choice, as transcripts: the choice after each tool call, a forced first call,
//! a choice that keeps forcing, and a resume that keeps the choice where the request was.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{AgentRequest, FixedEnv, ReAct, Strategy};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, StopReason, ToolArgs, ToolChoice, ToolResult,
    Usage,
};

use common::*;

/// The tool choice of each LLM call among `directives`.
fn choices(directives: &[Directive]) -> Vec<ToolChoice> {
    directives
        .iter()
        .filter_map(|d| match d {
            Directive::LlmStream(s) => Some(s.request.tool_choice.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn tool_choice_after_a_tool_call_table() {
    let named = ToolChoice::Tool {
        name: "calculator".into(),
    };
    #[rustfmt::skip]
    let table = [
        // configured, reset, tool calls so far, the next call's choice
        (ToolChoice::Auto, true, 0, ToolChoice::Auto),
        (ToolChoice::Auto, true, 3, ToolChoice::Auto),
        (ToolChoice::None, true, 1, ToolChoice::None),
        (ToolChoice::Required, true, 0, ToolChoice::Required),
        (ToolChoice::Required, true, 1, ToolChoice::Auto),
        (ToolChoice::Required, false, 1, ToolChoice::Required),
        (named.clone(), true, 0, named.clone()),
        (named.clone(), true, 2, ToolChoice::Auto),
        (named.clone(), false, 2, named.clone()),
    ];
    for (configured, reset, calls, expected) in table {
        let config = calculator()
            .with_tool_choice(configured.clone())
            .with_reset_tool_choice(reset);
        assert_eq!(
            config.tool_choice_after(calls),
            expected,
            "{configured:?} reset={reset} after {calls} calls"
        );
    }
    assert!(calculator().reset_tool_choice, "reset is the default");
}

#[test]
fn a_forced_first_tool_call_then_the_model_may_answer() {
    let mut h = Harness::new(calculator().with_tool_choice(ToolChoice::Required));
    h.request = "r1".into();
    let input = to_value(&AgentRequest {
        attachments: Default::default(),
        query: "17 * 23?".into(),
        context_policy: None,
        response_format: None,
    });
    assert_eq!(
        choices(&h.send("agent.request", input.clone())),
        [ToolChoice::Required]
    );
    h.send(
        "llm.result",
        llm_calls("call_1", &[("tc1", "calculator", r#"{"expr":"17*23"}"#)]),
    );
    let next = h.send("tool.result", tool_ok("tool_1", "tc1", "391"));
    // The model has called a tool: the next call lets it answer.
    assert_eq!(choices(&next), [ToolChoice::Auto]);
    h.script(&[(
        "llm.result",
        llm_text("call_2", "17 * 23 = 391."),
        &["reply agent.completed r1 answer=17 * 23 = 391."],
    )]);
    // The next request is forced again from its first call: the count of tool calls went
    // with the answered request.
    assert!(h.state.request.is_none());
    h.request = "r2".into();
    assert_eq!(
        choices(&h.send("agent.request", input)),
        [ToolChoice::Required]
    );
}

#[test]
fn a_choice_kept_forcing_loops_until_max_iterations() {
    let named = ToolChoice::Tool {
        name: "calculator".into(),
    };
    let config = calculator()
        .with_tool_choice(named.clone())
        .with_reset_tool_choice(false)
        .with_max_iterations(2);
    let mut h = Harness::new(config);
    assert_eq!(h.ask("r1", "2+2?").len(), 1);
    h.send(
        "llm.result",
        llm_calls("call_1", &[("tc1", "calculator", r#"{"expr":"2+2"}"#)]),
    );
    let next = h.send("tool.result", tool_ok("tool_1", "tc1", "4"));
    assert_eq!(choices(&next), [named]);
    h.send(
        "llm.result",
        llm_calls("call_2", &[("tc2", "calculator", r#"{"expr":"2+2"}"#)]),
    );
    h.script(&[(
        "tool.result",
        tool_ok("tool_2", "tc2", "4"),
        &["reply agent.failed r1 reason=max_iterations"],
    )]);
}

#[test]
fn resume_keeps_the_tool_choice_where_the_request_was() {
    let forced = |entries| {
        let config = calculator().with_tool_choice(ToolChoice::Required);
        let react = ReAct::new(config);
        let env = FixedEnv::new(7);
        let mut thread = motet_agents::Thread::new("t", 0);
        for entry in entries {
            thread.append(&env, entry);
        }
        let mut state = react.restore_thread(&env, thread);
        let directives = react.handle(&mut state, &resume_signal(&[]), &env).unwrap();
        choices(&directives)
    };
    let refs = motet_agents::Refs::request("req-9").with_iteration(1);
    let user = motet_agents::NewEntry::user("17 * 23?").with_refs(refs.clone());
    // Stopped before the first call: it is still forced.
    assert_eq!(forced(vec![user.clone()]), [ToolChoice::Required]);
    // Stopped after the tool answered: the owed call lets the model answer.
    let turn = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "tc1",
            "calculator",
            ToolArgs::from_text(r#"{"expr":"17*23"}"#),
        )],
        stop_reason: StopReason::ToolUse,
    };
    let result = motet_agents::NewEntry::tool_result("calculator", ToolResult::ok("tc1", "391"))
        .with_refs(refs.clone());
    assert_eq!(
        forced(vec![
            user,
            motet_agents::NewEntry::assistant(turn, Usage::default()).with_refs(refs),
            result,
        ]),
        [ToolChoice::Auto]
    );
}
