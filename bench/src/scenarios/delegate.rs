//! `delegate`: a delegation round trip — an agent asked, its model calling another agent as a
//! tool (`AgentTool`), that agent answering, the first answering from its result — beside the
//! same model calls made as two plain asks in sequence (the first agent calling a local tool
//! instead, then the second agent asked directly). Both against a zero-latency model, so what
//! is measured is what delegating costs the runtime: the callee's request built and routed by
//! name, the relay of its deltas and waits, its usage carried back.
//!
//! Each round trip runs on fresh threads (`"new"`), as each baseline ask does; rounds of both
//! alternate so drift falls on both alike.
//!
//! Fields: `delegate_vs_two_asks` (the round trip's time over the two asks'; goal ≤ 1.2),
//! `two_asks_ns` (the baseline's time per pair), `delegate_vs_one_ask` (the round trip over
//! one plain single-call ask, for scale).

use std::time::{Duration, Instant};

use motet_directives::{
    AssistantBlock, AssistantMessage, LlmRequest, LlmResponse, Message, StopReason, ToolArgs, Usage,
};
use motet_providers::{LlmClient, LlmEvents, ProviderError};
use motet_runtime::agent::{AgentHandle, AgentTool, AskOptions, ReActAgent, Runtime};
use motet_runtime::tool::{ToolError, tool_fn};

use crate::report::{Report, round2};

const ROUNDS: u32 = 8;
const PER_ROUND: u32 = 250;
const LEAD: &str = "lead";
const BASE: &str = "base";
const WORKER: &str = "worker";

/// Answers at once: a lead (or its baseline twin) asked by a person calls its tool; shown the
/// tool's result, it answers; the worker answers.
struct Instant0;

#[async_trait::async_trait]
impl LlmClient for Instant0 {
    async fn stream(&self, request: LlmRequest) -> Result<LlmEvents, ProviderError> {
        let system = request.messages.iter().find_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        });
        let asked = matches!(request.messages.last(), Some(Message::User { .. }));
        let block = match (system, asked) {
            (Some(LEAD), true) => Some(AssistantBlock::tool_use(
                "t1",
                "ask_worker",
                ToolArgs::from_text(r#"{"input": "what is it?"}"#),
            )),
            (Some(BASE), true) => Some(AssistantBlock::tool_use(
                "t1",
                "note",
                ToolArgs::from_text(r#"{"input": "what is it?"}"#),
            )),
            _ => None,
        };
        let (blocks, stop_reason) = match block {
            Some(call) => (vec![call], StopReason::ToolUse),
            None => (
                vec![AssistantBlock::text("it is done")],
                StopReason::EndTurn,
            ),
        };
        let response = LlmResponse::new(
            AssistantMessage {
                blocks,
                stop_reason,
            },
            Usage {
                input_tokens: 10,
                output_tokens: 3,
                ..Usage::default()
            },
        );
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteArgs {
    input: String,
}

/// Runs the scenario.
pub(crate) fn run() -> Vec<Report> {
    super::agents::block_on(measure())
}

fn fresh() -> AskOptions {
    AskOptions {
        thread_id: Some(motet_runtime::agent::NEW_THREAD.to_owned()),
        ..AskOptions::default()
    }
}

async fn spawn(runtime: &Runtime, agent: ReActAgent) -> Option<AgentHandle> {
    match runtime.spawn(agent).await {
        Ok(handle) => Some(handle),
        Err(error) => {
            eprintln!("delegate: an agent did not start: {error}");
            None
        }
    }
}

async fn measure() -> Vec<Report> {
    let Ok(runtime) = Runtime::builder().llm(Instant0).build() else {
        eprintln!("delegate: the runtime did not build");
        return Vec::new();
    };
    let model = "openai-compat:scripted";
    let agent = |name: &str| ReActAgent::new(name, model).system(name);
    let note = tool_fn("note", "Notes a question.", |args: NoteArgs| async move {
        Ok::<_, ToolError>(args.input)
    });
    let (Some(lead), Some(base), Some(worker)) = (
        spawn(&runtime, agent(LEAD).tool(AgentTool::new(WORKER))).await,
        spawn(&runtime, agent(BASE).tool(note)).await,
        spawn(&runtime, agent(WORKER)).await,
    ) else {
        return Vec::new();
    };
    // Warm up both paths, and check each answers as it should: a broken setup fails loudly.
    for _ in 0..50 {
        let delegated = lead.ask_with("go", fresh()).await;
        let plain = base.ask_with("go", fresh()).await;
        match (&delegated, &plain) {
            (Ok(d), Ok(p)) if d.usage.input_tokens == 30 && p.usage.input_tokens == 20 => {}
            _ => {
                eprintln!("delegate: the warm-up failed: {delegated:?} / {plain:?}");
                return Vec::new();
            }
        }
    }
    let (mut delegated, mut pairs, mut singles) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            if lead.ask_with("go", fresh()).await.is_err() {
                eprintln!("delegate: a delegation failed");
                return Vec::new();
            }
        }
        delegated += start.elapsed();
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            let first = base.ask_with("go", fresh()).await;
            let second = worker.ask_with("what is it?", fresh()).await;
            if first.is_err() || second.is_err() {
                eprintln!("delegate: a plain ask failed");
                return Vec::new();
            }
        }
        pairs += start.elapsed();
        let start = Instant::now();
        for _ in 0..PER_ROUND {
            if worker.ask_with("what is it?", fresh()).await.is_err() {
                eprintln!("delegate: a plain ask failed");
                return Vec::new();
            }
        }
        singles += start.elapsed();
    }
    runtime.shutdown().await;
    let n = u64::from(ROUNDS * PER_ROUND);
    let ratio = |a: Duration, b: Duration| round2(a.as_secs_f64() / b.as_secs_f64().max(1e-9));
    vec![
        Report::new("delegate", "agent_as_tool_round_trip", n, delegated)
            .with("delegate_vs_two_asks", ratio(delegated, pairs))
            .with("two_asks_ns", round2(pairs.as_nanos() as f64 / n as f64))
            .with("delegate_vs_one_ask", ratio(delegated, singles)),
    ]
}
