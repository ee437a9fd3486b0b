//! An [`AgentHandle`] to ask a running agent things, and the [`Request`] an ask starts.

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{
    Env, REACT_CANCEL, REACT_INPUT, REACT_RESUME, REACT_SUMMARIZE, ReactCompleted, ReactInput,
    ReactResume, ReactSummarize,
};
use motet_signals::{Bus, Delivery, Pattern, Signal, Subscription};
use ractor::ActorRef;
use tokio::sync::oneshot;

use super::env::SystemEnv;
use super::errors::{AskError, RuntimeError};
use super::registry::Services;
use super::requests::RequestRecord;
use super::server::AgentMsg;
use super::spec::AskOptions;

/// A request on its way: await its reply, cancel it, or read its deltas.
pub struct Request {
    id: String,
    thread: String,
    agent: AgentHandle,
    answer: oneshot::Receiver<Result<Signal, AskError>>,
    /// The reply, when it arrived while deltas were read.
    ready: Option<Result<Result<Signal, AskError>, oneshot::error::RecvError>>,
    timeout: Duration,
    /// Whether the request outlives a timed-out wait.
    keep_running: bool,
    deltas: Option<Deltas>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("id", &self.id)
            .field("thread", &self.thread)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// The request id (see [`Runtime::request`](super::Runtime::request) for its status).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The thread it runs on.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The next text or reasoning fragment the model wrote for this request, while it runs;
    /// `None` when the request was not started with [`AskOptions::stream`] or no more will come
    /// (the reply is then ready).
    pub async fn next_delta(&mut self) -> Option<super::events::LlmDelta> {
        let deltas = self.deltas.as_mut()?;
        if let Ok(delta) = deltas.rx.try_recv() {
            return Some(delta);
        }
        if self.ready.is_some() {
            return None;
        }
        tokio::select! {
            biased;
            delta = deltas.rx.recv() => delta,
            // The reply came: whatever was written is already in the channel.
            reply = &mut self.answer => {
                self.ready = Some(reply);
                deltas.rx.try_recv().ok()
            }
        }
    }

    /// Asks the agent to stop working on the request (`react.cancel`); its LLM calls are
    /// aborted and [`Request::wait`] returns the failure reply.
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when the agent has stopped.
    pub async fn cancel(&self, reason: impl Into<String>) -> Result<(), RuntimeError> {
        let signal = Signal::builder(REACT_CANCEL, "motet.ask")
            .with_id(SystemEnv.fresh_id("sig"))
            .with_request_id(&self.id)
            .with_thread_id(&self.thread)
            .with_data(motet_agents::ReactCancel {
                reason: Some(reason.into()),
            })
            .build()
            .map_err(|_| RuntimeError::NotRunning {
                name: self.agent.name.clone(),
            })?;
        self.agent.send(signal).await
    }

    /// Waits for the reply (up to the ask's timeout).
    ///
    /// # Errors
    /// As [`AgentHandle::ask`].
    pub async fn wait(mut self) -> Result<Signal, AskError> {
        let received = match self.ready.take() {
            Some(received) => received,
            None => match tokio::time::timeout(self.timeout, &mut self.answer).await {
                Ok(received) => received,
                Err(_) => {
                    if !self.keep_running {
                        let why = format!("no answer within {} s", self.timeout.as_secs_f64());
                        if let Err(error) = self.cancel(why).await {
                            tracing::debug!(%error, request = %self.id, "a timed-out request could not be cancelled");
                        }
                    }
                    return Err(AskError::Timeout(self.timeout));
                }
            },
        };
        self.agent.interpret(received)
    }
}

/// The `llm.delta` signals of one request, from the bus.
struct Deltas {
    rx: tokio::sync::mpsc::UnboundedReceiver<super::events::LlmDelta>,
    _subscription: Option<Subscription>,
}

impl Deltas {
    fn subscribe(bus: &Bus, request_id: &str) -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let id = request_id.to_owned();
        let pattern = super::events::LLM_DELTA.parse::<Pattern>();
        let subscription = pattern.ok().map(|pattern| {
            bus.subscribe(pattern, move |signal: &Signal| {
                if signal.request_id() != Some(id.as_str()) {
                    return Delivery::Delivered;
                }
                match signal.data_as::<super::events::LlmDelta>() {
                    Ok(delta) => match tx.send(delta) {
                        Ok(()) => Delivery::Delivered,
                        Err(_) => Delivery::Closed,
                    },
                    Err(_) => Delivery::Delivered,
                }
            })
        });
        Self {
            rx,
            _subscription: subscription,
        }
    }
}

/// The id of every agent's default thread.
pub const DEFAULT_THREAD: &str = "default";

/// The thread id that asks for a fresh thread.
pub const NEW_THREAD: &str = "new";

/// A running agent.
#[derive(Clone)]
pub struct AgentHandle {
    pub(crate) name: String,
    pub(crate) services: Arc<Services>,
}

/// How an ask sees a thread that could not be reached.
fn unreachable_thread(agent: &str, thread: Option<&str>, error: RuntimeError) -> AskError {
    match error {
        RuntimeError::SpawnFailed { message, .. } | RuntimeError::Store { message } => {
            AskError::ThreadUnavailable {
                agent: agent.to_owned(),
                thread: thread.unwrap_or(DEFAULT_THREAD).to_owned(),
                message,
            }
        }
        _ => AskError::AgentStopped {
            agent: agent.to_owned(),
        },
    }
}

impl std::fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHandle")
            .field("name", &self.name)
            .finish()
    }
}

impl AgentHandle {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends `query` as a `react.input` request and waits for the reply signal.
    ///
    /// # Errors
    /// [`AskError::Failed`] when the agent replies with its failure type (the signal's data
    /// says why), [`AskError::Timeout`], [`AskError::AgentStopped`], [`AskError::Strategy`].
    pub async fn ask(
        &self,
        query: impl Into<String>,
        options: AskOptions,
    ) -> Result<Signal, AskError> {
        self.start(query, options).await?.wait().await
    }

    /// Summarizes entries `from_seq..=to_seq` of thread `thread_id` (the default thread for
    /// `None`) with an LLM call (the agent's summary model, else its model) and appends the
    /// summary entry; from then on the projection shows the summary in place of those entries.
    /// Queued behind a running request like an ask. Returns the summary's text.
    ///
    /// # Errors
    /// [`AskError::Failed`] when the range is not in the thread or the summary call failed
    /// (reason `summary`); otherwise as [`AgentHandle::ask`].
    pub async fn summarize(
        &self,
        thread_id: Option<&str>,
        from_seq: u64,
        to_seq: u64,
        timeout: Duration,
    ) -> Result<String, AskError> {
        let env = SystemEnv;
        let mut builder = Signal::builder(REACT_SUMMARIZE, "motet.handle")
            .with_id(env.fresh_id("sig"))
            .with_request_id(env.fresh_id("req"))
            .with_data(ReactSummarize { from_seq, to_seq });
        if let Some(thread) = thread_id {
            builder = builder.with_thread_id(thread);
        }
        let signal = builder.build().map_err(|e| AskError::Send {
            message: e.to_string(),
        })?;
        let reply = self.request(signal, timeout).await?;
        let done: ReactCompleted = reply.data_as().map_err(|e| AskError::Send {
            message: format!("the summary reply could not be read: {e}"),
        })?;
        Ok(done.answer)
    }

    /// Sends `query` as a `react.input` request and returns at once: the [`Request`] can be
    /// awaited, cancelled, and (with [`AskOptions::stream`]) read delta by delta while the
    /// model writes.
    ///
    /// # Errors
    /// [`AskError::AgentStopped`] when the agent is not running.
    pub async fn start(
        &self,
        query: impl Into<String>,
        options: AskOptions,
    ) -> Result<Request, AskError> {
        let env = SystemEnv;
        let request_id = env.fresh_id("req");
        let wanted = options.thread_id.clone();
        let (actor, thread) = self
            .services
            .thread_actor(&self.name, options.thread_id)
            .await
            .map_err(|e| unreachable_thread(&self.name, wanted.as_deref(), e))?;
        let signal = Signal::builder(REACT_INPUT, "motet.ask")
            .with_id(env.fresh_id("sig"))
            .with_request_id(&request_id)
            .with_thread_id(&thread)
            .with_data(ReactInput {
                query: query.into(),
                context_policy: options.context_policy,
            })
            .build()
            .map_err(|e| AskError::Send {
                message: e.to_string(),
            })?;
        let signal = traced(signal);
        // Subscribed before the request is sent, so no delta is missed.
        let deltas = options
            .stream
            .then(|| Deltas::subscribe(&self.services.bus, &request_id));
        let (reply, answer) = oneshot::channel();
        actor
            .cast(AgentMsg::Ask { signal, reply })
            .map_err(|_| AskError::AgentStopped {
                agent: self.name.clone(),
            })?;
        Ok(Request {
            id: request_id,
            thread,
            agent: self.clone(),
            answer,
            ready: None,
            timeout: options.timeout,
            keep_running: options.keep_running,
            deltas,
        })
    }

    /// Sends any request signal (it must carry a request id) to the thread it names (or the
    /// default thread) and waits for its reply.
    ///
    /// # Errors
    /// As [`AgentHandle::ask`].
    pub async fn request(&self, signal: Signal, timeout: Duration) -> Result<Signal, AskError> {
        let (actor, _) = self
            .services
            .thread_actor(&self.name, signal.thread_id().map(str::to_owned))
            .await
            .map_err(|_| AskError::AgentStopped {
                agent: self.name.clone(),
            })?;
        self.request_on(&actor, signal, timeout).await
    }

    async fn request_on(
        &self,
        actor: &ActorRef<AgentMsg>,
        signal: Signal,
        timeout: Duration,
    ) -> Result<Signal, AskError> {
        let (reply, answer) = oneshot::channel();
        actor
            .cast(AgentMsg::Ask {
                signal: traced(signal),
                reply,
            })
            .map_err(|_| AskError::AgentStopped {
                agent: self.name.clone(),
            })?;
        self.outcome(answer, timeout).await
    }

    /// The reply to an ask, as the caller sees it.
    async fn outcome(
        &self,
        answer: oneshot::Receiver<Result<Signal, AskError>>,
        timeout: Duration,
    ) -> Result<Signal, AskError> {
        match tokio::time::timeout(timeout, answer).await {
            Err(_) => Err(AskError::Timeout(timeout)),
            Ok(received) => self.interpret(received),
        }
    }

    /// What a received (or lost) reply means.
    fn interpret(
        &self,
        received: Result<Result<Signal, AskError>, oneshot::error::RecvError>,
    ) -> Result<Signal, AskError> {
        match received {
            // The thread's state went away without answering: it failed. The agent still
            // running means it was restarted.
            Err(_) if self.services.agents.contains_key(&self.name) => {
                Err(AskError::AgentRestarted {
                    agent: self.name.clone(),
                })
            }
            Err(_) => Err(AskError::AgentStopped {
                agent: self.name.clone(),
            }),
            // The strategy's reply: a failure arrives as `AskError::Failed` already.
            Ok(reply) => reply,
        }
    }

    /// Carries on with what thread `thread_id` (the default thread for `None`) still owes after
    /// the process stopped in the middle of a request: from the last committed entry, an LLM
    /// call, or the tool calls whose results are missing — idempotent tools run again with the
    /// same tool-call id, others get an error result saying they may or may not have run. Returns
    /// the resumed request to await, or `None` when the thread owes nothing it can name.
    ///
    /// # Errors
    /// [`AskError::AgentStopped`] when the agent is not running; store failures as
    /// [`AskError::Store`].
    pub async fn resume(
        &self,
        thread_id: Option<&str>,
        timeout: Duration,
    ) -> Result<Option<Request>, AskError> {
        let family = self
            .services
            .agents
            .get(&self.name)
            .map(|f| f.value().clone())
            .ok_or_else(|| AskError::AgentStopped {
                agent: self.name.clone(),
            })?;
        let thread = self
            .get_thread(thread_id)
            .await
            .map_err(|e| AskError::Store {
                message: e.to_string(),
            })?;
        let Some(thread) = thread else {
            return Ok(None);
        };
        let owed = thread.to_list().iter().rev().find(|e| {
            matches!(
                e.body,
                motet_agents::EntryBody::User { .. }
                    | motet_agents::EntryBody::Assistant { .. }
                    | motet_agents::EntryBody::ToolResult { .. }
            )
        });
        let Some(request_id) = owed.and_then(|e| e.refs.request_id.clone()) else {
            return Ok(None);
        };
        let (actor, thread_id) = self
            .services
            .thread_actor(&self.name, thread_id.map(str::to_owned))
            .await
            .map_err(|_| AskError::AgentStopped {
                agent: self.name.clone(),
            })?;
        let signal = Signal::builder(REACT_RESUME, "motet.resume")
            .with_id(SystemEnv.fresh_id("sig"))
            .with_request_id(&request_id)
            .with_thread_id(&thread_id)
            .with_data(ReactResume {
                idempotent_tools: family.idempotent_tools(),
            })
            .build()
            .map_err(|e| AskError::Send {
                message: e.to_string(),
            })?;
        let (reply, answer) = oneshot::channel();
        actor
            .cast(AgentMsg::Ask {
                signal: traced(signal),
                reply,
            })
            .map_err(|_| AskError::AgentStopped {
                agent: self.name.clone(),
            })?;
        Ok(Some(Request {
            id: request_id,
            thread: thread_id,
            agent: self.clone(),
            answer,
            ready: None,
            timeout,
            keep_running: false,
            deltas: None,
        }))
    }

    /// This agent's requests, oldest first (finished ones are kept up to a bound).
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.services.requests.of_agent(&self.name)
    }

    /// Forgets conversation thread `thread_id` (the default thread for `None`): its actor is
    /// stopped and its stored history deleted; the next signal for it starts it afresh.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot delete it.
    pub async fn reset_thread(&self, thread_id: Option<&str>) -> Result<(), RuntimeError> {
        let thread_id = thread_id.unwrap_or(DEFAULT_THREAD).to_owned();
        let running = self
            .services
            .agents
            .get(&self.name)
            .and_then(|family| family.remove_thread(&thread_id));
        if let Some(actor) = running {
            let _ = actor
                .stop_and_wait(
                    Some("thread reset".to_owned()),
                    Some(Duration::from_secs(5)),
                )
                .await;
        }
        self.services
            .store
            .delete(&super::server::store_id(&self.name, &thread_id))
            .await
            .map(|_| ())
            .map_err(|e| RuntimeError::Store {
                message: e.to_string(),
            })
    }

    /// A copy of the conversation thread `thread_id` (the default thread for `None`), from its
    /// running actor, or from the store when it is not running; `None` when it never existed.
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when the agent has stopped; store failures as
    /// [`RuntimeError::Store`].
    pub async fn get_thread(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Option<motet_agents::Thread>, RuntimeError> {
        let family = self
            .services
            .agents
            .get(&self.name)
            .map(|f| f.value().clone())
            .ok_or_else(|| RuntimeError::NotRunning {
                name: self.name.clone(),
            })?;
        let thread_id = thread_id.unwrap_or(DEFAULT_THREAD).to_owned();
        if let Some(actor) = family.thread(&thread_id) {
            let (tx, rx) = oneshot::channel();
            if actor.cast(AgentMsg::GetThread(tx)).is_ok()
                && let Ok(thread) = rx.await
            {
                return Ok(thread);
            }
        }
        self.services
            .store
            .load(&super::server::store_id(&self.name, &thread_id))
            .await
            .map_err(|e| RuntimeError::Store {
                message: e.to_string(),
            })
    }

    /// Sends a signal to the thread it names (or the default thread) without waiting.
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when the agent has stopped.
    pub async fn send(&self, signal: Signal) -> Result<(), RuntimeError> {
        let (actor, _) = self
            .services
            .thread_actor(&self.name, signal.thread_id().map(str::to_owned))
            .await?;
        actor
            .cast(AgentMsg::Signal(traced(signal)))
            .map_err(|_| RuntimeError::NotRunning {
                name: self.name.clone(),
            })
    }
}

/// `signal` carrying the caller's current span as its trace context (unless it already names
/// one), so the agent's work continues the caller's trace.
fn traced(signal: Signal) -> Signal {
    if signal.trace().traceparent.is_some() {
        return signal;
    }
    let context = crate::telemetry::context_of(&tracing::Span::current());
    match context.traceparent {
        Some(_) => signal.with_trace(context),
        None => signal,
    }
}
