//! `limits`: 1,000 agents share one provider account. Each asks 5 questions, through the real
//! runtime, of the hostile server enforcing 600 requests and 200,000 tokens a minute the way
//! the real APIs do (429 with `retry-after` and `x-ratelimit-*` past it), on a minute scaled to
//! 6 s. Five of the agents are a person's (`High`): one person asks at their chats in turn,
//! from a fifth of the way in, reading each answer for 50 ms.
//!
//! - `shared`: motet's shared limits, configured with the account's limits.
//! - `unshared`: no limiter: every call goes at once, and meets the limit with the client's own
//!   retries (the default policy: two, honouring `retry-after`).
//!
//! Fields: `requests_failed` (asks that ended in an error), `share_429` (429s over all the
//! requests the server saw), `throughput_vs_limit` (requests the server admitted over the most
//! the limit allowed in the run's time: the first minute's burst plus the refill),
//! `tokens_vs_limit` (the same for tokens), `jain_fairness` (Jain's index of the normal agents'
//! completed questions when half of all questions are answered), `priority_wait_p99_ms` (p99
//! of the time the person's agents' calls waited in the limiter, as its "rate limit wait"
//! events report it), `priority_ask_p99_ms` (p99 of their time from ask to answer, the whole
//! round trip through the runtime and the server), `refill_interval_ms` (one request's refill:
//! the minute over the limit), `calls`, `http_requests`, `n` (agents), `elapsed_ms`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use motet_agents::{ReAct, ReActConfig};
use motet_providers::limits::Rates;
use motet_providers::testing::{HostileServer, Reply, ServerLimit, wire};
use motet_providers::{Dialect, HttpClient, LlmClient, Priority};
use motet_runtime::agent::{AgentHandle, AgentSpec, AskOptions, Runtime};

use crate::report::{Report, round2};

const AGENTS: usize = 1_000;
/// Of the agents, how many are a person's.
const HIGH: usize = 5;
const QUESTIONS: usize = 5;
const REQUESTS_PER_MINUTE: u64 = 600;
const TOKENS_PER_MINUTE: u64 = 200_000;
const MINUTE: Duration = Duration::from_secs(6);
/// The output each answer generates, and the most a request allows.
const OUTPUT_TOKENS: u64 = 20;
const MAX_TOKENS: u32 = 100;
/// The input tokens the server reports in each answer's usage: about what it counts of a
/// request's body (a quarter of its bytes).
const REPORTED_INPUT_TOKENS: u64 = 160;
const DIALECT: Dialect = Dialect::OpenAiChat;

pub(crate) fn run() -> Vec<Report> {
    super::agents::block_on(async {
        let mut reports = Vec::new();
        for shared in [true, false] {
            match round(shared).await {
                Some(report) => reports.push(report),
                None => return Vec::new(),
            }
        }
        reports
    })
}

/// The answer the server streams: one word, then its usage.
fn answer() -> Reply {
    let usage = serde_json::json!({
        "id": "c1",
        "model": "gpt-4.1",
        "choices": [],
        "usage": {
            "prompt_tokens": REPORTED_INPUT_TOKENS,
            "completion_tokens": OUTPUT_TOKENS,
            "total_tokens": REPORTED_INPUT_TOKENS + OUTPUT_TOKENS
        }
    });
    let mut pieces = wire::opening(DIALECT);
    pieces.push(wire::text(DIALECT, "Noted."));
    let mut closing = wire::closing(DIALECT);
    closing.insert(closing.len().saturating_sub(1), wire::sse("", usage));
    pieces.extend(closing);
    Reply::events(pieces)
}

/// The client without the runtime's rate observer: each call on its own, as without motet's
/// limiter.
struct Unshared(HttpClient);

#[async_trait::async_trait]
impl LlmClient for Unshared {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, motet_providers::ProviderError> {
        self.0.stream(req).await
    }

    fn retries_before_content(&self) -> bool {
        self.0.retries_before_content()
    }
}

fn strategy() -> Option<ReAct> {
    let mut config = ReActConfig::new(wire::model(DIALECT).parse().ok()?).with_system_prompt(
        "You are one of a thousand note takers. Acknowledge each note in one word; keep \
         the notes in mind for later questions.",
    );
    config.options.max_tokens = Some(MAX_TOKENS);
    Some(ReAct::new(config))
}

async fn round(shared: bool) -> Option<Report> {
    let limit = ServerLimit {
        requests_per_minute: REQUESTS_PER_MINUTE,
        tokens_per_minute: TOKENS_PER_MINUTE,
        minute: MINUTE,
        output_tokens: OUTPUT_TOKENS,
    };
    let server = HostileServer::limited(limit, [answer()]).await.ok()?;
    let client = HttpClient::new(DIALECT, wire::base_url(DIALECT, server.url()), None).ok()?;
    let builder = Runtime::builder();
    let builder = if shared {
        builder.llm(client).llm_limits(
            "openai",
            Rates::unlimited()
                .with_requests_per_minute(REQUESTS_PER_MINUTE)
                .with_tokens_per_minute(TOKENS_PER_MINUTE)
                .with_window(MINUTE),
        )
    } else {
        builder
            .llm(Unshared(client))
            .default_llm_concurrency(AGENTS * 2)
    };
    let runtime = builder.build().ok()?;
    let strategy = strategy()?;
    let mut agents: Vec<AgentHandle> = Vec::with_capacity(AGENTS);
    for n in 0..AGENTS {
        let priority = if n < HIGH {
            Priority::High
        } else {
            Priority::Normal
        };
        let spec = AgentSpec::new(format!("agent{n}"), strategy.clone()).with_priority(priority);
        agents.push(runtime.spawn(spec).await.ok()?);
    }
    let done: Arc<Vec<AtomicUsize>> = Arc::new((0..AGENTS).map(|_| AtomicUsize::new(0)).collect());
    let answered = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let high_waits = Arc::new(std::sync::Mutex::new(Vec::new()));
    let total = AGENTS * QUESTIONS;
    let waits = HighWaits::installed()?;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(AGENTS);
    let tally = Tally {
        done: done.clone(),
        answered: answered.clone(),
        failed: failed.clone(),
    };
    let mut people = Vec::with_capacity(HIGH);
    for (n, agent) in agents.into_iter().enumerate() {
        if n < HIGH {
            people.push(agent);
            continue;
        }
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            for q in 0..QUESTIONS {
                tally.ask(&agent, n, q).await;
            }
        }));
    }
    // One person, at the chats of the `High` agents in turn, arriving when the queue is long
    // and reading each answer for a moment.
    {
        let (tally, high_waits) = (tally.clone(), high_waits.clone());
        tasks.push(tokio::spawn(async move {
            while tally.answered.load(Ordering::Relaxed) < total / 5 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            for q in 0..QUESTIONS {
                for (n, agent) in people.iter().enumerate() {
                    let took = tally.ask(agent, n, q).await;
                    if let Ok(mut waits) = high_waits.lock() {
                        waits.push(took);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }));
    }
    // Fairness where it is contested: the normal agents' answers when half are in.
    let watcher = {
        let (done, answered) = (done.clone(), answered.clone());
        tokio::spawn(async move {
            while answered.load(Ordering::Relaxed) < total / 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let counts: Vec<f64> = done
                .iter()
                .skip(HIGH)
                .map(|c| c.load(Ordering::Relaxed) as f64)
                .collect();
            jain(&counts)
        })
    };
    for task in tasks {
        task.await.ok()?;
    }
    let elapsed = started.elapsed();
    let fairness = watcher.await.ok()?;
    runtime.shutdown().await;

    let hits = server.hits();
    let rejected = server.rejected();
    let admitted = hits.saturating_sub(rejected);
    let tokens = server.tokens_admitted();
    let minutes = elapsed.as_secs_f64() / MINUTE.as_secs_f64();
    let allowed = |per_minute: u64| per_minute as f64 * (1.0 + minutes);
    let asks = high_waits.lock().ok()?.clone();
    let ask_p99 = p99(asks.iter().map(|d| d.as_secs_f64() * 1000.0).collect());
    // The limiter's own wait of the person's calls: an event for each that waited a
    // millisecond or more, none (0 ms) for the others.
    let mut waits = waits.taken()?;
    waits.resize(waits.len().max(HIGH * QUESTIONS), 0.0);
    let wait_p99 = p99(waits);
    let refill = MINUTE.as_secs_f64() * 1000.0 / REQUESTS_PER_MINUTE as f64;
    Some(
        Report::new(
            "limits",
            if shared { "shared" } else { "unshared" },
            AGENTS as u64,
            elapsed,
        )
        .with("calls", admitted as u64)
        .with("http_requests", hits as u64)
        .with("requests_failed", failed.load(Ordering::Relaxed) as u64)
        .with("share_429", round4(rejected as f64 / (hits.max(1)) as f64))
        .with(
            "throughput_vs_limit",
            round4(admitted as f64 / allowed(REQUESTS_PER_MINUTE)),
        )
        .with(
            "tokens_vs_limit",
            round4(tokens as f64 / allowed(TOKENS_PER_MINUTE)),
        )
        .with("jain_fairness", round4(fairness))
        .with("priority_wait_p99_ms", round2(wait_p99))
        .with("priority_ask_p99_ms", round2(ask_p99))
        .with("refill_interval_ms", round2(refill))
        .with("elapsed_ms", elapsed.as_millis() as u64),
    )
}

/// What the askers count.
#[derive(Clone)]
struct Tally {
    /// Questions answered, per agent.
    done: Arc<Vec<AtomicUsize>>,
    /// Questions answered or failed, in all.
    answered: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
}

impl Tally {
    /// Agent `n` asks question `q`; returns how long the answer took.
    async fn ask(&self, agent: &AgentHandle, n: usize, q: usize) -> Duration {
        let options = AskOptions {
            timeout: Duration::from_secs(600),
            ..AskOptions::default()
        };
        let asked = Instant::now();
        let reply = agent
            .ask_with(format!("Note {q}: the number {n} is odd."), options)
            .await;
        let took = asked.elapsed();
        match reply {
            Ok(_) => {
                if let Some(count) = self.done.get(n) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.answered.fetch_add(1, Ordering::Relaxed);
        took
    }
}

/// The 99th percentile of `values` (0 for none).
fn p99(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let at = (values.len() * 99 / 100).min(values.len().saturating_sub(1));
    values.get(at).copied().unwrap_or(0.0)
}

/// The waits of `High` calls the limiter reports (its "rate limit wait" events), collected by a
/// tracing layer that listens to nothing else.
#[derive(Clone)]
struct HighWaits(Arc<std::sync::Mutex<Vec<f64>>>);

impl HighWaits {
    /// The process's collector, installed on first use and emptied for this round; `None`
    /// when another tracing subscriber is already installed.
    fn installed() -> Option<Self> {
        static WAITS: std::sync::OnceLock<Option<HighWaits>> = std::sync::OnceLock::new();
        let waits = WAITS
            .get_or_init(|| {
                use tracing_subscriber::layer::SubscriberExt as _;
                let waits = HighWaits(Arc::default());
                let subscriber = tracing_subscriber::registry().with(waits.clone());
                tracing::subscriber::set_global_default(subscriber)
                    .ok()
                    .map(|()| waits)
            })
            .clone()?;
        waits.0.lock().ok()?.clear();
        Some(waits)
    }

    fn taken(&self) -> Option<Vec<f64>> {
        Some(std::mem::take(&mut *self.0.lock().ok()?))
    }
}

fn is_wait_event(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.is_event() && metadata.target().starts_with("motet_providers::limits")
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for HighWaits {
    fn register_callsite(
        &self,
        metadata: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if is_wait_event(metadata) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn enabled(
        &self,
        metadata: &tracing::Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        is_wait_event(metadata)
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = WaitFields::default();
        event.record(&mut fields);
        if fields.high
            && let Some(ms) = fields.wait_ms
            && let Ok(mut waits) = self.0.lock()
        {
            waits.push(ms as f64);
        }
    }
}

#[derive(Default)]
struct WaitFields {
    wait_ms: Option<u64>,
    high: bool,
}

impl tracing::field::Visit for WaitFields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "motet.limits.wait_ms" {
            self.wait_ms = Some(value);
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "motet.limits.priority" {
            self.high = format!("{value:?}") == "high";
        }
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Jain's fairness index: 1 when every value is equal, 1/n when one has everything.
fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (xs.len() as f64 * squares)
}
