//! ReAct transcripts: signals in, directives and thread out, table by table.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use motet_agents::{
    AgentCancel, AgentRequest, AgentRespond, ContextPolicy, EntryBody, Env, FixedEnv, LlmError,
    LlmErrorKind, LlmFailed, LlmResult, ReAct, ReActConfig, ReActState, ReactCompleted, Status,
    Strategy, StrategyError, Summarization, SummaryResult, ToolPaused, ToolResultSignal,
};
use motet_directives::{
    Approval, AssistantBlock, AssistantMessage, CallId, Directive, LlmResponse, Message, OnExpiry,
    Pause, ReplyStatus, Response, StopReason, ToolArgs, ToolChoice, ToolDef, ToolDefs, ToolResult,
    Usage,
};
use motet_signals::Signal;
use serde_json::{Value, json};

struct Harness {
    react: ReAct,
    state: ReActState,
    env: FixedEnv,
    request: String,
}

impl Harness {
    fn new(config: ReActConfig) -> Self {
        let env = FixedEnv::new(1_700_000_000_000);
        let react = ReAct::new(config);
        let state = react.init(&env);
        Self {
            react,
            state,
            env,
            request: "r0".into(),
        }
    }

    fn signal(&self, ty: &str, data: Value) -> Signal {
        Signal::builder(ty, "test")
            .with_id(self.env.fresh_id("in"))
            .with_time(None)
            .with_thread_id("th")
            .with_request_id(self.request.as_str())
            .with_json_data(data)
            .build()
            .unwrap()
    }

    fn try_send(&mut self, ty: &str, data: Value) -> Result<Vec<Directive>, StrategyError> {
        let signal = self.signal(ty, data);
        self.env.advance_ms(1);
        self.react.handle(&mut self.state, &signal, &self.env)
    }

    fn send(&mut self, ty: &str, data: Value) -> Vec<Directive> {
        self.try_send(ty, data).unwrap()
    }

    fn ask(&mut self, request: &str, query: &str) -> Vec<String> {
        self.request = request.into();
        let input = AgentRequest {
            attachments: Default::default(),
            query: query.into(),
            context_policy: None,
            response_format: None,
        };
        describe_all(&self.send("agent.request", to_value(&input)))
    }

    /// Runs a table of (signal type, data, expected directives).
    fn script(&mut self, steps: &[(&str, Value, &[&str])]) {
        for (i, (ty, data, expected)) in steps.iter().enumerate() {
            let got = describe_all(&self.send(ty, data.clone()));
            assert_eq!(got, *expected, "step {i}: {ty}");
        }
    }

    fn thread(&self) -> Vec<String> {
        self.state
            .thread
            .to_list()
            .iter()
            .map(|e| format!("{} {}", e.seq, describe_body(&e.body)))
            .collect()
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

/// The data of the `agent.completed` reply among `directives`.
fn completed(directives: &[Directive]) -> ReactCompleted {
    directives
        .iter()
        .find_map(|d| match d {
            Directive::Reply(reply) => reply.signal.data_as::<ReactCompleted>().ok(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no agent.completed reply"))
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

fn llm_text(call: &str, text: &str) -> Value {
    to_value(&LlmResult {
        call_id: CallId::new(call),
        response: LlmResponse::new(AssistantMessage::text(text), usage(10, 2)),
    })
}

fn llm_calls(call: &str, calls: &[(&str, &str, &str)]) -> Value {
    let mut blocks = vec![AssistantBlock::reasoning(
        "thinking",
        Some(motet_directives::ProviderMeta::Anthropic {
            signature: "sig==".into(),
        }),
    )];
    blocks.extend(
        calls.iter().map(|(id, name, args)| {
            AssistantBlock::tool_use(*id, *name, ToolArgs::from_text(*args))
        }),
    );
    to_value(&LlmResult {
        call_id: CallId::new(call),
        response: LlmResponse::new(
            AssistantMessage {
                blocks,
                stop_reason: StopReason::ToolUse,
            },
            usage(20, 5),
        ),
    })
}

fn tool_ok(call: &str, tool_call_id: &str, content: &str) -> Value {
    to_value(&ToolResultSignal {
        call_id: CallId::new(call),
        result: ToolResult::ok(tool_call_id, content),
    })
}

fn describe_message(m: &Message) -> String {
    match m {
        Message::System { content } => format!("S:{content}"),
        Message::User { content } => format!("U:{content}"),
        Message::Assistant(turn) if turn.has_tool_calls() => {
            let ids: Vec<&str> = turn.tool_calls().map(|c| c.id).collect();
            format!("A:calls[{}]", ids.join(","))
        }
        Message::Assistant(turn) => format!("A:{turn}"),
        Message::ToolResults { results } => {
            let parts: Vec<String> = results
                .iter()
                .map(|r| {
                    let mark = if r.is_error { "!" } else { "" };
                    format!("{}={mark}{}", r.tool_use_id, r.content)
                })
                .collect();
            format!("T:[{}]", parts.join(","))
        }
    }
}

fn describe(d: &Directive) -> String {
    match d {
        Directive::LlmStream(s) => {
            let messages: Vec<String> = s.request.messages.iter().map(describe_message).collect();
            format!("llm {}: {}", s.call_id, messages.join(" | "))
        }
        Directive::ToolExec(t) => format!(
            "tool {} {} {} {}{}",
            t.call_id,
            t.tool_call_id,
            t.name,
            t.args,
            if t.approved { " approved" } else { "" }
        ),
        Directive::Emit(e) => format!(
            "emit {} {}",
            e.signal.signal_type(),
            e.signal.request_id().unwrap_or("-")
        ),
        Directive::Schedule(s) => format!(
            "schedule {} {}ms {}",
            s.schedule_id,
            s.delay.as_millis(),
            s.signal.signal_type()
        ),
        Directive::CancelSchedule(c) => format!("cancel_schedule {}", c.schedule_id),
        Directive::Summarize(s) => format!("summarize {} {}..={}", s.call_id, s.from_seq, s.to_seq),
        Directive::Reply(r) => {
            let data: Value = r.signal.data_as().unwrap();
            let detail = match r.signal.signal_type().as_str() {
                "agent.completed" => format!("answer={}", data["answer"].as_str().unwrap()),
                _ => format!("reason={}", data["reason"]["kind"].as_str().unwrap()),
            };
            let failed = r.signal.signal_type().as_str() == "agent.failed";
            assert_eq!(r.status == ReplyStatus::Failed, failed, "{r:?}");
            format!(
                "reply {} {} {detail}",
                r.signal.signal_type(),
                r.signal.request_id().unwrap()
            )
        }
        other => format!("{other:?}"),
    }
}

fn describe_all(directives: &[Directive]) -> Vec<String> {
    directives.iter().map(describe).collect()
}

fn describe_body(body: &EntryBody) -> String {
    match body {
        EntryBody::User { content } => format!("user {content}"),
        EntryBody::Assistant { message, .. } => {
            describe_message(&Message::Assistant(message.clone())).replacen("A:", "assistant ", 1)
        }
        EntryBody::ToolResult { result, .. } => format!(
            "tool_result {}={}{}",
            result.tool_use_id,
            if result.is_error { "!" } else { "" },
            result.content
        ),
        EntryBody::Summary {
            from_seq, to_seq, ..
        } => format!("summary {from_seq}..={to_seq}"),
        EntryBody::Boundary { from_seq } => format!("boundary {from_seq}"),
        EntryBody::Note { .. } => "note".into(),
        EntryBody::Error { message } => format!("error {message}"),
        other => format!("{other:?}"),
    }
}

fn calculator() -> ReActConfig {
    let tools: ToolDefs = vec![ToolDef::new(
        "calculator",
        "Evaluates arithmetic",
        json!({"type": "object", "properties": {"expr": {"type": "string"}}}),
    )]
    .into();
    ReActConfig::new("openai:gpt-5.2".parse().unwrap())
        .with_system_prompt("You are a calculator.")
        .with_tools(tools)
}

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
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[
        (
            "llm.result",
            llm_calls(
                "call_1",
                &[("a", "calculator", "{}"), ("b", "calculator", "{}")],
            ),
            &["tool tool_1 a calculator {}", "tool tool_2 b calculator {}"],
        ),
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
    let error = to_value(&ToolResultSignal {
        call_id: CallId::new("tool_1"),
        result: ToolResult::error("a", "invalid arguments: EOF while parsing"),
    });
    h.script(&[
        ("tool.result", error, &[]),
        (
            "tool.result",
            to_value(&ToolResultSignal {
                call_id: CallId::new("tool_2"),
                result: ToolResult::error("b", "unknown tool `nosuch`"),
            }),
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
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[
        (
            "llm.result",
            llm_calls(
                "call_1",
                &[("a", "calculator", "{}"), ("b", "calculator", "{}")],
            ),
            &["tool tool_1 a calculator {}", "tool tool_2 b calculator {}"],
        ),
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
            let result = to_value(&SummaryResult {
                call_id: CallId::new(summary_call),
                content: "The user asked for many products; each was 42.".into(),
            });
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

fn resume_signal(idempotent: &[&str]) -> Signal {
    Signal::builder(motet_agents::AGENT_RESUME, "test")
        .with_id("resume-1")
        .with_time(None)
        .with_data(motet_agents::AgentResume {
            idempotent_tools: idempotent.iter().map(|s| (*s).to_owned()).collect(),
        })
        .build()
        .unwrap()
}

fn restored(entries: Vec<motet_agents::NewEntry>) -> (ReAct, ReActState, FixedEnv) {
    let react = ReAct::new(calculator());
    let env = FixedEnv::new(7);
    let mut thread = motet_agents::Thread::new("t", 0);
    for entry in entries {
        thread.append(&env, entry);
    }
    let state = react.restore_thread(&env, thread);
    (react, state, env)
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
        .with_data(ToolResultSignal {
            call_id: exec.call_id,
            result: ToolResult::ok("tc_add", "3"),
        })
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

fn steer(text: &str) -> Value {
    to_value(&motet_agents::AgentSteer { text: text.into() })
}

#[test]
fn a_steer_while_tools_run_goes_in_after_their_results_before_the_next_call() {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[
        (
            "llm.result",
            llm_calls(
                "call_1",
                &[("a", "calculator", "{}"), ("b", "calculator", "{}")],
            ),
            &["tool tool_1 a calculator {}", "tool tool_2 b calculator {}"],
        ),
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
