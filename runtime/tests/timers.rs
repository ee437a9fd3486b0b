//! `Schedule`, `Cron`, `CancelSchedule` and `Stop`, carried out by a running agent: a timer
//! delivers its signal once after its delay, a cancelled or replaced timer never fires, a timer
//! outlives its thread's actor (idle or stopped) and the runtime itself (a new one on the same
//! store fires it once), and a cron timer fires once per occurrence, catching up on missed ones
//! as its misfire policy says.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{Entry, Thread};
use motet_agents::{Env, Strategy, StrategyError};
use motet_directives::cron::{CronExpr, Misfire};
use motet_directives::{
    CancelSchedule, Cron, Directive, Emit, EmitTarget, Schedule, ScheduleId, Stop,
};
use motet_runtime::agent::{AgentHandle, AgentSpec, Runtime};
use motet_runtime::store::{
    SqliteStore, StoreError, StoredTimer, ThreadHeader, ThreadKey, ThreadMeta, ThreadStore,
    ThreadSummary,
};
use motet_runtime::testing::ScriptedModel;
use motet_signals::{Delivery, Signal};
use tokio::sync::mpsc;

/// `timer.set` {id, ms} schedules `timer.rang` {id}; `cron.set` {id, expr, zone, misfire}
/// repeats it; `timer.cancel` {id} cancels either; a `timer.rang` is announced on the bus as
/// `timer.heard` {id, signal: the rang signal's id}, and a `schedule.failed` as
/// `timer.heard` {id: "failed: <reason>"}; `halt` stops the agent.
struct Alarm;

#[derive(serde::Serialize, serde::Deserialize)]
struct Set {
    id: String,
    ms: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct SetCron {
    id: String,
    expr: String,
    zone: String,
    misfire: Misfire,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Heard {
    id: String,
    signal: String,
}

impl Strategy for Alarm {
    type State = ();

    fn init(&self, _env: &dyn Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let id = || -> Result<String, StrategyError> {
            signal
                .data_as::<Set>()
                .map(|set| set.id)
                .or_else(|_| signal.data_as::<String>())
                .map_err(|e| StrategyError::InvalidData {
                    signal_type: signal.signal_type().as_str().to_owned(),
                    message: e.to_string(),
                })
        };
        let signal_of = |ty: &str, id: String| {
            Signal::builder(ty, "alarm")
                .caused_by(signal)
                .with_data(id)
                .build()
                .unwrap()
        };
        Ok(match signal.signal_type().as_str() {
            "timer.set" => {
                let set: Set = signal.data_as().map_err(|e| StrategyError::InvalidData {
                    signal_type: "timer.set".into(),
                    message: e.to_string(),
                })?;
                vec![Directive::Schedule(Schedule {
                    schedule_id: ScheduleId::new(&set.id),
                    delay: Duration::from_millis(set.ms),
                    signal: signal_of("timer.rang", set.id),
                })]
            }
            "timer.cancel" => vec![Directive::CancelSchedule(CancelSchedule {
                schedule_id: ScheduleId::new(id()?),
            })],
            "cron.set" => {
                let set: SetCron = signal.data_as().map_err(|e| StrategyError::InvalidData {
                    signal_type: "cron.set".into(),
                    message: e.to_string(),
                })?;
                vec![Directive::Cron(Cron {
                    schedule_id: ScheduleId::new(&set.id),
                    expr: CronExpr::parse(&set.expr).unwrap(),
                    zone: set.zone,
                    misfire: set.misfire,
                    signal: signal_of("timer.rang", set.id),
                })]
            }
            "timer.rang" => vec![Directive::Emit(Emit {
                signal: Signal::builder("timer.heard", "alarm")
                    .with_data(Heard {
                        id: id()?,
                        signal: signal.id().as_str().to_owned(),
                    })
                    .build()
                    .unwrap(),
                target: EmitTarget::Bus,
            })],
            "schedule.failed" => vec![Directive::Emit(Emit {
                signal: Signal::builder("timer.heard", "alarm")
                    .with_data(Heard {
                        id: format!(
                            "failed: {}",
                            signal.data_as::<serde_json::Value>().unwrap()["reason"]
                        ),
                        signal: String::new(),
                    })
                    .build()
                    .unwrap(),
                target: EmitTarget::Bus,
            })],
            "halt" => vec![Directive::Stop(Stop {
                reason: "halted".into(),
            })],
            _ => Vec::new(),
        })
    }
}

struct Bench {
    runtime: Runtime,
    alarm: AgentHandle,
    heard: mpsc::UnboundedReceiver<Heard>,
    _subscription: motet_signals::Subscription,
}

async fn bench() -> Bench {
    on(Arc::new(motet_runtime::store::MemoryStore::new()), None).await
}

/// The alarm agent on `store`, with `idle` as its idle timeout (the default when `None`).
async fn on(store: Arc<dyn ThreadStore>, idle: Option<Duration>) -> Bench {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(store)
        .build()
        .unwrap();
    let (tx, heard) = mpsc::unbounded_channel();
    let subscription =
        runtime
            .bus()
            .subscribe("timer.heard".parse().unwrap(), move |s: &Signal| {
                let _ = tx.send(s.data_as::<Heard>().unwrap());
                Delivery::Delivered
            });
    let mut spec = AgentSpec::new("alarm", Alarm);
    if let Some(idle) = idle {
        spec = spec.with_idle_timeout(Some(idle));
    }
    let alarm = runtime.spawn(spec).await.unwrap();
    Bench {
        runtime,
        alarm,
        heard,
        _subscription: subscription,
    }
}

fn set(id: &str, ms: u64) -> Signal {
    Signal::builder("timer.set", "test")
        .with_data(Set { id: id.into(), ms })
        .build()
        .unwrap()
}

fn set_cron(id: &str, expr: &str, zone: &str, misfire: Misfire) -> Signal {
    Signal::builder("cron.set", "test")
        .with_data(SetCron {
            id: id.into(),
            expr: expr.into(),
            zone: zone.into(),
            misfire,
        })
        .build()
        .unwrap()
}

fn signal(ty: &str, id: &str) -> Signal {
    Signal::builder(ty, "test").with_data(id).build().unwrap()
}

/// What is heard within `window`.
async fn heard_within(heard: &mut mpsc::UnboundedReceiver<Heard>, window: Duration) -> Vec<Heard> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + window;
    while let Ok(Some(h)) = tokio::time::timeout_at(deadline, heard.recv()).await {
        out.push(h);
    }
    out
}

fn ids(heard: &[Heard]) -> Vec<&str> {
    heard.iter().map(|h| h.id.as_str()).collect()
}

async fn next_heard(heard: &mut mpsc::UnboundedReceiver<Heard>) -> Heard {
    tokio::time::timeout(Duration::from_secs(10), heard.recv())
        .await
        .expect("nothing heard within 10 s")
        .expect("the bus closed")
}

#[tokio::test]
async fn a_timer_delivers_its_signal_once_after_its_delay() {
    let mut bench = bench().await;
    let started = tokio::time::Instant::now();
    bench.alarm.send(set("a", 100)).await.unwrap();
    let first = next_heard(&mut bench.heard).await;
    assert_eq!(first.id, "a");
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert!(
        heard_within(&mut bench.heard, Duration::from_millis(300))
            .await
            .is_empty()
    );
    bench.runtime.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_timer_never_fires_and_a_replaced_one_fires_once() {
    let mut bench = bench().await;
    bench.alarm.send(set("gone", 500)).await.unwrap();
    bench
        .alarm
        .send(signal("timer.cancel", "gone"))
        .await
        .unwrap();
    // Set twice under one id: the second replaces the first.
    bench.alarm.send(set("twice", 500)).await.unwrap();
    bench.alarm.send(set("twice", 600)).await.unwrap();
    // Cancelling a timer that does not exist is nothing.
    bench
        .alarm
        .send(signal("timer.cancel", "never-set"))
        .await
        .unwrap();
    let heard = heard_within(&mut bench.heard, Duration::from_millis(1200)).await;
    assert_eq!(ids(&heard), ["twice"]);
    bench.runtime.shutdown().await;
}

async fn until_no_thread_runs(runtime: &Runtime) {
    for _ in 0..300 {
        if runtime.thread_count() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the thread's actor still runs");
}

#[tokio::test]
async fn a_stopped_thread_actor_keeps_its_timers_which_bring_it_back() {
    let mut bench = bench().await;
    bench.alarm.send(set("late", 400)).await.unwrap();
    assert_eq!(bench.runtime.thread_count(), 1);
    bench.alarm.send(signal("halt", "")).await.unwrap();
    until_no_thread_runs(&bench.runtime).await;
    // The timer is the runtime's, not the actor's: it fires and starts the thread again.
    assert_eq!(next_heard(&mut bench.heard).await.id, "late");
    assert_eq!(bench.runtime.thread_count(), 1);
    assert!(
        heard_within(&mut bench.heard, Duration::from_millis(300))
            .await
            .is_empty()
    );
    bench.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_with_a_pending_timer_idles_and_the_timer_wakes_it() {
    let store = Arc::new(motet_runtime::store::MemoryStore::new());
    let mut bench = on(store, Some(Duration::from_millis(100))).await;
    bench.alarm.send(set("wake", 1_500)).await.unwrap();
    until_no_thread_runs(&bench.runtime).await;
    assert_eq!(next_heard(&mut bench.heard).await.id, "wake");
    bench.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_outlives_its_runtime_and_fires_once_in_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timers.db");
    let first = on(Arc::new(SqliteStore::open(&path).await.unwrap()), None).await;
    first.alarm.send(set("cancelled", 1_500)).await.unwrap();
    first
        .alarm
        .send(signal("timer.cancel", "cancelled"))
        .await
        .unwrap();
    first.alarm.send(set("later", 1_500)).await.unwrap();
    // Wait for the store to hold just the timer left, then end the first runtime before it is
    // due.
    let key = motet_runtime::store::ThreadKey::new("alarm", "default");
    let store = SqliteStore::open(&path).await.unwrap();
    let stored = || async {
        let kept = store.timers_of(&key).await.unwrap();
        let ids: Vec<String> = kept.iter().map(|t| t.id.clone()).collect();
        (kept, ids)
    };
    for _ in 0..200 {
        if stored().await.1 == ["later"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (kept, ids) = stored().await;
    assert_eq!(ids, ["later"]);
    first.runtime.shutdown().await;
    drop(first);

    // A new runtime on the same file, the agent spawned again: nothing else is asked of it.
    let mut second = on(Arc::new(SqliteStore::open(&path).await.unwrap()), None).await;
    assert_eq!(next_heard(&mut second.heard).await.id, "later");
    assert!(
        heard_within(&mut second.heard, Duration::from_millis(700))
            .await
            .is_empty()
    );
    // Fired and settled: the store holds it no more.
    assert!(store.timers_of(&key).await.unwrap().is_empty());
    second.runtime.shutdown().await;
    drop(second);

    // A crash after the thread committed the firing but before the timer was settled leaves
    // the row as it was: the next runtime fires it again, and the thread, which committed that
    // signal, does not handle it twice.
    store.put_timer(&kept[0]).await.unwrap();
    let mut third = on(Arc::new(SqliteStore::open(&path).await.unwrap()), None).await;
    assert!(
        heard_within(&mut third.heard, Duration::from_millis(1_500))
            .await
            .is_empty(),
        "a firing the thread committed was handled again"
    );
    assert!(
        store.timers_of(&key).await.unwrap().is_empty(),
        "the refiring settles it"
    );
    third.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_registered_after_the_first_read_of_the_store_gets_its_timers_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timers.db");
    let first = on(Arc::new(SqliteStore::open(&path).await.unwrap()), None).await;
    first.alarm.send(set("late-comer", 1_500)).await.unwrap();
    let key = motet_runtime::store::ThreadKey::new("alarm", "default");
    let store = SqliteStore::open(&path).await.unwrap();
    for _ in 0..200 {
        if !store.timers_of(&key).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.runtime.shutdown().await;
    drop(first);

    // The next runtime reads the store for its first agent, which is not the alarm; the
    // alarm, registered after that read, still has its timer fire when due — not at the next
    // read that asks for every timer, a minute on.
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(Arc::new(SqliteStore::open(&path).await.unwrap()))
        .build()
        .unwrap();
    let (tx, mut heard) = mpsc::unbounded_channel();
    let _subscription =
        runtime
            .bus()
            .subscribe("timer.heard".parse().unwrap(), move |s: &Signal| {
                let _ = tx.send(s.data_as::<Heard>().unwrap());
                Delivery::Delivered
            });
    runtime.spawn(AgentSpec::new("early", Alarm)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = tokio::time::Instant::now();
    runtime.spawn(AgentSpec::new("alarm", Alarm)).await.unwrap();
    let fired = next_heard(&mut heard).await;
    assert_eq!(fired.id, "late-comer");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "fired {:?} after its agent was registered",
        started.elapsed()
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_timer_fires_once_per_occurrence_until_cancelled() {
    let mut bench = bench().await;
    bench
        .alarm
        .send(set_cron("tick", "* * * * * *", "UTC", Misfire::Skip))
        .await
        .unwrap();
    let heard = heard_within(&mut bench.heard, Duration::from_millis(3_300)).await;
    assert!(
        (3..=4).contains(&heard.len()),
        "{} ticks in 3.3 s",
        heard.len()
    );
    let mut signals: Vec<&str> = heard.iter().map(|h| h.signal.as_str()).collect();
    signals.dedup();
    assert_eq!(signals.len(), heard.len(), "each occurrence has its own id");
    assert!(heard.iter().all(|h| h.id == "tick"));
    bench
        .alarm
        .send(signal("timer.cancel", "tick"))
        .await
        .unwrap();
    // One may have been on its way as the cancel arrived.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    while bench.heard.try_recv().is_ok() {}
    assert!(
        heard_within(&mut bench.heard, Duration::from_millis(2_100))
            .await
            .is_empty()
    );
    bench.runtime.shutdown().await;
}

#[tokio::test]
async fn a_cron_timer_in_an_unknown_time_zone_is_refused_with_schedule_failed() {
    let mut bench = bench().await;
    bench
        .alarm
        .send(set_cron(
            "tick",
            "@hourly",
            "Mars/Olympus_Mons",
            Misfire::Skip,
        ))
        .await
        .unwrap();
    let heard = next_heard(&mut bench.heard).await;
    assert!(heard.id.starts_with("failed: "), "{}", heard.id);
    assert!(heard.id.contains("Mars/Olympus_Mons"), "{}", heard.id);
    bench.runtime.shutdown().await;
}

/// A cron timer whose runtime was down for several occurrences: `catch_up` fires the latest
/// missed ones once each (ids naming the occurrence), `skip` none, `fire_once` one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missed_cron_occurrences_follow_the_misfire_policy_after_a_restart() {
    for (misfire, missed) in [
        // Down 4.3 s: at least three occurrences are over a second old when the next runtime
        // starts, so the ranges (missed kept, plus at most one on time) do not overlap.
        (Misfire::CatchUp(3), 3..=3),
        (Misfire::FireOnce, 1..=1),
        (Misfire::Skip, 0..=0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cron.db");
        let mut first = on(Arc::new(SqliteStore::open(&path).await.unwrap()), None).await;
        first
            .alarm
            .send(set_cron("tick", "* * * * * *", "UTC", misfire))
            .await
            .unwrap();
        let _ = next_heard(&mut first.heard).await;
        first.runtime.shutdown().await;
        drop(first);
        // Down for a little over four occurrences.
        tokio::time::sleep(Duration::from_millis(4_300)).await;
        let started = std::time::Instant::now();
        let mut second = on(Arc::new(SqliteStore::open(&path).await.unwrap()), None).await;
        // What fires at once is the missed ones kept by the policy; the next comes within a
        // second, on time.
        let burst = heard_within(&mut second.heard, Duration::from_millis(400)).await;
        let mut signals: Vec<&str> = burst.iter().map(|h| h.signal.as_str()).collect();
        signals.sort_unstable();
        signals.dedup();
        assert_eq!(
            signals.len(),
            burst.len(),
            "{misfire:?}: an occurrence fired twice"
        );
        // An on-time occurrence may land in the same window: at most one more than missed.
        assert!(
            missed.contains(&burst.len()) || burst.len() == missed.end() + 1,
            "{misfire:?}: {} fired at once after {:?}",
            burst.len(),
            started.elapsed()
        );
        let next = next_heard(&mut second.heard).await;
        assert_eq!(next.id, "tick");
        second.runtime.shutdown().await;
    }
}

/// The memory store, whose reads of due timers take [`SlowReads::DELAY`]: a PostgreSQL pool
/// busy with other work. It counts the firings settled apart from a step's commit.
#[derive(Default)]
struct SlowReads {
    inner: motet_runtime::store::MemoryStore,
    settled_apart: std::sync::atomic::AtomicUsize,
}

impl SlowReads {
    const DELAY: Duration = Duration::from_secs(3);
}

#[async_trait::async_trait]
impl ThreadStore for SlowReads {
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        self.inner.create(header).await
    }
    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        self.inner.create_with(header, meta, entries).await
    }
    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        self.inner.load(thread_id).await
    }
    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        self.inner.load_after(thread_id, rev).await
    }
    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        self.inner.append(thread_id, entries, expected_rev).await
    }
    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        self.inner
            .append_with_state(thread_id, entries, expected_rev, state)
            .await
    }
    async fn append_fenced(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: Option<&str>,
        epoch: u64,
    ) -> Result<u64, StoreError> {
        self.inner
            .append_fenced(thread_id, entries, expected_rev, state, epoch)
            .await
    }
    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.inner.load_state(thread_id).await
    }
    async fn commit_step(
        &self,
        step: &motet_runtime::store::StepCommit<'_>,
    ) -> Result<u64, StoreError> {
        self.inner.commit_step(step).await
    }
    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.inner.epoch(thread_id).await
    }
    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.inner.claim(thread_id).await
    }
    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        self.inner.summary(thread_id).await
    }
    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.inner.list().await
    }
    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.inner.delete(thread_id).await
    }
    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        self.inner.put_meta(thread_id, meta).await
    }
    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        self.inner.get_meta(thread_id).await
    }
    fn keeps_timers(&self) -> bool {
        true
    }
    async fn put_timer(&self, timer: &StoredTimer) -> Result<(), StoreError> {
        self.inner.put_timer(timer).await
    }
    async fn remove_timer(&self, key: &ThreadKey, id: &str) -> Result<bool, StoreError> {
        self.inner.remove_timer(key, id).await
    }
    async fn timer_fired(
        &self,
        key: &ThreadKey,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        self.settled_apart
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner
            .timer_fired(key, id, fired_ms, signal_id, next_ms)
            .await
    }
    async fn due_timers(
        &self,
        due: std::ops::Range<u64>,
        owners: &motet_runtime::store::TimerOwners,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        tokio::time::sleep(Self::DELAY).await;
        self.inner.due_timers(due, owners, limit).await
    }
    async fn timers_of(&self, key: &ThreadKey) -> Result<Vec<StoredTimer>, StoreError> {
        self.inner.timers_of(key).await
    }
}

#[tokio::test]
async fn a_slow_read_of_the_store_does_not_hold_up_a_timer_already_held() {
    // The agent's registration starts a read of the store that takes 3 s; a timer set meanwhile
    // for 200 ms from now fires on time all the same.
    let mut bench = on(Arc::new(SlowReads::default()), None).await;
    let started = tokio::time::Instant::now();
    bench.alarm.send(set("soon", 200)).await.unwrap();
    let heard = next_heard(&mut bench.heard).await;
    assert_eq!(heard.id, "soon");
    assert!(
        started.elapsed() < SlowReads::DELAY / 2,
        "fired after {:?}, behind the store's read",
        started.elapsed()
    );
    bench.runtime.shutdown().await;
}

#[tokio::test]
async fn a_firing_is_settled_in_the_commit_of_the_step_that_handled_it() {
    let store = Arc::new(SlowReads::default());
    let mut bench = on(Arc::clone(&store) as Arc<dyn ThreadStore>, None).await;
    bench.alarm.send(set("once", 100)).await.unwrap();
    bench
        .alarm
        .send(set_cron("tick", "* * * * * *", "UTC", Misfire::Skip))
        .await
        .unwrap();
    let mut heard = Vec::new();
    while heard.iter().filter(|h: &&Heard| h.id == "tick").count() < 2 || heard.len() < 3 {
        heard.push(next_heard(&mut bench.heard).await);
    }
    assert!(heard.iter().any(|h| h.id == "once"), "{heard:?}");
    // Anything the timekeeper would settle itself it does right after the thread answers.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let key = motet_runtime::store::ThreadKey::new("alarm", "default");
    let left = store.timers_of(&key).await.unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // The one-shot timer is gone; the cron timer moved on past the ticks heard.
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].id, "tick");
    assert!(left[0].due_ms + 1_000 > now_ms, "{left:?} at {now_ms}");
    assert_eq!(
        store
            .settled_apart
            .load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a firing was settled in a write of its own"
    );
    bench.runtime.shutdown().await;
}
