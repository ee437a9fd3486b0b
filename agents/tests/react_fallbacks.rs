//! A ReAct agent's model chain: a call that fails from overload, an outage or a context too
//! long moves the request to the next model, between calls only; the model that answered is
//! kept in the thread, and a resume goes on with it.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentResume, EntryBody, LlmError, LlmErrorKind, LlmFailed, ReActConfig, Strategy,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, LlmStream, ModelRef, StopReason, ToolArgs,
    ToolDef, ToolDefs, Usage,
};
use serde_json::json;

use common::*;

fn model(text: &str) -> ModelRef {
    text.parse().unwrap()
}

/// An agent on `openai:gpt-5.2` falling back to `anthropic:claude-sonnet-4-5`, then to a local
/// server.
fn chain() -> ReActConfig {
    ReActConfig::new(model("openai:gpt-5.2")).with_fallbacks([
        model("anthropic:claude-sonnet-4-5"),
        model("openai-compat:local"),
    ])
}

/// The shared harness, spoken to in LLM calls.
struct Agent(Harness);

impl std::ops::Deref for Agent {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.0
    }
}

impl std::ops::DerefMut for Agent {
    fn deref_mut(&mut self) -> &mut Harness {
        &mut self.0
    }
}

impl Agent {
    fn new(config: ReActConfig) -> Self {
        Self(Harness::new(config))
    }

    /// Asks `query` as request `request`; the LLM call it starts.
    fn ask(&mut self, request: &str, query: &str) -> LlmStream {
        call_in(&self.0.ask_with(request, question(query)))
    }

    /// Fails `call` with `kind`; the directives that follow.
    fn fail(&mut self, call: &LlmStream, kind: LlmErrorKind, retryable: bool) -> Vec<Directive> {
        let failed = LlmFailed {
            call_id: call.call_id.clone(),
            error: LlmError {
                kind,
                message: "the provider said no".into(),
                retryable,
                soft_limit: None,
            },
        };
        self.send("llm.failed", to_value(&failed))
    }

    /// Answers `call` with `response`; the directives that follow.
    fn answer(&mut self, call: &LlmStream, message: AssistantMessage) -> Vec<Directive> {
        let result = llm_result(call.call_id.as_str(), message, Usage::default());
        self.send("llm.result", result)
    }

    /// The models recorded on the thread's assistant entries (`None`: the agent's own).
    fn answered_by(&self) -> Vec<Option<String>> {
        self.state
            .thread
            .to_list()
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::Assistant { basis, .. } => Some(
                    basis
                        .as_ref()
                        .and_then(|b| b.model.as_ref())
                        .map(ToString::to_string),
                ),
                _ => None,
            })
            .collect()
    }
}

/// A turn that calls `lookup` once, as `t1`.
fn lookup_turn() -> AssistantMessage {
    AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "t1",
            "lookup",
            ToolArgs::from_text(r#"{"q":"Peru"}"#),
        )],
        stop_reason: StopReason::ToolUse,
    }
}

/// An agent with `chain()` and the `lookup` tool.
fn with_lookup() -> Agent {
    Agent::new(chain().with_tools(ToolDefs::from(vec![ToolDef::new(
        "lookup",
        "Looks a thing up.",
        json!({"type": "object"}),
    )])))
}

/// The one LLM call among `directives`.
fn call_in(directives: &[Directive]) -> LlmStream {
    let calls: Vec<_> = directives
        .iter()
        .filter_map(|d| match d {
            Directive::LlmStream(call) => Some(call.clone()),
            _ => None,
        })
        .collect();
    match <[LlmStream; 1]>::try_from(calls) {
        Ok([call]) => call,
        Err(calls) => panic!("expected one LLM call, got {}: {directives:?}", calls.len()),
    }
}

fn replied(directives: &[Directive], ty: &str) -> bool {
    directives
        .iter()
        .any(|d| matches!(d, Directive::Reply(r) if r.signal.signal_type().as_str() == ty))
}

#[test]
fn an_overloaded_model_hands_the_request_to_the_next_one_which_keeps_it() {
    let mut agent = with_lookup();
    let first = agent.ask("r1", "What is the capital of Peru?");
    assert_eq!(first.request.model, model("openai:gpt-5.2"));

    // The client retried the overload already: the next model, at once.
    let second = call_in(&agent.fail(&first, LlmErrorKind::Overloaded, false));
    assert_eq!(second.request.model, model("anthropic:claude-sonnet-4-5"));
    let errors: Vec<String> = agent
        .state
        .thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].ends_with("; falling back to anthropic:claude-sonnet-4-5"),
        "{errors:?}"
    );

    // The fallback calls a tool; the turn after it stays on the fallback.
    let directives = agent.answer(&second, lookup_turn());
    let exec = directives
        .iter()
        .find_map(|d| match d {
            Directive::ToolExec(exec) => Some(exec.clone()),
            _ => None,
        })
        .unwrap();
    let result = motet_agents::ToolResultSignal::new(
        exec.call_id.clone(),
        motet_directives::ToolResult::ok(exec.tool_call_id.clone(), "Lima"),
    );
    let third = call_in(&agent.send("tool.result", serde_json::to_value(&result).unwrap()));
    assert_eq!(third.request.model, model("anthropic:claude-sonnet-4-5"));
    let done = agent.answer(&third, AssistantMessage::text("Lima."));
    assert!(replied(&done, "agent.completed"));
    assert_eq!(
        agent.answered_by(),
        vec![
            Some("anthropic:claude-sonnet-4-5".to_owned()),
            Some("anthropic:claude-sonnet-4-5".to_owned())
        ]
    );

    // The next request starts on the agent's own model again, and says so by saying nothing.
    let next = agent.ask("r2", "And of Chile?");
    assert_eq!(next.request.model, model("openai:gpt-5.2"));
    agent.answer(&next, AssistantMessage::text("Santiago."));
    assert_eq!(agent.answered_by()[2], None);
}

#[test]
fn a_retryable_failure_is_retried_on_its_model_before_the_chain_moves() {
    let mut agent = Agent::new(chain());
    let mut call = agent.ask("r1", "Hello?");
    // Two retries of the same model (the default `max_llm_retries`), then the next model.
    for _ in 0..2 {
        call = call_in(&agent.fail(&call, LlmErrorKind::StreamTruncated, true));
        assert_eq!(call.request.model, model("openai:gpt-5.2"));
    }
    call = call_in(&agent.fail(&call, LlmErrorKind::Server, true));
    assert_eq!(call.request.model, model("anthropic:claude-sonnet-4-5"));
    // The new model has retries of its own.
    call = call_in(&agent.fail(&call, LlmErrorKind::Server, true));
    assert_eq!(call.request.model, model("anthropic:claude-sonnet-4-5"));
}

#[test]
fn the_end_of_the_chain_fails_the_request_with_the_last_error() {
    let mut agent = Agent::new(chain());
    let mut call = agent.ask("r1", "Hello?");
    for expected in ["anthropic:claude-sonnet-4-5", "openai-compat:local"] {
        call = call_in(&agent.fail(&call, LlmErrorKind::Connect, false));
        assert_eq!(call.request.model, model(expected));
    }
    let last = agent.fail(&call, LlmErrorKind::Connect, false);
    assert!(replied(&last, "agent.failed"), "{last:?}");
}

#[test]
fn failures_another_model_would_repeat_do_not_move_the_chain() {
    let mut agent = Agent::new(chain());
    let call = agent.ask("r1", "Hello?");
    let directives = agent.fail(&call, LlmErrorKind::Auth, false);
    assert!(replied(&directives, "agent.failed"), "{directives:?}");
}

#[test]
fn a_context_too_long_tries_the_next_model_before_it_shrinks_the_context() {
    let mut agent = Agent::new(chain());
    let call = agent.ask("r1", "Read all of this.");
    let next = call_in(&agent.fail(&call, LlmErrorKind::ContextLength, false));
    assert_eq!(next.request.model, model("anthropic:claude-sonnet-4-5"));

    // Without a chain, as before: the same model, with less context.
    let mut alone = Agent::new(ReActConfig::new(model("openai:gpt-5.2")));
    let call = alone.ask("r1", "Read all of this.");
    let again = call_in(&alone.fail(&call, LlmErrorKind::ContextLength, false));
    assert_eq!(again.request.model, model("openai:gpt-5.2"));
}

#[test]
fn a_resume_goes_on_with_the_model_that_answered_the_request_last() {
    let mut agent = with_lookup();
    let first = agent.ask("r1", "What is the capital of Peru?");
    let second = call_in(&agent.fail(&first, LlmErrorKind::Overloaded, false));
    agent.answer(&second, lookup_turn());

    // The process stops while the tool runs: the state comes back from the thread alone (the
    // runtime's snapshot keeps no running request), and the request is resumed. The tool's
    // result is unknown (it is not idempotent): it gets an error result, and the model is
    // asked again, the one that answered last.
    let mut stopped = agent.state.clone();
    stopped.request = None;
    agent.state = agent.react.restore(&agent.env, stopped);
    let resume = AgentResume::default();
    let after = call_in(&agent.send("agent.resume", serde_json::to_value(&resume).unwrap()));
    assert_eq!(after.request.model, model("anthropic:claude-sonnet-4-5"));
}
