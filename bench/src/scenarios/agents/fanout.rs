//! `fanout`: a coordinator, 10,000 workers over the bus, and back, against 10,000 bare
//! ractor `call`s.

#[allow(
    clippy::wildcard_imports,
    reason = "a part of the agents scenarios, sharing their helpers"
)]
use super::*;

const FANOUT: usize = 10_000;

/// Fans one task out to every worker over the bus (`task.w<k>.assigned`) and replies when all
/// answers are back.
struct Coordinator {
    workers: usize,
}

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct Gathering {
    request: Option<String>,
    answers: usize,
}

impl Strategy for Coordinator {
    type State = Gathering;

    fn init(&self, _env: &dyn Env) -> Gathering {
        Gathering::default()
    }

    fn handle(
        &self,
        state: &mut Gathering,
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, motet_agents::StrategyError> {
        use motet_directives::{Emit, EmitTarget};
        let build = |b: motet_signals::SignalBuilder| {
            b.build().map_err(|e| motet_agents::StrategyError::Emit {
                signal_type: "bench".into(),
                message: e.to_string(),
            })
        };
        if signal.signal_type().as_str() == "task.done" {
            state.answers += 1;
            if state.answers < self.workers {
                return Ok(Vec::new());
            }
            state.answers = 0;
            let request = state.request.take().unwrap_or_default();
            let done = build(
                Signal::builder(motet_agents::AGENT_COMPLETED, "coord").with_request_id(request),
            )?;
            return Ok(vec![Directive::Reply(motet_directives::Reply::completed(
                done,
            ))]);
        }
        state.request = signal.request_id().map(str::to_owned);
        (0..self.workers)
            .map(|k| {
                let task = build(
                    Signal::builder(format!("task.w{k}.assigned"), "coord").caused_by(signal),
                )?;
                Ok(Directive::Emit(Emit {
                    signal: task,
                    target: EmitTarget::Bus,
                }))
            })
            .collect()
    }
}

/// Answers a task to the coordinator.
struct Worker;

impl Strategy for Worker {
    type State = ();

    fn init(&self, _env: &dyn Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, motet_agents::StrategyError> {
        let done = Signal::builder("task.done", "worker")
            .caused_by(signal)
            .build()
            .map_err(|e| motet_agents::StrategyError::Emit {
                signal_type: "task.done".into(),
                message: e.to_string(),
            })?;
        Ok(vec![Directive::Emit(motet_directives::Emit {
            signal: done,
            target: motet_directives::EmitTarget::Agent("coord".into()),
        })])
    }
}

async fn fanout() -> Option<Vec<Report>> {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .ok()?;
    for k in 0..FANOUT {
        let pattern = format!("task.w{k}.*").parse().ok()?;
        runtime
            .spawn(AgentSpec::new(format!("w{k}"), Worker).subscribe(pattern))
            .await
            .ok()?;
    }
    let coord = runtime
        .spawn(AgentSpec::new("coord", Coordinator { workers: FANOUT }))
        .await
        .ok()?;
    let options = || AskOptions {
        timeout: Duration::from_secs(120),
        ..AskOptions::default()
    };
    coord.ask_with("warm up", options()).await.ok()?;
    let start = Instant::now();
    coord.ask_with("fan", options()).await.ok()?;
    let ours = start.elapsed();
    runtime.shutdown().await;

    // Floor: the same fan-out with bare ractor actors, one message out and one reply back each.
    let mut bare = Vec::with_capacity(FANOUT);
    for _ in 0..FANOUT {
        let (actor, _) = Actor::spawn(
            None,
            Bare,
            ReActState::new(motet_agents::Thread::new("t", 0)),
        )
        .await
        .ok()?;
        bare.push(actor);
    }
    let start = Instant::now();
    let calls = bare.iter().map(|a| a.call(BareMsg::Ping, None));
    for reply in futures::future::join_all(calls).await {
        reply.ok()?;
    }
    let floor = start.elapsed();
    for actor in bare {
        actor.stop(None);
    }
    Some(vec![
        Report::new("fanout", "motet", FANOUT as u64, ours)
            .with("ms_wall", round2(ours.as_secs_f64() * 1e3))
            .with("vs_floor", round2(ours.as_secs_f64() / floor.as_secs_f64())),
        Report::new("fanout", "floor_ractor", FANOUT as u64, floor)
            .with("ms_wall", round2(floor.as_secs_f64() * 1e3)),
    ])
}

/// `fanout`.
pub(crate) fn run_fanout() -> Vec<Report> {
    block_on(async { fanout().await.unwrap_or_default() })
}
