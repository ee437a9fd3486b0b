//! A swarm: one coordinator agent fans a batch of tasks out to a pool of worker agents (1,000
//! by default) through signals, and gathers their answers from the bus. Each worker is a
//! supervised ReAct agent with real tools (half are calculators, half read files in a folder
//! the example creates and refuse paths outside it). With `--chaos`, some workers crash on purpose: the supervisor restarts
//! them, says so on the bus, and the coordinator sends the lost task again.
//!
//! ```text
//! bash scripts/local-llm.sh start        # a local model, no key needed (first run builds it)
//! cargo run --release --example swarm -- --agents 100   # add --chaos 0.05, --json
//! ```
//!
//! The model: `--model provider:model` or `MOTET_MODEL`; otherwise the first of an API key in
//! the environment (OpenAI, Anthropic, Gemini) or a local OpenAI-compatible server
//! (`MOTET_LOCAL_LLM_URL`, then ports 8089 and 8080 on this machine).

mod coordinator;
mod worker;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use motet::prelude::*;
use motet::providers::ProviderKind;
use motet::runtime::agent::{AGENT_STOPPED, THREAD_RESTARTED};

use coordinator::{Batch, Coordinator, DONE, FAILED, PROGRESS, Progress, RUN, Report, Skill, Task};
use worker::{CHAOS, Worker};

/// Many supervised agents in one process, with signals between them.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Worker agents (half calculate, half read files).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    agents: u32,
    /// Tasks in the batch (default: one per agent).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    tasks: Option<u32>,
    /// Fraction of tasks whose worker crashes on its first attempt (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = fraction)]
    chaos: f64,
    /// The model, as `provider:model` (e.g. `openai:gpt-4.1-mini`, `openai-compat:smollm2-135m`);
    /// default `MOTET_MODEL`.
    #[arg(long)]
    model: Option<String>,
    /// LLM calls in flight at once (default 8 for a local server, 64 otherwise).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    concurrency: Option<u32>,
    /// Output token limit of each LLM call.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: u32,
    /// Give up on the batch after this many seconds.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// Seed for the tasks and the chaos picks.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Print the summary as one JSON object (and nothing else) on stdout.
    #[arg(long)]
    json: bool,
}

fn fraction(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        Ok(rate) => Err(format!("{rate} is not between 0 and 1")),
        Err(_) => Err(format!("`{text}` is not a number (e.g. 0.05)")),
    }
}

/// Attempts per task: the first, and two more after a crash or a failed request.
const MAX_ATTEMPTS: u32 = 3;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    // Spans go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set; log lines to stderr (RUST_LOG).
    let _telemetry = match motet::telemetry::init() {
        Ok(guard) => guard,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let choice = choose_model(args.model.clone()).await?;
    let agents = args.agents as usize;
    let task_count = args.tasks.map_or(agents, |t| t as usize);
    quiet_planned_panics();

    let folder = Arc::new(
        worker::make_folder().map_err(|e| format!("cannot create the swarm's folder: {e}"))?,
    );
    let outcome = swarm(&args, &choice, agents, task_count, folder.clone()).await;
    let _ = std::fs::remove_dir_all(folder.as_path());
    let summary = outcome?;

    if args.json {
        println!("{}", summary.to_json());
    } else {
        summary.print();
    }
    Ok(())
}

/// Spawns the workers and the coordinator, runs the batch, and sums it up.
async fn swarm(
    args: &Args,
    choice: &ModelChoice,
    agents: usize,
    task_count: usize,
    folder: Arc<PathBuf>,
) -> Result<Summary, String> {
    let concurrency = args
        .concurrency
        .map_or(if choice.local { 8 } else { 64 }, |c| c as usize);
    let providers = Providers::new(choice.config.clone()).map_err(|e| e.to_string())?;
    let runtime = Runtime::builder()
        .llm(Arc::new(providers))
        .llm_concurrency(choice.model.provider(), concurrency)
        .build()
        .map_err(|e| e.to_string())?;

    // Half the workers calculate, half read files: each skill has its own tools and prompt.
    let tool_calls = Arc::new(AtomicU64::new(0));
    let mut kits = Vec::new();
    for skill in [Skill::Calculate, Skill::Read] {
        let tools = Arc::new(worker::tools(skill, folder.clone(), tool_calls.clone())?);
        let mut config = ReActConfig::new(choice.model.clone())
            .with_system_prompt("Use the tool, then answer briefly.")
            .with_tools(tools.tools())
            .with_max_iterations(4);
        config.options.max_tokens = Some(args.max_tokens);
        kits.push((skill, tools, ReAct::new(config)));
    }

    let mut workers = Vec::with_capacity(agents);
    for k in 0..agents {
        // Cloning a ReAct shares its configuration: a thousand workers, two configurations.
        let (skill, tools, react) = &kits[k % kits.len()];
        let name = format!("worker-{k:04}");
        let spec = AgentSpec::new(&name, Worker(react.clone())).with_tools(tools.clone());
        runtime.spawn(spec).await.map_err(|e| e.to_string())?;
        workers.push((name, *skill));
    }
    let pattern = |p: &str| p.parse::<Pattern>().map_err(|e| e.to_string());
    let coordinator = runtime
        .spawn(
            AgentSpec::new("coordinator", Coordinator::new(workers, MAX_ATTEMPTS))
                .subscribe(pattern("react.completed")?)
                .subscribe(pattern("react.failed")?)
                .subscribe(pattern(THREAD_RESTARTED)?)
                .subscribe(pattern(AGENT_STOPPED)?)
                .with_reply_types(DONE, FAILED),
        )
        .await
        .map_err(|e| e.to_string())?;

    let bar = progress_bar(args, task_count);
    let shown = bar.clone();
    let _progress = runtime
        .bus()
        .subscribe(pattern(PROGRESS)?, move |signal: &Signal| {
            if let Ok(p) = signal.data_as::<Progress>() {
                shown.set_position((p.answered + p.failed) as u64);
                shown.set_message(format!(
                    "{} agents busy · {} tokens · {} restarts",
                    p.busy_agents, p.tokens, p.restarts
                ));
            }
            Delivery::Delivered
        });

    let batch = Batch {
        tasks: tasks(task_count, args.chaos, args.seed),
    };
    let run = Signal::builder(RUN, "swarm")
        .with_request_id("batch-1")
        .with_data(batch)
        .build()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let reply = coordinator
        .request(run, Duration::from_secs(args.timeout))
        .await
        .map_err(|e| format!("the batch did not finish: {e}"))?;
    let wall = started.elapsed();
    bar.finish_and_clear();
    runtime.shutdown().await;

    let report: Report = reply.data_as().map_err(|e| e.to_string())?;
    Ok(Summary {
        model: choice.model.to_string(),
        agents,
        tool_calls: tool_calls.load(Ordering::Relaxed),
        wall,
        report,
    })
}

fn progress_bar(args: &Args, tasks: usize) -> ProgressBar {
    if args.json || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(tasks as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} tasks · {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The batch: sums and file reads in turn (one in four reads outside the folder, which the
/// tool refuses), and `chaos` of them marked to crash
/// their worker once (exactly `round(chaos × count)`, at least one when chaos > 0).
fn tasks(count: usize, chaos: f64, seed: u64) -> Vec<Task> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let files = [
        "notes/alpha.txt",
        "notes/beta.txt",
        "notes/gamma.txt",
        "../outside.txt",
    ];
    let mut tasks: Vec<Task> = (0..count)
        .map(|id| {
            let (a, b) = (rng.i64(1..1000), rng.i64(1..100));
            let (skill, query) = match id % 2 {
                0 => (Skill::Calculate, format!("Use add: {a} + {b}?")),
                _ => (
                    Skill::Read,
                    format!("Use read_file on {}.", files[id / 2 % files.len()]),
                ),
            };
            Task {
                id,
                skill,
                query,
                chaos: false,
            }
        })
        .collect();
    let crashing = ((chaos * count as f64).round() as usize).max(usize::from(chaos > 0.0));
    let mut order: Vec<usize> = (0..count).collect();
    rng.shuffle(&mut order);
    for &id in order.iter().take(crashing) {
        tasks[id].chaos = true;
        tasks[id].skill = Skill::Calculate;
        tasks[id].query = "Use unstable.".to_owned();
    }
    tasks
}

/// The panics chaos plans are expected: keep them off the terminal, print any other.
fn quiet_planned_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        if !message.is_some_and(|m| m.starts_with(CHAOS)) {
            default(info);
        }
    }));
}

/// Which model the workers use, and how to reach it.
struct ModelChoice {
    model: ModelRef,
    config: ProvidersConfig,
    /// A local server (slow: fewer calls at once).
    local: bool,
}

/// `--model` / `MOTET_MODEL`, else a key in the environment, else a local server.
async fn choose_model(wanted: Option<String>) -> Result<ModelChoice, String> {
    let mut config = ProvidersConfig::from_env();
    let set = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let wanted = wanted.or_else(|| set("MOTET_MODEL")).or_else(|| {
        [
            ("OPENAI_API_KEY", "openai:gpt-4.1-mini"),
            ("ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5"),
            ("GEMINI_API_KEY", "gemini:gemini-2.5-flash"),
            ("GOOGLE_API_KEY", "gemini:gemini-2.5-flash"),
        ]
        .into_iter()
        .find(|(key, _)| set(key).is_some())
        .map(|(_, model)| model.to_owned())
    });
    let model: ModelRef = match wanted {
        Some(text) => text.parse().map_err(|_| {
            format!("`{text}` is not a model: write provider:model, e.g. openai:gpt-4.1-mini")
        })?,
        None => {
            let (base, name) = local_server().await.ok_or_else(no_model)?;
            config = config.with_base_url(ProviderKind::OpenAiCompat, format!("{base}/v1"));
            format!("openai-compat:{name}")
                .parse()
                .map_err(|_| format!("the local server's model `{name}` is not a usable name"))?
        }
    };
    let kind = ProviderKind::from_provider(model.provider()).map_err(|e| e.to_string())?;
    let local = kind == ProviderKind::OpenAiCompat;
    if local && config.settings(kind).base_url.is_none() {
        let (base, _) = local_server().await.ok_or_else(no_model)?;
        config = config.with_base_url(kind, format!("{base}/v1"));
    }
    config.resolve(kind).map_err(|e| format!("{model}: {e}"))?;
    Ok(ModelChoice {
        model,
        config,
        local,
    })
}

fn no_model() -> String {
    "no model to run the swarm with. Start a local one (no key needed):\n\
     \x20   bash scripts/local-llm.sh start\n\
     or set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, or pass --model provider:model"
        .to_owned()
}

/// The first local OpenAI-compatible server that answers: `MOTET_LOCAL_LLM_URL`, then
/// scripts/local-llm.sh's port (8089), then llama.cpp's default (8080). Its base URL (without
/// `/v1`) and the name of the model it serves.
async fn local_server() -> Option<(String, String)> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .ok()?;
    let from_env = std::env::var("MOTET_LOCAL_LLM_URL").ok().map(|url| {
        let url = url.trim().trim_end_matches('/');
        url.strip_suffix("/v1").unwrap_or(url).to_owned()
    });
    let candidates = from_env
        .into_iter()
        .chain(["http://127.0.0.1:8089", "http://127.0.0.1:8080"].map(str::to_owned));
    for base in candidates {
        let Ok(response) = http.get(format!("{base}/v1/models")).send().await else {
            continue;
        };
        let Ok(response) = response.error_for_status() else {
            continue;
        };
        let Ok(models) = response.json::<serde_json::Value>().await else {
            continue;
        };
        let name = models["data"][0]["id"]
            .as_str()
            .unwrap_or("local")
            .to_owned();
        return Some((base, name));
    }
    None
}

/// What the run comes to.
struct Summary {
    model: String,
    agents: usize,
    tool_calls: u64,
    wall: Duration,
    report: Report,
}

impl Summary {
    fn answered(&self) -> usize {
        self.report
            .outcomes
            .iter()
            .filter(|o| o.answer.is_some())
            .count()
    }

    /// The `q` quantile (nearest rank) of the answered tasks' latencies, in ms.
    fn latency(&self, q: f64) -> u64 {
        let mut ms: Vec<u64> = self
            .report
            .outcomes
            .iter()
            .filter(|o| o.answer.is_some())
            .map(|o| o.latency_ms)
            .collect();
        ms.sort_unstable();
        let rank = ((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len().max(1));
        ms.get(rank - 1).copied().unwrap_or(0)
    }

    fn to_json(&self) -> serde_json::Value {
        let r = &self.report;
        serde_json::json!({
            "model": self.model,
            "agents": self.agents,
            "tasks": r.outcomes.len(),
            "answered": self.answered(),
            "failures": r.outcomes.len() - self.answered(),
            "restarts": r.restarts,
            "retries": r.retries,
            "llm_calls": r.outcomes.iter().map(|o| u64::from(o.llm_calls)).sum::<u64>(),
            "tool_calls": self.tool_calls,
            "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out,
            "latency_ms": {"p50": self.latency(0.5), "p99": self.latency(0.99)},
            "wall_s": (self.wall.as_secs_f64() * 10.0).round() / 10.0,
        })
    }

    fn print(&self) {
        let r = &self.report;
        let rows = [
            ("model", self.model.clone()),
            ("agents", self.agents.to_string()),
            (
                "requests",
                format!("{} answered of {} tasks", self.answered(), r.outcomes.len()),
            ),
            ("tool calls", self.tool_calls.to_string()),
            (
                "tokens in / out",
                format!("{} / {}", r.tokens_in, r.tokens_out),
            ),
            (
                "latency p50 / p99",
                format!("{} ms / {} ms", self.latency(0.5), self.latency(0.99)),
            ),
            (
                "restarts",
                format!("{} (tasks sent again: {})", r.restarts, r.retries),
            ),
            ("failures", (r.outcomes.len() - self.answered()).to_string()),
            ("wall time", format!("{:.1} s", self.wall.as_secs_f64())),
        ];
        for (name, value) in rows {
            println!("  {name:<18} {value}");
        }
    }
}
