//! A summary's LLM call counted: in the usage of the request it ran for (an `agent.summarize`,
//! or the request whose call asked for it while that request runs) and in the thread's
//! totals, through the summary entry that keeps it — also after the thread is read back.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{ContextPolicy, EntryBody, Summarization, SummaryResult, Thread};
use motet_directives::{CallId, Directive};

use common::*;

/// The `Summarize` directive among `directives`: its call id.
fn summary_call(directives: &[Directive]) -> CallId {
    directives
        .iter()
        .find_map(|d| match d {
            Directive::Summarize(s) => Some(s.call_id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no summary asked for in {directives:?}"))
}

/// `summary.result` data: `content` for `call`, its call having cost `input` and `output`.
fn summary_result(call: CallId, content: &str, input: u64, output: u64) -> serde_json::Value {
    to_value(&SummaryResult::new(call, content).with_usage(usage(input, output)))
}

/// The usage the thread's last entry (a summary) keeps.
fn last_summary_usage(thread: &Thread) -> motet_directives::Usage {
    match &thread.to_list().last().unwrap().body {
        EntryBody::Summary { usage, .. } => usage.to_usage(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn agent_summarize_reports_its_call_and_the_thread_counts_it() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "What is 2+2?");
    h.send("llm.result", llm_text("call_1", "4"));
    assert_eq!(h.state.thread.usage(), usage(10, 2));

    h.request = "sum".into();
    let asked = h.send(
        "agent.summarize",
        to_value(&motet_agents::AgentSummarize {
            from_seq: 0,
            to_seq: 1,
        }),
    );
    let replied = h.send(
        "summary.result",
        summary_result(summary_call(&asked), "2+2 is 4.", 120, 30),
    );
    let done = completed(&replied);
    assert_eq!(done.usage, usage(120, 30));
    assert_eq!(done.thread_usage, usage(130, 32));
    assert_eq!(last_summary_usage(&h.state.thread), usage(120, 30));

    // Read back from its entries (as a store gives it), the thread counts the same.
    let json = serde_json::to_string(&h.state.thread).unwrap();
    let back: Thread = serde_json::from_str(&json).unwrap();
    assert_eq!(back.usage(), usage(130, 32));
}

#[test]
fn a_summary_the_strategy_asked_for_counts_with_the_request_that_runs() {
    let policy = ContextPolicy::new()
        .with_summarization(Summarization::RequestNew)
        .with_summary_after_entries(2);
    let mut h = Harness::new(calculator().with_context_policy(policy));
    h.ask("r1", "What is 2+2?");
    h.send("llm.result", llm_text("call_1", "4"));

    // The second question's call asks for a summary of the first turn beside it.
    h.request = "r2".into();
    let asked = h.send("agent.request", to_value(&question("And 3+3?")));
    let call = stream(&asked).call_id.as_str().to_owned();
    let summary = summary_call(&asked);
    assert!(
        h.send(
            "summary.result",
            summary_result(summary, "They asked 2+2: 4.", 100, 20)
        )
        .is_empty()
    );
    let done = completed(&h.send("llm.result", llm_text(&call, "6")));
    assert_eq!(done.usage, usage(110, 22), "the call's and the summary's");
    assert_eq!(done.thread_usage, usage(120, 24));
}

#[test]
fn a_summary_back_after_its_request_ended_counts_with_the_thread_only() {
    let policy = ContextPolicy::new()
        .with_summarization(Summarization::RequestNew)
        .with_summary_after_entries(2);
    let mut h = Harness::new(calculator().with_context_policy(policy));
    h.ask("r1", "What is 2+2?");
    h.send("llm.result", llm_text("call_1", "4"));
    h.request = "r2".into();
    let asked = h.send("agent.request", to_value(&question("And 3+3?")));
    let call = stream(&asked).call_id.as_str().to_owned();
    let done = completed(&h.send("llm.result", llm_text(&call, "6")));
    assert_eq!(done.usage, usage(10, 2));

    let late = h.send(
        "summary.result",
        summary_result(summary_call(&asked), "They asked 2+2: 4.", 100, 20),
    );
    assert!(late.is_empty(), "{late:?}");
    assert_eq!(last_summary_usage(&h.state.thread), usage(100, 20));
    assert_eq!(h.state.thread.usage(), usage(120, 24));
    assert_eq!(h.state.request.as_ref().map(|r| r.usage), None);
}
