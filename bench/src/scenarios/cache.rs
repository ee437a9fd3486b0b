//! `cache`: how much of each prompt a real server takes from its prompt cache over a long
//! session — the share that prefix stability is for.
//!
//! The real ReAct strategy runs a conversation against a llama.cpp server with its prompt cache
//! on (`MOTET_LLM_CACHE=1 bash scripts/local-llm.sh start 8090`, named by
//! `MOTET_LOCAL_LLM_URL`), through motet's Chat Completions client: each turn is a user
//! question, a forced `lookup` tool call, a scripted tool result and the model's answer (the
//! model may call the tool again, up to three calls a turn), every reply at most 40 tokens.
//! The window is small (1,000 estimated tokens), so boundaries are crossed many times.
//! `stable` is motet's default window (a boundary committed on overflow, history left at 0.7
//! of the budget); `sliding` is the seeds' window that drops the oldest groups on every call
//! once full. `cached_share` is the server's own figure: the cached prompt tokens it reports
//! (`usage.prompt_tokens_details.cached_tokens`) over the prompt tokens it reports.
//!
//! `MOTET_BENCH_CACHE_BUDGET` sets the window's input budget (default 1,000 estimated tokens;
//! the server's context per slot must hold it), `MOTET_BENCH_CACHE_TURNS` sets the turns of `stable` (default 200) and
//! `MOTET_BENCH_CACHE_SLIDING_TURNS` those of `sliding` (default 50: its window is full after
//! a few turns and from then on every call evaluates the whole window again, about ten times
//! the time of a cached call on one CPU thread).

use std::time::{Duration, Instant};

use motet_agents::{
    AGENT_REQUEST, AgentRequest, ContextPolicy, FixedEnv, LLM_RESULT, LlmResult, ReAct,
    ReActConfig, Strategy, TOOL_RESULT, ToolResultSignal, WindowMode,
};
use motet_directives::{Directive, LlmOptions, ToolChoice, ToolDef, ToolDefs, ToolResult, Usage};
use motet_providers::{Dialect, HttpClient, LlmClient};
use motet_signals::Signal;
use serde::Serialize;
use serde_json::json;

use crate::report::{Report, round2};

const SEED: u64 = 0x6361_6368;
const MODEL: &str = "openai-compat:smollm2-135m";

/// The window's input budget, in estimated tokens; the server's slot must hold it (the
/// estimate runs above the model's real count for this text).
const DEFAULT_BUDGET: u32 = 1_000;

/// The output limit of each call: room for a tool call's pretty-printed arguments.
const MAX_TOKENS: u32 = 40;

/// Words the scripted questions and tool results are drawn from.
const WORDS: &[&str] = &[
    "river", "city", "school", "history", "north", "market", "bridge", "winter", "music", "harbor",
    "garden", "station", "library", "valley", "island", "forest", "museum", "council", "railway",
    "festival", "century", "mountain", "village", "castle", "painter", "battle", "treaty", "coast",
    "temple", "canal", "the", "of", "and", "in", "was", "built", "near", "after", "during", "old",
    "new", "large", "small", "first", "last", "many", "known",
];

/// What one session measured.
#[derive(Default)]
struct Tally {
    calls: u64,
    prompt_tokens: u64,
    cached_tokens: u64,
    prefix_kept: u64,
    boundaries: u64,
    tool_calls: u64,
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn signal<T: Serialize>(env: &FixedEnv, ty: &str, request: &str, data: &T) -> Option<Signal> {
    use motet_agents::Env as _;
    Signal::builder(ty, "bench")
        .with_id(env.fresh_id("in"))
        .with_time(None)
        .with_thread_id("bench-cache")
        .with_request_id(request)
        .with_data(data)
        .build()
        .ok()
}

fn words(rng: &mut fastrand::Rng, lo: usize, hi: usize) -> String {
    let count = rng.usize(lo..hi);
    let picked: Vec<&str> = (0..count)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect();
    picked.join(" ")
}

fn strategy(window: WindowMode, budget: u32) -> Option<ReAct> {
    let policy = ContextPolicy::new()
        .with_max_input_tokens(budget)
        .with_reserve_output_tokens(0)
        .with_keep_last_turns(0)
        .with_window(window);
    let lookup = ToolDef::new(
        "lookup",
        "Look a topic up in the encyclopedia.",
        json!({"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}),
    );
    let mut config = ReActConfig::new(MODEL.parse().ok()?)
        .with_system_prompt("You answer questions in a few words. Look topics up first.")
        .with_tools(ToolDefs::from(vec![lookup]))
        .with_tool_choice(ToolChoice::Tool {
            name: "lookup".into(),
        })
        .with_max_iterations(3)
        .with_context_policy(policy);
    config.options = LlmOptions {
        max_tokens: Some(MAX_TOKENS),
        temperature: Some(0.0),
        ..LlmOptions::default()
    };
    Some(ReAct::new(config))
}

/// Runs `turns` turns against the server at `url`; `None` when the setup or a call fails.
fn session(url: &str, window: WindowMode, turns: usize, budget: u32) -> Option<(Tally, Duration)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).ok()?;
    let react = strategy(window, budget)?;
    let env = FixedEnv::new(0);
    let mut state = react.init(&env);
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut tally = Tally::default();
    let mut previous: Option<Vec<motet_directives::Message>> = None;
    let start = Instant::now();
    for turn in 0..turns {
        let request = format!("r{turn}");
        let input = AgentRequest {
            attachments: Default::default(),
            query: format!("Question {turn}: {}?", words(&mut rng, 8, 20)),
            context_policy: None,
            response_format: None,
        };
        let mut inbound = signal(&env, AGENT_REQUEST, &request, &input);
        while let Some(sig) = inbound.take() {
            let directives = match react.handle(&mut state, &sig, &env) {
                Ok(directives) => directives,
                Err(error) => {
                    eprintln!("cache: the strategy failed on turn {turn}: {error}");
                    return None;
                }
            };
            for directive in directives {
                match directive {
                    Directive::LlmStream(stream) => {
                        let messages = stream.request.messages.clone();
                        if previous.as_ref().is_some_and(|p| messages.starts_with(p)) {
                            tally.prefix_kept += 1;
                        }
                        previous = Some(messages);
                        let response = match runtime.block_on(client.complete(stream.request)) {
                            Ok(response) => response,
                            Err(error) => {
                                eprintln!("cache: call {} failed: {error}", tally.calls + 1);
                                return None;
                            }
                        };
                        tally.calls += 1;
                        count(&mut tally, response.usage);
                        let result = LlmResult {
                            call_id: stream.call_id,
                            response,
                        };
                        inbound = signal(&env, LLM_RESULT, &request, &result);
                    }
                    Directive::ToolExec(exec) => {
                        tally.tool_calls += 1;
                        let text = format!("Encyclopedia: {}.", words(&mut rng, 15, 40));
                        let result = ToolResultSignal::new(
                            exec.call_id,
                            ToolResult::ok(exec.tool_call_id, text),
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
    Some((tally, elapsed))
}

fn count(tally: &mut Tally, usage: Usage) {
    tally.prompt_tokens += usage.input_tokens;
    tally.cached_tokens += usage.cache_read_tokens;
}

/// One variant's report and the cached tokens it saw.
fn variant(
    url: &str,
    (name, window, turns): (&str, WindowMode, usize),
    budget: u32,
) -> Option<(Report, u64)> {
    let (tally, elapsed) = session(url, window, turns, budget)?;
    let share = tally.cached_tokens as f64 / tally.prompt_tokens.max(1) as f64;
    let prefix = tally.prefix_kept as f64 / tally.calls.saturating_sub(1).max(1) as f64;
    let report = Report::new("cache", name, tally.calls, elapsed)
        .with("cached_share", (share * 1000.0).round() / 1000.0)
        .with("turns", turns as u64)
        .with("budget_tokens", budget)
        .with("llm_calls", tally.calls)
        .with("tool_calls", tally.tool_calls)
        .with("prompt_tokens", tally.prompt_tokens)
        .with("cached_tokens", tally.cached_tokens)
        .with("boundaries", tally.boundaries)
        .with("prefix_stable_ratio", (prefix * 1000.0).round() / 1000.0)
        .with(
            "avg_prompt_tokens",
            round2(tally.prompt_tokens as f64 / tally.calls.max(1) as f64),
        );
    Some((report, tally.cached_tokens))
}

/// The server-reported cached share of the stable and the sliding window.
pub(crate) fn run() -> Vec<Report> {
    let Some(url) = std::env::var("MOTET_LOCAL_LLM_URL")
        .ok()
        .map(|u| u.trim().trim_end_matches('/').to_owned())
        .filter(|u| !u.is_empty())
    else {
        eprintln!(
            "cache: MOTET_LOCAL_LLM_URL must name a llama.cpp server with its prompt cache on \
             (MOTET_LLM_CACHE=1 bash scripts/local-llm.sh start 8090)"
        );
        return Vec::new();
    };
    let stable = env_count("MOTET_BENCH_CACHE_TURNS", 200);
    let sliding = env_count("MOTET_BENCH_CACHE_SLIDING_TURNS", 50);
    let budget = u32::try_from(env_count(
        "MOTET_BENCH_CACHE_BUDGET",
        DEFAULT_BUDGET as usize,
    ))
    .unwrap_or(DEFAULT_BUDGET);
    let wanted: Vec<_> = [
        ("stable", WindowMode::Stable, stable),
        ("sliding", WindowMode::Sliding, sliding),
    ]
    .into_iter()
    .filter(|(_, _, turns)| *turns > 0)
    .collect();
    let measured: Vec<(Report, u64)> = wanted
        .iter()
        .map_while(|wanted| variant(&url, *wanted, budget))
        .collect();
    if measured.len() < wanted.len() {
        // A call failed; the failure was printed.
        return Vec::new();
    }
    if measured.iter().all(|(_, cached)| *cached == 0) {
        eprintln!(
            "cache: the server reported no cached tokens at all: is its prompt cache on \
             (MOTET_LLM_CACHE=1)?"
        );
        return Vec::new();
    }
    measured.into_iter().map(|(report, _)| report).collect()
}
