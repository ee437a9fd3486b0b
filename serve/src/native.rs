//! The native API: agents, threads, runs.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::routing::get;
use serde::Serialize;

use crate::Shared;
use crate::auth::Caller;

/// The native routes, on the shared state.
pub(crate) fn routes() -> axum::Router<Arc<Shared>> {
    axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/api/agents", get(list_agents))
}

/// One served agent, as listed.
#[derive(Serialize)]
struct AgentView<'a> {
    name: &'a str,
}

/// `GET /api/agents`: the agents the caller's token reaches.
async fn list_agents(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
) -> Json<serde_json::Value> {
    let agents: Vec<AgentView<'_>> = shared
        .agents
        .keys()
        .filter(|name| scope.allows(name))
        .map(|name| AgentView { name })
        .collect();
    Json(serde_json::json!({ "agents": agents }))
}
