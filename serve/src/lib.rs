//! motet's agents over HTTP.
//!
//! [`Served`] gathers a runtime's agents and the tokens allowed to reach them; [`Served::router`]
//! is an axum router a program mounts in its own server, and `motet serve` runs it on its own.
//! The routes:
//! - the native API (`native`): agents, threads, runs streamed as SSE with ids and resumable;
//! - an OpenAI-compatible endpoint (`openai`): `/v1/models` and `/v1/chat/completions`.
//!
//! docs/serve.md has the whole surface.

mod auth;
mod native;
mod openai;

use std::collections::BTreeMap;
use std::sync::Arc;

use motet_runtime::agent::{AgentHandle, Runtime};

pub use auth::{Scope, Tokens};

/// The agents one HTTP server serves, and who may reach them.
#[derive(Clone)]
pub struct Served {
    shared: Arc<Shared>,
}

/// What every route reads: the runtime, the served agents by name, the tokens.
pub(crate) struct Shared {
    #[allow(dead_code, reason = "the runs and approvals routes read it")]
    pub(crate) runtime: Runtime,
    pub(crate) agents: BTreeMap<String, AgentHandle>,
    pub(crate) tokens: Tokens,
}

impl Served {
    /// Serves `agents` of `runtime`, reachable with any of `tokens`.
    pub fn new(
        runtime: Runtime,
        agents: impl IntoIterator<Item = AgentHandle>,
        tokens: Tokens,
    ) -> Self {
        let agents = agents
            .into_iter()
            .map(|agent| (agent.name().to_owned(), agent))
            .collect();
        Self {
            shared: Arc::new(Shared {
                runtime,
                agents,
                tokens,
            }),
        }
    }

    /// Every route, ready to mount or to serve.
    pub fn router(&self) -> axum::Router {
        axum::Router::new()
            .merge(native::routes())
            .merge(openai::routes())
            .with_state(Arc::clone(&self.shared))
    }
}
