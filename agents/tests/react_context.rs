//! ReAct's context over a long session, as transcripts: window boundaries and the summary that
//! replaces what they leave behind, a context too long for the model, a request's own policy,
//! and the summary call the strategy builds for `agent.summarize`.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentRequest, ContextPolicy, LlmError, LlmErrorKind, LlmFailed, Summarization, SummaryResult,
};
use motet_directives::{CallId, Directive, Message};

use common::*;

/// Every assistant turn with calls is followed by its results and every result by its call.
fn assert_well_formed(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        match m {
            Message::Assistant(turn) if turn.has_tool_calls() => {
                let Some(Message::ToolResults { results }) = messages.get(i + 1) else {
                    panic!("call without results at {i}: {messages:?}");
                };
                let calls: Vec<&str> = turn.tool_calls().map(|c| c.id).collect();
                let answered: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
                assert_eq!(calls, answered);
            }
            Message::ToolResults { .. } => {
                assert!(
                    matches!(messages.get(i.wrapping_sub(1)), Some(Message::Assistant(t)) if t.has_tool_calls()),
                    "results without their call at {i}"
                );
            }
            _ => {}
        }
    }
}

fn note_summaries(directives: &[Directive], count: &mut u32, pending: &mut Option<String>) {
    for d in directives {
        if let Directive::Summarize(s) = d {
            assert!(pending.is_none(), "a second summary while one is pending");
            *count += 1;
            *pending = Some(s.call_id.as_str().to_owned());
        }
    }
}

#[test]
fn a_long_session_crosses_window_boundaries_and_uses_a_summary() {
    let policy = ContextPolicy::new()
        .with_max_input_tokens(1_500)
        .with_reserve_output_tokens(300)
        .with_keep_last_turns(0)
        .with_summarization(Summarization::RequestNew);
    let mut h = Harness::new(calculator().with_context_policy(policy));
    let mut previous: Option<Vec<Message>> = None;
    let (mut calls, mut prefix_kept, mut summaries) = (0, 0, 0);
    let mut check = |directives: &[Directive], h: &Harness, previous: &mut Option<Vec<Message>>| {
        for d in directives {
            if let Directive::LlmStream(s) = d {
                let messages = &s.request.messages;
                assert_well_formed(messages);
                let tokens: u64 = messages
                    .iter()
                    .map(|m| u64::from(motet_agents::estimate_message(&motet_agents::Heuristic, m)))
                    .sum();
                assert!(tokens <= 1_200, "over budget: {tokens}");
                if let Some(prev) = previous.as_ref() {
                    calls += 1;
                    if messages.starts_with(prev) {
                        prefix_kept += 1;
                    }
                }
                *previous = Some(messages.clone());
            }
        }
        let _ = h;
    };
    let mut pending_summary: Option<String> = None;
    for turn in 0..40 {
        let request = format!("r{turn}");
        h.request = request.clone();
        let query = format!("turn {turn}: {}", "please compute this ".repeat(4));
        let input = to_value(&AgentRequest {
            query,
            attachments: Default::default(),
            context_policy: None,
            response_format: None,
        });
        let directives = h.send("agent.request", input);
        note_summaries(&directives, &mut summaries, &mut pending_summary);
        check(&directives, &h, &mut previous);
        let call = match directives.last() {
            Some(Directive::LlmStream(s)) => s.call_id.as_str().to_owned(),
            other => panic!("turn {turn}: expected an llm call, got {other:?}"),
        };
        let tool_id = format!("t{turn}");
        let d = h.send(
            "llm.result",
            llm_calls(&call, &[(&tool_id, "calculator", r#"{"expr":"6*7"}"#)]),
        );
        let Directive::ToolExec(exec) = &d[0] else {
            panic!("expected a tool run")
        };
        let exec_call = exec.call_id.as_str().to_owned();
        let d = h.send(
            "tool.result",
            tool_ok(&exec_call, &tool_id, &"42 ".repeat(30)),
        );
        note_summaries(&d, &mut summaries, &mut pending_summary);
        check(&d, &h, &mut previous);
        let Some(Directive::LlmStream(s)) = d.last() else {
            panic!("expected an llm call")
        };
        let call = s.call_id.as_str().to_owned();
        let d = h.send(
            "llm.result",
            llm_text(&call, &format!("The answer to turn {turn} is 42.")),
        );
        assert_eq!(describe_all(&d).len(), 1);
        if let Some(summary_call) = pending_summary.take() {
            let result = to_value(&SummaryResult::new(
                CallId::new(summary_call),
                "The user asked for many products; each was 42.",
            ));
            assert!(h.send("summary.result", result).is_empty());
        }
    }
    let thread = h.thread();
    let boundaries = thread.iter().filter(|e| e.contains("boundary")).count();
    let summary_entries = thread.iter().filter(|e| e.contains("summary")).count();
    assert!(boundaries >= 3, "boundaries: {boundaries}\n{thread:#?}");
    assert!(
        summaries >= 2 && summary_entries == summaries as usize,
        "summaries: {summaries}"
    );
    // The summary is shown after the system prompt once it exists.
    let last = previous.unwrap();
    assert!(
        matches!(&last[1], Message::System { content } if content.starts_with("Summary of earlier conversation:"))
    );
    // Most calls extend the previous call's messages exactly.
    let ratio = f64::from(prefix_kept) / f64::from(calls);
    assert!(
        ratio >= 0.75,
        "prefix ratio {ratio} ({prefix_kept}/{calls})"
    );
}

#[test]
fn a_context_length_failure_shrinks_the_window_and_retries() {
    let policy = ContextPolicy::new().with_keep_last_turns(0);
    let mut h = Harness::new(calculator().with_context_policy(policy));
    // Five turns of about 1,000 tokens each: they fit the 6,000-token input budget.
    for turn in 0..5 {
        let request = format!("r{turn}");
        h.ask(&request, &format!("q{turn} {}", "x".repeat(3_900)));
        let call = format!("call_{}", turn + 1);
        h.send("llm.result", llm_text(&call, &format!("a{turn}")));
    }
    h.request = "r5".into();
    let input = AgentRequest {
        attachments: Default::default(),
        query: "last".into(),
        context_policy: None,
        response_format: None,
    };
    let directives = h.send("agent.request", to_value(&input));
    let Some(Directive::LlmStream(first)) = directives.last() else {
        panic!("expected an llm call");
    };
    assert_eq!(first.request.messages.len(), 12);
    let failed = to_value(&LlmFailed {
        call_id: first.call_id.clone(),
        error: LlmError {
            kind: LlmErrorKind::ContextLength,
            message: "prompt is too long".into(),
            retryable: false,
            soft_limit: None,
        },
    });
    let directives = h.send("llm.failed", failed);
    let Some(Directive::LlmStream(retry)) = directives.last() else {
        panic!("expected a retry, got {directives:?}");
    };
    // Half the budget keeps two of the long turns, cut at a user message.
    let shape: Vec<String> = retry
        .request
        .messages
        .iter()
        .map(describe_message)
        .collect();
    let heads: Vec<&str> = shape.iter().map(|m| &m[..m.len().min(4)]).collect();
    assert_eq!(heads, ["S:Yo", "U:q3", "A:a3", "U:q4", "A:a4", "U:la"]);
    assert!(h.thread().iter().any(|e| e.contains("boundary")));
}

#[test]
fn a_request_override_changes_only_that_request() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q1");
    h.send("llm.result", llm_text("call_1", "a1"));
    h.request = "r2".into();
    let over = motet_agents::PolicyOverride {
        max_messages: Some(1),
        ..Default::default()
    };
    let input = AgentRequest {
        attachments: Default::default(),
        query: "q2".into(),
        context_policy: Some(over),
        response_format: None,
    };
    let d = describe_all(&h.send("agent.request", to_value(&input)));
    // The override cut the history: the strategy warns that the context was truncated.
    assert_eq!(
        d,
        [
            "emit context.warning r2",
            "llm call_2: S:You are a calculator. | U:q2"
        ]
    );
    h.send("llm.result", llm_text("call_2", "a2"));
    assert_eq!(
        h.ask("r3", "q3"),
        ["llm call_3: S:You are a calculator. | U:q2 | A:a2 | U:q3"]
    );
}

fn summarize(h: &mut Harness, from_seq: u64, to_seq: u64) -> Vec<Directive> {
    h.request = "sum".into();
    h.send(
        "agent.summarize",
        to_value(&motet_agents::AgentSummarize { from_seq, to_seq }),
    )
}

#[test]
fn agent_summarize_sends_the_call_the_strategy_built_and_answers_with_the_summary() {
    let mut config = calculator();
    config.summary_instructions = Some("Keep the numbers.".into());
    let mut h = Harness::new(config);
    h.ask("r1", "What is 2+2?");
    h.send("llm.result", llm_text("call_1", "4"));

    let directives = summarize(&mut h, 0, 1);
    let [Directive::Summarize(summary)] = directives.as_slice() else {
        panic!("{directives:?}");
    };
    assert_eq!((summary.from_seq, summary.to_seq), (0, 1));
    assert_eq!(summary.request.model.to_string(), "openai:gpt-5.2");
    assert_eq!(
        summary.request.messages,
        [
            Message::system("Keep the numbers."),
            Message::user("User: What is 2+2?\nAssistant: 4\n"),
        ]
    );
    let result = SummaryResult::new(summary.call_id.clone(), "2+2 is 4.");
    let replied = h.send("summary.result", to_value(&result));
    assert_eq!(
        describe_all(&replied),
        ["reply agent.completed sum answer=2+2 is 4."]
    );
    assert_eq!(h.thread().last().unwrap(), "2 summary 0..=1");
}

#[test]
fn agent_summarize_is_refused_before_any_call_for_a_range_with_nothing_to_summarize() {
    let mut h = Harness::new(calculator());
    // A stale result: the thread holds a note, nothing a summary could say.
    h.send("llm.result", llm_text("call_x", "late"));
    assert_eq!(h.thread(), ["0 note"]);
    for (from, to) in [(0, 0), (0, 3), (1, 0)] {
        assert_eq!(
            describe_all(&summarize(&mut h, from, to)),
            ["reply agent.failed sum reason=summary"],
            "{from}..={to}"
        );
    }
    assert_eq!(h.thread(), ["0 note"]);
}
