//! `estimate`: each token estimator's error against real prompt-token counts, and its cost.
//!
//! The real counts are the providers' own: every recorded request in providers/tests/fixtures
//! (OpenAI Chat and Responses, Anthropic, Gemini, and a llama.cpp server speaking three of
//! those protocols) whose recorded response reports its prompt tokens in its usage. Each
//! request's messages are counted as the estimator counts a message (its text, tool calls and
//! ids as parts, one message overhead each), its tools as the projection counts them (the
//! schema as compact JSON), so the figure is the error the budget has in practice, envelope and
//! all — not the tokenizer's error on bare text.
//!
//! Requests that offer a hosted tool (web search, code execution, file search, a remote MCP
//! server) are left out: their recorded count includes what the provider's own loop added on
//! its side (search results, listings), which no estimate of the request can see.
//!
//! Estimators: `heuristic` (the seeds' `bytes / 4 + 10`); `calibrated` (the heuristic scaled
//! by the previous recorded call of the same provider directory: its count over its estimate —
//! what "the usage of the previous call" gives a live agent); with the bench's `tiktoken`
//! feature, `tiktoken` (o200k_base) on the OpenAI requests only, beside `heuristic_openai` on
//! the same requests.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use motet_agents::{Calibrated, Heuristic, TokenEstimator};
use serde_json::Value;

use crate::report::{Report, round2};

/// Repetitions of the timing loop over every sample's messages.
const ROUNDS: u64 = 200;

/// One recorded request: its messages' parts, its tools' JSON, and the prompt tokens counted.
struct Sample {
    provider: String,
    messages: Vec<Vec<String>>,
    tools: Vec<String>,
    actual: u64,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/tests/fixtures")
}

/// Keys whose string values are protocol, not content.
const SKIPPED: &[&str] = &[
    "role", "type", "model", "_source", "method", "url", "stream",
];

fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => {
            for (k, v) in map {
                if !SKIPPED.contains(&k.as_str()) {
                    strings(v, out);
                }
            }
        }
        _ => {}
    }
}

/// The messages of a request body (every dialect's list, and its system prompt as one more).
fn messages(body: &Value) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for key in ["system", "systemInstruction", "instructions"] {
        if let Some(system) = body.get(key) {
            let mut parts = Vec::new();
            strings(system, &mut parts);
            out.push(parts);
        }
    }
    for key in ["messages", "input", "contents"] {
        match body.get(key) {
            Some(Value::Array(items)) => {
                for item in items {
                    let mut parts = Vec::new();
                    strings(item, &mut parts);
                    out.push(parts);
                }
            }
            Some(Value::String(text)) => out.push(vec![text.clone()]),
            _ => {}
        }
    }
    out
}

/// Whether `tool` is the provider's own (no schema of ours): web search, code execution, ...
fn hosted(tool: &Value) -> bool {
    [
        "input_schema",
        "parameters",
        "function",
        "functionDeclarations",
    ]
    .iter()
    .all(|key| tool.get(key).is_none())
}

fn tools(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(Value::Array(tools)) = body.get("tools") {
        for tool in tools {
            // Gemini nests its declarations one level down.
            match tool.get("functionDeclarations") {
                Some(Value::Array(decls)) => out.extend(decls.iter().map(Value::to_string)),
                _ => out.push(tool.to_string()),
            }
        }
    }
    out
}

/// The prompt tokens a recorded response reports: the largest count under any of the
/// dialects' names (Anthropic's cached parts added to its input).
fn actual(sse: &str) -> Option<u64> {
    fn walk(value: &Value, best: &mut u64) {
        match value {
            Value::Object(map) => {
                let get = |k: &str| map.get(k).and_then(Value::as_u64).unwrap_or(0);
                let here = get("prompt_tokens").max(get("promptTokenCount")).max(
                    get("input_tokens")
                        + get("cache_read_input_tokens")
                        + get("cache_creation_input_tokens"),
                );
                *best = (*best).max(here);
                map.values().for_each(|v| walk(v, best));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, best)),
            _ => {}
        }
    }
    let mut best = 0;
    for line in sse.lines() {
        let data = line.strip_prefix("data:").unwrap_or(line).trim();
        if let Ok(value) = serde_json::from_str::<Value>(data) {
            walk(&value, &mut best);
        }
    }
    (best > 0).then_some(best)
}

fn load() -> Vec<Sample> {
    let mut samples = Vec::new();
    let Ok(dirs) = std::fs::read_dir(fixtures()) else {
        return samples;
    };
    let mut dirs: Vec<PathBuf> = dirs.filter_map(|d| d.ok().map(|d| d.path())).collect();
    dirs.sort();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let Ok(files) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut requests: Vec<PathBuf> = files
            .filter_map(|f| f.ok().map(|f| f.path()))
            .filter(|p| p.to_string_lossy().ends_with(".request.json"))
            .collect();
        requests.sort();
        for request in requests {
            let stem = request.to_string_lossy().replace(".request.json", "");
            let (Ok(text), Ok(sse)) = (
                std::fs::read_to_string(&request),
                std::fs::read_to_string(format!("{stem}.sse")),
            ) else {
                continue;
            };
            let Ok(json) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let body = json.get("body").unwrap_or(&json);
            let Some(actual) = actual(&sse) else { continue };
            let offers_hosted = body
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|tools| tools.iter().any(hosted));
            if offers_hosted {
                continue;
            }
            samples.push(Sample {
                provider: dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                messages: messages(body),
                tools: tools(body),
                actual,
            });
        }
    }
    samples
}

fn estimate(estimator: &dyn TokenEstimator, sample: &Sample) -> u64 {
    let messages: u64 = sample
        .messages
        .iter()
        .map(|parts| {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            u64::from(estimator.estimate_parts(&parts))
        })
        .sum();
    let tools: u64 = sample
        .tools
        .iter()
        .map(|t| u64::from(estimator.estimate_parts(&[t])))
        .sum();
    messages + tools
}

/// Mean and 95th percentile of the absolute errors in percent.
fn errors(pairs: &[(u64, u64)]) -> (f64, f64) {
    let mut pct: Vec<f64> = pairs
        .iter()
        .map(|&(est, actual)| (est as f64 - actual as f64).abs() / actual as f64 * 100.0)
        .collect();
    if pct.is_empty() {
        return (0.0, 0.0);
    }
    pct.sort_by(f64::total_cmp);
    let mean = pct.iter().sum::<f64>() / pct.len() as f64;
    let at = ((pct.len() as f64 * 0.95).ceil() as usize).clamp(1, pct.len()) - 1;
    (mean, pct[at])
}

/// One estimator's line: its errors over `samples` and its cost per message.
fn line(name: &str, samples: &[&Sample], estimates: &[u64], timed: &dyn TokenEstimator) -> Report {
    let pairs: Vec<(u64, u64)> = estimates
        .iter()
        .zip(samples)
        .map(|(&e, s)| (e, s.actual))
        .collect();
    let (mean, p95) = errors(&pairs);
    let count: u64 = samples
        .iter()
        .map(|s| (s.messages.len() + s.tools.len()) as u64)
        .sum();
    let start = Instant::now();
    for _ in 0..ROUNDS {
        for sample in samples {
            black_box(estimate(timed, black_box(sample)));
        }
    }
    let elapsed = start.elapsed();
    let messages = count * ROUNDS;
    let ns_per_message = if messages == 0 {
        0.0
    } else {
        elapsed.as_nanos() as f64 / messages as f64
    };
    let bias: f64 = pairs
        .iter()
        .map(|&(e, a)| (e as f64 - a as f64) / a as f64 * 100.0)
        .sum::<f64>()
        / pairs.len().max(1) as f64;
    Report::new("estimate", name, messages, elapsed)
        .with("samples", samples.len())
        .with("error_mean_pct", round2(mean))
        .with("error_p95_pct", round2(p95))
        .with("bias_mean_pct", round2(bias))
        .with("ns_per_message", round2(ns_per_message))
}

/// One line per estimator.
pub(crate) fn run() -> Vec<Report> {
    let samples = load();
    if samples.is_empty() {
        eprintln!(
            "estimate: no recorded request with a prompt-token count under {}",
            fixtures().display()
        );
        return Vec::new();
    }
    let all: Vec<&Sample> = samples.iter().collect();
    let heuristic: Vec<u64> = all.iter().map(|s| estimate(&Heuristic, s)).collect();
    // The previous call of the same provider directory calibrates the next.
    let mut calibrated = Vec::with_capacity(all.len());
    let mut previous: Option<(&str, u64, u64)> = None;
    for (sample, &guess) in all.iter().zip(&heuristic) {
        let scale = match previous {
            Some((provider, est, actual)) if provider == sample.provider => {
                Calibrated::from_usage(est, actual)
            }
            _ => Calibrated::from_usage(0, 0),
        };
        calibrated.push(estimate(&scale, sample));
        previous = Some((&sample.provider, guess, sample.actual));
    }
    let mut reports = vec![
        line("heuristic", &all, &heuristic, &Heuristic),
        line(
            "calibrated",
            &all,
            &calibrated,
            &Calibrated::from_usage(1_000, 1_200),
        ),
    ];
    reports.extend(openai(&samples));
    reports
}

#[cfg(feature = "tiktoken")]
fn openai(samples: &[Sample]) -> Vec<Report> {
    let Some(tiktoken) = motet_agents::Tiktoken::o200k() else {
        eprintln!("estimate: the o200k_base ranks could not be read");
        return Vec::new();
    };
    let openai: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.provider.starts_with("openai"))
        .collect();
    let heuristic: Vec<u64> = openai.iter().map(|s| estimate(&Heuristic, s)).collect();
    let exact: Vec<u64> = openai.iter().map(|s| estimate(&tiktoken, s)).collect();
    vec![
        line("heuristic_openai", &openai, &heuristic, &Heuristic),
        line("tiktoken_openai", &openai, &exact, &tiktoken),
    ]
}

#[cfg(not(feature = "tiktoken"))]
fn openai(_samples: &[Sample]) -> Vec<Report> {
    Vec::new()
}

/// `estimate_live`: the same estimators against a llama.cpp server's own prompt-token counts
/// over one growing conversation (named by `MOTET_LOCAL_LLM_URL`; `bash scripts/local-llm.sh
/// start` starts one). Each step adds a user question (and, from the second, the answer to the
/// one before) of seeded length and asks the server for one token through motet's Chat
/// Completions client with three tools offered: its `usage.prompt_tokens` is the real count of
/// what motet sent, chat template and tools included. Here the previous call is the same
/// conversation one turn shorter, as in a live agent, which is what `calibrated` is for.
pub(crate) fn run_live() -> Vec<Report> {
    use motet_directives::{AssistantMessage, LlmOptions, LlmRequest, Message, ToolDef, ToolDefs};
    use motet_providers::{Dialect, HttpClient, LlmClient};

    // The server's slot holds 2,048 tokens: the last step stays well inside it.
    const STEPS: usize = 20;
    let Some(url) = std::env::var("MOTET_LOCAL_LLM_URL")
        .ok()
        .map(|u| u.trim().trim_end_matches('/').to_owned())
        .filter(|u| !u.is_empty())
    else {
        eprintln!(
            "estimate_live: MOTET_LOCAL_LLM_URL must name a llama.cpp server (bash scripts/local-llm.sh start)"
        );
        return Vec::new();
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let Ok(client) = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None) else {
        return Vec::new();
    };
    let Ok(model) = "openai-compat:smollm2-135m".parse::<motet_directives::ModelRef>() else {
        return Vec::new();
    };
    let tools: ToolDefs = ["lookup", "search", "fetch"]
        .iter()
        .map(|name| {
            ToolDef::new(
                *name,
                format!("Runs a {name} against the records and returns what it finds."),
                serde_json::json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "what to look for"}
                }, "required": ["query"]}),
            )
        })
        .collect::<Vec<_>>()
        .into();
    let mut rng = fastrand::Rng::with_seed(0x6573_7469);
    let words = [
        "the",
        "order",
        "shipped",
        "invoice",
        "customer",
        "refund",
        "42",
        "address",
        "delayed",
        "warehouse",
        "priority",
        "ticket",
        "résumé",
        "naïve",
        "status:",
        "{\"id\": 7}",
    ];
    let mut text = |n: usize| {
        (0..n)
            .map(|_| words[rng.usize(..words.len())])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut messages = vec![Message::system("You answer questions about orders.")];
    let mut samples = Vec::new();
    let options = LlmOptions {
        max_tokens: Some(1),
        ..LlmOptions::default()
    };
    for step in 0..STEPS {
        if step > 0 {
            messages.push(Message::Assistant(AssistantMessage::text(text(
                8 + step / 2,
            ))));
        }
        messages.push(Message::user(text(6 + step)));
        let request = LlmRequest::new(model.clone(), messages.clone())
            .with_tools(tools.clone())
            .with_options(options.clone());
        let actual = match runtime.block_on(client.complete(request)) {
            Ok(response) => response.usage.input_tokens,
            // Past the server's window the conversation ends; what was counted stands.
            Err(error) if samples.len() >= 5 => {
                eprintln!(
                    "estimate_live: stopped after {} steps: {error}",
                    samples.len()
                );
                break;
            }
            Err(error) => {
                eprintln!("estimate_live: the server failed: {error}");
                return Vec::new();
            }
        };
        let parts = messages.iter().map(message_parts).collect();
        let tool_parts = tools
            .iter()
            .map(|t| {
                serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters})
                    .to_string()
            })
            .collect();
        samples.push(Sample {
            provider: "llama-cpp-live".into(),
            messages: parts,
            tools: tool_parts,
            actual,
        });
    }
    let all: Vec<&Sample> = samples.iter().collect();
    let heuristic: Vec<u64> = all.iter().map(|s| estimate(&Heuristic, s)).collect();
    let mut calibrated = Vec::with_capacity(all.len());
    let mut previous: Option<(u64, u64)> = None;
    for (sample, &guess) in all.iter().zip(&heuristic) {
        let scale = previous.map_or(Calibrated::from_usage(0, 0), |(e, a)| {
            Calibrated::from_usage(e, a)
        });
        calibrated.push(estimate(&scale, sample));
        previous = Some((guess, sample.actual));
    }
    let mut reports = vec![
        line("heuristic_live", &all, &heuristic, &Heuristic),
        line(
            "calibrated_live",
            &all,
            &calibrated,
            &Calibrated::from_usage(1_000, 1_200),
        ),
    ];
    reports.extend(live_tiktoken(&all));
    reports
}

/// A message's parts as the estimator counts them (text; a turn's text blocks).
fn message_parts(message: &motet_directives::Message) -> Vec<String> {
    use motet_directives::Message;
    match message {
        Message::System { content } => vec![content.clone()],
        Message::User { content } => vec![content.text().into_owned()],
        Message::Assistant(turn) => vec![turn.to_string()],
        Message::ToolResults { results } => results.iter().map(|r| r.content.clone()).collect(),
    }
}

#[cfg(feature = "tiktoken")]
fn live_tiktoken(all: &[&Sample]) -> Vec<Report> {
    // Not the model's tokenizer (SmolLM2 has its own): how far a real BPE of another family is.
    let Some(tiktoken) = motet_agents::Tiktoken::o200k() else {
        return Vec::new();
    };
    let exact: Vec<u64> = all.iter().map(|s| estimate(&tiktoken, s)).collect();
    vec![line("tiktoken_live", all, &exact, &tiktoken)]
}

#[cfg(not(feature = "tiktoken"))]
fn live_tiktoken(_all: &[&Sample]) -> Vec<Report> {
    Vec::new()
}
