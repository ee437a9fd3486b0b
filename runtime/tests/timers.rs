//! `Schedule`, `CancelSchedule` and `Stop`, carried out by a running agent: a timer delivers
//! its signal once after its delay, a cancelled or replaced timer never fires, and a stopped
//! thread actor's timers die with it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{Env, Strategy, StrategyError};
use motet_directives::{CancelSchedule, Directive, Emit, EmitTarget, Schedule, ScheduleId, Stop};
use motet_runtime::agent::{AgentHandle, AgentSpec, Runtime};
use motet_runtime::testing::ScriptedModel;
use motet_signals::{Delivery, Signal};
use tokio::sync::mpsc;

/// `timer.set` {id, ms} schedules `timer.rang` {id}; `timer.cancel` {id} cancels it; a
/// `timer.rang` is announced on the bus as `timer.heard` {id}; `halt` stops the agent.
struct Alarm;

#[derive(serde::Serialize, serde::Deserialize)]
struct Set {
    id: String,
    ms: u64,
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
            "timer.rang" => vec![Directive::Emit(Emit {
                signal: signal_of("timer.heard", id()?),
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
    heard: mpsc::UnboundedReceiver<String>,
    _subscription: motet_signals::Subscription,
}

async fn bench() -> Bench {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .unwrap();
    let (tx, heard) = mpsc::unbounded_channel();
    let subscription =
        runtime
            .bus()
            .subscribe("timer.heard".parse().unwrap(), move |s: &Signal| {
                let _ = tx.send(s.data_as::<String>().unwrap());
                Delivery::Delivered
            });
    let alarm = runtime.spawn(AgentSpec::new("alarm", Alarm)).await.unwrap();
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

fn signal(ty: &str, id: &str) -> Signal {
    Signal::builder(ty, "test").with_data(id).build().unwrap()
}

/// What is heard within `window`.
async fn heard_within(
    heard: &mut mpsc::UnboundedReceiver<String>,
    window: Duration,
) -> Vec<String> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + window;
    while let Ok(Some(id)) = tokio::time::timeout_at(deadline, heard.recv()).await {
        out.push(id);
    }
    out
}

#[tokio::test]
async fn a_timer_delivers_its_signal_once_after_its_delay() {
    let mut bench = bench().await;
    let started = tokio::time::Instant::now();
    bench.alarm.send(set("a", 100)).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), bench.heard.recv())
        .await
        .unwrap();
    assert_eq!(first.as_deref(), Some("a"));
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
    assert_eq!(heard, ["twice"]);
    bench.runtime.shutdown().await;
}

#[tokio::test]
async fn a_stopped_thread_actor_takes_its_timers_with_it_and_comes_back_on_the_next_signal() {
    let mut bench = bench().await;
    bench.alarm.send(set("late", 500)).await.unwrap();
    assert_eq!(bench.runtime.thread_count(), 1);
    bench.alarm.send(signal("halt", "")).await.unwrap();
    for _ in 0..100 {
        if bench.runtime.thread_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        bench.runtime.thread_count(),
        0,
        "the thread's actor still runs"
    );
    assert!(
        heard_within(&mut bench.heard, Duration::from_millis(500))
            .await
            .is_empty()
    );
    // The agent stays registered: the next signal starts the thread again.
    assert!(bench.runtime.agent("alarm").is_some());
    bench.alarm.send(set("again", 10)).await.unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(5), bench.heard.recv())
        .await
        .unwrap();
    assert_eq!(heard.as_deref(), Some("again"));
    bench.runtime.shutdown().await;
}
