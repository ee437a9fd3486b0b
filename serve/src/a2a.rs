//! A2A 1.0 (the Agent2Agent protocol's JSON-RPC binding over HTTP and SSE): each served agent
//! as an A2A agent, its tasks being motet runs.
//!
//! - `GET /a2a/{agent}/.well-known/agent-card.json`: the agent's card, naming its JSON-RPC
//!   endpoint `POST /a2a/{agent}`; `GET /.well-known/agent-card.json`: the card of the first
//!   served agent (by name) the caller's token reaches.
//! - `POST /a2a/{agent}`: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`,
//!   `SubscribeToTask`.
//!
//! A task is a run (its id the run's), its `contextId` the run's thread; what a task is and
//! does is read from the run's log by the pure `task.rs`, so the native API and A2A see one
//! run. What is pure: `rpc.rs` (a body into one call, or its error), `reply.rs` (a client's
//! message into a query or into answers to waiting calls), `task.rs` (the log as task states
//! and stream events), `card.rs`, `error.rs` (A2A's error codes), over the JSON of `wire.rs`.
//! This file carries them out. docs/serve.md, "A2A", has the whole mapping.

mod card;
mod error;
mod reply;
mod rpc;
mod task;
mod wire;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use motet_runtime::agent::{AgentHandle, AskError, NEW_THREAD, RuntimeError};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use self::error::A2aError;
use self::rpc::Call;
use self::task::Follower;
use self::wire::{Message, SendMessageRequest, StreamResponse, TaskRequest, TaskState};
use crate::Shared;
use crate::auth::{Caller, Scope};
use crate::error::ApiError;
use crate::runs::{ControlError, Refusal, Run, Slot};

/// Where a card is, under a server's root or an agent's path.
const CARD_PATH: &str = "/.well-known/agent-card.json";

/// How long a blocking `SendMessage` waits for its task to end or to wait for input; past it,
/// the task is answered as it stands (its run goes on).
pub(crate) const SEND_WAIT: Duration = Duration::from_secs(600);

/// How long `CancelTask` waits for the run to end before answering with the task as it stands.
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// Log events read at once.
const PAGE: usize = 256;

/// Stream events queued between a subscriber's task and its response body.
const QUEUE: usize = 16;

/// The A2A routes, with their paths.
pub(crate) fn table() -> Vec<(&'static str, MethodRouter<Arc<Shared>>)> {
    vec![
        (CARD_PATH, get(root_card)),
        ("/a2a/{agent}/.well-known/agent-card.json", get(agent_card)),
        ("/a2a/{agent}", post(call)),
    ]
}

/// `GET /.well-known/agent-card.json`: the card of the first served agent (by name) the
/// caller's token reaches.
async fn root_card(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    let Some(name) = shared.agents.keys().find(|name| scope.allows(name)) else {
        return ApiError::NotFound("agent").into_response();
    };
    // Mounted under a prefix, the card's endpoint is under it too.
    let prefix = uri.path().strip_suffix(CARD_PATH).unwrap_or_default();
    let url = format!("{}{prefix}/a2a/{name}", base_of(&headers));
    Json(card::card(name, &url, !shared.tokens.is_open())).into_response()
}

/// `GET /a2a/{agent}/.well-known/agent-card.json`: the agent's card.
async fn agent_card(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Path(name): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    if let Err(error) = agent(&shared, &scope, &name) {
        return error.into_response();
    }
    let endpoint = uri.path().strip_suffix(CARD_PATH).unwrap_or_default();
    let url = format!("{}{endpoint}", base_of(&headers));
    Json(card::card(&name, &url, !shared.tokens.is_open())).into_response()
}

/// The base URL the request reached the server at.
fn base_of(headers: &HeaderMap) -> String {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    card::base_url(
        header("host"),
        header("x-forwarded-host"),
        header("x-forwarded-proto"),
    )
}

/// The served agent `name`, when `scope` reaches it; else 404, as for an agent not served.
fn agent<'a>(shared: &'a Shared, scope: &Scope, name: &str) -> Result<&'a AgentHandle, ApiError> {
    shared
        .agents
        .get(name)
        .filter(|_| scope.allows(name))
        .ok_or(ApiError::NotFound("agent"))
}

/// `POST /a2a/{agent}`: one JSON-RPC call. Its errors are JSON-RPC errors (HTTP 200); a bad
/// token is a bare 401 and an agent out of the token's reach a 404, as everywhere.
async fn call(
    State(shared): State<Arc<Shared>>,
    Caller(scope): Caller,
    Path(name): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let agent = match agent(&shared, &scope, &name) {
        Ok(agent) => agent.clone(),
        Err(error) => return error.into_response(),
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::TooLarge.into_response();
        }
        Err(rejection) => {
            return rpc_error(
                &Value::Null,
                &A2aError::InvalidRequest(rejection.body_text()),
            );
        }
    };
    let version = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| version_param(uri.query()));
    let (id, call) = match rpc::decode(&body, version.as_deref()) {
        Ok(decoded) => decoded,
        Err((id, error)) => return rpc_error(&id, &error),
    };
    let calling = Calling { shared, agent };
    let answered = match call {
        Call::Send(request) => calling.send(request, None).await,
        Call::Stream(request) => calling.send(request, Some(id.clone())).await,
        Call::Get(request) => calling.get(&request),
        Call::Cancel(request) => calling.cancel(&request).await,
        Call::Subscribe(request) => calling.subscribe(&request, id.clone()),
    };
    match answered {
        Ok(Answer::Result(result)) => {
            Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
        }
        Ok(Answer::Stream(response)) => response,
        Err(error) => rpc_error(&id, &error),
    }
}

/// The `A2A-Version` a query string gives, for clients that cannot set the header.
fn version_param(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.eq_ignore_ascii_case("a2a-version")
            .then(|| value.to_owned())
    })
}

/// A JSON-RPC error answer.
fn rpc_error(id: &Value, error: &A2aError) -> Response {
    if let A2aError::Internal(message) = error {
        tracing::warn!(%message, "an A2A call failed");
    }
    Json(error.response(id)).into_response()
}

/// What a call is answered with.
enum Answer {
    /// A JSON-RPC result.
    Result(Value),
    /// An SSE stream of results.
    Stream(Response),
}

/// One call on one agent.
struct Calling {
    shared: Arc<Shared>,
    agent: AgentHandle,
}

impl Calling {
    /// `SendMessage` (`stream` none) or `SendStreamingMessage` (the request's id): a new task,
    /// or a message on one — the answers to what it waits for, or a steer while it works.
    async fn send(
        &self,
        request: SendMessageRequest,
        stream: Option<Value>,
    ) -> Result<Answer, A2aError> {
        if request
            .configuration
            .task_push_notification_config
            .is_some()
        {
            return Err(A2aError::PushNotificationNotSupported);
        }
        let history = request.configuration.history_length;
        let (run, follower, after, stop_now) = match &request.message.task_id {
            Some(task) => self.continue_task(task, &request.message).await?,
            None => {
                let run = self.start(&request.message).await?;
                let follower = Follower::new(&run.id, &run.thread);
                (run, follower, 0, false)
            }
        };
        let mut tail = Tail::new(run, follower, after);
        match stream {
            Some(id) => self.stream(tail, id, stop_now),
            None if stop_now || request.configuration.return_immediately => {
                Ok(Answer::Result(send_result(tail.follower.task(history))))
            }
            None => {
                tail.until_done(Instant::now() + SEND_WAIT).await;
                Ok(Answer::Result(send_result(tail.follower.task(history))))
            }
        }
    }

    /// A run of the message's text on its context's thread (a fresh one without a context).
    async fn start(&self, message: &Message) -> Result<Arc<Run>, A2aError> {
        let query = reply::query_of(message)?;
        let thread = match message.context_id.as_deref() {
            None | Some("") => NEW_THREAD,
            Some(context) => crate::ids::thread_id(context)
                .map_err(|e| A2aError::InvalidParams(format!("contextId: {e}")))?,
        };
        let run = self
            .shared
            .runs
            .start(&self.agent, self.shared.runtime.bus(), thread, query)
            .await
            .map_err(|error: AskError| A2aError::Internal(error.to_string()))?;
        tracing::Span::current().record("run", run.id.as_str());
        Ok(run)
    }

    /// The message on task `task`: it answers the calls the task waits on, or steers it while it
    /// works. Gives the run, its follower, where in its log to go on from, and whether the task
    /// still waits for input (its answer is then the task as it stands).
    async fn continue_task(
        &self,
        task: &str,
        message: &Message,
    ) -> Result<(Arc<Run>, Follower, u64, bool), A2aError> {
        let run = self.find(task)?;
        if let Some(context) = message.context_id.as_deref().filter(|c| !c.is_empty())
            && context != run.thread
        {
            return Err(A2aError::InvalidParams(format!(
                "contextId `{}` is not task `{task}`'s",
                context.chars().take(64).collect::<String>()
            )));
        }
        let (mut follower, after) = follow(&run);
        let state = follower.state();
        if state.is_terminal() {
            return Err(A2aError::UnsupportedOperation(format!(
                "task `{task}` has ended: send a message with its contextId and no taskId to go on"
            )));
        }
        if state == TaskState::InputRequired {
            for (call, response) in reply::answers(message, follower.pending())? {
                self.respond(&run, &call, response).await?;
                follower.answered(&call);
            }
            let still = follower.state() == TaskState::InputRequired;
            return Ok((run, follower, after, still));
        }
        let text = reply::query_of(message)?;
        run.steer(text).await.map_err(|error| match error {
            ControlError::Ended => {
                A2aError::UnsupportedOperation(format!("task `{task}` has ended"))
            }
            ControlError::Runtime(error) => runtime_error(error),
        })?;
        Ok((run, follower, after, false))
    }

    /// Answers call `call` of `run` with `response`.
    async fn respond(
        &self,
        run: &Run,
        call: &str,
        response: motet_directives::Response,
    ) -> Result<(), A2aError> {
        let mut waiting = self
            .agent
            .waiting(Some(&run.thread))
            .await
            .map_err(runtime_error)?
            .into_iter()
            .find(|w| w.tool_call_id == call && w.request_id == run.id)
            .ok_or_else(|| A2aError::InvalidParams(format!("tool call `{call}` waits no more")))?;
        if waiting.agent.is_empty() {
            waiting.agent = run.agent.clone();
        }
        if waiting.thread.is_empty() {
            waiting.thread.clone_from(&run.thread);
        }
        self.shared
            .runtime
            .respond(&waiting, response)
            .await
            .map_err(runtime_error)
    }

    /// `GetTask`.
    fn get(&self, request: &TaskRequest) -> Result<Answer, A2aError> {
        let run = self.find(&request.id)?;
        let (follower, _) = follow(&run);
        let task = follower.task(request.history_length);
        Ok(Answer::Result(
            serde_json::to_value(task).unwrap_or_default(),
        ))
    }

    /// `CancelTask`: asks the run to stop and answers with the task once it ended (or as it
    /// stands after [`CANCEL_WAIT`]).
    async fn cancel(&self, request: &TaskRequest) -> Result<Answer, A2aError> {
        let run = self.find(&request.id)?;
        let (follower, after) = follow(&run);
        if follower.state().is_terminal() {
            return Err(A2aError::TaskNotCancelable(request.id.clone()));
        }
        run.cancel().await.map_err(|error| match error {
            ControlError::Ended | ControlError::Runtime(RuntimeError::RequestNotRunning { .. }) => {
                A2aError::TaskNotCancelable(request.id.clone())
            }
            ControlError::Runtime(error) => runtime_error(error),
        })?;
        let mut tail = Tail::new(run, follower, after);
        tail.until_ended(Instant::now() + CANCEL_WAIT).await;
        Ok(Answer::Result(
            serde_json::to_value(tail.follower.task(None)).unwrap_or_default(),
        ))
    }

    /// `SubscribeToTask`: the task as it stands, then its updates until it ends or waits for
    /// input again.
    fn subscribe(&self, request: &TaskRequest, id: Value) -> Result<Answer, A2aError> {
        let run = self.find(&request.id)?;
        let (follower, after) = follow(&run);
        if follower.state().is_terminal() {
            return Err(A2aError::UnsupportedOperation(format!(
                "task `{}` has ended: read it with GetTask",
                request.id
            )));
        }
        self.stream(Tail::new(run, follower, after), id, false)
    }

    /// Run `id` of this agent, as a task.
    fn find(&self, id: &str) -> Result<Arc<Run>, A2aError> {
        self.shared
            .runs
            .get(id)
            .filter(|run| run.agent == self.agent.name())
            .ok_or_else(|| A2aError::TaskNotFound(id.chars().take(128).collect()))
    }

    /// The SSE answer of a streaming call `id`: the task as it stands, then `tail`'s updates
    /// (none when `stop_now`).
    fn stream(&self, tail: Tail, id: Value, stop_now: bool) -> Result<Answer, A2aError> {
        let slot = Slot::take(&self.shared.runs, &tail.run).map_err(|refusal| {
            A2aError::Internal(match refusal {
                Refusal::RunFull => "this task has as many streams as it takes".into(),
                Refusal::ServerFull => "the server has as many streams as it takes".into(),
            })
        })?;
        let limits = self.shared.runs.limits.streams;
        let (tx, mut rx) = mpsc::channel::<Event>(QUEUE);
        let closing = self.shared.closing.subscribe();
        tokio::spawn(pump(tail, id, stop_now, tx, slot, limits.stall, closing));
        let events = futures::stream::poll_fn(move |cx| {
            rx.poll_recv(cx).map(|e| e.map(Ok::<_, Infallible>))
        });
        let sse = Sse::new(events).keep_alive(KeepAlive::new().interval(limits.keep_alive));
        Ok(Answer::Stream(sse.into_response()))
    }
}

/// The result of `SendMessage`: the task.
fn send_result(task: wire::Task) -> Value {
    json!({ "task": task })
}

/// A runtime error as an A2A error.
fn runtime_error(error: RuntimeError) -> A2aError {
    match error {
        RuntimeError::UnknownCall { .. } | RuntimeError::AlreadyAnswered { .. } => {
            A2aError::InvalidParams(error.to_string())
        }
        RuntimeError::WrongResponse { .. }
        | RuntimeError::InvalidEdit { .. }
        | RuntimeError::EmptySteer { .. } => A2aError::InvalidParams(error.to_string()),
        RuntimeError::RequestNotPaused { .. } | RuntimeError::RequestNotRunning { .. } => {
            A2aError::UnsupportedOperation(error.to_string())
        }
        other => A2aError::Internal(other.to_string()),
    }
}

/// The run's whole log so far, followed: the task as it stands and the id of the last event.
fn follow(run: &Run) -> (Follower, u64) {
    let mut follower = Follower::new(&run.id, &run.thread);
    let mut after = 0;
    loop {
        let replay = run.since(after, PAGE);
        if replay.events.is_empty() {
            return (follower, after);
        }
        for event in replay.events {
            after = event.id;
            follower.take(event.name, &event.data);
        }
    }
}

/// A run's log followed live from a point, as task updates.
struct Tail {
    run: Arc<Run>,
    follower: Follower,
    after: u64,
    /// The last status this tail gave was `input-required`.
    interrupted: bool,
    changed: watch::Receiver<u64>,
}

impl Tail {
    fn new(run: Arc<Run>, follower: Follower, after: u64) -> Self {
        let changed = run.watch();
        Self {
            run,
            follower,
            after,
            interrupted: false,
            changed,
        }
    }

    /// The next updates, waiting for the log to grow; and whether the task is done for a
    /// stream: it ended, or it waits for input now (an `input-required` this tail gave, with
    /// nothing after it in the log).
    async fn next(&mut self) -> (Vec<StreamResponse>, bool) {
        loop {
            self.changed.mark_unchanged();
            let replay = self.run.since(self.after, PAGE);
            let mut out = Vec::new();
            let log_ended = replay.finished;
            for event in replay.events {
                self.after = event.id;
                for update in self.follower.take(event.name, &event.data) {
                    if let StreamResponse::StatusUpdate(status) = &update {
                        self.interrupted = status.status.state == TaskState::InputRequired;
                    }
                    out.push(update);
                }
            }
            let state = self.follower.state();
            let caught_up = self.after >= self.run.last_id();
            // A log that ended ends the stream, whatever its last event said.
            let done = state.is_terminal()
                || (log_ended && caught_up)
                || (self.interrupted && caught_up && state == TaskState::InputRequired);
            if done || !out.is_empty() {
                return (out, done);
            }
            if self.changed.changed().await.is_err() {
                return (out, true);
            }
        }
    }

    /// Follows the log until the task is done for a stream, or `deadline`.
    async fn until_done(&mut self, deadline: Instant) {
        while let Ok((_, false)) = tokio::time::timeout_at(deadline, self.next()).await {}
    }

    /// Follows the log until the task ended, or `deadline`.
    async fn until_ended(&mut self, deadline: Instant) {
        while !self.follower.state().is_terminal() {
            if tokio::time::timeout_at(deadline, self.next())
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Writes the task as it stands, then `tail`'s updates, into `tx` as JSON-RPC results of
/// call `id`, until the task is done for a stream, the subscriber leaves or stalls, or the
/// server closes (the client may subscribe again).
async fn pump(
    mut tail: Tail,
    id: Value,
    stop_now: bool,
    tx: mpsc::Sender<Event>,
    _slot: Slot,
    stall: Duration,
    mut closing: watch::Receiver<bool>,
) {
    let first = StreamResponse::Task(tail.follower.task(None));
    if !send(&tx, &id, &first, stall).await || stop_now {
        return;
    }
    loop {
        let (updates, done) = tokio::select! {
            next = tail.next() => next,
            _ = closing.wait_for(|closing| *closing) => return,
            () = tx.closed() => return,
        };
        for update in &updates {
            if !send(&tx, &id, update, stall).await {
                tracing::debug!(run = %tail.run.id, "an A2A subscriber was let go");
                return;
            }
        }
        if done {
            return;
        }
    }
}

/// Sends `update` as the result of call `id`; false when the subscriber is gone or stalled.
async fn send(
    tx: &mpsc::Sender<Event>,
    id: &Value,
    update: &StreamResponse,
    stall: Duration,
) -> bool {
    let data = json!({"jsonrpc": "2.0", "id": id, "result": update}).to_string();
    tx.send_timeout(Event::default().data(data), stall)
        .await
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_may_come_as_a_query_parameter() {
        assert_eq!(
            version_param(Some("a=1&A2A-Version=1.0")),
            Some("1.0".into())
        );
        assert_eq!(version_param(Some("a=1")), None);
        assert_eq!(version_param(None), None);
    }
}
