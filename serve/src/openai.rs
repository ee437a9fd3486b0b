//! The OpenAI-compatible endpoint: any OpenAI client or chat UI talks to a served agent as if it
//! were a model named after it.
//!
//! - `GET /v1/models`, `GET /v1/models/{model}`: the agents the caller's token reaches.
//! - `POST /v1/chat/completions`: one ask of the agent `model`, answered whole or streamed as
//!   `chat.completion.chunk`s (`stream: true`), with a usage chunk on `stream_options.include_usage`.
//!
//! What it decides is pure and tested on its own: `ask` (a request into one ask: which text,
//! which thread), `reply` (the completion and the stream's chunks), `error` (each refusal in
//! OpenAI's error shape with its status), over the JSON of `wire`. This file carries it out:
//! it reads the body, submits the ask and follows its ticket.
//!
//! The request runs on a fresh thread unless the client names one in `X-Motet-Thread`; every
//! response names its thread in that header (and in `motet.thread`) so a client can continue it.
//! A client that goes away cancels nothing: the request runs to its end and its answer is kept on
//! its thread. A request that waits for a person ends the response with a notice naming the
//! calls (and `motet.waiting`); it goes on once they are answered through the native API.

mod ask;
mod error;
mod reply;
mod wire;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use motet_runtime::agent::{AgentHandle, AskError, AskOptions, Ticket, TicketEvent};
use tokio::sync::watch;
use tokio::time::Instant;

use self::ask::Ask;
use self::error::OpenAiError;
use self::reply::{Chunks, Reply};
use self::wire::{ChatRequest, Model, ModelList};
use crate::Shared;
use crate::auth::{Caller, Scope};

/// How long a response waits for the agent's answer (or for it to wait for a person) before it
/// ends with a 504 (or an error event); the request goes on.
pub(crate) const OPENAI_ANSWER_WAIT: Duration = Duration::from_secs(600);

/// The header that names the thread a request runs on, and that every response carries.
pub(crate) const THREAD_HEADER: &str = "x-motet-thread";

/// The OpenAI-compatible routes, on the shared state.
pub(crate) fn routes() -> axum::Router<Arc<Shared>> {
    // The agents are listed as created when the server was built.
    let served_since = unix_now();
    axum::Router::new()
        .route(
            "/v1/models",
            get(move |state, caller| list_models(state, caller, served_since)),
        )
        .route(
            "/v1/models/{model}",
            get(move |state, caller, model| get_model(state, caller, model, served_since)),
        )
        // Bodies are bounded by the server's one limit (axum's `DefaultBodyLimit`).
        .route("/v1/chat/completions", post(chat_completions))
}

/// `GET /v1/models`: the served agents the caller's token reaches, as models.
async fn list_models(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    created: u64,
) -> Response {
    let data = shared
        .agents
        .keys()
        .filter(|name| scope.allows(name))
        .map(|name| Model::agent(name, created))
        .collect();
    Json(ModelList {
        object: "list",
        data,
    })
    .into_response()
}

/// `GET /v1/models/{model}`: one served agent, if the caller's token reaches it.
async fn get_model(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Path(model): Path<String>,
    created: u64,
) -> Response {
    match agent_named(&shared, &scope, &model) {
        Ok(agent) => Json(Model::agent(agent.name(), created)).into_response(),
        Err(error) => error.into_response(),
    }
}

/// `POST /v1/chat/completions`: one ask of the agent the body names.
async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match complete(&shared, &scope, &headers, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// The body read, the agent found, the ask made and submitted; then the answer, whole or
/// streamed.
async fn complete(
    shared: &Shared,
    scope: &Scope,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => OpenAiError::TooLarge,
        _ => OpenAiError::bad(rejection.body_text(), None),
    })?;
    let request: ChatRequest = serde_json::from_slice(&body).map_err(|e| {
        OpenAiError::bad(
            format!("the body is not a chat completions request: {e}"),
            None,
        )
    })?;
    let agent = agent_named(shared, scope, &request.model)?.clone();
    let thread = match headers.get(THREAD_HEADER) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| OpenAiError::bad("X-Motet-Thread must be ASCII text", None))?,
        ),
    };
    let ask = Ask::of(request, thread)?;
    let options = AskOptions {
        thread_id: Some(ask.thread),
        timeout: OPENAI_ANSWER_WAIT,
        stream: ask.stream,
        keep_running: true,
        response_format: ask.response_format,
        ..AskOptions::default()
    };
    let deadline = Instant::now() + OPENAI_ANSWER_WAIT;
    let ticket = agent
        .submit(ask.query, options)
        .await
        .map_err(|e| refusal_of(&e))?;
    let reply = Reply::new(agent.name(), ticket.thread(), ticket.id(), unix_now());
    let thread = thread_header(ticket.thread());
    match ask.stream {
        true => {
            let chunks = Chunks::new(reply, ask.include_usage);
            let closing = shared.closing.subscribe();
            let sse = Sse::new(streamed(ticket, chunks, deadline, closing))
                .keep_alive(KeepAlive::default());
            Ok((thread, sse).into_response())
        }
        false => {
            let body = whole(ticket, &reply, deadline).await?;
            let json = [(
                axum::http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )];
            Ok((thread, json, body).into_response())
        }
    }
}

/// The served agent `model`, when the caller's token reaches it.
fn agent_named<'a>(
    shared: &'a Shared,
    scope: &Scope,
    model: &str,
) -> Result<&'a AgentHandle, OpenAiError> {
    shared
        .agents
        .get(model)
        .filter(|_| scope.allows(model))
        .ok_or_else(|| OpenAiError::UnknownModel {
            model: model.to_owned(),
        })
}

/// The whole completion (JSON text): the answer, or the notice that the request waits for a
/// person.
async fn whole(
    mut ticket: Ticket,
    reply: &Reply,
    deadline: Instant,
) -> Result<String, OpenAiError> {
    let timeout = timeout_of(reply);
    let first_wait = tokio::time::timeout_at(deadline, ticket.next_waiting())
        .await
        .map_err(|_| timeout())?;
    if let Some(first) = first_wait {
        return Ok(reply.waiting(&all_waiting(&ticket, first).await));
    }
    let answer = tokio::time::timeout_at(deadline, ticket.wait())
        .await
        .map_err(|_| timeout())?
        .map_err(|e| refusal_of(&e))?;
    Ok(reply.completion(&answer.text, &answer.usage))
}

/// The calls of the ticket's request that wait now: `first`, and any other the store lists.
async fn all_waiting(ticket: &Ticket, first: motet_agents::Waiting) -> Vec<motet_agents::Waiting> {
    let mut all = vec![first];
    if let Ok(stored) = ticket.waiting().await {
        for waiting in stored {
            if !all.iter().any(|w| w.tool_call_id == waiting.tool_call_id) {
                all.push(waiting);
            }
        }
    }
    all
}

/// A streamed answer: where it is between chunks.
struct Streaming {
    ticket: Option<Ticket>,
    chunks: Chunks,
    /// Payloads ready to send.
    ready: VecDeque<String>,
    deadline: Instant,
    timeout: OpenAiError,
    /// Set when the server shuts down.
    closing: watch::Receiver<bool>,
}

/// The SSE events of a streamed answer: the chunks as the ticket reports the request, then
/// `[DONE]`. Dropped when the client goes away; the request goes on. When the server shuts
/// down first, it ends with OpenAI's error object (`shutting_down`, which OpenAI's clients
/// raise) so that no open response holds the shutdown back; the request goes on.
fn streamed(
    ticket: Ticket,
    chunks: Chunks,
    deadline: Instant,
    closing: watch::Receiver<bool>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let timeout = OpenAiError::Timeout {
        waited: OPENAI_ANSWER_WAIT,
        request: ticket.id().to_owned(),
        thread: ticket.thread().to_owned(),
    };
    let ready = VecDeque::from([chunks.opening()]);
    let state = Streaming {
        ticket: Some(ticket),
        chunks,
        ready,
        deadline,
        timeout,
        closing,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(payload) = state.ready.pop_front() {
                return Some((Ok(Event::default().data(payload)), state));
            }
            let ticket = state.ticket.as_mut()?;
            let next = tokio::select! {
                next = tokio::time::timeout_at(state.deadline, ticket.next_event()) => next,
                _ = state.closing.wait_for(|closing| *closing) => {
                    let shutting_down = OpenAiError::ShuttingDown {
                        request: ticket.id().to_owned(),
                        thread: ticket.thread().to_owned(),
                    };
                    state.ready.push_back(Chunks::failed(&shutting_down));
                    state.ticket = None;
                    continue;
                }
            };
            match next {
                Ok(Some(TicketEvent::Delta(delta))) => {
                    state.ready.extend(state.chunks.delta(&delta))
                }
                Ok(Some(TicketEvent::Waiting(first))) => {
                    let waiting = all_waiting(ticket, first).await;
                    state.ready.extend(state.chunks.waiting(&waiting));
                    state.ready.push_back(DONE.to_owned());
                    state.ticket = None;
                }
                Ok(None) => {
                    let ticket = state.ticket.take()?;
                    match tokio::time::timeout_at(state.deadline, ticket.wait()).await {
                        Ok(Ok(answer)) => {
                            state
                                .ready
                                .extend(state.chunks.answered(&answer.text, &answer.usage));
                            state.ready.push_back(DONE.to_owned());
                        }
                        Ok(Err(error)) => {
                            state.ready.push_back(Chunks::failed(&refusal_of(&error)))
                        }
                        Err(_) => state.ready.push_back(Chunks::failed(&state.timeout)),
                    }
                }
                Err(_) => {
                    state.ready.push_back(Chunks::failed(&state.timeout));
                    state.ticket = None;
                }
            }
        }
    })
}

/// The payload that ends a stream.
const DONE: &str = "[DONE]";

/// What a failed ask is answered with.
fn refusal_of(error: &AskError) -> OpenAiError {
    match error {
        AskError::Strategy { .. } => OpenAiError::bad(error.to_string(), None),
        AskError::AgentStopped { .. } | AskError::ThreadUnavailable { .. } => {
            OpenAiError::Unavailable {
                reason: error.to_string(),
            }
        }
        _ => OpenAiError::AgentFailed {
            reason: error.to_string(),
        },
    }
}

/// The timeout of the request `reply` answers.
fn timeout_of(reply: &Reply) -> impl Fn() -> OpenAiError + '_ {
    move || OpenAiError::Timeout {
        waited: OPENAI_ANSWER_WAIT,
        request: reply.motet.request.clone(),
        thread: reply.motet.thread.clone(),
    }
}

/// The response header that names the thread.
fn thread_header(thread: &str) -> [(HeaderName, HeaderValue); 1] {
    // A thread id is ASCII (the runtime's own, or one the client's header named).
    let value = HeaderValue::from_str(thread).unwrap_or(HeaderValue::from_static(""));
    [(HeaderName::from_static(THREAD_HEADER), value)]
}

/// Now, in Unix seconds.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
