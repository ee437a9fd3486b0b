//! A strategy for the durable-bus tests (runtime/tests/consume.rs and, through `#[path]`,
//! jetstream/tests/agents.rs): it records what it is handed, so a test can ask what an agent
//! committed, in order.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use motet_agents::{AGENT_COMPLETED, Strategy, StrategyError};
use motet_directives::{Directive, Emit, EmitTarget, Reply};
use motet_runtime::agent::AgentHandle;
use motet_signals::Signal;

/// How many `work.bad` signals a ledger was handed, over all its instances in the process.
pub(crate) static REJECTED: AtomicUsize = AtomicUsize::new(0);

/// Records the id of every signal it is handed that is not a request; rejects `work.bad`;
/// answers `agent.request` "report" with the ids, and "emit:<id>" by emitting [`item`] `<id>`
/// on the bus first.
pub(crate) struct Ledger;

impl Strategy for Ledger {
    type State = Vec<String>;

    fn init(&self, _env: &dyn motet_agents::Env) -> Vec<String> {
        Vec::new()
    }

    fn handle(
        &self,
        seen: &mut Vec<String>,
        signal: &Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let ty = signal.signal_type().as_str();
        if ty == "work.bad" {
            REJECTED.fetch_add(1, Ordering::SeqCst);
            return Err(StrategyError::Unhandled {
                signal_type: ty.to_owned(),
            });
        }
        let Ok(input) = signal.data_as::<motet_agents::AgentRequest>() else {
            seen.push(signal.id().as_str().to_owned());
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        if let Some(id) = input.query.strip_prefix("emit:") {
            out.push(Directive::Emit(Emit {
                signal: item(id),
                target: EmitTarget::Bus,
            }));
        }
        let reply = Signal::builder(AGENT_COMPLETED, "ledger")
            .caused_by(signal)
            .with_data(serde_json::json!(seen.clone()))
            .build()
            .unwrap();
        out.push(Directive::Reply(Reply::completed(reply)));
        Ok(out)
    }
}

/// A `work.item` signal with id `id`.
pub(crate) fn item(id: &str) -> Signal {
    Signal::builder("work.item", "test-publisher")
        .with_id(id)
        .build()
        .unwrap()
}

/// The ids the agent's ledger holds.
pub(crate) async fn report(agent: &AgentHandle) -> Vec<String> {
    agent.ask("report").await.unwrap().signal.data_as().unwrap()
}

/// Asks for the report until it has `n` ids (or `patience` passes).
pub(crate) async fn report_of(agent: &AgentHandle, n: usize, patience: Duration) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        let seen = report(agent).await;
        if seen.len() >= n || tokio::time::Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
