//! The stable prefix a ReAct call tells its provider about (`LlmRequest::stable_prefix`): in
//! the stable window mode, every call but the first after a boundary starts with the whole of
//! the call before; in the sliding mode only the system prompt is promised, and kept.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use motet_agents::{
    AGENT_REQUEST, AgentRequest, ContextPolicy, Env as _, FixedEnv, LLM_RESULT, LlmResult, ReAct,
    ReActConfig, Strategy, TOOL_RESULT, ToolResultSignal, WindowMode,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, LlmRequest, LlmResponse, Message, StopReason,
    ToolArgs, ToolResult, Usage,
};
use motet_signals::Signal;
use serde::Serialize;

fn signal<T: Serialize>(env: &FixedEnv, ty: &str, request: &str, data: &T) -> Signal {
    Signal::builder(ty, "test")
        .with_id(env.fresh_id("in"))
        .with_time(None)
        .with_thread_id("t")
        .with_request_id(request)
        .with_data(data)
        .build()
        .unwrap()
}

/// The requests of `turns` turns (a question, a tool call, its result, an answer) and the
/// boundaries committed.
fn calls(window: WindowMode, turns: usize) -> (Vec<LlmRequest>, usize) {
    let policy = ContextPolicy::new()
        .with_max_input_tokens(1_500)
        .with_reserve_output_tokens(0)
        .with_keep_last_turns(0)
        .with_window(window);
    let react = ReAct::new(
        ReActConfig::new("openai:gpt-5.2".parse().unwrap())
            .with_system_prompt("You are terse.")
            .with_context_policy(policy),
    );
    let env = FixedEnv::new(0);
    let mut state = react.init(&env);
    let mut requests = Vec::new();
    for turn in 0..turns {
        let request = format!("r{turn}");
        let input = AgentRequest {
            attachments: Default::default(),
            query: format!("question {turn}: {}", "word ".repeat(20 + turn % 7 * 10)),
            context_policy: None,
            response_format: None,
        };
        let mut inbound = Some(signal(&env, AGENT_REQUEST, &request, &input));
        while let Some(sig) = inbound.take() {
            for directive in react.handle(&mut state, &sig, &env).unwrap() {
                match directive {
                    Directive::LlmStream(stream) => {
                        let first =
                            matches!(stream.request.messages.last(), Some(Message::User { .. }));
                        requests.push(stream.request);
                        let message = if first {
                            AssistantMessage {
                                blocks: vec![AssistantBlock::tool_use(
                                    format!("c{turn}"),
                                    "search",
                                    ToolArgs::from_text(r#"{"q":"x"}"#),
                                )],
                                stop_reason: StopReason::ToolUse,
                            }
                        } else {
                            AssistantMessage::text(format!("answer {turn}"))
                        };
                        let result = LlmResult {
                            call_id: stream.call_id,
                            response: LlmResponse::new(message, Usage::default()),
                        };
                        inbound = Some(signal(&env, LLM_RESULT, &request, &result));
                    }
                    Directive::ToolExec(exec) => {
                        let result = ToolResultSignal::new(
                            exec.call_id,
                            ToolResult::ok(exec.tool_call_id, "word ".repeat(40)),
                        );
                        inbound = Some(signal(&env, TOOL_RESULT, &request, &result));
                    }
                    _ => {}
                }
            }
        }
    }
    let boundaries = state
        .thread
        .to_list()
        .iter()
        .filter(|e| matches!(e.body, motet_agents::EntryBody::Boundary { .. }))
        .count();
    (requests, boundaries)
}

#[test]
fn a_stable_window_promises_the_whole_call_and_keeps_it_until_a_boundary() {
    let (requests, boundaries) = calls(WindowMode::Stable, 40);
    assert!(boundaries >= 3, "the window must move: {boundaries}");
    let mut broken = 0;
    for pair in requests.windows(2) {
        let promised = pair[0].stable_prefix.unwrap();
        assert_eq!(promised, pair[0].messages.len());
        if !pair[1].messages.starts_with(&pair[0].messages[..promised]) {
            broken += 1;
            // Only a boundary breaks it, and the system prompt stays.
            assert_eq!(pair[1].messages[0], pair[0].messages[0]);
        }
    }
    assert_eq!(broken, boundaries);
}

#[test]
fn a_sliding_window_promises_only_the_system_prompt() {
    let (requests, _) = calls(WindowMode::Sliding, 40);
    let mut moved = 0;
    for pair in requests.windows(2) {
        assert_eq!(pair[0].stable_prefix, Some(1));
        assert_eq!(pair[1].messages[0], pair[0].messages[0]);
        moved += usize::from(!pair[1].messages.starts_with(&pair[0].messages));
    }
    // Its history does move, which is why no more is promised.
    assert!(moved > 10, "{moved}");
}
