//! The native API: agents, threads, runs, waits for a person, health.
//!
//! Layout: `threads.rs` (create, list, read, delete threads; a thread's entries), `runs.rs`
//! (start a run, its status and answer, cancel, steer, its SSE stream), `waiting.rs` (calls
//! waiting for a person, and the answers to them), `extract.rs` (bodies and paths read into
//! typed errors), this file (the routes and the scope check every route makes).

mod extract;
mod runs;
mod threads;
mod waiting;

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{MethodRouter, get, post};
use motet_runtime::agent::AgentHandle;
use serde::Serialize;

use crate::Shared;
use crate::auth::{Caller, Scope};
use crate::error::ApiError;
use crate::ids::thread_id;

/// A router that remembers the paths it was given, so a test can hold them against the
/// OpenAPI document.
pub(crate) struct Routes {
    router: axum::Router<Arc<Shared>>,
    paths: Vec<&'static str>,
}

impl Routes {
    fn new() -> Self {
        Self {
            router: axum::Router::new(),
            paths: Vec::new(),
        }
    }

    fn route(mut self, path: &'static str, method: MethodRouter<Arc<Shared>>) -> Self {
        self.router = self.router.route(path, method);
        self.paths.push(path);
        self
    }

    /// The paths routed.
    #[cfg(test)]
    pub(crate) fn paths(&self) -> &[&'static str] {
        &self.paths
    }
}

/// The native routes, with their paths.
pub(crate) fn table() -> Routes {
    Routes::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route(
            "/openapi.json",
            get(|| async { Json(crate::openapi::document()) }),
        )
        .route("/api/agents", get(list_agents))
        .route(
            "/api/agents/{agent}/threads",
            get(threads::list).post(threads::create),
        )
        .route(
            "/api/agents/{agent}/threads/{thread}",
            get(threads::read).delete(threads::delete),
        )
        .route(
            "/api/agents/{agent}/threads/{thread}/entries",
            get(threads::entries),
        )
        .route(
            "/api/agents/{agent}/threads/{thread}/runs",
            get(runs::list).post(runs::start),
        )
        .route("/api/agents/{agent}/runs/{run}", get(runs::read))
        .route("/api/agents/{agent}/runs/{run}/cancel", post(runs::cancel))
        .route("/api/agents/{agent}/runs/{run}/steer", post(runs::steer))
        .route("/api/agents/{agent}/runs/{run}/events", get(runs::events))
        .route("/api/waiting", get(waiting::list_all))
        .route("/api/agents/{agent}/waiting", get(waiting::list))
        .route(
            "/api/agents/{agent}/threads/{thread}/waiting/{call}",
            post(waiting::respond),
        )
}

/// The native routes, on the shared state.
pub(crate) fn routes() -> axum::Router<Arc<Shared>> {
    table().router
}

/// What a request no route takes is answered: a typed 404.
pub(crate) async fn no_route() -> ApiError {
    ApiError::NotFound("route")
}

/// What a request with a method its route does not serve is answered: a typed 405.
pub(crate) async fn no_method() -> (StatusCode, Json<serde_json::Value>) {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        Json(serde_json::json!({
            "error": {"code": "method_not_allowed", "message": "that method is not served here"}
        })),
    )
}

/// `GET /readyz`: 200 once every served agent runs (an agent stopped → 503).
async fn ready(State(shared): State<Arc<Shared>>) -> (StatusCode, &'static str) {
    let all = shared
        .agents
        .keys()
        .all(|name| shared.runtime.agent(name).is_some());
    if all && !*shared.closing.borrow() {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
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

/// The served agent `name`, when `scope` reaches it; else 404, as for an agent not served.
fn agent<'a>(shared: &'a Shared, scope: &Scope, name: &str) -> Result<&'a AgentHandle, ApiError> {
    shared
        .agents
        .get(name)
        .filter(|_| scope.allows(name))
        .ok_or(ApiError::NotFound("agent"))
}

#[cfg(test)]
mod openapi_tests {
    use super::table;
    use crate::openapi::document;

    /// The document is held against the router (here, so the document names no route table).
    #[test]
    fn every_routed_path_is_in_the_document_and_nothing_else() {
        let doc = document();
        let documented: std::collections::BTreeSet<&str> = doc["paths"]
            .as_object()
            .map(|paths| paths.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let a2a = crate::a2a::table();
        let routed: std::collections::BTreeSet<&str> = table()
            .paths()
            .iter()
            .copied()
            .chain(a2a.iter().map(|(path, _)| *path))
            .collect();
        assert_eq!(documented, routed);
        assert_eq!(doc["openapi"], "3.1.0");
    }
}
