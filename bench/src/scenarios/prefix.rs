//! `prefix`: how often an LLM call's messages begin with the previous call's messages — the
//! condition for a provider's prompt cache to hit — over a simulated 500-turn conversation with
//! a tool call per turn, under an 8k budget.
//!
//! The real ReAct strategy runs the conversation: each turn is `agent.request`, an `llm.result`
//! asking for one tool, its `tool.result`, and an `llm.result` with the answer (two LLM calls a
//! turn, 1,000 in all), with seeded sizes. `stable` is the default window mode (a boundary
//! committed on overflow, leaving the history at 0.7 of the budget); `sliding` is the seeds'
//! window that drops the oldest groups on every call; `stable_low_water_0.5` shows the policy's
//! knob. Each turn adds about 440 estimated tokens (user 20-120 words, tool result 40-250,
//! answer 30-150), so the stable ratio is bounded by about
//! 1 - (tokens added per call) / ((1 - low_water) * history budget).

use std::time::Instant;

use motet_agents::{
    AGENT_REQUEST, AgentRequest, ContextPolicy, FixedEnv, LlmResult, ReAct, ReActConfig, Strategy,
    TOOL_RESULT, ToolResultSignal, WindowMode,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, LlmResponse, Message, StopReason, ToolArgs,
    ToolResult, Usage,
};
use motet_signals::Signal;
use serde::Serialize;

use crate::report::{Report, round2};

const TURNS: usize = 500;
const SEED: u64 = 0x7072_6566;

/// What one simulated conversation measured.
#[derive(Default)]
struct Tally {
    calls: u64,
    prefix_kept: u64,
    messages: u64,
    boundaries: u64,
}

fn signal<T: Serialize>(env: &FixedEnv, ty: &str, request: &str, data: &T) -> Option<Signal> {
    use motet_agents::Env as _;
    Signal::builder(ty, "bench")
        .with_id(env.fresh_id("in"))
        .with_time(None)
        .with_thread_id("bench")
        .with_request_id(request)
        .with_data(data)
        .build()
        .ok()
}

fn simulate(window: WindowMode, low_water: f64) -> (Tally, std::time::Duration) {
    let policy = ContextPolicy::new()
        .with_max_input_tokens(8_000)
        .with_keep_last_turns(0)
        .with_window(window)
        .with_low_water(low_water);
    let model = "openai:gpt-5.2".parse().ok();
    let Some(model) = model else {
        return (Tally::default(), std::time::Duration::ZERO);
    };
    let react = ReAct::new(
        ReActConfig::new(model)
            .with_system_prompt("You are a research assistant.")
            .with_context_policy(policy)
            .with_max_iterations(4),
    );
    let env = FixedEnv::new(0);
    let mut state = react.init(&env);
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut tally = Tally::default();
    let mut previous: Option<Vec<Message>> = None;
    let words = |rng: &mut fastrand::Rng, lo: usize, hi: usize| "word ".repeat(rng.usize(lo..hi));
    let start = Instant::now();
    for turn in 0..TURNS {
        let request = format!("r{turn}");
        let input = AgentRequest {
            attachments: Default::default(),
            query: format!("question {turn}: {}", words(&mut rng, 20, 120)),
            context_policy: None,
            response_format: None,
        };
        let mut inbound = signal(&env, AGENT_REQUEST, &request, &input);
        // Feed the strategy until the turn completes, answering each directive.
        while let Some(sig) = inbound.take() {
            let Ok(directives) = react.handle(&mut state, &sig, &env) else {
                break;
            };
            for directive in directives {
                match directive {
                    Directive::LlmStream(stream) => {
                        let messages = stream.request.messages;
                        tally.calls += 1;
                        tally.messages += messages.len() as u64;
                        if previous.as_ref().is_some_and(|p| messages.starts_with(p)) {
                            tally.prefix_kept += 1;
                        }
                        let first_call = matches!(messages.last(), Some(Message::User { .. }));
                        previous = Some(messages);
                        let message = if first_call {
                            let args =
                                format!(r#"{{"query":"{}"}}"#, words(&mut rng, 2, 20).trim());
                            AssistantMessage {
                                blocks: vec![
                                    AssistantBlock::text("Let me look that up."),
                                    AssistantBlock::tool_use(
                                        format!("tc{turn}"),
                                        "search",
                                        ToolArgs::from_text(args),
                                    ),
                                ],
                                stop_reason: StopReason::ToolUse,
                            }
                        } else {
                            AssistantMessage::text(format!(
                                "answer {turn}: {}",
                                words(&mut rng, 30, 150)
                            ))
                        };
                        let result = LlmResult {
                            call_id: stream.call_id,
                            response: LlmResponse::new(message, Usage::default()),
                        };
                        inbound = signal(&env, motet_agents::LLM_RESULT, &request, &result);
                    }
                    Directive::ToolExec(exec) => {
                        let result = ToolResultSignal::new(
                            exec.call_id,
                            ToolResult::ok(exec.tool_call_id, words(&mut rng, 40, 250)),
                        );
                        inbound = signal(&env, TOOL_RESULT, &request, &result);
                    }
                    _ => {}
                }
            }
        }
    }
    let elapsed = start.elapsed();
    tally.boundaries = state
        .thread
        .to_list()
        .iter()
        .filter(|e| matches!(e.body, motet_agents::EntryBody::Boundary { .. }))
        .count() as u64;
    (tally, elapsed)
}

fn variant(name: &str, window: WindowMode, low_water: f64) -> Report {
    let (tally, elapsed) = simulate(window, low_water);
    let comparable = tally.calls.saturating_sub(1).max(1);
    let ratio = tally.prefix_kept as f64 / comparable as f64;
    Report::new("prefix", name, tally.calls, elapsed)
        // Three decimals: the target (0.9) sits within a rounding step of the measured value.
        .with("prefix_stable_ratio", (ratio * 1000.0).round() / 1000.0)
        .with("llm_calls", tally.calls)
        .with("prefix_kept", tally.prefix_kept)
        .with("low_water", low_water)
        .with("boundaries", tally.boundaries)
        .with(
            "avg_messages",
            round2(tally.messages as f64 / tally.calls.max(1) as f64),
        )
}

/// The prefix-stable ratio of the stable and the sliding window.
pub(crate) fn run() -> Vec<Report> {
    vec![
        variant("stable", WindowMode::Stable, 0.7),
        variant("sliding", WindowMode::Sliding, 0.7),
        // The knob: a lower low-water mark trades kept history for fewer cache misses.
        variant("stable_low_water_0.5", WindowMode::Stable, 0.5),
    ]
}
