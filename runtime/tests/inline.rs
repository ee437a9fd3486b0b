//! Work a directive starts runs on the thread's own actor until it must wait (execute.rs,
//! `Run::Inline`): a chain of work that never waits must still let the mailbox in.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use motet_agents::protocol;
use motet_agents::{Env, Input, Strategy, StrategyError};
use motet_directives::results::Outcome;
use motet_directives::{CallId, Directive, ToolArgs, ToolExec, Usage};
use motet_runtime::agent::{AgentSpec, AskError, AskOptions, Runtime};
use motet_runtime::testing::ScriptedModel;
use motet_runtime::tool::{ToolError, ToolSet, tool_fn};
use motet_signals::Signal;

/// Runs the `tick` tool again on every result, up to `limit` times, then answers: a request
/// made of work that is always done at once.
struct Ticker {
    limit: u64,
}

impl Strategy for Ticker {
    type State = u64;

    fn init(&self, _env: &dyn Env) -> u64 {
        0
    }

    fn handle(
        &self,
        ticks: &mut u64,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let tick = |env: &dyn Env| {
            Directive::ToolExec(ToolExec::new(
                CallId::new(env.fresh_id("tick")),
                env.fresh_id("call"),
                "tick",
                ToolArgs::from_text("{}"),
            ))
        };
        Ok(match Input::of(signal)? {
            Input::Request(_) => {
                *ticks = 0;
                vec![tick(env)]
            }
            Input::Outcome(Outcome::Tool(_)) if *ticks == u64::MAX => Vec::new(),
            Input::Outcome(Outcome::Tool(_)) => {
                *ticks += 1;
                if *ticks >= self.limit {
                    *ticks = u64::MAX;
                    let done = format!("ticked {} times", self.limit);
                    vec![protocol::completed(signal, env, done, Usage::default())?]
                } else {
                    vec![tick(env)]
                }
            }
            Input::Cancel(_) if *ticks != u64::MAX => {
                *ticks = u64::MAX;
                vec![protocol::failed(signal, env, "cancelled")?]
            }
            _ => Vec::new(),
        })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_work_that_never_waits_still_lets_a_cancel_in() {
    let ran = Arc::new(AtomicU64::new(0));
    let counter = ran.clone();
    let tools = ToolSet::builder()
        .tool(tool_fn("tick", "Counts.", move |_: Nothing| {
            let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
            async move { Ok::<_, ToolError>(n.to_string()) }
        }))
        .build()
        .unwrap();
    let runtime = Runtime::builder()
        .llm(ScriptedModel::default())
        .build()
        .unwrap();
    let limit = 200_000;
    let agent = runtime
        .spawn(AgentSpec::new("ticker", Ticker { limit }).with_tools(tools))
        .await
        .unwrap();
    let ticket = agent
        .submit(
            "tick",
            AskOptions {
                timeout: Duration::from_secs(60),
                ..AskOptions::default()
            },
        )
        .await
        .unwrap();
    while ran.load(Ordering::Relaxed) < 10 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    ticket.cancel("enough").await.unwrap();
    // Without a bound on the work one message runs inline, the actor would tick to the limit
    // before it read the cancel, and the request would complete.
    match ticket.wait().await {
        Err(AskError::Failed { .. }) => {}
        other => panic!("the cancel should have ended the request, got {other:?}"),
    }
    let ticks = ran.load(Ordering::Relaxed);
    assert!(ticks < limit, "the request ran all {ticks} ticks");
    runtime.shutdown().await;
}
