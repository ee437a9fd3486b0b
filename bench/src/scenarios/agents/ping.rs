//! `ping`: ask → reply round trips through an agent, against a bare ractor `call`.

#[allow(
    clippy::wildcard_imports,
    reason = "a part of the agents scenarios, sharing their helpers"
)]
use super::*;

/// Answers every request at once with a reply signal.
struct Echo;

impl Strategy for Echo {
    type State = ();

    fn init(&self, _env: &dyn Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, motet_agents::StrategyError> {
        let reply = Signal::builder(motet_agents::AGENT_COMPLETED, "echo")
            .caused_by(signal)
            .build()
            .map_err(|e| motet_agents::StrategyError::Emit {
                signal_type: "agent.completed".into(),
                message: e.to_string(),
            })?;
        Ok(vec![Directive::Reply(motet_directives::Reply::completed(
            reply,
        ))])
    }
}

async fn ping() -> Vec<Report> {
    let Ok(runtime) = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
    else {
        return Vec::new();
    };
    let Ok(agent) = runtime.spawn(AgentSpec::new("echo", Echo)).await else {
        return Vec::new();
    };
    let start = Instant::now();
    for _ in 0..PINGS {
        if agent.ask("ping").await.is_err() {
            return Vec::new();
        }
    }
    let ours = start.elapsed();
    runtime.shutdown().await;

    let Ok((bare, _)) = Actor::spawn(
        None,
        Bare,
        ReActState::new(motet_agents::Thread::new("t", 0)),
    )
    .await
    else {
        return Vec::new();
    };
    let start = Instant::now();
    for _ in 0..PINGS {
        if bare.call(BareMsg::Ping, None).await.is_err() {
            return Vec::new();
        }
    }
    let floor = start.elapsed();
    bare.stop(None);
    vec![
        Report::new("ping", "motet", PINGS as u64, ours)
            .with("vs_floor", round2(ours.as_secs_f64() / floor.as_secs_f64())),
        Report::new("ping", "floor_ractor", PINGS as u64, floor),
    ]
}

/// `ping`.
pub(crate) fn run_ping() -> Vec<Report> {
    block_on(ping())
}
