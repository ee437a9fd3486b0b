//! A swarm: one coordinator agent — a `FanOut` team with the swarm's bookkeeping around it —
//! fans a batch of tasks out to a pool of worker agents (1,000 by default) through signals,
//! and gathers their answers, which come back to it as the replies of its asks. Each worker is a
//! supervised ReAct agent with a real tool (half multiply, half read notes in a folder the
//! example creates and refuse paths outside it) that its first LLM call must call. Every task
//! knows its result (the product, the code in the note): the summary says, per skill, how many
//! tool calls were made, how many tool results were right, and how many answers state the
//! right result. With `--chaos`, some workers crash on purpose: the supervisor restarts them,
//! says so on the bus, and the coordinator sends the lost task again.
//!
//! ```text
//! bash scripts/local-llm.sh start        # a local model, no key needed (first run builds it)
//! cargo run --release --example swarm -- --agents 100   # add --chaos 0.05, --json
//! ```
//!
//! The model: `--model provider:model` or `MOTET_MODEL`; otherwise the first of an API key in
//! the environment (OpenAI, Anthropic, Gemini) or a local OpenAI-compatible server
//! (`MOTET_LOCAL_LLM_URL`, then ports 8089 and 8080 on this machine).
//!
//! The threads: `--store memory` (the default) keeps them in memory; `--store sqlite` in a
//! SQLite file in the swarm's temporary folder (deleted at the end); `--store postgres` in the
//! PostgreSQL database `MOTET_DATABASE_URL` names; any store URL works too
//! (`--store postgres://user@host:5432/db`, `--store sqlite://swarm.db`). Every entry is
//! committed there before its directives run. Each task's thread is named after the task and
//! attempt, so give a persistent store a fresh database (or file) per run: a second run on the
//! same one would continue the first run's threads.
//!
//! ```text
//! eval "$(bash scripts/postgres.sh env)"   # after `bash scripts/postgres.sh start`
//! cargo run --release --example swarm -- --agents 20 --store postgres
//! ```
//!
//! The bus: `--bus local` (the default) is the in-process bus, to which the coordinator
//! subscribes for the workers' tool reports; `--bus nats` is NATS JetStream (`MOTET_NATS_URL`,
//! the build's `jetstream` feature), which the coordinator consumes as a durable consumer of
//! its own — the answers published there too, each acknowledged once the coordinator
//! committed it (docs/bus.md).
//!
//! ```text
//! eval "$(bash scripts/nats.sh env)"       # after `bash scripts/nats.sh start`
//! cargo run --release --example swarm -- --agents 20 --store postgres --bus nats
//! ```
//!
//! Virtual workers: `--virtual N` registers the workers as a virtual kind (`worker:<n>`)
//! instead of spawning them, at most N active at once — each activated by its first task,
//! deactivated to make room — so the batch addresses more workers than are ever in memory;
//! the coordinator then asks N tasks at a time (`FanOut::with_window`), and the summary says
//! the most workers that were active (docs/runtime.md "Virtual agents").
//!
//! ```text
//! cargo run --release --example swarm -- --agents 1000 --virtual 100 --store sqlite
//! ```

mod coordinator;
mod worker;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use motet::agents::Wrapped;
use motet::directives::ToolChoice;
use motet::prelude::*;
use motet::providers::ProviderKind;
use motet::providers::ProvidersConfig;
use motet::runtime::agent::{AGENT_STOPPED, THREAD_RESTARTED};
use motet::runtime::bus::ConsumerSpec;
use motet::signals::Delivery;
use tracing::Instrument as _;

use coordinator::{Batch, Coordinator, PROGRESS, Progress, RUN, Report, Skill, Task};
use worker::{CHAOS, NOTES, TOOL_REPORT, Worker};

/// Many supervised agents in one process, with signals between them.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Worker agents (half multiply, half read notes).
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
    /// Output token limit of each LLM call (enough for the tool call, then a sentence).
    #[arg(long, default_value_t = 48, value_parser = clap::value_parser!(u32).range(1..))]
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
    /// Where the threads are stored: memory, sqlite (a file in the swarm's temporary folder),
    /// postgres (the database MOTET_DATABASE_URL names), or a store URL
    /// (postgres://..., sqlite://PATH).
    #[arg(long, default_value = "memory", value_name = "STORE")]
    store: String,
    /// Where the answers travel: local (the in-process bus) or nats (NATS JetStream at
    /// MOTET_NATS_URL; needs the build's `jetstream` feature).
    #[arg(long, value_enum, default_value_t = BusChoice::Local)]
    bus: BusChoice,
    /// Run the workers as virtual agents (`worker:<n>`), at most this many active at once: a
    /// worker is activated by its first task and deactivated to make room, so the batch
    /// addresses more workers than are ever in memory; the coordinator asks this many tasks
    /// at a time (docs/runtime.md "Virtual agents").
    #[arg(long = "virtual", value_name = "ACTIVE", value_parser = clap::value_parser!(u32).range(2..))]
    virtual_active: Option<u32>,
}

/// The bus the workers' answers and tool reports reach the coordinator on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BusChoice {
    /// The in-process bus: the coordinator subscribes.
    Local,
    /// NATS JetStream: the coordinator is a durable consumer, each answer acknowledged once
    /// the coordinator committed it.
    Nats,
}

/// The JetStream bus at `MOTET_NATS_URL`, for `--bus nats`.
#[cfg(feature = "jetstream")]
async fn nats_bus() -> Result<Arc<dyn motet::runtime::bus::SignalBus>, String> {
    use motet::jetstream::{JetStreamBus, JetStreamConfig};
    match JetStreamBus::from_env(JetStreamConfig::default()).await {
        Ok(Some(bus)) => Ok(Arc::new(bus)),
        Ok(None) => Err(
            "--bus nats takes the server from MOTET_NATS_URL, which is not set \
                         (bash scripts/nats.sh start prints one)"
                .to_owned(),
        ),
        Err(e) => Err(e.to_string()),
    }
}

/// Without the `jetstream` feature there is no NATS bus to build.
#[cfg(not(feature = "jetstream"))]
async fn nats_bus() -> Result<Arc<dyn motet::runtime::bus::SignalBus>, String> {
    Err(
        "--bus nats needs the JetStream bus, the `jetstream` feature (on by default): \
         cargo run --release --features jetstream --example swarm -- --bus nats"
            .to_owned(),
    )
}

/// The store URL `--store` means, given the swarm's folder and `MOTET_DATABASE_URL`.
fn store_url(
    store: &str,
    folder: &std::path::Path,
    database_url: Option<String>,
) -> Result<String, String> {
    match store {
        "memory" => Ok("memory:".to_owned()),
        "sqlite" => Ok(format!("sqlite://{}", folder.join("swarm.db").display())),
        "postgres" => database_url.ok_or_else(|| {
            "--store postgres takes the database from MOTET_DATABASE_URL, which is not set \
             (bash scripts/postgres.sh start prints a URL), or give --store postgres://..."
                .to_owned()
        }),
        url => Ok(url.to_owned()),
    }
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

/// How long the NATS server keeps this run's consumer once nothing consumes it (`--bus nats`).
const RUN_CONSUMER_IDLE: Duration = Duration::from_secs(300);

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let bar = progress_bar(&args);
    // Spans go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set; log lines (RUST_LOG) to stderr,
    // printed above the progress bar so that restart warnings do not tear it.
    let shown = bar.clone();
    let telemetry = motet::telemetry::Telemetry::from_env().and_then(|t| {
        t.with_log_writer(move || Box::new(AboveBar(shown.clone())))
            .install()
    });
    let _telemetry = match telemetry {
        Ok(guard) => guard,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run(args, bar).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args, bar: ProgressBar) -> Result<(), String> {
    let choice = choose_model(args.model.clone()).await?;
    let agents = args.agents as usize;
    let task_count = args.tasks.map_or(agents, |t| t as usize);
    quiet_planned_panics();

    let folder = Arc::new(
        worker::make_folder().map_err(|e| format!("cannot create the swarm's folder: {e}"))?,
    );
    let outcome = swarm(&args, &choice, agents, task_count, folder.clone(), bar).await;
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
    bar: ProgressBar,
) -> Result<Summary, String> {
    let concurrency = args
        .concurrency
        .map_or(if choice.local { 8 } else { 64 }, |c| c as usize);
    let providers = Providers::new(choice.config.clone()).map_err(|e| e.to_string())?;
    let url = store_url(
        &args.store,
        &folder,
        motet::runtime::store::database_url_from(&|name| std::env::var(name).ok()),
    )?;
    let store = motet::runtime::store::open_store(&url)
        .await
        .map_err(|e| e.to_string())?;
    let mut builder = Runtime::builder()
        .llm(Arc::new(providers))
        .llm_concurrency(choice.model.provider(), concurrency)
        .store(store.clone());
    if args.bus == BusChoice::Nats {
        builder = builder.signal_bus(nats_bus().await?);
    }

    // Half the workers multiply, half read notes: each skill has its own tool, which the
    // first LLM call of every task must call; after that the model may answer.
    let mut kits = Vec::new();
    for skill in Skill::ALL {
        let tools = Arc::new(worker::tools(skill, folder.clone())?);
        let mut config = ReActConfig::new(choice.model.clone())
            .with_system_prompt("Answer with the tool's result in one short sentence.")
            .with_tools(tools.definitions())
            .with_tool_choice(ToolChoice::Tool {
                name: skill.tool().to_owned(),
            })
            .with_max_iterations(4);
        config.options.max_tokens = Some(args.max_tokens);
        kits.push((skill, tools, ReAct::new(config)));
    }
    // A worker's spec: its skill's kit, a low priority (on a shared provider account, a
    // person's chat goes first).
    let worker_spec = {
        let kits = kits.clone();
        move |name: &str, k: usize| {
            let (_, tools, react) = &kits[k % kits.len()];
            AgentSpec::new(name, Wrapped::new(react.clone(), Worker))
                .with_tools(tools.clone())
                .with_priority(motet::providers::Priority::Low)
        }
    };
    if let Some(active) = args.virtual_active {
        // `worker:<n>`: the key says which worker, and so its skill.
        let spec = worker_spec.clone();
        builder = builder
            .virtual_kind("worker", move |key| {
                let k: usize = key.parse().map_err(|_| format!("no worker {key}"))?;
                Ok(spec(key, k))
            })
            .max_active_agents(active as usize);
    }
    let runtime = builder.build().map_err(|e| e.to_string())?;

    let mut workers = Vec::with_capacity(agents);
    if args.virtual_active.is_some() {
        for k in 0..agents {
            workers.push((format!("worker:{k:04}"), kits[k % kits.len()].0));
        }
    }
    for k in (0..agents).filter(|_| args.virtual_active.is_none()) {
        // Cloning a ReAct shares its configuration: a thousand workers, two configurations.
        let name = format!("worker-{k:04}");
        runtime
            .spawn(worker_spec(&name, k))
            .await
            .map_err(|e| e.to_string())?;
        workers.push((name, kits[k % kits.len()].0));
    }
    let pattern = |p: &str| p.parse::<Pattern>().map_err(|e| e.to_string());
    // Restarts and stops are this runtime's own events, always in-process. Each worker's
    // answer comes back to the coordinator, which asked for it (and, with NATS, over the bus
    // too: the second copy is not heard). Tool reports come over the bus chosen: subscribed to
    // in-process, or consumed from NATS by a consumer of this run (one consumer of
    // everything, so a task's tool reports come before its answer, as they were published;
    // what it does not know it ignores).
    let mut coordinator = Coordinator::new(workers, MAX_ATTEMPTS);
    if let Some(active) = args.virtual_active {
        coordinator = coordinator.with_window(active as usize);
    }
    let mut spec = AgentSpec::new("coordinator", coordinator)
        .subscribe(pattern(THREAD_RESTARTED)?)
        .subscribe(pattern(AGENT_STOPPED)?);
    spec = match args.bus {
        BusChoice::Local => spec.subscribe(pattern(TOOL_REPORT)?),
        BusChoice::Nats => {
            let started = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let run = format!("swarm-coordinator-{}-{started}", std::process::id());
            // No later run uses this name again: the server removes the consumer once the run
            // has been gone a while, rather than keeping it (and its place) forever.
            spec.consume(
                ConsumerSpec::new(run, pattern("**")?).with_inactive_threshold(RUN_CONSUMER_IDLE),
            )
        }
    };
    let coordinator = runtime.spawn(spec).await.map_err(|e| e.to_string())?;

    bar.set_length(task_count as u64);
    // The bar's position moves with each answer (`swarm.progress`, from the coordinator); its
    // message shows the work under way, from the runtime's own counts, four times a second:
    // the first answers take a while on a small local model, the LLM and tool calls do not.
    let busy = Arc::new(std::sync::Mutex::new((0usize, 0u64)));
    let (shown, seen) = (bar.clone(), busy.clone());
    let _progress = runtime
        .bus()
        .subscribe(pattern(PROGRESS)?, move |signal: &Signal| {
            if let Ok(p) = signal.data_as::<Progress>() {
                shown.set_position((p.answered + p.failed) as u64);
                if let Ok(mut busy) = seen.lock() {
                    *busy = (p.busy_agents, p.restarts);
                }
            }
            Delivery::Delivered
        });
    let (live, counts) = (bar.clone(), runtime.clone());
    let ticker = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(250));
        loop {
            every.tick().await;
            let done = counts.activity();
            let (agents, restarts) = busy.lock().map_or((0, 0), |b| *b);
            live.set_message(format!(
                "{} LLM calls · {} tool calls · {} tokens · {agents} agents busy · {restarts} \
                 restarts",
                done.llm_calls,
                done.tool_calls,
                done.tokens()
            ));
        }
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
    // The batch's root span, open until the coordinator's reply: the run signal carries it, so
    // every task's spans hang under it and it lasts as long as the batch.
    let batch_span = tracing::info_span!(
        "swarm",
        otel.name = "swarm batch",
        swarm.tasks = task_count,
        swarm.agents = agents
    );
    let reply = coordinator
        .ask_signal(run, Duration::from_secs(args.timeout))
        .instrument(batch_span)
        .await
        .map_err(|e| format!("the batch did not finish: {e}"))?;
    let wall = started.elapsed();
    ticker.abort();
    bar.finish_and_clear();
    let (_, active_max) = runtime.active_virtual_agents();
    runtime.shutdown().await;

    let report: Report = reply.data_as().map_err(|e| e.to_string())?;
    let stored_threads = store.list().await.map_err(|e| e.to_string())?.len();
    Ok(Summary {
        model: choice.model.to_string(),
        store: motet::runtime::store::redact(&url),
        stored_threads,
        bus: match args.bus {
            BusChoice::Local => "local (in-process)",
            BusChoice::Nats => "nats (JetStream)",
        },
        agents,
        active_max: args.virtual_active.map(|_| active_max),
        wall,
        report,
    })
}

/// The progress bar: drawn on a terminal, hidden for `--json` or when stdout is not one.
fn progress_bar(args: &Args) -> ProgressBar {
    if args.json || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} tasks · {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The batch: products and note readings in turn, each with the result it should come to,
/// and `chaos` of them marked to crash their worker on the first attempt (exactly
/// `round(chaos × count)`, at least one when chaos > 0).
fn tasks(count: usize, chaos: f64, seed: u64) -> Vec<Task> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut tasks: Vec<Task> = (0..count)
        .map(|id| {
            let (skill, query, expected) = match id % 2 {
                0 => {
                    let (a, b) = (rng.i64(2..100), rng.i64(2..100));
                    (Skill::Calculate, format!("What is {a} times {b}?"), a * b)
                }
                _ => {
                    let (file, code) = NOTES[id / 2 % NOTES.len()];
                    let code = code.parse().unwrap_or_default();
                    (
                        Skill::Read,
                        format!("What is the code in notes/{file}?"),
                        code,
                    )
                }
            };
            Task {
                id,
                skill,
                query,
                expected: expected.to_string(),
                chaos: false,
            }
        })
        .collect();
    let crashing = ((chaos * count as f64).round() as usize).max(usize::from(chaos > 0.0));
    let mut order: Vec<usize> = (0..count).collect();
    rng.shuffle(&mut order);
    for &id in order.iter().take(crashing) {
        tasks[id].chaos = true;
    }
    tasks
}

/// Log lines printed above the progress bar (the bar is redrawn below them).
struct AboveBar(ProgressBar);

impl std::io::Write for AboveBar {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.suspend(|| std::io::stderr().write_all(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
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
    let mut config = ProvidersConfig::from_env().map_err(|e| e.to_string())?;
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
    /// The store's URL, its password hidden.
    store: String,
    /// The threads the store holds at the end.
    stored_threads: usize,
    /// The bus the answers travelled on.
    bus: &'static str,
    agents: usize,
    /// With `--virtual`: the most workers active at once.
    active_max: Option<usize>,
    wall: Duration,
    report: Report,
}

/// The tasks of one skill, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
struct SkillCounts {
    tasks: u64,
    answered: u64,
    tool_calls: u64,
    tool_results_correct: u64,
    answers_correct: u64,
}

impl SkillCounts {
    fn add(&mut self, o: &coordinator::Outcome) {
        self.tasks += 1;
        self.answered += u64::from(o.answer.is_some());
        self.tool_calls += u64::from(o.tool_calls);
        self.tool_results_correct += u64::from(o.tool_results_correct);
        self.answers_correct += u64::from(o.answer_correct);
    }
}

impl Summary {
    /// The counts of `skill`'s tasks, or of every task.
    fn counts(&self, skill: Option<Skill>) -> SkillCounts {
        let mut counts = SkillCounts::default();
        for outcome in &self.report.outcomes {
            if skill.is_none_or(|s| s == outcome.skill) {
                counts.add(outcome);
            }
        }
        counts
    }

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
        let all = self.counts(None);
        let skills: serde_json::Map<String, serde_json::Value> = Skill::ALL
            .into_iter()
            .map(|skill| {
                let counts = serde_json::to_value(self.counts(Some(skill))).unwrap_or_default();
                (skill.name().to_owned(), counts)
            })
            .collect();
        serde_json::json!({
            "model": self.model,
            "store": self.store,
            "stored_threads": self.stored_threads,
            "bus": self.bus,
            "agents": self.agents,
            "active_max": self.active_max,
            "tasks": r.outcomes.len(),
            "answered": self.answered(),
            "failures": r.outcomes.len() - self.answered(),
            "restarts": r.restarts,
            "retries": r.retries,
            "llm_calls": r.outcomes.iter().map(|o| u64::from(o.llm_calls)).sum::<u64>(),
            "tool_calls": all.tool_calls,
            "tool_results_correct": all.tool_results_correct,
            "answers_correct": all.answers_correct,
            "skills": skills,
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
            (
                "store",
                format!("{} ({} threads)", self.store, self.stored_threads),
            ),
            ("bus", self.bus.to_owned()),
            (
                "agents",
                match self.active_max {
                    Some(most) => format!("{} virtual, at most {most} active", self.agents),
                    None => self.agents.to_string(),
                },
            ),
            (
                "requests",
                format!("{} answered of {} tasks", self.answered(), r.outcomes.len()),
            ),
            ("tool calls", self.counts(None).tool_calls.to_string()),
            (
                "tokens in / out",
                format!("{} / {}", r.tokens_in, r.tokens_out),
            ),
            (
                "latency p50 / p99",
                format!(
                    "{} / {}",
                    shown_ms(self.latency(0.5)),
                    shown_ms(self.latency(0.99))
                ),
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
        println!();
        println!(
            "  {:<10} {:>6} {:>9} {:>11} {:>16} {:>16}",
            "skill", "tasks", "answered", "tool calls", "results correct", "answers correct"
        );
        for skill in Skill::ALL {
            let c = self.counts(Some(skill));
            println!(
                "  {:<10} {:>6} {:>9} {:>11} {:>16} {:>16}",
                skill.name(),
                c.tasks,
                c.answered,
                c.tool_calls,
                c.tool_results_correct,
                c.answers_correct
            );
        }
    }
}

/// A latency as a person reads it: milliseconds under 10 s, seconds (one decimal) above.
fn shown_ms(ms: u64) -> String {
    if ms < 10_000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_read_in_the_unit_that_fits() {
        assert_eq!(shown_ms(840), "840 ms");
        assert_eq!(shown_ms(9_999), "9999 ms");
        assert_eq!(shown_ms(83_456), "83.5 s");
    }

    #[test]
    fn store_names_become_urls() {
        let folder = std::path::Path::new("/tmp/swarm");
        let pg = "postgres://motet@127.0.0.1:5432/motet".to_owned();
        assert_eq!(
            store_url("memory", folder, Some(pg.clone())),
            Ok("memory:".to_owned())
        );
        assert_eq!(
            store_url("sqlite", folder, None),
            Ok("sqlite:///tmp/swarm/swarm.db".to_owned())
        );
        assert_eq!(
            store_url("postgres", folder, Some(pg.clone())),
            Ok(pg.clone())
        );
        assert!(store_url("postgres", folder, None).is_err());
        assert_eq!(store_url(&pg, folder, None), Ok(pg));
    }
}
