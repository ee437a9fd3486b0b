//! `timers`: durable timers (issue 38) — what a pending timer costs in memory while its agent is
//! inactive, and how late timers fire — on a SQLite store (and on PostgreSQL when
//! `MOTET_DATABASE_URL` names a server: a database of its own there, dropped afterwards).
//!
//! 10,000 agents (idle timeout 200 ms, so their threads go inactive as soon as they are done)
//! each set timers with `Schedule` directives, every timer one signal of its own:
//!
//! - `<store>_pending`: every agent sets 10 timers due in an hour, 100,000 in all, far beyond
//!   the timekeeper's 10 s horizon: they live in the store alone. They are set in three rounds
//!   of 4, 3 and 3 an agent: the first is also each agent thread's first commit (what that
//!   costs, over the agents, is `bytes_per_agent_first_commit`), the second each thread's first
//!   commit of timers alone (`bytes_per_pending_timer_second_round` counts what the store's
//!   client prepares for that once with its timers), so `bytes_per_pending_timer` is the live
//!   heap (the bench's counting allocator, `crate::alloc`) once the third round's timers are
//!   written and every thread is inactive again, minus the same before it, over its 30,000
//!   timers (goal 0). The SQLite library's own page cache is allocated by SQLite, not counted.
//!   `ns_per_op` is the time from each round's signals to its last timer in the store, per
//!   timer.
//! - `<store>_lateness`: 1,000 of the agents then set 10 timers each, 2.1 s apart, due 1 to
//!   20 s ahead and agent n's n/1,000 of 2.1 s later than that (so the 10,000 come evenly, about
//!   470 a second; half come in from the store by the timekeeper's 5 s read and half are held
//!   from the start), all 100,000 pending timers still in the store. The strategy handles a firing on
//!   the thread the timer brings back from the store, and reports the clock there minus the
//!   time it was due (the strategy's clock when it set it plus the delay; the runtime counts
//!   the delay from just after the strategy's step, before the commit that writes the timer):
//!   `lateness_p50_ms`, `lateness_p99_ms`,
//!   `lateness_max_ms` (goal p99 ≤ 50 ms). A timer reaches the timekeeper with its step's
//!   commit, so a step committed after its first timer was due (1 s) makes that timer late
//!   however the timekeeper does: `sets_committed_ms` is when the last of the 1,000 steps was
//!   committed, and `committed_before_due`, `lateness_p50_ms_committed_before_due` and
//!   `lateness_p99_ms_committed_before_due` count and measure the timers whose step was
//!   committed before they were due (the timekeeper and the activation, without that wait). `lost` and `doubled` count the timers that had not
//!   fired 30 s after the last was due, or fired twice by then (a second firing up to a second
//!   after the last), in this run (no kill: the SIGKILL figures are
//!   runtime/tests/timers_crash.rs's).
//! - `floor_tokio_sleep`: the same 10,000 due times, each a tokio task sleeping until its time
//!   (`tokio::time::sleep_until`): the lateness of the clock and scheduler alone.
//!
//! Each store's SQLite file is opened with `Durability::Normal` (synced at checkpoints): the
//! 100,000 timer writes at `Full` would take minutes on this machine's disk, and timers'
//! memory and lateness do not depend on the sync.

use std::sync::Arc;
use std::time::{Duration, Instant};

use motet_agents::{Env, Strategy, StrategyError};
use motet_directives::{Directive, Emit, EmitTarget, Schedule, ScheduleId};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::store::{Durability, SqliteConfig, SqliteStore, ThreadStore};
use motet_runtime::testing::ScriptedModel;
use motet_signals::{Delivery, Signal};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::alloc::{counting, live_bytes};
use crate::report::{Report, quantile, round2};

/// Agents.
const AGENTS: usize = 10_000;
/// Pending timers per agent.
const PER_AGENT: u64 = 10;
/// How far ahead the pending timers are due.
const PENDING_DELAY: Duration = Duration::from_secs(3_600);
/// The agents whose timers' lateness is measured, and how many each sets.
const LATE_AGENTS: usize = 1_000;
/// The first and last delay of the measured timers.
const LATE_FROM_MS: u64 = 1_000;
const LATE_TO_MS: u64 = 20_000;
/// The time between one agent's measured timers.
const LATE_STEP_MS: u64 = (LATE_TO_MS - LATE_FROM_MS) / (PER_AGENT - 1);

/// How much later than the first agent's the measured timers of agent `n` are due: the agents'
/// timers interleave, so the 10,000 come evenly (about 470 a second) rather than in a wave of
/// 1,000 every 2.1 s.
fn phase_ms(n: usize) -> u64 {
    n as u64 * LATE_STEP_MS / LATE_AGENTS as u64
}
/// How long after the last measured timer was due its firings are still waited for.
const GRACE: Duration = Duration::from_secs(30);
/// The agents' idle timeout.
const IDLE: Duration = Duration::from_millis(200);

/// `set` {from_ms, to_ms, count, tag} sets `count` timers due evenly from `from_ms` to `to_ms`
/// ahead; a `rang` {tag, n, due_ms} is announced on the bus as `heard` {tag, n, late_ms}.
struct Setter;

#[derive(Serialize, Deserialize)]
struct Set {
    from_ms: u64,
    to_ms: u64,
    count: u64,
    tag: String,
}

#[derive(Serialize, Deserialize)]
struct Rang {
    tag: String,
    n: u64,
    due_ms: u64,
}

#[derive(Serialize, Deserialize)]
struct Heard {
    tag: String,
    n: u64,
    late_ms: f64,
}

fn invalid(signal: &Signal, e: impl std::fmt::Display) -> StrategyError {
    StrategyError::InvalidData {
        signal_type: signal.signal_type().as_str().to_owned(),
        message: e.to_string(),
    }
}

impl Strategy for Setter {
    type State = ();

    fn init(&self, _env: &dyn Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        match signal.signal_type().as_str() {
            "set" => {
                let set: Set = signal.data_as().map_err(|e| invalid(signal, e))?;
                let now = env.now_ms();
                let step = set.to_ms.saturating_sub(set.from_ms) / (set.count.max(2) - 1);
                // Carried out once the step (its timers with it) is committed.
                let armed = Signal::builder("armed", "bench")
                    .with_data(Heard {
                        tag: set.tag.clone(),
                        n: set.count,
                        late_ms: 0.0,
                    })
                    .build()
                    .map_err(|e| invalid(signal, e))?;
                let armed = Directive::Emit(Emit {
                    signal: armed,
                    target: EmitTarget::Bus,
                });
                (0..set.count)
                    .map(|n| {
                        let delay = set.from_ms + n * step;
                        let rang = Rang {
                            tag: set.tag.clone(),
                            n,
                            due_ms: now + delay,
                        };
                        let signal = Signal::builder("rang", "bench")
                            .with_data(rang)
                            .build()
                            .map_err(|e| invalid(signal, e))?;
                        Ok(Directive::Schedule(Schedule {
                            schedule_id: ScheduleId::new(format!("{}-{n}", set.tag)),
                            delay: Duration::from_millis(delay),
                            signal,
                        }))
                    })
                    .chain(std::iter::once(Ok(armed)))
                    .collect()
            }
            "rang" => {
                let rang: Rang = signal.data_as().map_err(|e| invalid(signal, e))?;
                let heard = Heard {
                    late_ms: env.now_ms() as f64 - rang.due_ms as f64,
                    tag: rang.tag,
                    n: rang.n,
                };
                let signal = Signal::builder("heard", "bench")
                    .with_data(heard)
                    .build()
                    .map_err(|e| invalid(signal, e))?;
                Ok(vec![Directive::Emit(Emit {
                    signal,
                    target: EmitTarget::Bus,
                })])
            }
            _ => Ok(Vec::new()),
        }
    }
}

/// The `timers` scenario, the allocator counting throughout.
pub(crate) fn run() -> Vec<Report> {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        eprintln!("timers: cannot start a tokio runtime");
        return Vec::new();
    };
    counting(true);
    let reports = rt.block_on(async {
        let mut reports = floor().await;
        let dir = std::env::temp_dir().join(format!("motet-bench-timers-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let config = SqliteConfig {
            durability: Durability::Normal,
            ..SqliteConfig::default()
        };
        match SqliteStore::open_with(dir.join("timers.db"), config).await {
            Ok(store) => match measure("sqlite", Arc::new(store)).await {
                Ok(mut r) => reports.append(&mut r),
                Err(e) => eprintln!("timers: sqlite: {e}"),
            },
            Err(e) => eprintln!("timers: cannot open a SQLite store: {e}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        match postgres().await {
            Ok(Some(mut r)) => reports.append(&mut r),
            Ok(None) => {}
            Err(e) => eprintln!("timers: postgres: {e}"),
        }
        reports
    });
    counting(false);
    reports
}

/// The PostgreSQL lines, when `MOTET_DATABASE_URL` names a server.
async fn postgres() -> Result<Option<Vec<Report>>, String> {
    let Some(admin) = std::env::var("MOTET_DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        return Ok(None);
    };
    let name = format!("motet_bench_timers_{}", std::process::id());
    let client = super::pg_append::connect(&admin).await?;
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .map_err(|e| e.to_string())?;
    let url = super::pg_append::with_database(&admin, &name)?;
    let outcome = match motet_runtime::store::PostgresStore::open(&url).await {
        Ok(store) => measure("postgres", Arc::new(store)).await,
        Err(e) => Err(e.to_string()),
    };
    let _ = client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await;
    outcome.map(Some)
}

/// The lateness of tokio sleeps alone, for the same due times as the measured timers.
async fn floor() -> Vec<Report> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let start = Instant::now();
    let per = PER_AGENT;
    for agent in 0..LATE_AGENTS {
        for n in 0..per {
            let due =
                start + Duration::from_millis(LATE_FROM_MS + phase_ms(agent) + n * LATE_STEP_MS);
            let tx = tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(due.into()).await;
                let late = due.elapsed().as_secs_f64() * 1e3;
                let _ = tx.send(late);
            });
        }
    }
    drop(tx);
    let mut late = Vec::new();
    while let Some(l) = rx.recv().await {
        late.push(l);
    }
    let n = late.len() as u64;
    vec![with_lateness(
        Report::new("timers", "floor_tokio_sleep", n, start.elapsed()),
        &mut late,
    )]
}

/// The percentiles of `late` on `report`.
fn with_lateness(report: Report, late: &mut [f64]) -> Report {
    late.sort_by(f64::total_cmp);
    let at = |q: f64| quantile(late, q);
    report
        .with("lateness_p50_ms", round2(at(0.5)))
        .with("lateness_p99_ms", round2(at(0.99)))
        .with("lateness_max_ms", round2(at(1.0)))
}

/// Live heap bytes once two readings 50 ms apart agree within 0.1% (at most 2 s).
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

fn set(from_ms: u64, to_ms: u64, count: u64, tag: &str) -> Result<Signal, String> {
    Signal::builder("set", "bench")
        .with_data(Set {
            from_ms,
            to_ms,
            count,
            tag: tag.to_owned(),
        })
        .build()
        .map_err(|e| e.to_string())
}

/// The pending and lateness lines on `store`, named `variant`.
async fn measure(variant: &str, store: Arc<dyn ThreadStore>) -> Result<Vec<Report>, String> {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(Arc::clone(&store))
        .build()
        .map_err(|e| e.to_string())?;
    let (tx, mut heard) = mpsc::unbounded_channel();
    let _subscription = runtime.bus().subscribe(
        "heard".parse().map_err(|e| format!("{e}"))?,
        move |s: &Signal| {
            if let Ok(h) = s.data_as::<Heard>() {
                let _ = tx.send((h, Instant::now()));
            }
            Delivery::Delivered
        },
    );
    // When each `set` step was committed (its `armed` emitted after the commit).
    let (armed_tx, mut armed) = mpsc::unbounded_channel();
    let _armed = runtime.bus().subscribe(
        "armed".parse().map_err(|e| format!("{e}"))?,
        move |s: &Signal| {
            if let Ok(h) = s.data_as::<Heard>() {
                let _ = armed_tx.send((h.tag, Instant::now()));
            }
            Delivery::Delivered
        },
    );
    let mut agents = Vec::with_capacity(AGENTS);
    for n in 0..AGENTS {
        let spec = AgentSpec::new(format!("a{n}"), Setter).with_idle_timeout(Some(IDLE));
        agents.push(runtime.spawn(spec).await.map_err(|e| e.to_string())?);
    }
    let names: Vec<String> = (0..AGENTS).map(|n| format!("a{n}")).collect();
    // Every thread inactive: the idle timeout and the idle check after it.
    tokio::time::sleep(IDLE * 4 + Duration::from_secs(2)).await;
    let baseline = settled_heap().await;

    // Three rounds (4, 3 and 3 timers an agent): the first stores every agent's thread (its
    // first commit) and the second is each one's first commit of timers alone (what the
    // store's client prepares for that, once), so the third's heap growth is the timers'.
    let pending = AGENTS as u64 * PER_AGENT;
    let rounds = [("p", 4), ("q", 3), ("r", PER_AGENT - 7)];
    let far = u64::try_from(PENDING_DELAY.as_millis()).unwrap_or(u64::MAX);
    let owners = motet_runtime::store::TimerOwners {
        agents: names,
        kinds: Vec::new(),
    };
    let mut written = Duration::ZERO;
    let mut heaps = vec![baseline];
    let mut want = 0;
    for (round, (tag, count)) in rounds.into_iter().enumerate() {
        if round > 0 {
            // The pending rounds' `armed` signals are not wanted: queued, they would be
            // counted as the timers'.
            while armed.try_recv().is_ok() {}
            heaps.push(settled_heap().await);
        }
        let started = Instant::now();
        for agent in &agents {
            agent
                .send(set(far, far + 1, count, tag)?)
                .await
                .map_err(|e| e.to_string())?;
        }
        want += AGENTS as u64 * count;
        let mut stored = 0;
        while stored < want {
            tokio::time::sleep(Duration::from_secs(1)).await;
            stored = store
                .due_timers(0..u64::MAX, &owners, 1_000_000)
                .await
                .map_err(|e| e.to_string())?
                .len() as u64;
            if started.elapsed() > Duration::from_secs(600) {
                return Err(format!("only {stored} of {want} timers stored in 10 min"));
            }
        }
        written += started.elapsed();
        // The threads go inactive again, and the timekeeper's next reads drop what it no
        // longer needs.
        tokio::time::sleep(IDLE * 4 + Duration::from_secs(11)).await;
    }
    while armed.try_recv().is_ok() {}
    heaps.push(settled_heap().await);
    let per_timer = |round: usize| {
        let timers = AGENTS as f64 * rounds[round].1 as f64;
        round2((heaps[round + 1] - heaps[round]) as f64 / timers)
    };
    let mut reports = vec![
        Report::new("timers", format!("{variant}_pending"), pending, written)
            .with("bytes_per_pending_timer", per_timer(2))
            .with("bytes_per_pending_timer_second_round", per_timer(1))
            .with("agents", AGENTS as u64)
            .with(
                "bytes_per_agent_first_commit",
                round2((heaps[1] - heaps[0]) as f64 / AGENTS as f64),
            )
            .with("heap_bytes_before", heaps[2])
            .with("heap_bytes_after", heaps[3]),
    ];

    let measured = LATE_AGENTS as u64 * PER_AGENT;
    let started = Instant::now();
    for (n, agent) in agents.iter().take(LATE_AGENTS).enumerate() {
        agent
            .send(set(
                LATE_FROM_MS + phase_ms(n),
                LATE_TO_MS + phase_ms(n),
                PER_AGENT,
                &format!("l{n}"),
            )?)
            .await
            .map_err(|e| e.to_string())?;
    }
    let last_due = started + Duration::from_millis(LATE_TO_MS + LATE_STEP_MS);
    let deadline = last_due + GRACE;
    let mut got = std::collections::HashMap::new();
    let mut late = Vec::with_capacity(measured as usize);
    let mut firings = Vec::with_capacity(measured as usize);
    while let Ok(Some((h, at))) = tokio::time::timeout_at(deadline.into(), heard.recv()).await {
        if h.tag.starts_with('l') {
            late.push(h.late_ms);
            // When it was due, by this clock.
            let due = if h.late_ms >= 0.0 {
                at.checked_sub(Duration::from_secs_f64(h.late_ms / 1e3))
            } else {
                Some(at + Duration::from_secs_f64(-h.late_ms / 1e3))
            };
            firings.push((h.tag.clone(), due, h.late_ms));
            *got.entry((h.tag, h.n)).or_insert(0u64) += 1;
        }
        if got.len() as u64 == measured && Instant::now() > last_due + Duration::from_secs(1) {
            break;
        }
    }
    let mut committed = Duration::ZERO;
    let mut armed_at = std::collections::HashMap::new();
    while let Ok((tag, at)) = armed.try_recv() {
        if tag.starts_with('l') {
            committed = committed.max(at.duration_since(started));
            armed_at.insert(tag, at);
        }
    }
    // The timers whose steps were committed before they were due: what the timekeeper and
    // the activation add, without the wait for a commit that came after the due time.
    let mut in_time: Vec<f64> = firings
        .iter()
        .filter(|(tag, due, _)| {
            matches!((armed_at.get(tag), due), (Some(armed), Some(due)) if armed <= due)
        })
        .map(|(_, _, late_ms)| *late_ms)
        .collect();
    in_time.sort_by(f64::total_cmp);
    let fired = late.len() as u64;
    let distinct = got.len() as u64;
    let (lost, doubled) = (measured.saturating_sub(distinct), fired - distinct);
    reports.push(
        with_lateness(
            Report::new(
                "timers",
                format!("{variant}_lateness"),
                fired,
                started.elapsed(),
            ),
            &mut late,
        )
        .with("timers", measured)
        .with("sets_committed_ms", round2(committed.as_secs_f64() * 1e3))
        .with("committed_before_due", in_time.len() as u64)
        .with(
            "lateness_p50_ms_committed_before_due",
            round2(quantile(&in_time, 0.5)),
        )
        .with(
            "lateness_p99_ms_committed_before_due",
            round2(quantile(&in_time, 0.99)),
        )
        .with("lost", lost)
        .with("doubled", doubled),
    );
    runtime.shutdown().await;
    Ok(reports)
}
