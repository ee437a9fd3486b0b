//! A timer is part of the commit of the step that set it: a process killed right after that
//! commit (before anything else reaches the store) keeps the step and its timer, and the next
//! process fires the timer exactly once — on SQLite and on PostgreSQL (`MOTET_DATABASE_URL`,
//! tests/common/pg.rs; without it that half prints `skipped:`, and fails under `CI=true`).
//!
//! The kill is tests/common/dying_store.rs: the store refuses every call once the step's
//! commit returned, as a dead process makes none.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

#[path = "common/dying_store.rs"]
mod dying_store;
#[cfg(feature = "postgres")]
#[path = "common/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::Duration;

use dying_store::DyingStore;
use motet_agents::{Env, Strategy, StrategyError};
use motet_directives::{Directive, Emit, EmitTarget, Schedule, ScheduleId};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::store::{SqliteStore, ThreadKey, ThreadStore};
use motet_runtime::testing::ScriptedModel;
use motet_signals::{Delivery, Signal};
use tokio::sync::mpsc;

/// `set` {id, ms} schedules `rang` {id} after `ms`; a `rang` is announced on the bus as
/// `heard` {id}. The state counts the signals handled, so every step commits.
struct Counter;

#[derive(serde::Serialize, serde::Deserialize)]
struct Set {
    id: String,
    ms: u64,
}

impl Strategy for Counter {
    type State = u64;

    fn init(&self, _env: &dyn Env) -> u64 {
        0
    }

    fn handle(
        &self,
        handled: &mut u64,
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let invalid = |e: String| StrategyError::InvalidData {
            signal_type: signal.signal_type().as_str().to_owned(),
            message: e,
        };
        *handled += 1;
        Ok(match signal.signal_type().as_str() {
            "set" => {
                let set: Set = signal.data_as().map_err(|e| invalid(e.to_string()))?;
                vec![Directive::Schedule(Schedule {
                    schedule_id: ScheduleId::new(&set.id),
                    delay: Duration::from_millis(set.ms),
                    signal: Signal::builder("rang", "counter")
                        .with_data(set.id)
                        .build()
                        .map_err(|e| invalid(e.to_string()))?,
                })]
            }
            "rang" => {
                let id: String = signal.data_as().map_err(|e| invalid(e.to_string()))?;
                vec![Directive::Emit(Emit {
                    signal: Signal::builder("heard", "counter")
                        .with_data(id)
                        .build()
                        .map_err(|e| invalid(e.to_string()))?,
                    target: EmitTarget::Bus,
                })]
            }
            _ => Vec::new(),
        })
    }
}

/// A runtime on `store` running the counter, and what it hears.
async fn counter_on(
    store: Arc<dyn ThreadStore>,
) -> (
    Runtime,
    motet_runtime::agent::AgentHandle,
    mpsc::UnboundedReceiver<String>,
    motet_signals::Subscription,
) {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(store)
        .build()
        .unwrap();
    let (tx, heard) = mpsc::unbounded_channel();
    let subscription = runtime
        .bus()
        .subscribe("heard".parse().unwrap(), move |s: &Signal| {
            let _ = tx.send(s.data_as::<String>().unwrap());
            Delivery::Delivered
        });
    let agent = runtime
        .spawn(AgentSpec::new("counter", Counter))
        .await
        .unwrap();
    (runtime, agent, heard, subscription)
}

/// Sets a timer on a runtime whose process dies right after the step's commit (`first`, the
/// store it wraps), then starts a new runtime on `second` (the same database): the timer
/// fires there once, and is settled.
async fn a_timer_survives_a_kill_right_after_its_step_committed(
    first: Arc<dyn ThreadStore>,
    second: Arc<dyn ThreadStore>,
) {
    let dying = Arc::new(DyingStore::new(first, 1));
    let (runtime, agent, _, _subscription) = counter_on(dying.clone()).await;
    let set = Signal::builder("set", "test")
        .with_data(Set {
            id: "t".into(),
            ms: 1_500,
        })
        .build()
        .unwrap();
    agent.send(set).await.unwrap();
    for _ in 0..1_000 {
        if dying.is_dead() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        dying.is_dead(),
        "the step that set the timer never committed"
    );
    runtime.shutdown().await;
    drop(runtime);

    // The process started again: the agent spawned, nothing else asked of it.
    let key = ThreadKey::new("counter", "default");
    let (runtime, _agent, mut heard, _subscription) = counter_on(Arc::clone(&second)).await;
    let first_heard = tokio::time::timeout(Duration::from_secs(20), heard.recv())
        .await
        .expect("the timer set before the kill never fired: it was lost")
        .expect("the bus closed");
    assert_eq!(first_heard, "t");
    // Exactly once: nothing more, and settled in the store.
    let more = tokio::time::timeout(Duration::from_millis(1_500), heard.recv()).await;
    assert!(more.is_err(), "the timer fired twice: {more:?}");
    let mut settled = false;
    for _ in 0..200 {
        if second.timers_of(&key).await.unwrap().is_empty() {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(settled, "the fired timer is still in the store");
    // The step that set it and the firing, each committed once.
    let stored = second.load_state(&key.store_id()).await.unwrap().unwrap();
    let snapshot: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(snapshot["state"], 2, "{stored}");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_survives_a_kill_right_after_its_step_committed_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timers.db");
    let first = Arc::new(SqliteStore::open(&path).await.unwrap());
    let second = Arc::new(SqliteStore::open(&path).await.unwrap());
    a_timer_survives_a_kill_right_after_its_step_committed(first, second).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_survives_a_kill_right_after_its_step_committed_on_postgres() {
    use motet_runtime::store::PostgresStore;
    let Some(db) = pg::TestDb::new("timers_commit").await else {
        return;
    };
    let first = Arc::new(PostgresStore::open(&db.url).await.unwrap());
    let second = Arc::new(PostgresStore::open(&db.url).await.unwrap());
    a_timer_survives_a_kill_right_after_its_step_committed(first, second).await;
    db.drop_now().await;
}
