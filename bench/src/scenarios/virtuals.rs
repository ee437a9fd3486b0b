//! `virtual`: virtual agents (issue 38) — what an agent costs in memory once addressed and
//! inactive, and while active, and how long an activation takes, beside their floors.
//!
//! The agents are of one kind, `v`, whose strategy appends one entry to its thread per `note`
//! signal and announces `noted` on the bus once the step is done (its entry committed first).
//!
//! - `sqlite_addressed`: `MOTET_BENCH_VIRTUAL_AGENTS` (default 1,000,000) distinct agents each
//!   sent one `note`, at most [`CAP`] active at once (`max_active_agents`), their threads idle
//!   after 200 ms. `bytes_per_inactive_agent` is the live heap (the bench's counting allocator)
//!   once every agent is inactive again, after the second half of the agents minus after the
//!   first half, over the second half's count: what one more addressed, inactive agent holds
//!   in the process (goal ≤ 64 bytes; SQLite's page cache is SQLite's own allocation, not
//!   counted). `active_max` is the most active at once; `stored_agents` what the store's
//!   directory lists; `ns_per_op` the wall time per agent; `rss_bytes` the resident set at the
//!   end.
//! - `active`: [`ACTIVE`] agents each sent one `note`, all kept active: the live heap per
//!   agent, against `floor_actor`: as many bare ractor actors, each holding a thread with the
//!   same one entry (goal ≤ 1.5x).
//! - `activation_<store>`: [`PROBES`] agents stored and inactive, each sent a `note`: the time to
//!   its `noted` (activation, the thread loaded, the step, the commit), minus the p50 of the
//!   same for an agent already active; `floor_<store>`: a bare ractor actor spawned plus the
//!   same store load (the thread and its state). `activation_vs_floor` is the ratio of the
//!   p50s (goal ≤ 2x); on PostgreSQL (when `MOTET_DATABASE_URL` names a server) the goal is
//!   p50 ≤ 0.5 ms on loopback.

use std::sync::Arc;
use std::time::{Duration, Instant};

use motet_agents::{Env, NewEntry, Strategy, StrategyError, Thread};
use motet_directives::{Directive, Emit, EmitTarget};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::store::{AgentQuery, Durability, SqliteConfig, SqliteStore, ThreadStore};
use motet_runtime::testing::ScriptedModel;
use motet_signals::{Delivery, Signal};
use tokio::sync::mpsc;

use crate::alloc::{counting, live_bytes};
use crate::report::{Report, quantile, round2};

/// Active virtual agents at most.
const CAP: usize = 10_000;
/// Agents kept active for the memory figure.
const ACTIVE: usize = 10_000;
/// Agents timed as they activate.
const PROBES: usize = 2_000;
/// Threads idle after this.
const IDLE: Duration = Duration::from_millis(200);
/// Sends in flight at once while addressing.
const WINDOW: usize = 256;

/// Appends one entry per `note`, then announces `noted`.
struct Note;

impl Strategy for Note {
    type State = Thread;

    fn init(&self, env: &dyn Env) -> Thread {
        Thread::new("note", env.now_ms())
    }

    fn handle(
        &self,
        thread: &mut Thread,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        if signal.signal_type().as_str() != "note" {
            return Ok(Vec::new());
        }
        thread.append(env, NewEntry::user("noted"));
        let noted =
            Signal::builder("noted", "bench")
                .build()
                .map_err(|e| StrategyError::InvalidData {
                    signal_type: "note".into(),
                    message: e.to_string(),
                })?;
        Ok(vec![Directive::Emit(Emit {
            signal: noted,
            target: EmitTarget::Bus,
        })])
    }

    fn thread<'a>(&self, state: &'a Thread) -> Option<&'a Thread> {
        Some(state)
    }

    fn thread_mut<'a>(&self, state: &'a mut Thread) -> Option<&'a mut Thread> {
        Some(state)
    }
}

fn note() -> Signal {
    Signal::builder("note", "bench")
        .build()
        .unwrap_or_else(|_| unreachable!("a constant signal type"))
}

/// A runtime with the `v` kind on `store`.
fn runtime(store: Arc<dyn ThreadStore>, idle: Duration, cap: usize) -> Result<Runtime, String> {
    Runtime::builder()
        .virtual_kind("v", move |_key| {
            Ok(AgentSpec::new("v", Note).with_idle_timeout(Some(idle)))
        })
        .max_active_agents(cap)
        .llm(Arc::new(ScriptedModel::default()))
        .store(store)
        .build()
        .map_err(|e| e.to_string())
}

/// `noted` signals heard on `runtime`'s bus.
fn noted(runtime: &Runtime) -> (mpsc::UnboundedReceiver<()>, motet_signals::Subscription) {
    let (tx, rx) = mpsc::unbounded_channel();
    let pattern = "noted"
        .parse()
        .unwrap_or_else(|_| unreachable!("a constant pattern"));
    let subscription = runtime.bus().subscribe(pattern, move |_: &Signal| {
        let _ = tx.send(());
        Delivery::Delivered
    });
    (rx, subscription)
}

/// Sends `note` to agents `keys` (a window at a time) and waits for every `noted`.
async fn address(
    runtime: &Runtime,
    heard: &mut mpsc::UnboundedReceiver<()>,
    keys: std::ops::Range<usize>,
) -> Result<(), String> {
    let count = keys.len();
    let mut sent = Vec::with_capacity(WINDOW);
    for n in keys {
        let agent = runtime
            .virtual_agent("v", &format!("k{n}"))
            .map_err(|e| e.to_string())?;
        sent.push(async move { agent.send(note()).await });
        if sent.len() == WINDOW {
            for r in futures::future::join_all(sent.drain(..)).await {
                r.map_err(|e| e.to_string())?;
            }
        }
    }
    for r in futures::future::join_all(sent).await {
        r.map_err(|e| e.to_string())?;
    }
    for _ in 0..count {
        tokio::time::timeout(Duration::from_secs(60), heard.recv())
            .await
            .map_err(|_| "a note was not committed within 60 s".to_owned())?
            .ok_or("the bus closed")?;
    }
    Ok(())
}

/// Waits until no virtual agent is active (up to 60 s), then for the heap to settle.
async fn all_inactive(runtime: &Runtime) -> i64 {
    let started = Instant::now();
    while runtime.active_virtual_agents().0 > 0 && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settled_heap().await
}

async fn settled_heap() -> i64 {
    let started = Instant::now();
    let mut last = live_bytes();
    while started.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = live_bytes();
        if (last - now).abs() <= last.abs() / 1000 {
            return now;
        }
        last = now;
    }
    last
}

/// The resident set size, from /proc (0 where there is none).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The `virtual` scenario, the allocator counting throughout.
pub(crate) fn run() -> Vec<Report> {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        eprintln!("virtual: cannot start a tokio runtime");
        return Vec::new();
    };
    counting(true);
    let reports = rt.block_on(async {
        let mut reports = Vec::new();
        let dir = std::env::temp_dir().join(format!("motet-bench-virtual-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let config = SqliteConfig {
            durability: Durability::Normal,
            ..SqliteConfig::default()
        };
        match SqliteStore::open_with(dir.join("virtual.db"), config).await {
            Ok(store) => {
                let store: Arc<dyn ThreadStore> = Arc::new(store);
                for step in [addressed(&store).await, active(&store).await] {
                    match step {
                        Ok(mut r) => reports.append(&mut r),
                        Err(e) => eprintln!("virtual: sqlite: {e}"),
                    }
                }
                match activation("sqlite", &store).await {
                    Ok(mut r) => reports.append(&mut r),
                    Err(e) => eprintln!("virtual: sqlite activation: {e}"),
                }
            }
            Err(e) => eprintln!("virtual: cannot open a SQLite store: {e}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        match postgres().await {
            Ok(Some(mut r)) => reports.append(&mut r),
            Ok(None) => {}
            Err(e) => eprintln!("virtual: postgres: {e}"),
        }
        reports
    });
    counting(false);
    reports
}

/// The PostgreSQL activation lines, when `MOTET_DATABASE_URL` names a server.
async fn postgres() -> Result<Option<Vec<Report>>, String> {
    let Some(admin) = std::env::var("MOTET_DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        return Ok(None);
    };
    let name = format!("motet_bench_virtual_{}", std::process::id());
    let client = super::pg_append::connect(&admin).await?;
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .map_err(|e| e.to_string())?;
    let url = super::pg_append::with_database(&admin, &name)?;
    let outcome = match motet_runtime::store::PostgresStore::open(&url).await {
        Ok(store) => activation("postgres", &(Arc::new(store) as Arc<dyn ThreadStore>)).await,
        Err(e) => Err(e.to_string()),
    };
    let _ = client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await;
    outcome.map(Some)
}

/// `sqlite_addressed`.
async fn addressed(store: &Arc<dyn ThreadStore>) -> Result<Vec<Report>, String> {
    let agents: usize = std::env::var("MOTET_BENCH_VIRTUAL_AGENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
        .max(2);
    let runtime = runtime(Arc::clone(store), IDLE, CAP)?;
    let (mut heard, _subscription) = noted(&runtime);
    let half = agents / 2;
    let started = Instant::now();
    address(&runtime, &mut heard, 0..half).await?;
    let at_half = all_inactive(&runtime).await;
    address(&runtime, &mut heard, half..agents).await?;
    let elapsed = started.elapsed();
    let at_end = all_inactive(&runtime).await;
    let per_inactive = (at_end - at_half) as f64 / (agents - half) as f64;
    let (_, most) = runtime.active_virtual_agents();
    let mut stored = 0usize;
    let mut query = AgentQuery {
        kind: Some("v".to_owned()),
        after: None,
        limit: 100_000,
    };
    loop {
        let page = runtime
            .stored_agents(&query)
            .await
            .map_err(|e| e.to_string())?;
        stored += page.len();
        match page.last() {
            Some(last) if page.len() == query.limit => query.after = Some(last.name.clone()),
            _ => break,
        }
    }
    runtime.shutdown().await;
    Ok(vec![
        Report::new("virtual", "sqlite_addressed", agents as u64, elapsed)
            .with("addressed", agents as u64)
            .with("active_max", most as u64)
            .with("cap", CAP as u64)
            .with("bytes_per_inactive_agent", round2(per_inactive))
            .with("stored_agents", stored as u64)
            .with("rss_bytes", rss_bytes()),
    ])
}

/// `active` and `floor_actor`.
async fn active(store: &Arc<dyn ThreadStore>) -> Result<Vec<Report>, String> {
    // The floor first: bare actors holding the same one-entry thread.
    let before = settled_heap().await;
    let started = Instant::now();
    let mut actors = Vec::with_capacity(ACTIVE);
    for n in 0..ACTIVE {
        let mut thread = Thread::new(format!("v:a{n}/default"), 0);
        thread.append(&motet_agents::FixedEnv::new(0), NewEntry::user("noted"));
        let (actor, handle) = ractor::Actor::spawn(None, Holder, thread)
            .await
            .map_err(|e| e.to_string())?;
        actors.push((actor, handle));
    }
    let floor_elapsed = started.elapsed();
    let floor = (settled_heap().await - before) as f64 / ACTIVE as f64;
    for (actor, handle) in actors {
        actor.stop(None);
        let _ = handle.await;
    }

    let runtime = runtime(Arc::clone(store), Duration::from_secs(600), ACTIVE * 2)?;
    let (mut heard, _subscription) = noted(&runtime);
    let before = settled_heap().await;
    let started = Instant::now();
    let keys = 2_000_000..2_000_000 + ACTIVE;
    address(&runtime, &mut heard, keys).await?;
    let elapsed = started.elapsed();
    let per_active = (settled_heap().await - before) as f64 / ACTIVE as f64;
    let (active, _) = runtime.active_virtual_agents();
    runtime.shutdown().await;
    Ok(vec![
        Report::new("virtual", "floor_actor", ACTIVE as u64, floor_elapsed)
            .with("bytes_per_actor", round2(floor)),
        Report::new("virtual", "active", ACTIVE as u64, elapsed)
            .with("active", active as u64)
            .with("bytes_per_active_agent", round2(per_active))
            .with("vs_floor", round2(per_active / floor.max(1.0))),
    ])
}

/// A bare actor holding a thread.
struct Holder;

impl ractor::Actor for Holder {
    type Msg = ();
    type State = Thread;
    type Arguments = Thread;

    async fn pre_start(
        &self,
        _myself: ractor::ActorRef<()>,
        thread: Thread,
    ) -> Result<Thread, ractor::ActorProcessingErr> {
        Ok(thread)
    }
}

/// A bare actor that loads a stored thread and its state as it starts.
struct Loader(Arc<dyn ThreadStore>);

impl ractor::Actor for Loader {
    type Msg = ();
    type State = Option<(Thread, Option<String>)>;
    type Arguments = String;

    async fn pre_start(
        &self,
        _myself: ractor::ActorRef<()>,
        id: String,
    ) -> Result<Self::State, ractor::ActorProcessingErr> {
        let thread = self.0.load(&id).await?;
        let state = self.0.load_state(&id).await?;
        Ok(thread.map(|t| (t, state)))
    }
}

/// `activation_<store>` and `floor_<store>`.
async fn activation(variant: &str, store: &Arc<dyn ThreadStore>) -> Result<Vec<Report>, String> {
    let keys = |n: usize| format!("p{n}");
    {
        // The probes, stored and inactive.
        let runtime = runtime(Arc::clone(store), IDLE, CAP)?;
        let (mut heard, _subscription) = noted(&runtime);
        for n in 0..PROBES {
            let agent = runtime
                .virtual_agent("v", &keys(n))
                .map_err(|e| e.to_string())?;
            agent.send(note()).await.map_err(|e| e.to_string())?;
            heard.recv().await.ok_or("the bus closed")?;
        }
        runtime.shutdown().await;
    }
    let runtime = runtime(Arc::clone(store), Duration::from_secs(600), CAP)?;
    let (mut heard, _subscription) = noted(&runtime);
    let mut cold = Vec::with_capacity(PROBES);
    let mut warm = Vec::with_capacity(PROBES);
    let started = Instant::now();
    for n in 0..PROBES {
        let agent = runtime
            .virtual_agent("v", &keys(n))
            .map_err(|e| e.to_string())?;
        for times in [&mut cold, &mut warm] {
            let at = Instant::now();
            agent.send(note()).await.map_err(|e| e.to_string())?;
            heard.recv().await.ok_or("the bus closed")?;
            times.push(at.elapsed().as_secs_f64() * 1e6);
        }
    }
    let elapsed = started.elapsed();
    runtime.shutdown().await;
    let mut floor = Vec::with_capacity(PROBES);
    for n in 0..PROBES {
        let at = Instant::now();
        let (actor, handle) = ractor::Actor::spawn(
            None,
            Loader(Arc::clone(store)),
            format!("v:{}/default", keys(n)),
        )
        .await
        .map_err(|e| e.to_string())?;
        floor.push(at.elapsed().as_secs_f64() * 1e6);
        actor.stop(None);
        let _ = handle.await;
    }
    for times in [&mut cold, &mut warm, &mut floor] {
        times.sort_by(f64::total_cmp);
    }
    let warm_p50 = quantile(&warm, 0.5);
    let activation = |q: f64| (quantile(&cold, q) - warm_p50).max(0.0);
    let (p50, p99) = (activation(0.5), activation(0.99));
    let floor_p50 = quantile(&floor, 0.5);
    Ok(vec![
        Report::new(
            "virtual",
            format!("floor_{variant}"),
            PROBES as u64,
            elapsed,
        )
        .with("p50_us", round2(floor_p50))
        .with("p99_us", round2(quantile(&floor, 0.99))),
        Report::new(
            "virtual",
            format!("activation_{variant}"),
            PROBES as u64,
            elapsed,
        )
        .with("p50_us", round2(p50))
        .with("p99_us", round2(p99))
        .with("send_to_commit_cold_p50_us", round2(quantile(&cold, 0.5)))
        .with("send_to_commit_warm_p50_us", round2(warm_p50))
        .with("activation_vs_floor", round2(p50 / floor_p50.max(0.001))),
    ])
}
