//! `budget`: how far a request's spending can pass its hard budget — at most one call's
//! `max_tokens`, the budgets' guarantee (docs/governance.md).
//!
//! 1,000 runs, each one request of a ReAct agent under a hard request budget drawn at random
//! (10,000 to 100,000 tokens), against a scripted model that never stops asking for a tool: each
//! call reports its prompt as the runtime estimates it and a random number of output tokens, up
//! to the call's `max_tokens` (which the budget sets: 4,096 for a model the capability table does
//! not know). The request runs until the budget refuses a call. Eight runs go at once, so calls
//! of different requests are in flight together. A run's overspend is what its request spent
//! (read from the usage ledger) past its limit; a run that ends any other way than with a
//! `budget` failure fails the scenario.
//!
//! Fields: `runs`, `max_overspend_tokens` (over all runs), `max_tokens_per_call` (the largest
//! `max_tokens` a call was sent with), `mean_calls_per_run`, `within_one_call` (whether the
//! first is at most the second).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use motet_agents::{Heuristic, ReAct, ReActConfig, estimate_message, estimate_tools};
use motet_directives::{
    AssistantBlock, AssistantMessage, LlmRequest, LlmResponse, StopReason, ToolArgs, Usage,
};
use motet_providers::budget::{Budget, BudgetLevel};
use motet_providers::{LlmClient, LlmEvents, ProviderError};
use motet_runtime::agent::{AgentSpec, AskError, AskOptions, Runtime};
use motet_runtime::store::{MemoryStore, ThreadStore, UsageFilter};
use motet_runtime::tool::{ToolError, ToolSet, tool_fn};

use crate::report::{Report, round2};

const RUNS: u64 = 1_000;
const AT_ONCE: usize = 8;
const SEED: u64 = 0x6275_6467;

/// A model that spends a random share of each call's `max_tokens` and always asks for a tool.
struct Spender {
    rng: std::sync::Mutex<fastrand::Rng>,
    largest_max_tokens: AtomicU64,
}

#[async_trait::async_trait]
impl LlmClient for Spender {
    async fn stream(&self, request: LlmRequest) -> Result<LlmEvents, ProviderError> {
        let max_tokens = u64::from(request.options.max_tokens.unwrap_or(0));
        self.largest_max_tokens
            .fetch_max(max_tokens, Ordering::Relaxed);
        let output = match self.rng.lock() {
            Ok(mut rng) => rng.u64(0..=max_tokens),
            Err(_) => max_tokens,
        };
        let input = request
            .messages
            .iter()
            .map(|m| u64::from(estimate_message(&Heuristic, m)))
            .sum::<u64>()
            + estimate_tools(&Heuristic, &request.tools);
        let response = LlmResponse::new(
            AssistantMessage {
                blocks: vec![AssistantBlock::tool_use(
                    "call",
                    "add",
                    ToolArgs::from_text(r#"{"a": 1, "b": 2}"#),
                )],
                stop_reason: StopReason::ToolUse,
            },
            Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            },
        );
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Runs the scenario.
pub(crate) fn run() -> Vec<Report> {
    super::agents::block_on(measure())
}

async fn measure() -> Vec<Report> {
    let model = Arc::new(Spender {
        rng: std::sync::Mutex::new(fastrand::Rng::with_seed(SEED)),
        largest_max_tokens: AtomicU64::new(0),
    });
    let store = Arc::new(MemoryStore::new());
    let Ok(runtime) = Runtime::builder()
        .llm(Arc::clone(&model) as Arc<dyn LlmClient>)
        .store(store.clone())
        .build()
    else {
        eprintln!("budget: the runtime did not build");
        return Vec::new();
    };
    let tools = match ToolSet::builder()
        .tool(tool_fn(
            "add",
            "Adds two integers.",
            |args: AddArgs| async move { Ok::<_, ToolError>((args.a + args.b).to_string()) },
        ))
        .build()
    {
        Ok(tools) => Arc::new(tools),
        Err(error) => {
            eprintln!("budget: the tool set did not build: {error}");
            return Vec::new();
        }
    };
    let Ok(model_ref) = "openai-compat:scripted".parse::<motet_directives::ModelRef>() else {
        return Vec::new();
    };
    let mut rng = fastrand::Rng::with_seed(SEED ^ 1);
    let limits: Vec<u64> = (0..RUNS).map(|_| rng.u64(10_000..=100_000)).collect();
    let mut agents = Vec::new();
    for (run, limit) in limits.iter().enumerate() {
        let react = ReAct::new(
            ReActConfig::new(model_ref.clone())
                .with_tools(tools.definitions())
                .with_max_iterations(10_000),
        );
        let spec = AgentSpec::new(format!("run-{run}"), react)
            .with_tools(Arc::clone(&tools))
            .with_budget(BudgetLevel::Request, Budget::tokens(*limit));
        match runtime.spawn(spec).await {
            Ok(agent) => agents.push(agent),
            Err(error) => {
                eprintln!("budget: an agent did not start: {error}");
                return Vec::new();
            }
        }
    }
    let started = Instant::now();
    let mut max_overspend = 0u64;
    let mut calls = 0u64;
    for (chunk, limits) in agents.chunks(AT_ONCE).zip(limits.chunks(AT_ONCE)) {
        let asks = chunk
            .iter()
            .map(|agent| agent.ask_with("add 1 and 2 until stopped", AskOptions::default()));
        for ((agent, limit), outcome) in chunk
            .iter()
            .zip(limits)
            .zip(futures::future::join_all(asks).await)
        {
            match outcome {
                Err(AskError::Failed { reply }) => {
                    let data: serde_json::Value = reply.data_as().unwrap_or_default();
                    if data["reason"]["error"]["kind"] != "budget" {
                        eprintln!("budget: a run ended otherwise than by its budget: {data}");
                        return Vec::new();
                    }
                }
                other => {
                    eprintln!("budget: a run ended otherwise than by its budget: {other:?}");
                    return Vec::new();
                }
            }
            let Ok(spent) = store.usage_totals(&UsageFilter::agent(agent.name())).await else {
                eprintln!("budget: the ledger could not be read");
                return Vec::new();
            };
            calls += spent.calls;
            max_overspend = max_overspend.max(spent.usage.total_tokens().saturating_sub(*limit));
        }
    }
    let elapsed = started.elapsed();
    runtime.shutdown().await;
    let max_tokens = model.largest_max_tokens.load(Ordering::Relaxed);
    vec![
        Report::new("budget", "hard_request_budget", RUNS, elapsed)
            .with("runs", RUNS)
            .with("max_overspend_tokens", max_overspend)
            .with("max_tokens_per_call", max_tokens)
            .with("within_one_call", max_overspend <= max_tokens)
            .with("mean_calls_per_run", round2(calls as f64 / RUNS as f64)),
    ]
}
