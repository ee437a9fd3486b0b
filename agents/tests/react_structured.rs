//! ReAct with a response format, as transcripts: signals in, directives and thread out. Each
//! LLM call is described with whether it carries the format and its tool choice, each reply
//! with its answer or failure; the model is scripted.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentRequest, EntryBody, FailureReason, ReActConfig, ReactFailed, RequestState, Status,
    StructuredCalls,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, ResponseFormat, StopReason, ToolArgs, ToolChoice,
    ToolDef, ToolDefs, Usage,
};
use motet_signals::Signal;
use serde_json::{Value, json};

use common::*;

/// The shared harness, with each call described by its format and tool choice, and the
/// replies kept.
struct Structured {
    h: Harness,
    replies: Vec<Signal>,
}

impl std::ops::Deref for Structured {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.h
    }
}

impl Structured {
    fn new(config: ReActConfig) -> Self {
        let mut h = Harness::new(config);
        h.request = "r1".into();
        Self {
            h,
            replies: Vec::new(),
        }
    }

    fn send(&mut self, ty: &str, data: Value) -> Vec<String> {
        let directives = self.h.send(ty, data);
        directives.iter().map(|d| self.describe(d)).collect()
    }

    fn ask(&mut self, query: &str, format: Option<ResponseFormat>) -> Vec<String> {
        let input = AgentRequest {
            response_format: format,
            ..question(query)
        };
        let directives = self.h.ask_with("r1", input);
        directives.iter().map(|d| self.describe(d)).collect()
    }

    fn script(&mut self, steps: &[(&str, Value, &[&str])]) {
        let replies = &mut self.replies;
        self.h.script_with(steps, |d| describe(replies, d));
    }

    fn describe(&mut self, d: &Directive) -> String {
        describe(&mut self.replies, d)
    }

    /// The thread's user entries after the question, and each assistant answer, in order.
    fn conversation(&self) -> Vec<String> {
        self.state
            .thread
            .to_list()
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::User { content } => Some(format!("user: {content}")),
                EntryBody::Assistant { message, .. } if !message.has_tool_calls() => {
                    Some(format!("assistant: {message}"))
                }
                EntryBody::Assistant { .. } => Some("assistant: (tool calls)".to_owned()),
                EntryBody::ToolResult { result, .. } => Some(format!("tool: {}", result.content)),
                EntryBody::Error { message } => Some(format!("error: {message}")),
                _ => None,
            })
            .collect()
    }
}

/// A call by its format and tool choice, a tool run by its name, a reply by its answer or
/// failure (kept in `replies`).
fn describe(replies: &mut Vec<Signal>, d: &Directive) -> String {
    match d {
        Directive::LlmStream(s) => {
            let format = match &s.request.options.response_format {
                Some(ResponseFormat::JsonSchema { name, .. }) => format!("format={name}"),
                Some(other) => format!("format={other:?}"),
                None => "no format".to_owned(),
            };
            let choice = match &s.request.tool_choice {
                ToolChoice::Auto => "auto",
                ToolChoice::None => "none",
                ToolChoice::Required => "required",
                ToolChoice::Tool { .. } => "named",
            };
            format!("llm {} {format} tools={choice}", s.call_id)
        }
        Directive::ToolExec(t) => format!("tool {} {}", t.call_id, t.name),
        Directive::Reply(r) => {
            replies.push(r.signal.clone());
            let data: Value = r.signal.data_as().unwrap();
            match r.signal.signal_type().as_str() {
                "agent.completed" => format!("completed {}", data["answer"]),
                _ => format!("failed {}", data["reason"]["kind"]),
            }
        }
        other => format!("{other:?}"),
    }
}

fn text(call: &str, answer: &str) -> Value {
    llm_result(call, AssistantMessage::text(answer), Usage::default())
}

fn lookup(call: &str, city: &str) -> Value {
    let message = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "tc1",
            "lookup",
            ToolArgs::from_text(format!(r#"{{"city":"{city}"}}"#)),
        )],
        stop_reason: StopReason::ToolUse,
    };
    llm_result(call, message, Usage::default())
}

fn tool_result(call: &str, content: &str) -> Value {
    tool_ok(call, "tc1", content)
}

fn weather() -> ResponseFormat {
    ResponseFormat::json_schema(
        "Weather",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "high_c": {"type": "integer"}},
            "required": ["city", "high_c"],
            "additionalProperties": false
        }),
    )
}

fn config() -> ReActConfig {
    let tools: ToolDefs = vec![ToolDef::new(
        "lookup",
        "Today's weather in a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    )]
    .into();
    ReActConfig::new("openai:gpt-5.2".parse().unwrap()).with_tools(tools)
}

const GOOD: &str = r#"{"city": "Lyon", "high_c": 21}"#;

#[test]
fn a_conforming_answer_after_tool_use_completes_the_request() {
    let mut h = Structured::new(config());
    assert_eq!(
        h.ask("Weather in Lyon?", Some(weather())),
        ["llm call_1 format=Weather tools=auto"]
    );
    h.script(&[
        (
            "llm.result",
            lookup("call_1", "Lyon"),
            &["tool tool_1 lookup"],
        ),
        (
            "tool.result",
            tool_result("tool_1", "sunny, 21C"),
            // Every call carries the format, tools offered alongside.
            &["llm call_2 format=Weather tools=auto"],
        ),
        (
            "llm.result",
            text("call_2", GOOD),
            &[&format!("completed {}", json!(GOOD))],
        ),
    ]);
    assert_eq!(h.state.status, Status::Completed);
}

#[test]
fn a_nonconforming_answer_is_sent_back_with_what_is_wrong_then_fixed() {
    let mut h = Structured::new(config());
    h.ask("Weather in Lyon?", Some(weather()));
    h.script(&[
        (
            "llm.result",
            text("call_1", "It is sunny in Lyon, 21C."),
            &["llm call_2 format=Weather tools=auto"],
        ),
        (
            "llm.result",
            text("call_2", r#"{"city": "Lyon", "high_c": "21"}"#),
            &["llm call_3 format=Weather tools=auto"],
        ),
        (
            "llm.result",
            text("call_3", GOOD),
            &[&format!("completed {}", json!(GOOD))],
        ),
    ]);
    let conversation = h.conversation();
    assert_eq!(conversation.len(), 6, "{conversation:#?}");
    assert!(
        conversation[2].starts_with(
            "user: Your answer does not have the required format: the answer is not JSON: expected value at line 1 column 1."
        ),
        "{}",
        conversation[2]
    );
    assert_eq!(
        conversation[4],
        "user: Your answer does not have the required format: the answer does not match the \
         schema at $.high_c: expected integer, found a string. Answer again with only the JSON, \
         matching the schema."
    );
    // Answered, the request leaves nothing in the state (as after a restart).
    assert!(h.state.request.is_none());
}

#[test]
fn nonconforming_answers_past_the_limit_fail_the_request_with_the_last_message() {
    let mut h = Structured::new(config().with_max_format_retries(1));
    h.ask("Weather in Lyon?", Some(weather()));
    h.script(&[
        (
            "llm.result",
            text("call_1", "sunny"),
            &["llm call_2 format=Weather tools=auto"],
        ),
        (
            "llm.result",
            text("call_2", r#"{"city": "Lyon"}"#),
            &[r#"failed "nonconforming""#],
        ),
    ]);
    assert_eq!(h.state.status, Status::Failed);
    let failed: ReactFailed = h.replies.last().unwrap().data_as().unwrap();
    assert_eq!(
        failed.reason,
        FailureReason::Nonconforming {
            message:
                "the answer does not match the schema at $: missing required property `high_c`"
                    .into(),
            attempts: 2,
        }
    );
    assert_eq!(
        failed.reason.to_string(),
        "no answer matched the response format in 2 tries: the answer does not match the schema \
         at $: missing required property `high_c`"
    );
    assert!(
        h.conversation()
            .last()
            .unwrap()
            .starts_with("error: request failed: no answer matched"),
        "{:?}",
        h.conversation()
    );
}

#[test]
fn final_calls_ask_for_the_format_only_after_a_text_answer_that_does_not_match() {
    let mut h = Structured::new(config().with_structured_calls(StructuredCalls::Final));
    assert_eq!(
        h.ask("Weather in Lyon?", Some(weather())),
        ["llm call_1 no format tools=auto"]
    );
    h.script(&[
        (
            "llm.result",
            lookup("call_1", "Lyon"),
            &["tool tool_1 lookup"],
        ),
        (
            "tool.result",
            tool_result("tool_1", "sunny, 21C"),
            &["llm call_2 no format tools=auto"],
        ),
        (
            "llm.result",
            text("call_2", "Sunny, 21C."),
            // The retry is constrained and offers no tool.
            &["llm call_3 format=Weather tools=none"],
        ),
        (
            "llm.result",
            text("call_3", GOOD),
            &[&format!("completed {}", json!(GOOD))],
        ),
    ]);
    // A text answer that matches at once needs no constrained call.
    let mut h = Structured::new(config().with_structured_calls(StructuredCalls::Final));
    h.ask("Weather in Lyon?", Some(weather()));
    h.script(&[(
        "llm.result",
        text("call_1", GOOD),
        &[&format!("completed {}", json!(GOOD))],
    )]);
}

#[test]
fn a_request_without_a_format_answers_in_free_text() {
    let mut h = Structured::new(config());
    assert_eq!(
        h.ask("Weather in Lyon?", None),
        ["llm call_1 no format tools=auto"]
    );
    h.script(&[(
        "llm.result",
        text("call_1", "Sunny."),
        &[r#"completed "Sunny.""#],
    )]);
    // The configured options' own format is not the request's: it goes unchanged.
    let mut options = config().options.clone();
    options.response_format = Some(ResponseFormat::JsonObject);
    let mut configured = config();
    configured.options = options;
    let mut h = Structured::new(configured);
    assert_eq!(
        h.ask("Weather?", None),
        ["llm call_1 format=JsonObject tools=auto"]
    );
}

#[test]
fn stored_requests_without_the_new_fields_still_read() {
    let stored = json!({
        "request_id": "r1", "iteration": 1, "llm_call": null, "llm_retries": 0,
        "turn_call": null, "tools": [], "usage": Usage::default(), "policy_override": null
    });
    let request: RequestState = serde_json::from_value(stored).unwrap();
    assert_eq!((request.response_format, request.format_retries), (None, 0));
    let old_input: AgentRequest = serde_json::from_value(json!({"query": "hi"})).unwrap();
    assert_eq!(old_input.response_format, None);
}

#[test]
fn a_resumed_request_keeps_its_format_and_spent_retries() {
    let mut h = Structured::new(config().with_max_format_retries(1));
    h.ask("Weather in Lyon?", Some(weather()));
    // One retry spent, then the process stops while the retry's call runs.
    h.script(&[(
        "llm.result",
        text("call_1", "sunny"),
        &["llm call_2 format=Weather tools=auto"],
    )]);
    let resume = serde_json::to_value(motet_agents::AgentResume::default()).unwrap();
    assert_eq!(
        h.send("agent.resume", resume),
        ["llm call_3 format=Weather tools=auto"]
    );
    assert_eq!(h.state.request.as_ref().unwrap().format_retries, 1);
    // The limit counts the retry spent before the stop.
    h.script(&[(
        "llm.result",
        text("call_3", "still sunny"),
        &[r#"failed "nonconforming""#],
    )]);
}

#[test]
fn an_answer_committed_before_a_stop_is_checked_when_resumed() {
    let mut h = Structured::new(config());
    h.ask("Weather in Lyon?", Some(weather()));
    // The answer is committed; its reply is lost with the process.
    h.send("llm.result", text("call_1", GOOD));
    let resume = serde_json::to_value(motet_agents::AgentResume::default()).unwrap();
    assert_eq!(
        h.send("agent.resume", resume),
        [format!("completed {}", json!(GOOD))]
    );
}
