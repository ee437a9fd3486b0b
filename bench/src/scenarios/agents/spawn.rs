//! `spawn`: 100,000 ReAct agents against bare ractor actors holding the same state.

#[allow(
    clippy::wildcard_imports,
    reason = "a part of the agents scenarios, sharing their helpers"
)]
use super::*;

async fn spawn() -> Vec<Report> {
    spawn_inner().await.unwrap_or_default()
}

async fn spawn_inner() -> Option<Vec<Report>> {
    let tools = tools()?;
    let strategy = react(&tools)?;
    let env = FixedEnv::new(0);

    // Memory: the floor first, kept alive while motet's agents are spawned, so each RSS delta
    // is memory newly taken from the OS (freed memory would be reused and read as zero).
    let before = rss_bytes();
    let start = Instant::now();
    let mut bare = Vec::with_capacity(SPAWN);
    for n in 0..SPAWN {
        let state = strategy.init_for_thread(&env, &format!("agent-{n}/default"));
        bare.push(Actor::spawn(None, Bare, state).await.ok()?);
    }
    let mut floor_rounds = vec![start.elapsed()];
    let floor_bytes = rss_bytes().saturating_sub(before) / SPAWN as u64;

    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .ok()?;
    let before = rss_bytes();
    let start = Instant::now();
    for n in 0..SPAWN {
        let spec = AgentSpec::new(format!("agent-{n}"), strategy.clone());
        runtime.spawn(spec).await.ok()?;
    }
    let mut ours_rounds = vec![start.elapsed()];
    let mut linked_rounds = Vec::with_capacity(SPAWN_ROUNDS);
    let ours_bytes = rss_bytes().saturating_sub(before) / SPAWN as u64;
    runtime.shutdown().await;
    stop_all(bare).await;

    // Time: this machine's pace drifts by several times within a minute, so the two are
    // measured in alternating rounds and compared by their medians.
    for round in 0..SPAWN_ROUNDS {
        let start = Instant::now();
        let mut bare = Vec::with_capacity(SPAWN);
        for n in 0..SPAWN {
            let state = strategy.init_for_thread(&env, &format!("agent-{n}/default"));
            bare.push(Actor::spawn(None, Bare, state).await.ok()?);
        }
        floor_rounds.push(start.elapsed());
        stop_all(bare).await;
        linked_rounds.push(spawn_linked_floor(&strategy, &env).await?);
        let runtime = Runtime::builder()
            .llm(Arc::new(ScriptedModel::default()))
            .build()
            .ok()?;
        let start = Instant::now();
        for n in 0..SPAWN {
            let spec = AgentSpec::new(format!("r{round}-{n}"), strategy.clone());
            runtime.spawn(spec).await.ok()?;
        }
        ours_rounds.push(start.elapsed());
        runtime.shutdown().await;
    }
    let median = |rounds: &mut Vec<Duration>| {
        rounds.sort_unstable();
        rounds[rounds.len() / 2]
    };
    let ours = median(&mut ours_rounds);
    let floor = median(&mut floor_rounds);
    let linked = median(&mut linked_rounds);
    Some(vec![
        Report::new("spawn", "motet", SPAWN as u64, ours)
            .with("bytes_per_agent", ours_bytes)
            .with(
                "us_per_agent",
                round2(ours.as_secs_f64() * 1e6 / SPAWN as f64),
            )
            .with("vs_floor", round2(ours.as_secs_f64() / floor.as_secs_f64()))
            .with(
                "bytes_vs_floor",
                round2(ours_bytes as f64 / floor_bytes.max(1) as f64),
            )
            .with("rounds", ours_rounds.len() as u64),
        Report::new("spawn", "floor_ractor", SPAWN as u64, floor)
            .with("bytes_per_agent", floor_bytes)
            .with(
                "us_per_agent",
                round2(floor.as_secs_f64() * 1e6 / SPAWN as f64),
            )
            .with("rounds", floor_rounds.len() as u64),
        Report::new("spawn", "floor_ractor_linked", SPAWN as u64, linked)
            .with(
                "us_per_agent",
                round2(linked.as_secs_f64() * 1e6 / SPAWN as f64),
            )
            .with(
                "vs_floor",
                round2(linked.as_secs_f64() / floor.as_secs_f64()),
            )
            .with("rounds", linked_rounds.len() as u64),
    ])
}

/// `spawn`.
pub(crate) fn run_spawn() -> Vec<Report> {
    block_on(spawn())
}
