//! `serve`: what motet-serve adds to an HTTP request.
//!
//! - `openai_ask`: one non-streamed `POST /v1/chat/completions` round trip over loopback HTTP/1
//!   (keep-alive) to a ReAct agent on a zero-latency model that answers at once (one model call,
//!   no tool): the body parsed, the ask submitted on a fresh thread (the stateless client's
//!   path), the thread started and committed to the in-memory store, the answer written as a
//!   `chat.completion`.
//! - `floor_axum_json`: the same request to a bare axum handler on the same server stack that
//!   does the same JSON work (parse the request, build a completion of the same shape) and asks
//!   nothing.
//! - `agent_ask`: the same ask through `AgentHandle::ask_with` on a fresh thread, no HTTP: the
//!   runtime's share of `openai_ask`.
//! - `native_start`: `POST /api/agents/calc/threads/new/runs` with `{"query"}`, answered `201`
//!   with the run once it is started (the native API's ask: its answer streams on the run's
//!   events), beside the same floor.
//!
//! Then the stream lines (`streams.rs`): 1,000 SSE subscribers of native runs beside a bare
//! axum SSE floor, and a reconnect storm.
//!
//! To profile one variant alone (under `valgrind --tool=callgrind`, say), set
//! `MOTET_BENCH_SERVE_ONLY=<variant>` and `MOTET_BENCH_SERVE_N=<requests>`: after the warm-up,
//! only that variant runs, `N` times, and no stream line is measured.
//!
//! Each variant runs `ROUNDS` rounds of `PER_ROUND` requests, one at a time from one client,
//! the variants alternating round by round (this machine's pace drifts within a run); p50 and
//! p99 are over every request of every round. `openai_ask` reports `overhead_p50_us` and
//! `overhead_p99_us` (its figure less the floor's) and `ratio_p50`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use motet_directives::{AssistantMessage, LlmResponse, Usage};
use motet_runtime::agent::{AgentHandle, AskOptions, NEW_THREAD, ReActAgent, Runtime};
use motet_serve::{Served, Tokens};

use crate::report::{Report, round2};

mod streams;

const ROUNDS: usize = 10;
const PER_ROUND: usize = 500;
const WARM_UP: usize = 300;

/// The request every variant sends: what an OpenAI client sends for one question.
const BODY: &str = r#"{"model":"calc","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is 2 + 3?"}]}"#;

/// A zero-latency model that answers `5` at once.
struct AnswerAtOnce;

#[async_trait::async_trait]
impl motet_providers::LlmClient for AnswerAtOnce {
    async fn stream(
        &self,
        _req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, motet_providers::ProviderError> {
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 1,
            ..Usage::default()
        };
        let events =
            motet_runtime::testing::events_of(LlmResponse::new(AssistantMessage::text("5"), usage));
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// The floor: parse the request, build a completion of the same shape, ask nothing.
async fn floor_handler(body: Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    axum::Json(serde_json::json!({
        "id": "chatcmpl-req_0355N17i42Rnnuf6IKl7e3",
        "object": "chat.completion",
        "created": created,
        "model": request["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "5", "refusal": null},
            "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}},
        "motet": {"thread": "thread_0355N17bpGOoboc2FV1scN", "request": "req_0355N17i42Rnnuf6IKl7e3"},
    }))
    .into_response()
}

/// Serves `router` on a free loopback port; its base URL (`http://127.0.0.1:PORT`).
async fn serve(router: axum::Router) -> Option<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok()?;
    let base = format!("http://{}", listener.local_addr().ok()?);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Some(base)
}

/// One request with `body` to `url`; its round trip, `None` unless answered with `status` and
/// a body holding `expect`.
async fn post(
    client: &reqwest::Client,
    url: &str,
    body: &'static str,
    status: u16,
    expect: &[u8],
) -> Option<Duration> {
    let start = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .ok()?;
    let ok = response.status().as_u16() == status;
    let body = response.bytes().await.ok()?;
    let took = start.elapsed();
    let answered = body.windows(expect.len()).any(|w| w == expect);
    (ok && answered).then_some(took)
}

/// One `chat.completion` round trip to `url`.
async fn complete(client: &reqwest::Client, url: &str) -> Option<Duration> {
    post(client, url, BODY, 200, b"chatcmpl-").await
}

/// One native run started at `url`.
async fn start_run(client: &reqwest::Client, url: &str) -> Option<Duration> {
    post(client, url, START, 201, b"\"id\":\"req_").await
}

/// What starts a native run.
const START: &str = r#"{"query":"What is 2 + 3?"}"#;

/// One ask of `agent` on a fresh thread, no HTTP.
async fn ask(agent: &AgentHandle) -> Option<Duration> {
    let start = Instant::now();
    let options = AskOptions {
        thread_id: Some(NEW_THREAD.to_owned()),
        ..AskOptions::default()
    };
    let answer = agent.ask_with("What is 2 + 3?", options).await.ok()?;
    let took = start.elapsed();
    (answer.text == "5").then_some(took)
}

/// `n` round trips of `one`, appended to `into`; `None` if any failed.
async fn round<F, Fut>(n: usize, into: &mut Vec<Duration>, mut one: F) -> Option<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<Duration>>,
{
    for _ in 0..n {
        into.push(one().await?);
    }
    Some(())
}

/// The variants, in the order they alternate.
const VARIANTS: [&str; 4] = ["openai_ask", "floor_axum_json", "agent_ask", "native_start"];

async fn measure() -> Option<Vec<Report>> {
    let runtime = Runtime::builder()
        .llm(Arc::new(AnswerAtOnce))
        .build()
        .ok()?;
    let agent = runtime
        .spawn(ReActAgent::new("calc", "openai:gpt-5.2").system("You add numbers."))
        .await
        .ok()?;
    let served = Served::new(runtime.clone(), [agent.clone()], Tokens::open());
    let motet = serve(served.router()).await?;
    let openai_url = format!("{motet}/v1/chat/completions");
    let native_url = format!("{motet}/api/agents/calc/threads/new/runs");
    let floor_url = format!(
        "{}/v1/chat/completions",
        serve(
            axum::Router::new().route("/v1/chat/completions", axum::routing::post(floor_handler)),
        )
        .await?
    );
    let client = reqwest::Client::builder().build().ok()?;
    let one = |variant: usize| {
        let (client, agent) = (&client, &agent);
        let (openai_url, floor_url, native_url) = (&openai_url, &floor_url, &native_url);
        async move {
            match variant {
                0 => complete(client, openai_url).await,
                1 => complete(client, floor_url).await,
                2 => ask(agent).await,
                _ => start_run(client, native_url).await,
            }
        }
    };

    let mut warm = Vec::new();
    for variant in 0..VARIANTS.len() {
        round(WARM_UP, &mut warm, || one(variant)).await?;
    }
    if let Some((variant, n)) = only() {
        let at = VARIANTS.iter().position(|v| *v == variant)?;
        let mut times = Vec::with_capacity(n);
        round(n, &mut times, || one(at)).await?;
        runtime.shutdown().await;
        let p50 = percentile_us(&mut times, 50);
        let report = Report::new("serve", variant, n as u64, times.iter().sum());
        return Some(vec![report.with("p50_us", round2(p50))]);
    }

    let capacity = ROUNDS * PER_ROUND;
    let mut times: Vec<Vec<Duration>> = VARIANTS
        .iter()
        .map(|_| Vec::with_capacity(capacity))
        .collect();
    for _ in 0..ROUNDS {
        for (variant, into) in times.iter_mut().enumerate() {
            round(PER_ROUND, into, || one(variant)).await?;
        }
    }
    runtime.shutdown().await;

    let mut percentiles: Vec<(f64, f64)> = times
        .iter_mut()
        .map(|t| (percentile_us(t, 50), percentile_us(t, 99)))
        .collect();
    let (floor_50, floor_99) = percentiles.get(1).copied()?;
    let mut reports = Vec::new();
    for (n, (variant, times)) in VARIANTS.iter().zip(&times).enumerate() {
        let (p50, p99) = percentiles.get_mut(n).map(|p| *p)?;
        let mut report = Report::new("serve", *variant, times.len() as u64, times.iter().sum())
            .with("p50_us", round2(p50))
            .with("p99_us", round2(p99));
        if *variant == "openai_ask" || *variant == "native_start" {
            report = report
                .with("overhead_p50_us", round2(p50 - floor_50))
                .with("overhead_p99_us", round2(p99 - floor_99))
                .with("ratio_p50", round2(p50 / floor_50));
        }
        reports.push(report);
    }
    reports.extend(streams::measure().await?);
    Some(reports)
}

/// The one variant to run and how many times (`MOTET_BENCH_SERVE_ONLY`, `MOTET_BENCH_SERVE_N`).
fn only() -> Option<(String, usize)> {
    let variant = std::env::var("MOTET_BENCH_SERVE_ONLY").ok()?;
    let n = std::env::var("MOTET_BENCH_SERVE_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    Some((variant, n))
}

/// The `pct`th percentile of `times`, in microseconds (sorts them).
fn percentile_us(times: &mut [Duration], pct: usize) -> f64 {
    times.sort_unstable();
    let at = (times.len() * pct / 100).min(times.len().saturating_sub(1));
    times.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

/// The `serve` scenario (empty when its setup failed or a request was not answered).
pub(crate) fn run() -> Vec<Report> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(measure()).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}
