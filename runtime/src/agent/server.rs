//! The actor that hosts one agent, and the execution of the directives its strategy returns.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;

use motet_agents::{Env, Strategy};
use motet_directives::results::{
    LLM_FAILED, LLM_RESULT, LlmError, LlmErrorKind, LlmFailed, LlmResult, SUMMARY_FAILED,
    SUMMARY_RESULT, SummaryFailed, SummaryResult, TOOL_RESULT, ToolResultSignal,
};
use motet_directives::{
    CallId, Directive, EmitTarget, LlmRequest, Message, ModelRef, ReplyStatus, ToolCallView,
    ToolResult,
};
use motet_providers::{BlockAssembler, LlmEvent, ProviderError};
use motet_signals::Signal;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::book::{Admission, RequestBook};
use super::env::SystemEnv;
use super::handle::Family;
use super::handle::{AskError, Parent, RuntimeError, Services};
use super::requests::RequestStatus;
use super::trace;
use crate::store::{ThreadHeader, ThreadMeta};
use crate::supervisor::Intensity;
use crate::telemetry::{context_of, instruments};
use crate::tool::output::panic_message;
use crate::tool::{ToolContext, ToolSet};
use tracing::Instrument as _;

/// What an agent's mailbox receives.
#[derive(Debug)]
pub enum AgentMsg {
    /// A signal for the strategy.
    Signal(Signal),
    /// A signal for the strategy whose reply (a signal of one of the reply types carrying the
    /// same request id) is sent back on `reply`.
    Ask {
        /// The request signal; it must carry a request id.
        signal: Signal,
        /// Where the reply goes.
        reply: oneshot::Sender<Result<Signal, AskError>>,
    },
    /// Stop if nothing happened for the idle timeout and no request is open.
    IdleCheck,
    /// A copy of the thread this actor keeps (if its strategy keeps one).
    GetThread(oneshot::Sender<Option<motet_agents::Thread>>),
}

/// The actor hosting one conversation thread of an agent: the strategy, its state for that
/// thread, and the execution of its directives.
pub struct AgentServer<S: Strategy> {
    pub(super) agent: Arc<AgentConfig<S>>,
    pub(super) thread_id: String,
    pub(super) services: Arc<Services>,
}

/// What every thread of one agent shares.
pub(crate) struct AgentConfig<S> {
    pub(crate) name: String,
    pub(crate) strategy: S,
    pub(crate) tools: Option<Arc<ToolSet>>,
    /// The signal type that starts a request (`react.input`).
    pub(crate) request_type: &'static str,
    /// The signal type that cancels the running request (`react.cancel`).
    pub(crate) cancel_type: &'static str,
    /// The signal type that asks for a summary of a range (`react.summarize`); it queues
    /// like a request, so a summary never lands in the middle of one.
    pub(crate) summarize_type: &'static str,
    pub(crate) policy: RequestPolicy,
    /// Stop a thread's actor after this long without messages (it comes back from the store).
    pub(crate) idle_timeout: Option<std::time::Duration>,
    /// The agent thread that spawned this one, for `Emit` to the parent.
    pub(crate) parent: Option<Parent>,
    /// Held while one of the agent's threads starts, so racing asks start it once.
    pub(crate) spawning: tokio::sync::Mutex<()>,
    /// How often the agent's threads may fail before the agent is stopped.
    pub(crate) intensity: Intensity,
    /// Bus subscriptions; they end when the agent is removed.
    pub(crate) subscriptions: std::sync::Mutex<Vec<motet_signals::Subscription>>,
    /// The agent's running threads by thread id: the registry's second level.
    pub(crate) threads:
        std::sync::Mutex<HashMap<String, ActorRef<AgentMsg>, foldhash::fast::RandomState>>,
}

impl<S> AgentConfig<S> {
    /// The running threads, locked. Nothing panics while holding the lock (map operations
    /// only), so a poisoned lock still holds a consistent map.
    pub(crate) fn running_threads(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, ActorRef<AgentMsg>, foldhash::fast::RandomState>>
    {
        self.threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The actor's state: the strategy's state plus what the runtime tracks for it.
pub struct ServerState<S: Strategy> {
    /// Whether the thread has joined the runtime's supervisor (on its first message).
    supervised: bool,
    strategy: S::State,
    env: SystemEnv,
    /// The request the strategy is working on, and those waiting for it to finish.
    book: RequestBook<Signal>,
    /// Asks waiting for their reply, by request id.
    pending: HashMap<String, oneshot::Sender<Result<Signal, AskError>>>,
    /// Scheduled signals not yet delivered, by schedule id.
    schedules: HashMap<String, AbortHandle>,
    /// LLM calls in flight, by request id: aborted (closing their connections) when the
    /// request ends, so a cancelled request stops streaming.
    calls: HashMap<String, Vec<AbortHandle>>,
    /// The model of the last LLM call: summaries use it when their directive names none.
    last_model: Option<ModelRef>,
    /// Children started with `Spawn`, by tag.
    children: HashMap<String, String>,
    /// Whether the thread exists in the store yet.
    stored: bool,
    /// Entries of the strategy's thread already in the store.
    stored_rev: u64,
    /// When the thread last handled a message (for the idle timeout).
    last_active: std::time::Instant,
    /// The open `invoke_agent` span of each request this thread has admitted, by request id.
    spans: HashMap<String, RequestTrace>,
}

/// A request's span and how many LLM calls it has made.
struct RequestTrace {
    span: tracing::Span,
    llm_calls: u32,
}

impl<S> Actor for AgentServer<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    type Msg = AgentMsg;
    type State = ServerState<S>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<AgentMsg>,
        _args: (),
    ) -> Result<ServerState<S>, ActorProcessingErr> {
        let env = SystemEnv;
        let store = &self.services.store;
        // A thread that was never stored starts fresh and is written to the store with its
        // first entries, so agents that are spawned and never asked cost the store nothing.
        let store_id = self.store_id();
        let (strategy, stored_rev, stored) = match store.load(&store_id).await? {
            Some(thread) => {
                let rev = thread.entry_count() as u64;
                (self.agent.strategy.restore(&env, thread), rev, true)
            }
            None => (
                self.agent.strategy.init_for_thread(&env, &store_id),
                0,
                false,
            ),
        };
        if let Some(idle) = self.agent.idle_timeout {
            self.services.watch_idle(idle);
        }
        Ok(ServerState {
            supervised: false,
            strategy,
            stored_rev,
            stored,
            children: HashMap::new(),
            last_active: std::time::Instant::now(),
            env,
            book: RequestBook::default(),
            calls: HashMap::new(),
            last_model: None,
            pending: HashMap::new(),
            schedules: HashMap::new(),
            spans: HashMap::new(),
        })
    }

    async fn post_stop(
        &self,
        myself: ActorRef<AgentMsg>,
        state: &mut ServerState<S>,
    ) -> Result<(), ActorProcessingErr> {
        for (_, schedule) in state.schedules.drain() {
            schedule.abort();
        }
        for (_, calls) in state.calls.drain() {
            calls.iter().for_each(AbortHandle::abort);
        }
        for (_, open) in state.spans.drain() {
            trace::failed(&open.span, "agent_stopped", "the agent thread stopped");
        }
        for (_, reply) in state.pending.drain() {
            let _ = reply.send(Err(AskError::AgentStopped {
                agent: self.agent.name.clone(),
            }));
        }
        self.services.thread_keys.remove(&myself.get_id());
        self.agent.forget_thread(&self.thread_id, myself.get_id());
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<AgentMsg>,
        msg: AgentMsg,
        state: &mut ServerState<S>,
    ) -> Result<(), ActorProcessingErr> {
        if !state.supervised && !matches!(msg, AgentMsg::IdleCheck) {
            if let Err(error) = self.supervise(&myself).await {
                // Unsupervised, nobody would restart it: leave the registry now, so the next
                // signal for this thread starts a fresh actor.
                self.agent.forget_thread(&self.thread_id, myself.get_id());
                return Err(error);
            }
            state.supervised = true;
        }
        let signal = match msg {
            AgentMsg::IdleCheck => {
                let idle = self.agent.idle_timeout.unwrap_or(std::time::Duration::MAX);
                let quiet = state.book.is_quiet()
                    && state.pending.is_empty()
                    && state
                        .calls
                        .values()
                        .all(|c| c.iter().all(AbortHandle::is_finished))
                    && state.schedules.is_empty();
                if quiet && state.last_active.elapsed() >= idle {
                    myself.stop(Some("idle".to_owned()));
                }
                return Ok(());
            }
            AgentMsg::GetThread(reply) => {
                let _ = reply.send(self.agent.strategy.thread(&state.strategy).cloned());
                return Ok(());
            }
            AgentMsg::Signal(signal) => signal,
            AgentMsg::Ask { signal, reply } => {
                match signal.request_id() {
                    Some(request) => {
                        state.pending.insert(request.to_owned(), reply);
                    }
                    None => {
                        let _ = reply.send(Err(AskError::NoRequestId));
                        return Ok(());
                    }
                }
                signal
            }
        };
        if signal.signal_type().as_str() == SCHEDULE_FIRED {
            // Internal bookkeeping only: never seen by the strategy.
            if let Ok(id) = signal.data_as::<String>() {
                state.schedules.remove(&id);
            }
            return Ok(());
        }
        state.last_active = std::time::Instant::now();
        self.admit(&myself, state, signal).await;
        // A request that finished lets the next queued one in.
        while let Some(next) = state.book.next() {
            instruments().queue_depth.add(-1, &[]);
            self.admit(&myself, state, next).await;
        }
        Ok(())
    }
}

/// What happens to a request that arrives while another runs on the same thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestPolicy {
    /// Wait for the running one to finish, then run (requests on a thread run in order).
    #[default]
    Queue,
    /// Hand it to the strategy at once (ReAct answers `react.failed` with reason `busy`).
    Reject,
    /// Cancel the running one, then run this one.
    Interrupt,
}

/// The type of the note a fired schedule leaves in the mailbox so its handle is dropped.
const SCHEDULE_FIRED: &str = "motet.schedule.fired";

impl<S> AgentServer<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// Lets a signal through to the strategy, or queues it while another request runs.
    async fn admit(&self, myself: &ActorRef<AgentMsg>, state: &mut ServerState<S>, signal: Signal) {
        let kind = signal.signal_type().as_str();
        let is_request = kind == self.agent.request_type || kind == self.agent.summarize_type;
        let now = state.env.now_ms();
        if is_request
            && let Some(id) = signal.request_id()
            && !state.spans.contains_key(id)
        {
            let span = trace::request_span(&self.agent.name, &self.thread_id, id, &signal);
            state
                .spans
                .insert(id.to_owned(), RequestTrace { span, llm_calls: 0 });
        }
        let Some(id) = signal
            .request_id()
            .filter(|_| is_request)
            .map(str::to_owned)
        else {
            self.step(myself, state, signal).await;
            return;
        };
        let admission = match state.book.admit(&id, signal, self.agent.policy) {
            Admission::Interrupt { running, item } => {
                let cancel = Signal::builder(self.agent.cancel_type, self.source())
                    .with_id(state.env.fresh_id("sig"))
                    .with_request_id(running)
                    .with_thread_id(&self.thread_id)
                    .with_data(serde_json::json!({"reason": "interrupted by a newer request"}))
                    .build();
                if let Ok(cancel) = cancel {
                    self.step(myself, state, cancel).await;
                }
                state.book.readmit(&id, item)
            }
            admission => admission,
        };
        let record = |queued| {
            self.services
                .requests
                .arrived(&id, &self.agent.name, &self.thread_id, queued, now);
        };
        match admission {
            Admission::Queued => {
                record(true);
                instruments().queue_depth.add(1, &[]);
            }
            // `readmit` never interrupts; were it to, the request still runs rather than vanish.
            Admission::Run(signal)
            | Admission::Pass(signal)
            | Admission::Interrupt { item: signal, .. } => {
                record(false);
                self.step(myself, state, signal).await;
            }
        }
    }

    /// One signal through the strategy, and its directives executed.
    async fn step(&self, myself: &ActorRef<AgentMsg>, state: &mut ServerState<S>, signal: Signal) {
        let request_span = signal
            .request_id()
            .and_then(|r| state.spans.get(r))
            .and_then(|t| t.span.id());
        let handling = trace::handle_span(
            &self.agent.name,
            &self.thread_id,
            &signal,
            request_span.clone(),
        );
        // A new request whose commit finds the thread moved on (another process wrote it) is
        // decided again once, on the stored thread: its question was not committed, and
        // nothing of the request has run yet.
        let mut reload = signal.signal_type().as_str() == self.agent.request_type;
        let directives = loop {
            let directives = match self.agent.strategy.handle(
                &mut state.strategy,
                &signal,
                &state.env,
            ) {
                Ok(directives) => directives,
                Err(error) => {
                    tracing::warn!(parent: &handling, agent = %self.agent.name, signal = %signal.signal_type().as_str(), %error, "the strategy rejected a signal");
                    trace::failed(&handling, "strategy_error", &error.to_string());
                    if let Some(request) = signal.request_id() {
                        let message = error.to_string();
                        let failure = AskError::Strategy {
                            message: message.clone(),
                        };
                        self.abandon(state, request, "strategy_error", &message, failure);
                    }
                    return;
                }
            };
            // The commit point: what the strategy appended is stored before any directive that
            // depends on it runs.
            match self.persist(state).await {
                Ok(()) => break directives,
                Err(
                    crate::store::StoreError::Conflict { .. }
                    | crate::store::StoreError::AlreadyExists { .. },
                ) if reload => {
                    reload = false;
                    tracing::info!(parent: &handling, agent = %self.agent.name, thread = %self.thread_id, "the thread changed in the store; deciding again on the stored thread");
                    self.reload(state).await;
                    continue;
                }
                Err(error) => {
                    tracing::error!(parent: &handling, agent = %self.agent.name, thread = %self.thread_id, %error, "could not store the thread; the step's directives are not run");
                    trace::failed(&handling, "store_error", &error.to_string());
                    if let Some(request) = signal.request_id() {
                        let message = error.to_string();
                        let failure = AskError::Store {
                            message: message.clone(),
                        };
                        self.abandon(state, request, "store_error", &message, failure);
                    }
                    return;
                }
            }
        };
        if !handling.is_disabled() {
            handling.record("motet.directives", directives.len());
            handling.record("motet.thread.rev", state.stored_rev);
        }
        // Directive spans hang off the request's span (a flat, readable tree), or off this
        // signal's span when it belongs to no request of this thread.
        let parent = request_span.or_else(|| handling.id());
        for directive in directives {
            self.execute(myself, state, &signal, directive, parent.clone());
        }
    }

    /// Ends `request` with the strategy's reply: recorded, its span closed, its calls still
    /// running aborted, the next request let in, and its asker answered.
    fn answer(
        &self,
        state: &mut ServerState<S>,
        request: &str,
        status: ReplyStatus,
        signal: &Signal,
    ) {
        let (recorded, failure) = match status {
            ReplyStatus::Completed => (RequestStatus::Completed, None),
            ReplyStatus::Failed => (RequestStatus::Failed, Some(failure_text(signal))),
        };
        self.services.requests.finished(
            request,
            recorded,
            Some(signal.clone()),
            state.env.now_ms(),
        );
        self.end_request_span(
            state,
            request,
            failure.as_deref().map(|text| ("request_failed", text)),
        );
        state.book.finished(request);
        if let Some(calls) = state.calls.remove(request) {
            calls.iter().for_each(AbortHandle::abort);
        }
        if let Some(asker) = state.pending.remove(request) {
            let answer = match status {
                ReplyStatus::Completed => Ok(signal.clone()),
                ReplyStatus::Failed => Err(AskError::Failed {
                    reply: Box::new(signal.clone()),
                }),
            };
            let _ = asker.send(answer);
        }
    }

    /// Ends `request` on a failure before its directives ran: it is recorded failed, its span
    /// closes with `kind`, it is no longer the running one, and its asker gets `failure`.
    fn abandon(
        &self,
        state: &mut ServerState<S>,
        request: &str,
        kind: &'static str,
        message: &str,
        failure: AskError,
    ) {
        self.services
            .requests
            .finished(request, RequestStatus::Failed, None, state.env.now_ms());
        self.end_request_span(state, request, Some((kind, message)));
        state.book.finished(request);
        if let Some(reply) = state.pending.remove(request) {
            let _ = reply.send(Err(failure));
        }
    }

    /// Replaces the strategy's state with one restored from the stored thread (another writer
    /// moved it on); nothing changes when it cannot be loaded.
    async fn reload(&self, state: &mut ServerState<S>) {
        if let Ok(Some(thread)) = self.services.store.load(&self.store_id()).await {
            state.stored_rev = thread.entry_count() as u64;
            state.stored = true;
            state.strategy = self.agent.strategy.reload(&state.env, thread);
        }
    }

    /// Appends the entries the strategy added since the last commit.
    async fn persist(&self, state: &mut ServerState<S>) -> Result<(), crate::store::StoreError> {
        let Some(thread) = self.agent.strategy.thread(&state.strategy) else {
            return Ok(());
        };
        if thread.entry_count() as u64 <= state.stored_rev {
            return Ok(());
        }
        let store = &self.services.store;
        if state.stored {
            state.stored_rev = store.commit(thread, state.stored_rev).await?;
            return Ok(());
        }
        // The thread's first write: the thread, what the agent needs to come back (who runs
        // it, with which request convention) and its first entries, all at once — a crash
        // never leaves a thread without its entries or its meta.
        let meta = ThreadMeta {
            policy: None,
            strategy_config_id: Some(self.agent.name.clone()),
            extra: [
                ("thread".to_owned(), serde_json::json!(self.thread_id)),
                (
                    "request_type".to_owned(),
                    serde_json::json!(self.agent.request_type),
                ),
            ]
            .into_iter()
            .collect(),
        };
        state.stored_rev = store
            .create_with(&ThreadHeader::of(thread), Some(&meta), thread.to_list())
            .await?;
        state.stored = true;
        Ok(())
    }

    fn execute(
        &self,
        myself: &ActorRef<AgentMsg>,
        state: &mut ServerState<S>,
        cause: &Signal,
        directive: Directive,
        parent: Option<tracing::Id>,
    ) {
        match directive {
            Directive::LlmStream(call) => {
                state.last_model = Some(call.request.model.clone());
                let iteration = match cause.request_id().and_then(|r| state.spans.get_mut(r)) {
                    Some(open) => {
                        open.llm_calls += 1;
                        open.llm_calls
                    }
                    None => 0,
                };
                let span = trace::chat_span(&call.request, parent, iteration);
                let services = self.services.clone();
                let me = myself.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let task = tokio::spawn(async move {
                    let call_id = call.call_id;
                    let streamed = stream_call(
                        &services,
                        call.request,
                        &source,
                        &task_cause,
                        &call_id,
                        span,
                    );
                    // A panic in the call (a provider's bug, a client's) must still answer the
                    // strategy, or the request waits for a result that never comes.
                    let outcome = AssertUnwindSafe(streamed)
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|payload| {
                            let message = panic_message(payload.as_ref());
                            tracing::error!(%message, "LLM call panicked");
                            Err(CallFailure {
                                error: ProviderError::Protocol {
                                    message: format!("the LLM call panicked: {message}"),
                                },
                                retried: false,
                            })
                        });
                    let signal = match outcome {
                        Ok(response) => result_signal(
                            LLM_RESULT,
                            &source,
                            &task_cause,
                            LlmResult { call_id, response },
                        ),
                        Err(error) => result_signal(
                            LLM_FAILED,
                            &source,
                            &task_cause,
                            LlmFailed {
                                call_id,
                                error: llm_error(&error.error, error.retried),
                            },
                        ),
                    };
                    deliver(&me, signal);
                });
                self.track(state, cause, task.abort_handle());
            }
            Directive::ToolExec(exec) => {
                let tools = self.agent.tools.clone();
                let me = myself.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let span =
                    trace::tool_span(&exec.name, &exec.tool_call_id, exec.args.get(), parent);
                let mut ctx = ToolContext::new(exec.tool_call_id.as_str())
                    .with_agent_id(self.agent.name.as_str())
                    .with_thread_id(self.thread_id.as_str());
                if let Some(request) = cause.request_id() {
                    ctx = ctx.with_request_id(request);
                }
                let task = tokio::spawn(async move {
                    let result = match &tools {
                        Some(tools) => {
                            let view = ToolCallView {
                                id: &exec.tool_call_id,
                                name: &exec.name,
                                args: &exec.args,
                            };
                            let result = tools
                                .dispatch_with(view, &ctx)
                                .instrument(span.clone())
                                .await;
                            trace::tool_finished(&span, &result);
                            result
                        }
                        None => ToolResult::error(
                            exec.tool_call_id.clone(),
                            format!(
                                "no tools are available to this agent (asked for `{}`)",
                                exec.name
                            ),
                        ),
                    };
                    let signal = result_signal(
                        TOOL_RESULT,
                        &source,
                        &task_cause,
                        ToolResultSignal {
                            call_id: exec.call_id,
                            result,
                        },
                    );
                    deliver(&me, signal);
                });
                // Cancelling the request aborts the tool too (dropping its future).
                self.track(state, cause, task.abort_handle());
            }
            Directive::Summarize(summarize) => {
                let transcript = self
                    .agent
                    .strategy
                    .thread(&state.strategy)
                    .map(|thread| transcript(thread.slice(summarize.from_seq, summarize.to_seq)))
                    .unwrap_or_default();
                let model = summarize.model.clone().or_else(|| state.last_model.clone());
                let services = self.services.clone();
                let me = myself.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let call_id = summarize.call_id;
                let instructions = summarize
                    .instructions
                    .unwrap_or_else(|| SUMMARY_INSTRUCTIONS.to_owned());
                let span = trace::directive_span("summarize", &self.thread_id, parent);
                let task = tokio::spawn(async move {
                    let outcome = match model {
                        _ if transcript.is_empty() => {
                            Err("there is nothing in that range to summarize".to_owned())
                        }
                        None => {
                            Err("no model to summarize with: set one on the directive".to_owned())
                        }
                        Some(model) => {
                            let request = LlmRequest::new(
                                model,
                                vec![Message::system(instructions), Message::user(transcript)],
                            );
                            let chat = trace::chat_span(&request, span.id(), 0);
                            stream_call(&services, request, &source, &task_cause, &call_id, chat)
                                .await
                                .map(|response| response.message.to_string())
                                .map_err(|failure| failure.error.to_string())
                        }
                    };
                    let signal = match outcome {
                        Ok(content) => result_signal(
                            SUMMARY_RESULT,
                            &source,
                            &task_cause,
                            SummaryResult { call_id, content },
                        ),
                        Err(message) => result_signal(
                            SUMMARY_FAILED,
                            &source,
                            &task_cause,
                            SummaryFailed { call_id, message },
                        ),
                    };
                    deliver(&me, signal);
                });
                self.track(state, cause, task.abort_handle());
            }
            Directive::Emit(emit) => {
                let span =
                    trace::directive_span("emit", emit.signal.signal_type().as_str(), parent);
                let _inside = span.enter();
                // A signal emitted while handling another carries the current span, so whoever
                // handles it continues this trace.
                let mut signal = emit.signal;
                if signal.trace().traceparent.is_none() {
                    let context = context_of(&span);
                    if context.traceparent.is_some() {
                        signal = signal.with_trace(context);
                    }
                }
                match emit.target {
                    EmitTarget::Bus => {
                        self.services.bus.publish(&signal);
                    }
                    EmitTarget::Agent(name) => {
                        let services = self.services.clone();
                        let from = self.agent.name.clone();
                        tokio::spawn(async move {
                            let thread = signal.thread_id().map(str::to_owned);
                            match services.thread_actor(&name, thread).await {
                                Ok((actor, _)) => deliver(&actor, signal),
                                Err(error) => {
                                    tracing::warn!(agent = %from, to = %name, %error, "emit to an agent dropped");
                                }
                            }
                        });
                    }
                    // A child's parent is the agent thread that spawned it; a top-level agent's
                    // parent is whoever asked (the reply above).
                    EmitTarget::Parent => {
                        if let Some(parent) = self.agent.parent.clone() {
                            let services = self.services.clone();
                            tokio::spawn(async move {
                                match services
                                    .thread_actor(&parent.agent, Some(parent.thread))
                                    .await
                                {
                                    Ok((actor, _)) => deliver(&actor, signal),
                                    Err(error) => {
                                        tracing::warn!(parent = %parent.agent, %error, "emit to a parent dropped");
                                    }
                                }
                            });
                        }
                    }
                    EmitTarget::Group(group) => {
                        let services = self.services.clone();
                        tokio::spawn(async move {
                            for member in services.group_members(&group) {
                                match services.thread_actor(&member, None).await {
                                    Ok((actor, _)) => deliver(&actor, signal.clone()),
                                    Err(error) => {
                                        tracing::warn!(%group, %member, %error, "emit to a group member dropped");
                                    }
                                }
                            }
                        });
                    }
                }
            }
            Directive::Reply(reply) => {
                let span =
                    trace::directive_span("reply", reply.signal.signal_type().as_str(), parent);
                let _inside = span.enter();
                let mut signal = reply.signal;
                if signal.trace().traceparent.is_none() {
                    let context = context_of(&span);
                    if context.traceparent.is_some() {
                        signal = signal.with_trace(context);
                    }
                }
                match signal.request_id() {
                    Some(request) => self.answer(state, request, reply.status, &signal),
                    None => {
                        tracing::warn!(agent = %self.agent.name, signal = %signal.signal_type().as_str(), "a reply without a request id answers nobody; it is only published");
                    }
                }
                self.services.bus.publish(&signal);
            }
            Directive::Schedule(schedule) => {
                let me = myself.clone();
                let id = schedule.schedule_id.as_str().to_owned();
                let span = trace::directive_span("schedule", &id, parent);
                let mut schedule = schedule;
                if schedule.signal.trace().traceparent.is_none() {
                    let context = context_of(&span);
                    if context.traceparent.is_some() {
                        schedule.signal = schedule.signal.with_trace(context);
                    }
                }
                let fired = Signal::builder(SCHEDULE_FIRED, self.source())
                    .with_data(&id)
                    .build();
                let task = tokio::spawn(async move {
                    tokio::time::sleep(schedule.delay).await;
                    deliver(&me, schedule.signal);
                    if let Ok(fired) = fired {
                        deliver(&me, fired);
                    }
                });
                if let Some(old) = state.schedules.insert(id, task.abort_handle()) {
                    old.abort();
                }
            }
            Directive::CancelSchedule(cancel) => {
                if let Some(task) = state.schedules.remove(cancel.schedule_id.as_str()) {
                    task.abort();
                }
            }
            Directive::Stop(stop) => {
                let _span = trace::directive_span("stop", &self.agent.name, parent);
                myself.stop(Some(stop.reason));
            }
            Directive::Spawn(spawn) => {
                let name = spawn
                    .spec
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}/{}", self.agent.name, spawn.tag));
                state.children.insert(spawn.tag.clone(), name.clone());
                let span = trace::directive_span("spawn", &name, parent);
                let services = self.services.clone();
                let me = myself.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let parent = Parent {
                    agent: self.agent.name.clone(),
                    thread: self.thread_id.clone(),
                };
                tokio::spawn(
                    async move {
                        let started = match services.kinds.get(&spawn.spec.kind) {
                            Some(start) => {
                                start(
                                    services.clone(),
                                    name.clone(),
                                    &spawn.spec.config,
                                    Some(parent),
                                )
                                .await
                            }
                            None => Err(RuntimeError::SpawnFailed {
                                name: name.clone(),
                                message: format!(
                                    "no agent kind `{}` is registered",
                                    spawn.spec.kind
                                ),
                            }),
                        };
                        let signal = match started {
                            Ok(()) => result_signal(
                                CHILD_STARTED,
                                &source,
                                &task_cause,
                                ChildEvent {
                                    tag: spawn.tag,
                                    name,
                                    message: None,
                                },
                            ),
                            Err(error) => result_signal(
                                CHILD_FAILED,
                                &source,
                                &task_cause,
                                ChildEvent {
                                    tag: spawn.tag,
                                    name,
                                    message: Some(error.to_string()),
                                },
                            ),
                        };
                        deliver(&me, signal);
                    }
                    .instrument(span),
                );
            }
            Directive::StopChild(stop) => match state.children.remove(&stop.tag) {
                Some(name) => self.services.stop_agent(&name, &stop.reason),
                None => {
                    tracing::warn!(agent = %self.agent.name, tag = %stop.tag, "no child with that tag");
                }
            },
        }
    }

    /// Closes a request's `invoke_agent` span (marked failed with `(error type, text)` when
    /// given) and counts the request.
    fn end_request_span(
        &self,
        state: &mut ServerState<S>,
        request: &str,
        failure: Option<(&'static str, &str)>,
    ) {
        let status = if failure.is_some() {
            "failed"
        } else {
            "completed"
        };
        instruments().requests.add(
            1,
            &[opentelemetry::KeyValue::new("motet.request.status", status)],
        );
        let Some(open) = state.spans.remove(request) else {
            return;
        };
        if let Some((error_type, text)) = failure {
            trace::failed(&open.span, error_type, text);
            instruments()
                .errors
                .add(1, &[opentelemetry::KeyValue::new("error.type", error_type)]);
        }
    }

    /// Puts this thread under the runtime's supervisor, which restarts it when it fails.
    ///
    /// Done with the first message the thread handles rather than at spawn: until then it has
    /// run nothing that can fail (its `pre_start` failing fails the spawn itself), and an agent
    /// spawned and never asked costs no supervision link. Linking a running actor also spares
    /// the supervisor an `ActorStarted` event per thread.
    async fn supervise(&self, myself: &ActorRef<AgentMsg>) -> Result<(), ActorProcessingErr> {
        let supervisor = super::supervise::supervisor(&self.services)
            .await
            .map_err(ActorProcessingErr::from)?;
        self.services.thread_keys.insert(
            myself.get_id(),
            (self.agent.name.clone(), self.thread_id.clone()),
        );
        myself.get_cell().link(supervisor.get_cell());
        Ok(())
    }

    /// The thread's id in the store (and in the strategy's Thread): `<agent>/<thread>`, so two
    /// agents' threads of the same name never share a history.
    fn store_id(&self) -> String {
        store_id(&self.agent.name, &self.thread_id)
    }

    /// Remembers a call made for the request `cause` belongs to, dropping finished ones.
    fn track(&self, state: &mut ServerState<S>, cause: &Signal, call: AbortHandle) {
        if let Some(request) = cause.request_id() {
            let calls = state.calls.entry(request.to_owned()).or_default();
            calls.retain(|c| !c.is_finished());
            calls.push(call);
        }
    }

    fn source(&self) -> String {
        format!("motet.agent.{}", self.agent.name)
    }
}

/// The type of the signal that tells a parent its child started.
pub const CHILD_STARTED: &str = "agent.child.started";

/// The type of the signal that tells a parent its child could not start.
pub const CHILD_FAILED: &str = "agent.child.failed";

/// Data of `agent.child.started` and `agent.child.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChildEvent {
    /// The tag the parent gave in its `Spawn`.
    pub tag: String,
    /// The child's agent name (send it signals with `Emit` to this agent).
    pub name: String,
    /// Why it could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Published on the bus when the supervisor restarted a failed thread of an agent: requests
/// that were running on it are lost, and whoever sent them can send them again.
pub const THREAD_RESTARTED: &str = "agent.thread.restarted";

/// Published on the bus when an agent's threads failed past its restart intensity and the
/// agent was stopped.
pub const AGENT_STOPPED: &str = "agent.stopped";

/// Data of `agent.thread.restarted` and `agent.stopped`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ThreadFailure {
    /// The agent.
    pub agent: String,
    /// The thread that failed.
    pub thread: String,
    /// Why it failed (the panic or error message).
    pub error: String,
}

/// The store id of `thread` of `agent`.
pub(crate) fn store_id(agent: &str, thread: &str) -> String {
    format!("{agent}/{thread}")
}

/// What a summary call is told when the directive brings no instructions.
const SUMMARY_INSTRUCTIONS: &str = "Summarize the conversation below for the assistant that will continue it: \
keep the user's goals, decisions, facts learned (with numbers and names), tool results that \
still matter, and open questions. Write plain prose, no preamble.";

/// A range of thread entries as a plain transcript for a summary call.
fn transcript(entries: &[motet_agents::Entry]) -> String {
    use motet_agents::EntryBody;
    let mut out = String::new();
    for entry in entries {
        let line = match &entry.body {
            EntryBody::User { content } => format!("User: {content}"),
            EntryBody::System { content } => format!("System: {content}"),
            EntryBody::Assistant { message, .. } => {
                let mut text = format!("Assistant: {message}");
                for call in message.tool_calls() {
                    text.push_str(&format!(
                        "\n  (called {} with {})",
                        call.name,
                        call.args.get()
                    ));
                }
                text
            }
            EntryBody::ToolResult { name, result } => {
                let status = if result.is_error {
                    "failed"
                } else {
                    "returned"
                };
                format!("Tool {name} {status}: {}", result.content)
            }
            EntryBody::Summary { content, .. } => format!("Earlier summary: {content}"),
            _ => continue,
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The type of the signals that carry streamed text while an LLM call runs (for UIs).
pub const LLM_DELTA: &str = "llm.delta";

/// Data of `llm.delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LlmDelta {
    /// The `LlmStream` directive's call id.
    pub call_id: CallId,
    /// What the fragment is.
    pub kind: DeltaKind,
    /// The fragment (empty for [`DeltaKind::Discard`]).
    pub delta: String,
}

/// What an [`LlmDelta`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaKind {
    /// Answer text.
    Text,
    /// Reasoning the model showed.
    Reasoning,
    /// The call failed after some of its fragments were delivered: everything this call id
    /// wrote is void. The strategy may call the model again (a new call id, streaming from
    /// the start); whoever showed the fragments should mark them as discarded.
    Discard,
}

/// Streams one call inside its `chat` span, recording the response (or error) and the GenAI
/// metrics when it ends.
async fn stream_call(
    services: &Services,
    request: motet_directives::LlmRequest,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
    span: tracing::Span,
) -> Result<motet_directives::LlmResponse, CallFailure> {
    let model = request.model.clone();
    let started = std::time::Instant::now();
    let outcome = stream_events(services, request, source, cause, call_id)
        .instrument(span.clone())
        .await;
    let error;
    let seen = match &outcome {
        Ok(response) => Ok(response),
        Err(failure) => {
            error = failure.error.to_string();
            Err(error.as_str())
        }
    };
    trace::chat_finished(&span, &model, seen, started.elapsed());
    outcome
}

/// A failed LLM call, and whether the client already retried it (before any content).
struct CallFailure {
    error: ProviderError,
    retried: bool,
}

impl From<ProviderError> for CallFailure {
    fn from(error: ProviderError) -> Self {
        Self {
            error,
            retried: false,
        }
    }
}

/// Streams one call: text and reasoning fragments are published on the bus as `llm.delta`
/// while they arrive (only when someone subscribed to that type), and the events are
/// assembled into the response.
async fn stream_events(
    services: &Services,
    request: motet_directives::LlmRequest,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
) -> Result<motet_directives::LlmResponse, CallFailure> {
    let _permit = services.permit(request.model.provider()).await;
    let mut events = services
        .llm
        .stream(request)
        .await
        .map_err(|error| CallFailure {
            error,
            retried: services.llm.retries_before_content(),
        })?;
    let publish = services.wants_deltas();
    let mut shown = false;
    let outcome = assemble(&mut events, |kind, delta| {
        if publish {
            shown = true;
            publish_delta(services, source, cause, call_id, kind, delta);
        }
    })
    .await;
    if outcome.is_err() && shown {
        // What was shown of this call is not an answer: say so before the failure (and any
        // retry, which streams again from the start) reaches the strategy.
        publish_delta(services, source, cause, call_id, DeltaKind::Discard, "");
    }
    Ok(outcome?)
}

/// Assembles a call's events into its response, handing each text and reasoning fragment to
/// `fragment` as it arrives.
async fn assemble(
    events: &mut motet_providers::LlmStream,
    mut fragment: impl FnMut(DeltaKind, &str),
) -> Result<motet_directives::LlmResponse, ProviderError> {
    use futures::StreamExt as _;
    let mut assembler = BlockAssembler::new();
    while let Some(event) = events.next().await {
        let event = event?;
        match &event {
            LlmEvent::TextDelta { delta, .. } => fragment(DeltaKind::Text, delta),
            LlmEvent::ReasoningDelta { delta, .. } => fragment(DeltaKind::Reasoning, delta),
            _ => {}
        }
        assembler.push(event)?;
    }
    Ok(assembler.finish()?)
}

/// Publishes one `llm.delta` on the bus.
fn publish_delta(
    services: &Services,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
    kind: DeltaKind,
    delta: &str,
) {
    let data = LlmDelta {
        call_id: call_id.clone(),
        kind,
        delta: delta.to_owned(),
    };
    if let Ok(signal) = Signal::builder(LLM_DELTA, source)
        .caused_by(cause)
        .with_data(data)
        .build()
    {
        services.bus.publish(&signal);
    }
}

/// What a failure reply says, for its span's status: the `reason` of its data when it has
/// one, else its type.
fn failure_text(reply: &Signal) -> String {
    reply
        .data_as::<serde_json::Value>()
        .ok()
        .and_then(|data| data.get("reason").map(ToString::to_string))
        .unwrap_or_else(|| reply.signal_type().as_str().to_owned())
}

fn deliver(to: &ActorRef<AgentMsg>, signal: Signal) {
    if let Err(error) = to.cast(AgentMsg::Signal(signal)) {
        tracing::debug!(%error, "a result arrived after its agent stopped");
    }
}

/// A result signal, caused by the signal whose directive produced it (same thread, request,
/// correlation and trace).
fn result_signal<T: Serialize>(ty: &str, source: &str, cause: &Signal, data: T) -> Signal {
    let built = Signal::builder(ty, source)
        .caused_by(cause)
        .with_data(data)
        .build();
    match built {
        Ok(signal) => signal,
        // The type is a constant and the source is built from a checked name: this cannot fail,
        // and if it ever did, an empty result of the right type is better than no answer.
        Err(error) => {
            tracing::error!(%error, ty, "could not build a result signal");
            Signal::builder(ty, "motet.runtime")
                .caused_by(cause)
                .build()
                .unwrap_or_else(|_| cause.clone())
        }
    }
}

/// A provider error as the strategy sees it; one the client already retried is not retryable
/// again (one retry budget: the client's before content, the strategy's after).
fn llm_error(error: &ProviderError, retried: bool) -> LlmError {
    let (kind, retryable) = match error {
        ProviderError::RateLimited { .. } => (LlmErrorKind::RateLimited, true),
        ProviderError::Overloaded { .. } => (LlmErrorKind::Overloaded, true),
        ProviderError::InvalidRequest { .. } | ProviderError::UnsupportedModel { .. } => {
            (LlmErrorKind::InvalidRequest, false)
        }
        ProviderError::ContextLengthExceeded { .. } => (LlmErrorKind::ContextLength, false),
        ProviderError::Timeout { .. } => (LlmErrorKind::Timeout, true),
        ProviderError::Server { .. }
        | ProviderError::Connect { .. }
        | ProviderError::StreamTruncated { .. } => (LlmErrorKind::Other, true),
        _ => (LlmErrorKind::Other, false),
    };
    LlmError {
        kind,
        message: error.to_string(),
        retryable: retryable && !retried,
    }
}
