//! Calls that wait for a person (an approval, a tool's question), and the person's answers:
//! approve, edit, reject, answer.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use motet_directives::Response;
use serde::Deserialize;

use super::extract::{Body, Ids};
use super::{agent, thread_id};
use crate::Shared;
use crate::auth::Caller;
use crate::error::ApiError;

/// A person's answer to one waiting call.
#[derive(Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum Decision {
    /// Run the call as the model asked.
    Approve,
    /// Run it with these arguments (a JSON object, or its JSON text).
    Edit {
        /// The arguments.
        args: serde_json::Value,
    },
    /// Do not run it; the model reads the reason.
    Reject {
        /// Why.
        reason: String,
    },
    /// The answer to the tool's question.
    Answer {
        /// The answer.
        text: String,
    },
}

impl Decision {
    fn into_response(self) -> Response {
        match self {
            Self::Approve => Response::Approve,
            Self::Edit { args } => Response::Edit {
                args: match args {
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                },
            },
            Self::Reject { reason } => Response::Reject { reason },
            Self::Answer { text } => Response::Answer { text },
        }
    }
}

/// `GET /api/waiting`: every waiting call of the agents the caller reaches, oldest first.
pub(super) async fn list_all(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
) -> Result<Json<serde_json::Value>, ApiError> {
    let mut all = shared.runtime.waiting().await.map_err(ApiError::runtime)?;
    all.retain(|w| scope.allows(&w.agent) && shared.agents.contains_key(&w.agent));
    Ok(Json(serde_json::json!({ "waiting": all })))
}

/// `GET /api/agents/{agent}/waiting`: the agent's waiting calls, oldest first.
pub(super) async fn list(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids(name): Ids<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let agent = agent(&shared, &scope, &name)?;
    let waiting = agent.waiting(None).await.map_err(ApiError::runtime)?;
    Ok(Json(serde_json::json!({ "waiting": waiting })))
}

/// `POST /api/agents/{agent}/threads/{thread}/waiting/{call}` with a [`Decision`] → 202;
/// 404 when the call does not wait, 409 when answered already, 422 for the wrong kind of
/// answer (an approval of a question) or edited arguments that are not an object.
pub(super) async fn respond(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Ids((name, thread, call)): Ids<(String, String, String)>,
    Body(decision): Body<Decision>,
) -> Result<StatusCode, ApiError> {
    let agent = agent(&shared, &scope, &name)?;
    let thread = thread_id(&thread)?;
    let mut waiting = agent
        .waiting(Some(thread))
        .await
        .map_err(ApiError::runtime)?
        .into_iter()
        .find(|w| w.tool_call_id == call)
        .ok_or(ApiError::NotFound("wait"))?;
    if waiting.agent.is_empty() {
        waiting.agent.clone_from(&name);
    }
    if waiting.thread.is_empty() {
        waiting.thread = thread.to_owned();
    }
    shared
        .runtime
        .respond(&waiting, decision.into_response())
        .await
        .map_err(ApiError::runtime)?;
    Ok(StatusCode::ACCEPTED)
}
