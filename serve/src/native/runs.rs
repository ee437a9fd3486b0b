//! Runs over HTTP: start one on a thread, read its status and answer, cancel it, steer it,
//! stream its events (SSE with ids, resumable with `Last-Event-ID`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use motet_runtime::agent::{AskError, RequestStatus};
use serde::Deserialize;

use super::extract::{Body, Ids};
use super::{agent, thread_id};
use crate::Shared;
use crate::auth::{Caller, Scope};
use crate::error::ApiError;
use crate::runs::{ControlError, Outcome, Refusal, Run, resume_point, subscribe};

/// The body of `POST .../runs`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Start {
    /// What to ask.
    query: String,
}

/// The body of `POST .../steer`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Steer {
    /// The user message to add.
    text: String,
}

/// `POST /api/agents/{agent}/threads/{thread}/runs`: asks `query` on the thread (`new`: a
/// fresh thread) → 201 with the run.
pub(super) async fn start(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, thread)): Ids<(String, String)>,
    Body(start): Body<Start>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let agent = agent(&shared, &scope, &name)?;
    let thread = thread_id(&thread)?;
    if start.query.trim().is_empty() {
        return Err(ApiError::Unprocessable("the query says nothing".into()));
    }
    let run = shared
        .runs
        .start(agent, shared.runtime.bus(), thread, start.query)
        .await
        .map_err(|error| match error {
            AskError::AgentStopped { .. } => ApiError::NotFound("agent"),
            other => ApiError::Internal(other.to_string()),
        })?;
    tracing::Span::current().record("run", run.id.as_str());
    Ok((StatusCode::CREATED, Json(view(&shared, &run))))
}

/// `GET /api/agents/{agent}/threads/{thread}/runs`: the thread's runs this server holds.
pub(super) async fn list(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, thread)): Ids<(String, String)>,
) -> Result<Json<serde_json::Value>, ApiError> {
    agent(&shared, &scope, &name)?;
    let thread = thread_id(&thread)?;
    let runs: Vec<_> = shared
        .runs
        .of_thread(&name, thread)
        .iter()
        .map(|run| view(&shared, run))
        .collect();
    Ok(Json(serde_json::json!({ "runs": runs })))
}

/// `GET /api/agents/{agent}/runs/{run}`: its status, and its answer or failure once ended.
pub(super) async fn read(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, id)): Ids<(String, String)>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let run = find(&shared, &scope, &name, &id)?;
    Ok(Json(view(&shared, &run)))
}

/// `POST /api/agents/{agent}/runs/{run}/cancel` → 202; 409 once it ended.
pub(super) async fn cancel(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, id)): Ids<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let run = find(&shared, &scope, &name, &id)?;
    run.cancel().await.map_err(control_error)?;
    Ok(StatusCode::ACCEPTED)
}

/// `POST /api/agents/{agent}/runs/{run}/steer` with `{"text"}` → 202; 409 once it ended.
pub(super) async fn steer(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, id)): Ids<(String, String)>,
    Body(steer): Body<Steer>,
) -> Result<StatusCode, ApiError> {
    let run = find(&shared, &scope, &name, &id)?;
    if steer.text.trim().is_empty() {
        return Err(ApiError::Unprocessable("the steer says nothing".into()));
    }
    run.steer(steer.text).await.map_err(control_error)?;
    Ok(StatusCode::ACCEPTED)
}

/// `GET /api/agents/{agent}/runs/{run}/events`: the run's events as SSE, from after the
/// `Last-Event-ID` header's id (or the `last_event_id` query parameter, for clients that
/// cannot set headers), else from its first event.
pub(super) async fn events(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, id)): Ids<(String, String)>,
    headers: HeaderMap,
    query: axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let run = find(&shared, &scope, &name, &id)?;
    let last =
        match headers.get("last-event-id") {
            Some(value) => Some(value.to_str().map_err(|_| {
                ApiError::BadRequest("the Last-Event-ID header is not text".into())
            })?),
            None => query.get("last_event_id").map(String::as_str),
        };
    let after = resume_point(last, run.last_id()).map_err(|_| {
        ApiError::BadRequest(format!(
            "Last-Event-ID `{}` names no event of run `{}`",
            last.unwrap_or_default()
                .chars()
                .take(32)
                .collect::<String>(),
            run.id
        ))
    })?;
    let closing = shared.closing.subscribe();
    match subscribe(&shared.runs, run, after, closing) {
        Ok(sse) => Ok(sse.into_response()),
        Err(Refusal::RunFull) => Err(ApiError::Busy(
            "this run has as many streams as it takes".into(),
        )),
        Err(Refusal::ServerFull) => Err(ApiError::Busy(
            "the server has as many streams as it takes".into(),
        )),
    }
}

/// Run `id` of agent `name`, as the caller may reach it; 404 otherwise.
fn find(shared: &Shared, scope: &Scope, name: &str, id: &str) -> Result<Arc<Run>, ApiError> {
    agent(shared, scope, name)?;
    shared
        .runs
        .get(id)
        .filter(|run| run.agent == name)
        .ok_or(ApiError::NotFound("run"))
}

/// A run as the API shows it.
fn view(shared: &Shared, run: &Run) -> serde_json::Value {
    let outcome = run.outcome();
    let status = match (&outcome, shared.runtime.request(&run.id)) {
        (Some(Outcome::Completed { .. }), _) => "completed",
        (Some(Outcome::Failed { .. }), _) => "failed",
        (None, Some(record)) => status_name(record.status),
        (None, None) => "running",
    };
    let mut view = serde_json::json!({
        "id": run.id,
        "agent": run.agent,
        "thread": run.thread,
        "status": status,
        "last_event_id": run.last_id(),
    });
    match outcome {
        Some(Outcome::Completed { answer, usage }) => {
            view["answer"] = answer.into();
            view["usage"] = serde_json::to_value(usage).unwrap_or_default();
        }
        Some(Outcome::Failed { error, .. }) => view["error"] = error.into(),
        None => {}
    }
    view
}

/// A request status as the API spells it.
fn status_name(status: RequestStatus) -> &'static str {
    match status {
        RequestStatus::Queued => "queued",
        RequestStatus::Running => "running",
        RequestStatus::AwaitingApproval => "awaiting_approval",
        RequestStatus::AwaitingAnswer => "awaiting_answer",
        RequestStatus::Completed => "completed",
        RequestStatus::Failed => "failed",
    }
}

/// A cancel or steer that did not reach its run, as the API answers it.
fn control_error(error: ControlError) -> ApiError {
    match error {
        ControlError::Ended => ApiError::Conflict("the run has ended".into()),
        ControlError::Runtime(error) => ApiError::runtime(error),
    }
}
