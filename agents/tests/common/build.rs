//! What comes into a strategy in the tests: the model's results, tools' results, requests,
//! steers and resumes, and the configurations they run under.

use motet_agents::{
    AGENT_RESUME, AgentRequest, AgentResume, AgentSteer, FixedEnv, LlmResult, NewEntry, ReAct,
    ReActConfig, ReActState, ReactCompleted, Strategy, Thread, ToolResultSignal,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, CallId, Directive, LlmResponse, LlmStream, ProviderMeta,
    StopReason, ToolArgs, ToolDef, ToolDefs, ToolResult, Usage,
};
use motet_signals::Signal;
use serde_json::{Value, json};

/// `value` as JSON.
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

/// A usage of `input` and `output` tokens.
pub(crate) fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

/// `llm.result` data: `message` answers call `call`.
pub(crate) fn llm_result(call: &str, message: AssistantMessage, usage: Usage) -> Value {
    to_value(&LlmResult {
        call_id: CallId::new(call),
        response: LlmResponse::new(message, usage),
    })
}

/// `llm.result` data: call `call` answered `text` (10 tokens in, 2 out).
pub(crate) fn llm_text(call: &str, text: &str) -> Value {
    llm_result(call, AssistantMessage::text(text), usage(10, 2))
}

/// `llm.result` data: call `call` answered with reasoning and the tool calls `(id, name,
/// args)` (20 tokens in, 5 out).
pub(crate) fn llm_calls(call: &str, calls: &[(&str, &str, &str)]) -> Value {
    let mut blocks = vec![AssistantBlock::reasoning(
        "thinking",
        Some(ProviderMeta::Anthropic {
            signature: "sig==".into(),
        }),
    )];
    blocks.extend(
        calls.iter().map(|(id, name, args)| {
            AssistantBlock::tool_use(*id, *name, ToolArgs::from_text(*args))
        }),
    );
    let message = AssistantMessage {
        blocks,
        stop_reason: StopReason::ToolUse,
    };
    llm_result(call, message, usage(20, 5))
}

/// `tool.result` data: call `call` (the model's `tool_call_id`) returned `content`.
pub(crate) fn tool_ok(call: &str, tool_call_id: &str, content: &str) -> Value {
    to_value(&ToolResultSignal::new(
        CallId::new(call),
        ToolResult::ok(tool_call_id, content),
    ))
}

/// `agent.request` data asking `query`, nothing else set.
pub(crate) fn question(query: &str) -> AgentRequest {
    AgentRequest {
        attachments: Default::default(),
        query: query.into(),
        context_policy: None,
        response_format: None,
    }
}

/// `agent.steer` data.
pub(crate) fn steer(text: &str) -> Value {
    to_value(&AgentSteer { text: text.into() })
}

/// `agent.resume` with the tools that may run again.
pub(crate) fn resume_signal(idempotent: &[&str]) -> Signal {
    Signal::builder(AGENT_RESUME, "test")
        .with_id("resume-1")
        .with_time(None)
        .with_data(AgentResume {
            idempotent_tools: idempotent.iter().map(|s| (*s).to_owned()).collect(),
        })
        .build()
        .unwrap()
}

/// The calculator agent brought back on thread `t` holding `entries`, as after a stop.
pub(crate) fn restored(entries: Vec<NewEntry>) -> (ReAct, ReActState, FixedEnv) {
    let react = ReAct::new(calculator());
    let env = FixedEnv::new(7);
    let mut thread = Thread::new("t", 0);
    for entry in entries {
        thread.append(&env, entry);
    }
    let state = react.restore_thread(&env, thread);
    (react, state, env)
}

/// The `calculator` tool.
pub(crate) fn calculator_tools() -> ToolDefs {
    vec![ToolDef::new(
        "calculator",
        "Evaluates arithmetic",
        json!({"type": "object", "properties": {"expr": {"type": "string"}}}),
    )]
    .into()
}

/// An agent on `openai:gpt-5.2` with a calculator's system prompt and tool.
pub(crate) fn calculator() -> ReActConfig {
    ReActConfig::new("openai:gpt-5.2".parse().unwrap())
        .with_system_prompt("You are a calculator.")
        .with_tools(calculator_tools())
}

/// The data of the `agent.completed` reply among `directives`.
pub(crate) fn completed(directives: &[Directive]) -> ReactCompleted {
    directives
        .iter()
        .find_map(|d| match d {
            Directive::Reply(reply) => reply.signal.data_as::<ReactCompleted>().ok(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no agent.completed reply"))
}

/// The first LLM call among `directives`.
pub(crate) fn stream(directives: &[Directive]) -> &LlmStream {
    directives
        .iter()
        .find_map(|d| match d {
            Directive::LlmStream(s) => Some(s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no llm call in {directives:?}"))
}
