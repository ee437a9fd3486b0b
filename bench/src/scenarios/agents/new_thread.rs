//! `new_thread`: a request on a new thread (a fresh conversation: its actor started, its
//! store record created with the first commit) against one on a thread already active (its
//! actor running, its record in the store), with the zero-latency model on a ReAct request
//! (an LLM call that asks for a tool, the tool, an LLM call that answers), on a
//! multi-threaded runtime of 2 workers (issue 38's goal: `new_vs_active` ≤ 1.2).
//!
//! Each round starts a runtime and one agent, warms it with requests on its default thread,
//! then asks [`THREADS`] requests one after another, each on a thread of its own never used
//! before (`new_thread_us`: their mean), then one more on each of those threads, now active
//! (`active_thread_us`; its conversation is one request longer). `new_vs_active` is the median
//! over [`ROUNDS`] rounds of the rounds' ratios; the times are the medians of the rounds'.
//! Variants: `memory` (the in-memory store, the runtime's default) and `sqlite` (a SQLite file
//! at `Durability::Normal`, so the ratio is not the disk's sync: a file of its own per round).
//! `floor_loop_new_thread` is the same request by hand (strategy, model and tool called
//! directly) on a fresh state each time.

#[allow(
    clippy::wildcard_imports,
    reason = "a part of the agents scenarios, sharing their helpers"
)]
use super::*;
use motet_runtime::store::{Durability, SqliteConfig, SqliteStore, ThreadStore};

/// Threads per round: each gets one request new and one active.
const THREADS: usize = 2_000;
/// Rounds per variant.
const ROUNDS: usize = 5;
/// Requests on the default thread before a round is timed.
const WARM_UP: usize = 200;

/// One round on the store `open` makes (the in-memory one for `None`): the time of the
/// requests on new threads, then of those on the same threads, active.
async fn round(store: Option<Arc<dyn ThreadStore>>, n: usize) -> Option<(Duration, Duration)> {
    let tools = tools()?;
    let strategy = react(&tools)?;
    let mut builder = Runtime::builder().llm(Arc::new(ZeroModel));
    if let Some(store) = store {
        builder = builder.store(store);
    }
    let runtime = builder.build().ok()?;
    let spec = AgentSpec::new(format!("n{n}"), strategy).with_tools(tools);
    let agent = runtime.spawn(spec).await.ok()?;
    for _ in 0..WARM_UP {
        agent.ask("What is 2 + 3?").await.ok()?;
    }
    let on = |thread: usize| AskOptions {
        thread_id: Some(format!("t{thread}")),
        ..AskOptions::default()
    };
    let start = Instant::now();
    for thread in 0..THREADS {
        agent.ask_with("What is 2 + 3?", on(thread)).await.ok()?;
    }
    let new = start.elapsed();
    let start = Instant::now();
    for thread in 0..THREADS {
        agent.ask_with("What is 2 + 3?", on(thread)).await.ok()?;
    }
    let active = start.elapsed();
    runtime.shutdown().await;
    Some((new, active))
}

/// `task` on a multi-threaded runtime of 2 workers of its own, built on a thread of its own:
/// asked from a task on the runtime, as a server's handlers ask.
fn on_two_workers<F, Fut, T>(task: F) -> Option<T>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Option<T>> + Send + 'static,
    T: Send + 'static,
{
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async { tokio::spawn(task()).await.ok().flatten() })
    })
    .join()
    .ok()
    .flatten()
}

/// The median of `values` (0 for none).
fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The rounds of one variant (`sqlite`: a file of its own for each), as its report line.
fn variant(sqlite: bool) -> Option<Report> {
    let mut news = Vec::with_capacity(ROUNDS);
    let mut actives = Vec::with_capacity(ROUNDS);
    let mut ratios = Vec::with_capacity(ROUNDS);
    let mut total = Duration::ZERO;
    let dir = std::env::temp_dir().join(format!("motet-bench-new-thread-{}", std::process::id()));
    for n in 0..ROUNDS {
        let path = dir.join(format!("round-{n}.db"));
        let folder = dir.clone();
        let (new, active) = on_two_workers(move || async move {
            let store: Option<Arc<dyn ThreadStore>> = if sqlite {
                std::fs::create_dir_all(&folder).ok()?;
                let config = SqliteConfig::default().with_durability(Durability::Normal);
                Some(Arc::new(SqliteStore::open_with(path, config).await.ok()?))
            } else {
                None
            };
            round(store, n).await
        })?;
        total += new + active;
        let per = |d: Duration| d.as_secs_f64() * 1e6 / THREADS as f64;
        news.push(per(new));
        actives.push(per(active));
        ratios.push(new.as_secs_f64() / active.as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&dir);
    let name = if sqlite { "sqlite" } else { "memory" };
    Some(
        Report::new("new_thread", name, (2 * THREADS * ROUNDS) as u64, total)
            .with("new_thread_us", round2(median_of(news)))
            .with("active_thread_us", round2(median_of(actives)))
            .with("new_vs_active", round2(median_of(ratios)))
            .with("threads", THREADS as u64)
            .with("rounds", ROUNDS as u64),
    )
}

/// `new_thread`.
pub(crate) fn run_new_thread() -> Vec<Report> {
    let mut reports = Vec::new();
    for sqlite in [false, true] {
        match variant(sqlite) {
            Some(report) => reports.push(report),
            None => {
                eprintln!("motet-bench: a new_thread round failed");
                return Vec::new();
            }
        }
    }
    let floor = on_two_workers(|| react::react_floor(THREADS, true));
    let Some(floor) = floor else {
        return Vec::new();
    };
    reports.push(
        Report::new("new_thread", "floor_loop_new_thread", THREADS as u64, floor).with(
            "us_per_request",
            round2(floor.as_secs_f64() * 1e6 / THREADS as f64),
        ),
    );
    reports
}
