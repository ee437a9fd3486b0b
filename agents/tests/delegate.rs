//! Delegation and handoff as pure decisions: the chain and its limits, the callee's thread and
//! request ids, the history a handoff shows, who holds a thread; and ReAct as a transcript — a
//! tool result carrying a callee's usage counts in the request's, a handoff's result ends the
//! request with the receiver's answer.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::delegate::{
    CalleeThread, Chain, DEFAULT_MAX_DEPTH, DelegateError, HistoryFilter, briefing, callee_request,
    holder,
};
use motet_agents::{EntryBody, FixedEnv, NewEntry, Thread, ToolResultSignal};
use motet_directives::{AssistantBlock, AssistantMessage, CallId, ToolArgs, ToolResult, Usage};

use common::*;

#[test]
fn a_chain_refuses_an_agent_already_on_it_and_names_the_loop() {
    let chain = Chain::root("a").enter("b", 4).unwrap();
    assert_eq!(chain.agents(), ["a", "b"]);
    assert_eq!(chain.depth(), 1);
    let refused = chain.enter("a", 4).unwrap_err();
    assert_eq!(refused.to_string(), "delegation cycle refused: a → b → a");
    assert!(matches!(refused, DelegateError::Cycle { .. }));
    // Itself counts too.
    assert!(matches!(
        Chain::root("a").enter("a", 4),
        Err(DelegateError::Cycle { .. })
    ));
}

#[test]
fn a_chain_goes_as_deep_as_its_limit_and_no_deeper() {
    let mut chain = Chain::root("a0");
    for n in 1..=DEFAULT_MAX_DEPTH {
        chain = chain.enter(&format!("a{n}"), DEFAULT_MAX_DEPTH).unwrap();
    }
    assert_eq!(chain.depth(), DEFAULT_MAX_DEPTH);
    let refused = chain.enter("one-more", DEFAULT_MAX_DEPTH).unwrap_err();
    assert_eq!(
        refused,
        DelegateError::TooDeep {
            chain: Chain::of_request("one-more", Some(r#"["a0","a1","a2","a3","a4","one-more"]"#)),
            depth: 5,
            max: 4,
        }
    );
    assert!(Chain::root("a").enter("b", 0).is_err());
}

#[test]
fn a_chain_travels_as_its_extension_and_a_bad_label_counts_as_none() {
    let chain = Chain::root("a").enter("b", 4).unwrap();
    assert_eq!(Chain::of_request("b", Some(&chain.to_extension())), chain);
    // Not a chain, or one that does not end with the agent running the request: a fresh one.
    assert_eq!(Chain::of_request("b", Some("not json")), Chain::root("b"));
    assert_eq!(
        Chain::of_request("c", Some(&chain.to_extension())),
        Chain::root("c")
    );
    assert_eq!(Chain::of_request("b", None), Chain::root("b"));
}

#[test]
fn the_callees_thread_and_request_are_derived_never_fresh() {
    let per_call = CalleeThread::PerCall.resolve("lead", "t1", "r1", "tc1");
    assert_eq!(per_call, "call.r1.tc1");
    assert_eq!(
        per_call,
        CalleeThread::PerCall.resolve("lead", "t1", "r1", "tc1")
    );
    assert_ne!(
        per_call,
        CalleeThread::PerCall.resolve("lead", "t1", "r1", "tc2")
    );
    assert_eq!(
        CalleeThread::PerCallerThread.resolve("team/lead", "t1", "r1", "tc1"),
        "from.team.lead.t1"
    );
    assert_eq!(
        CalleeThread::PerCallerThread.resolve("team/lead", "t1", "r2", "tc9"),
        "from.team.lead.t1"
    );
    assert_eq!(
        CalleeThread::Named("shared".into()).resolve("lead", "t1", "r1", "tc1"),
        "shared"
    );
    assert_eq!(callee_request("r1", "tc1"), "r1.tc1");
}

/// A conversation: a question, a tool turn and its result, an answer, another question.
fn conversation() -> Thread {
    let env = FixedEnv::new(0);
    let mut thread = Thread::new("t", 0);
    thread.append(&env, NewEntry::user("my invoice is wrong"));
    let turn = AssistantMessage {
        blocks: vec![
            AssistantBlock::text("Let me look."),
            AssistantBlock::tool_use("tc", "lookup", ToolArgs::from_text(r#"{"id": 7}"#)),
        ],
        stop_reason: motet_directives::StopReason::ToolUse,
    };
    thread.append(&env, NewEntry::assistant(turn, Usage::default()));
    thread.append(
        &env,
        NewEntry::tool_result("lookup", ToolResult::ok("tc", "invoice 7: $120")),
    );
    thread.append(
        &env,
        NewEntry::new(EntryBody::Note {
            text: "bookkeeping".into(),
        }),
    );
    thread.append(
        &env,
        NewEntry::assistant(AssistantMessage::text("It says $120."), Usage::default()),
    );
    thread.append(&env, NewEntry::user("it should be $100"));
    thread
}

#[test]
fn a_handoffs_history_is_what_its_filter_lets_through() {
    let thread = conversation();
    let all = briefing(&thread, &HistoryFilter::All, "triage", "billing question");
    assert!(
        all.contains("from agent `triage`. Reason: billing question."),
        "{all}"
    );
    assert!(all.contains("User: my invoice is wrong"));
    assert!(all.contains("(called lookup with"));
    assert!(all.contains("Tool lookup returned: invoice 7: $120"));
    assert!(all.ends_with("answer the user directly."));
    assert!(!all.contains("bookkeeping"), "notes are never shown");

    let plain = briefing(&thread, &HistoryFilter::NoToolCalls, "triage", "");
    assert!(plain.contains("Assistant: Let me look."), "{plain}");
    assert!(!plain.contains("lookup"), "{plain}");
    assert!(!plain.contains("Reason:"));
    assert!(plain.contains("User: it should be $100"));

    let last = HistoryFilter::Last(2).entries(&thread);
    assert_eq!(last.len(), 2);
    assert!(matches!(last[1].body, EntryBody::User { .. }));
    assert!(matches!(last[0].body, EntryBody::Assistant { .. }));
    assert_eq!(HistoryFilter::Last(100).entries(&thread).len(), 5);
}

#[test]
fn the_holder_is_the_receiver_of_the_last_handoff() {
    let env = FixedEnv::new(0);
    let mut thread = conversation();
    assert_eq!(holder(&thread), None);
    let note = |agent: &str| {
        NewEntry::new(EntryBody::Note {
            text: format!("{}{agent}", motet_agents::delegate::HANDED_OFF_NOTE),
        })
    };
    thread.append(&env, note("billing"));
    assert_eq!(holder(&thread), Some("billing"));
    thread.append(&env, note("refunds"));
    assert_eq!(holder(&thread), Some("refunds"));
    // Asked again on it (handed back), its own agent holds it; notes after that count again.
    let before = thread.entry_count();
    thread.append(&env, NewEntry::user("back to you"));
    assert_eq!(holder(&thread), None);
    assert_eq!(
        motet_agents::delegate::holder_change(&thread.to_list()[before..]),
        Some(None)
    );
    thread.append(
        &env,
        NewEntry::assistant(
            motet_directives::AssistantMessage::text("sure"),
            motet_directives::Usage::default(),
        ),
    );
    assert_eq!(
        motet_agents::delegate::holder_change(&thread.to_list()[before + 1..]),
        None,
        "an answer decides nothing"
    );
    thread.append(&env, note("billing"));
    assert_eq!(holder(&thread), Some("billing"));
}

/// `tool.result` data for call `call` carrying a callee's usage, and a handoff when `to`.
fn delegated(call: &str, tool_call_id: &str, content: &str, to: Option<&str>) -> serde_json::Value {
    let mut data = ToolResultSignal::new(CallId::new(call), ToolResult::ok(tool_call_id, content));
    data.usage = usage(7, 3);
    data.handoff = to.map(str::to_owned);
    to_value(&data)
}

#[test]
fn a_callees_usage_counts_in_the_request_that_called_it() {
    let mut h = Harness::new(calculator());
    let first = h.ask_with("r1", question("ask the researcher"));
    let call = stream(&first).call_id.clone();
    let tools = h.send(
        "llm.result",
        llm_calls(call.as_str(), &[("tc1", "add", r#"{"a":1,"b":2}"#)]),
    );
    let exec = match tools.as_slice() {
        [motet_directives::Directive::ToolExec(exec)] => exec.clone(),
        other => panic!("{other:?}"),
    };
    let next = h.send(
        "tool.result",
        delegated(exec.call_id.as_str(), "tc1", "3", None),
    );
    let call = stream(&next).call_id.clone();
    let done = h.send("llm.result", llm_text(call.as_str(), "It is 3."));
    let completed = completed(&done);
    // Two calls of 20 in / 5 out (llm_calls) and 10 / 5 (llm_text), and the callee's 7 / 3.
    let own = h.state.thread.usage();
    assert_eq!(
        completed.usage.input_tokens,
        own.input_tokens + 7,
        "{completed:?}"
    );
    assert_eq!(completed.usage.output_tokens, own.output_tokens + 3);
}

#[test]
fn a_handoff_ends_the_request_with_the_receivers_answer_once_the_turn_is_in() {
    let mut h = Harness::new(calculator());
    let first = h.ask_with("r1", question("refund please"));
    let call = stream(&first).call_id.clone();
    let tools = h.send(
        "llm.result",
        llm_calls(
            call.as_str(),
            &[
                ("h1", "transfer_to_billing", "{}"),
                ("tc2", "add", r#"{"a":1,"b":2}"#),
            ],
        ),
    );
    let execs: Vec<_> = tools
        .iter()
        .filter_map(|d| match d {
            motet_directives::Directive::ToolExec(exec) => Some(exec.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(execs.len(), 2);
    // The handoff comes back first: the request waits for the turn's other call.
    let waiting = h.send(
        "tool.result",
        delegated(
            execs[0].call_id.as_str(),
            "h1",
            "Refund issued.",
            Some("billing"),
        ),
    );
    assert!(waiting.is_empty(), "{waiting:?}");
    // Then it ends with the receiver's answer, without another model call.
    let done = h.send(
        "tool.result",
        tool_ok(execs[1].call_id.as_str(), "tc2", "3"),
    );
    assert!(
        !done
            .iter()
            .any(|d| matches!(d, motet_directives::Directive::LlmStream(_))),
        "{done:?}"
    );
    let completed = completed(&done);
    assert_eq!(completed.answer, "Refund issued.");
    assert_eq!(completed.usage.input_tokens, 20 + 7);
    assert_eq!(holder(&h.state.thread), Some("billing"));
    assert!(h.state.active_request().is_none());
}

#[test]
fn a_failed_handoff_is_an_error_result_the_model_reads() {
    let mut h = Harness::new(calculator());
    let first = h.ask_with("r1", question("refund please"));
    let call = stream(&first).call_id.clone();
    let tools = h.send(
        "llm.result",
        llm_calls(call.as_str(), &[("h1", "transfer_to_billing", "{}")]),
    );
    let exec = match tools.as_slice() {
        [motet_directives::Directive::ToolExec(exec)] => exec.clone(),
        other => panic!("{other:?}"),
    };
    let mut data = ToolResultSignal::new(
        exec.call_id.clone(),
        ToolResult::error("h1", "agent `billing` did not take over"),
    );
    data.handoff = Some("billing".into());
    let next = h.send("tool.result", to_value(&data));
    assert!(matches!(
        next.as_slice(),
        [motet_directives::Directive::LlmStream(_)]
    ));
    assert_eq!(holder(&h.state.thread), None);
}

#[test]
fn payers_travel_as_an_extension_and_a_bad_one_is_none() {
    use motet_agents::delegate::Payers;
    let none = Payers::default();
    assert!(none.is_empty());
    let two = none.with("lead", "r1").with("b", "r1.tc1");
    assert_eq!(
        two.requests(),
        [
            ("lead".to_owned(), "r1".to_owned()),
            ("b".to_owned(), "r1.tc1".to_owned())
        ]
    );
    assert_eq!(Payers::of_extension(Some(&two.to_extension())), two);
    for bad in [
        None,
        Some(""),
        Some("[\"lead\"]"),
        Some("{\"a\":1}"),
        Some("[[1,2]]"),
    ] {
        assert!(Payers::of_extension(bad).is_empty(), "{bad:?}");
    }
}
