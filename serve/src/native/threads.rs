//! Threads: create, list, read, delete; a thread's entries.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::extract::Ids;
use super::{agent, thread_id};
use crate::Shared;
use crate::auth::Caller;
use crate::error::ApiError;

/// `GET /api/agents/{agent}/threads`: the agent's stored threads, oldest first.
pub(super) async fn list(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids(name): Ids<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let agent = agent(&shared, &scope, &name)?;
    let threads = agent.threads().await.map_err(ApiError::runtime)?;
    Ok(Json(serde_json::json!({ "threads": threads })))
}

/// `POST /api/agents/{agent}/threads`: a new, empty thread → 201 `{"id"}`.
pub(super) async fn create(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids(name): Ids<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let agent = agent(&shared, &scope, &name)?;
    let id = agent.create_thread().await.map_err(ApiError::runtime)?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "id": id }))))
}

/// `GET /api/agents/{agent}/threads/{thread}`: the thread's id, totals and entries.
pub(super) async fn read(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, thread)): Ids<(String, String)>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let loaded = load(&shared, &scope, &name, &thread).await?;
    Ok(Json(serde_json::json!({
        "id": thread,
        "rev": loaded.rev(),
        "created_at": loaded.created_at(),
        "updated_at": loaded.updated_at(),
        "usage": loaded.usage(),
        "parent": loaded.parent(),
        "entries": loaded.to_list(),
    })))
}

/// Which entries of a thread to read.
#[derive(Deserialize)]
pub(super) struct Window {
    /// Only entries with a seq above this one.
    after: Option<u64>,
    /// At most this many (default and cap 1,000).
    limit: Option<usize>,
}

/// How many entries one read gives at most.
const MAX_ENTRIES: usize = 1_000;

/// `GET /api/agents/{agent}/threads/{thread}/entries?after=&limit=`: entries in seq order.
pub(super) async fn entries(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, thread)): Ids<(String, String)>,
    window: Result<Query<Window>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Query(window) = window.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let loaded = load(&shared, &scope, &name, &thread).await?;
    let limit = window.limit.unwrap_or(MAX_ENTRIES).min(MAX_ENTRIES);
    let entries: Vec<_> = loaded
        .to_list()
        .iter()
        .filter(|e| window.after.is_none_or(|after| u64::from(e.seq) > after))
        .take(limit)
        .collect();
    Ok(Json(serde_json::json!({ "entries": entries })))
}

/// `DELETE /api/agents/{agent}/threads/{thread}`: forgets the thread → 204; 409 while a run
/// of it is running.
pub(super) async fn delete(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, thread)): Ids<(String, String)>,
) -> Result<StatusCode, ApiError> {
    load(&shared, &scope, &name, &thread).await?;
    let running = shared
        .runs
        .of_thread(&name, &thread)
        .iter()
        .any(|run| run.outcome().is_none());
    if running {
        return Err(ApiError::Conflict(format!(
            "thread `{thread}` has a run going: cancel it first"
        )));
    }
    let agent = agent(&shared, &scope, &name)?;
    agent
        .reset_thread(Some(&thread))
        .await
        .map_err(ApiError::runtime)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Thread `thread` of agent `name`, as the caller may read it; 404 when there is none.
async fn load(
    shared: &Shared,
    scope: &crate::auth::Scope,
    name: &str,
    thread: &str,
) -> Result<motet_agents::Thread, ApiError> {
    let agent = agent(shared, scope, name)?;
    let thread = thread_id(thread)?;
    agent
        .get_thread(Some(thread))
        .await
        .map_err(ApiError::runtime)?
        .ok_or(ApiError::NotFound("thread"))
}
