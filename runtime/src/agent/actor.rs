//! The actor that hosts one thread of an agent: requests admitted through the book, each signal
//! stepped through the strategy, what the step changed committed before its directives run
//! (persist.rs), the directives carried out (execute.rs; llm.rs runs the LLM calls), and every
//! ending of a request torn down in one place (finish.rs).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use motet_agents::{Env, Strategy, protocol};
use motet_signals::Signal;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::book::{self, Admission, RequestBook, RequestPolicy};
use super::env::SystemEnv;
use super::errors::AskError;
use super::registry::{Parent, RunningAgent, RuntimeCore};
use super::trace;
use crate::supervisor::Intensity;
use crate::telemetry::instruments;
use crate::tool::ToolSet;

mod deliveries;
mod execute;
pub(crate) mod few;

use execute::deliver;
mod finish;
mod llm;
mod persist;
mod waits;

pub(crate) use persist::{open_request, stored_waiting};

/// What an agent's mailbox receives.
#[derive(Debug)]
pub enum ThreadMsg {
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
    /// The asker of `request` waited `after` for its reply and stopped waiting: the thread
    /// decides what that means, in its order of events. A request still open (running or
    /// queued) is cancelled and its asker gets [`AskError::Timeout`]; one that ended already
    /// was answered, and nothing changes (no cancel reaches the strategy to be noted).
    Expire {
        /// The request waited for.
        request: String,
        /// How long its asker waited.
        after: std::time::Duration,
    },
    /// Stop if nothing happened for the idle timeout and no request is open.
    IdleCheck,
    /// A copy of the thread this actor keeps (if its strategy keeps one).
    GetThread(oneshot::Sender<Option<motet_agents::Thread>>),
    /// A signal from a durable bus consumer, which is told on `committed` once the step that
    /// handled it committed (or why it was not), so the bus acknowledges it only then. One
    /// already committed (same `source` and `id`) is answered at once and not handled again.
    Delivered {
        /// The signal for the strategy.
        signal: Signal,
        /// Where the outcome goes: `Ok` once committed, else why not.
        committed: oneshot::Sender<Result<(), String>>,
    },
}

/// The actor hosting one conversation thread of an agent: the strategy, its state for that
/// thread, and the execution of its directives.
pub struct ThreadActor<S: Strategy> {
    pub(super) agent: Arc<LiveAgent<S>>,
    pub(super) thread_id: Arc<str>,
    /// The thread's id in the store (and in the strategy's Thread): `<agent>/<thread>`, so two
    /// agents' threads of the same name never share a history. Made once: every commit uses it.
    pub(super) store_id: Box<str>,
    pub(super) core: Arc<RuntimeCore>,
}

/// What an agent holds on the bus; it ends when the agent is removed.
#[derive(Default)]
pub(crate) struct Attached {
    /// Bus subscriptions; they end when dropped.
    pub(crate) subscriptions: Vec<motet_signals::Subscription>,
    /// The tasks of the agent's durable bus consumers; aborted when the agent is removed.
    pub(crate) consumers: Vec<tokio::task::AbortHandle>,
}

/// What every thread of one agent shares.
pub(crate) struct LiveAgent<S> {
    pub(crate) name: Arc<str>,
    pub(crate) strategy: S,
    pub(crate) tools: Option<Arc<ToolSet>>,
    pub(crate) policy: RequestPolicy,
    /// Stop a thread's actor after this long without messages (it comes back from the store).
    pub(crate) idle_timeout: Option<std::time::Duration>,
    /// The agent thread that spawned this one, for `Emit` to the parent.
    pub(crate) parent: Option<Box<Parent>>,
    /// Held while one of the agent's threads starts, so racing asks start it once.
    pub(crate) spawning: tokio::sync::Mutex<()>,
    /// How often the agent's threads may fail before the agent is stopped.
    pub(crate) intensity: Intensity,
    /// The agent's bus subscriptions and durable consumers, which most agents have none of
    /// (one word for them).
    pub(crate) attached: std::sync::Mutex<Option<Box<Attached>>>,
    /// The agent's running threads by thread id: the registry's second level. Almost always
    /// one (the default thread) or none, held in place rather than in a map's table.
    pub(crate) threads: std::sync::Mutex<few::Few<ActorRef<ThreadMsg>>>,
    /// The agent's tenant and priority, which most agents leave at their defaults (boxed: one
    /// word for them).
    pub(crate) labels: Option<Box<Labels>>,
}

/// An agent's tenant and priority, for its LLM calls' [`CallScope`](motet_providers::CallScope).
pub(crate) struct Labels {
    pub(crate) tenant: Option<Arc<str>>,
    pub(crate) priority: motet_providers::Priority,
}

impl<S> LiveAgent<S> {
    /// The running threads, locked. Nothing panics while holding the lock (map operations
    /// only), so a poisoned lock still holds a consistent map.
    pub(crate) fn running_threads(
        &self,
    ) -> std::sync::MutexGuard<'_, few::Few<ActorRef<ThreadMsg>>> {
        self.threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The actor's state: the strategy's state plus what the runtime tracks for it.
pub struct ThreadState<S: Strategy> {
    /// Whether the thread has joined the runtime's supervisor (on its first message).
    supervised: bool,
    strategy: S::State,
    env: SystemEnv,
    /// Whether the thread exists in the store yet.
    stored: bool,
    /// Entries of the strategy's thread already in the store.
    stored_rev: u64,
    /// The fencing epoch this actor claimed the thread at (0: created it, or never stored);
    /// every commit is fenced with it.
    epoch: u64,
    /// The state snapshot last stored (or the fresh state's, before the first write).
    saved: Option<persist::Fingerprint>,
    /// When the thread last handled a message (for the idle timeout).
    last_active: std::time::Instant,
    /// Set when the idle timeout closed the mailbox: what is still in it is held for the
    /// successor (`held`), never run here.
    retiring: bool,
    /// Set when a commit failed: the strategy's state holds what the store does not, and is
    /// taken back as stored (`catch_up`) before the thread handles anything else.
    diverged: bool,
    /// The open requests and what each holds (asker, span, LLM calls), boxed together and
    /// made with the first: a thread between requests holds one word.
    open: Option<Box<Open>>,
    /// Timers, children, a person's waits and messages held for a successor: what few
    /// threads hold, boxed together (one word for the many that hold none of it).
    occasional: Option<Box<Occasional>>,
    /// Signals from durable bus consumers (none for most threads: boxed, one word).
    deliveries: Option<Box<deliveries::Deliveries>>,
}

/// What a thread holds while it has open requests.
#[derive(Default)]
struct Open {
    /// The request the strategy is working on, and those waiting for it to finish.
    book: RequestBook<Signal>,
    /// Asks waiting for their reply, by request id.
    pending: few::Few<oneshot::Sender<Result<Signal, AskError>>>,
    /// LLM calls in flight, by request id: aborted (closing their connections) when the
    /// request ends, so a cancelled request stops streaming.
    calls: HashMap<String, Vec<AbortHandle>>,
    /// The open `invoke_agent` span of each request this thread has admitted, by request id.
    spans: few::Few<RequestTrace>,
    /// Results of work that finished as it started (execute.rs, `Run::Inline`), handled
    /// before the actor reads its mailbox again: empty between messages.
    ready: VecDeque<Signal>,
}

impl Open {
    /// No request is open and nothing is held for one.
    fn is_empty(&self) -> bool {
        self.is_quiet() && self.calls.is_empty() && self.spans.is_empty() && self.ready.is_empty()
    }

    /// No request is open and no LLM call still runs.
    fn is_quiet(&self) -> bool {
        self.book.is_quiet()
            && self.pending.is_empty()
            && self
                .calls
                .values()
                .all(|c| c.iter().all(AbortHandle::is_finished))
    }
}

/// What a thread holds only for some directives (`Schedule`, `Spawn`), while a person is
/// waited for, or while it retires.
#[derive(Default)]
struct Occasional {
    /// Scheduled signals not yet delivered, by schedule id.
    schedules: HashMap<String, AbortHandle>,
    /// Children started with `Spawn`, by tag.
    children: HashMap<String, String>,
    /// Messages that reached the mailbox before it closed, handed to the successor in order
    /// when this actor stops (`RuntimeCore::succeed`).
    held: Vec<ThreadMsg>,
    /// The tool calls waiting for a person, as last seen after a step.
    waits: Vec<waits::OpenWait>,
    /// The request the stored thread was left in the middle of by a process that stopped,
    /// until it is carried on ([`book::arrival`]).
    interrupted: Option<String>,
}

impl Occasional {
    fn is_empty(&self) -> bool {
        self.schedules.is_empty()
            && self.children.is_empty()
            && self.held.is_empty()
            && self.waits.is_empty()
            && self.interrupted.is_none()
    }
}

impl<S: Strategy> ThreadState<S> {
    /// The open requests, made when the first arrives.
    fn open(&mut self) -> &mut Open {
        self.open.get_or_insert_default()
    }

    /// The open `invoke_agent` span of request `id`.
    fn span(&self, id: &str) -> Option<&RequestTrace> {
        self.open.as_ref().and_then(|o| o.spans.get(id))
    }

    /// The occasional part, made when first needed.
    fn occasional(&mut self) -> &mut Occasional {
        self.occasional.get_or_insert_default()
    }

    /// Whether a timer is pending.
    fn has_schedules(&self) -> bool {
        self.occasional
            .as_ref()
            .is_some_and(|o| !o.schedules.is_empty())
    }

    /// The tool calls waiting for a person.
    fn waits(&self) -> &[waits::OpenWait] {
        self.occasional.as_ref().map_or(&[], |o| &o.waits)
    }
}

/// A request's span and how many LLM calls it has made.
struct RequestTrace {
    span: tracing::Span,
    llm_calls: u32,
}

impl<S> Actor for ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    type Msg = ThreadMsg;
    type State = ThreadState<S>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<ThreadMsg>,
        _args: (),
    ) -> Result<ThreadState<S>, ActorProcessingErr> {
        let env = SystemEnv;
        // A thread that was never stored starts fresh and is written to the store with its
        // first change, so agents that are spawned and never asked cost the store nothing.
        // Boxed, as `handle`'s work is: an idle actor's task holds only what it needs.
        let loaded = Box::pin(self.starting_state()).await?;
        if let Some(idle) = self.agent.idle_timeout {
            self.core.watch_idle(idle);
        }
        Ok(ThreadState {
            supervised: false,
            strategy: loaded.strategy,
            stored_rev: loaded.rev,
            epoch: loaded.epoch,
            stored: loaded.stored,
            saved: loaded.saved,
            last_active: std::time::Instant::now(),
            retiring: false,
            diverged: false,
            env,
            open: None,
            occasional: loaded.interrupted.map(|request| {
                Box::new(Occasional {
                    interrupted: Some(request),
                    ..Occasional::default()
                })
            }),
            deliveries: deliveries::Deliveries::remembering(loaded.applied),
        })
    }

    async fn post_stop(
        &self,
        myself: ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
    ) -> Result<(), ActorProcessingErr> {
        let held = match state.occasional.take() {
            Some(mut occasional) => {
                for (_, schedule) in occasional.schedules.drain() {
                    schedule.abort();
                }
                std::mem::take(&mut occasional.held)
            }
            None => Vec::new(),
        };
        if let Some(mut open) = state.open.take() {
            for (_, calls) in open.calls.drain() {
                calls.iter().for_each(AbortHandle::abort);
            }
            for (_, trace) in open.spans.drain() {
                trace::failed(&trace.span, "agent_stopped", "the agent thread stopped");
            }
            for (_, reply) in open.pending.drain() {
                let _ = reply.send(Err(AskError::AgentStopped {
                    agent: self.agent.name.to_string(),
                }));
            }
        }
        self.core.thread_keys.remove(&myself.get_id());
        if held.is_empty() {
            self.agent.forget_thread(&self.thread_id, myself.get_id());
        } else {
            self.core
                .succeed(&self.agent.name, &self.thread_id, myself.get_id(), held)
                .await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ThreadMsg>,
        msg: ThreadMsg,
        state: &mut ThreadState<S>,
    ) -> Result<(), ActorProcessingErr> {
        // The work of one message is a large future (a step, its commit, inline work); boxed,
        // it takes memory while it runs, rather than in every actor's task all the time.
        Box::pin(self.receive(myself, msg, state)).await
    }
}

/// How many results of inline work one message may handle before the rest go through the
/// mailbox (a ReAct request with one tool per turn is two per LLM call).
const INLINE_STEPS: usize = 64;

/// The type of the note a fired schedule leaves in the mailbox so its handle is dropped.
const SCHEDULE_FIRED: &str = "motet.schedule.fired";

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// One message: a signal admitted and stepped, an ask recorded, an idle check, a copy of
    /// the thread.
    async fn receive(
        &self,
        myself: ActorRef<ThreadMsg>,
        msg: ThreadMsg,
        state: &mut ThreadState<S>,
    ) -> Result<(), ActorProcessingErr> {
        if state.retiring {
            match msg {
                ThreadMsg::IdleCheck => {}
                ThreadMsg::GetThread(reply) => {
                    let _ = reply.send(self.agent.strategy.thread(&state.strategy).cloned());
                }
                msg => state.occasional().held.push(msg),
            }
            return Ok(());
        }
        if !state.supervised && !matches!(msg, ThreadMsg::IdleCheck) {
            if let Err(error) = self.supervise(&myself).await {
                // Unsupervised, nobody would restart it: leave the registry now, so the next
                // signal for this thread starts a fresh actor.
                self.agent.forget_thread(&self.thread_id, myself.get_id());
                return Err(error);
            }
            state.supervised = true;
        }
        let signal = match msg {
            ThreadMsg::IdleCheck => {
                let idle = self.agent.idle_timeout.unwrap_or(std::time::Duration::MAX);
                let quiet =
                    state.open.as_ref().is_none_or(|o| o.is_quiet()) && !state.has_schedules();
                if quiet && state.last_active.elapsed() >= idle {
                    // Closing the mailbox rather than stopping at once: whatever a sender put
                    // in it before it closed is handed to the thread's next actor, and a sender
                    // that finds it closed waits for that actor (`RuntimeCore::send`).
                    state.retiring = true;
                    if myself.drain().is_err() {
                        myself.stop(Some("idle".to_owned()));
                    }
                }
                return Ok(());
            }
            ThreadMsg::GetThread(reply) => {
                let _ = reply.send(self.agent.strategy.thread(&state.strategy).cloned());
                return Ok(());
            }
            ThreadMsg::Signal(signal) => signal,
            ThreadMsg::Expire { request, after } => match self.expired(state, &request, after) {
                Some(cancel) => cancel,
                None => return Ok(()),
            },
            ThreadMsg::Delivered { signal, committed } => {
                state
                    .deliveries
                    .get_or_insert_default()
                    .open(&signal, committed);
                signal
            }
            ThreadMsg::Ask { signal, reply } => {
                match signal.request_id() {
                    Some(request) => {
                        state.open().pending.insert(request.to_owned(), reply);
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
            if let Ok(id) = signal.data_as::<String>()
                && let Some(occasional) = state.occasional.as_mut()
            {
                occasional.schedules.remove(&id);
            }
            return Ok(());
        }
        state.last_active = std::time::Instant::now();
        self.admit(&myself, state, signal).await;
        let mut inline = 0;
        loop {
            // A request that finished lets the next queued one in.
            while let Some(next) = state.open.as_mut().and_then(|o| o.book.next()) {
                instruments().queue_depth.add(-1, &[]);
                self.admit(&myself, state, next).await;
            }
            let Some(result) = state.open.as_mut().and_then(|o| o.ready.pop_front()) else {
                break;
            };
            inline += 1;
            if inline > INLINE_STEPS {
                // Fair to the mailbox: a chain of work that never waits yields to it now and
                // then, its results queued behind whatever arrived meanwhile.
                deliver(&myself, result);
                if let Some(open) = state.open.as_mut() {
                    open.ready.drain(..).for_each(|r| deliver(&myself, r));
                }
                break;
            }
            self.admit(&myself, state, result).await;
        }
        // Work done inline outside any request (a strategy's directive for a plain signal)
        // made the open requests' box for its result alone: give it back.
        finish::release_room(state);
        Ok(())
    }
    /// Lets a signal through to the strategy, or queues it while another request runs.
    async fn admit(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        signal: Signal,
    ) {
        if book::reports_work(signal.signal_type().as_str())
            && let Some(id) = signal.request_id()
            && self.core.requests.has_ended(id)
        {
            tracing::debug!(agent = %self.agent.name, thread = %self.thread_id, request = %id, signal = %signal.signal_type().as_str(), "a result of work for a request that ended is dropped");
            return;
        }
        if signal.signal_type().as_str() == protocol::AGENT_CANCEL
            && let Some(id) = signal.request_id()
            && let Some(withdrawn) = state.open.as_mut().and_then(|o| o.book.withdraw(id))
        {
            instruments().queue_depth.add(-1, &[]);
            // A delivered request cancelled before it ran was decided: nothing to handle again.
            if let Some(key) = Self::delivery(state, &withdrawn) {
                Self::delivery_settled(state, &key, Ok(()));
            }
            self.cancel_queued(state, &signal);
            return;
        }
        if state.diverged
            && let Err(error) = self.catch_up(state).await
        {
            self.refuse_unread(state, &signal, &error);
            return;
        }
        let is_request = protocol::starts_request(signal.signal_type().as_str());
        let now = state.env.now_ms();
        if is_request
            && let Some(id) = signal.request_id()
            && state.span(id).is_none()
        {
            let span = trace::request_span(&self.agent.name, &self.thread_id, id, &signal);
            state
                .open()
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
        let signal = self.on_arrival(state, signal, &id);
        let delivered = Self::delivery(state, &signal);
        let admission = match state.open().book.admit(&id, signal, self.agent.policy) {
            Admission::Interrupt { running, item } => {
                let cancel = Signal::builder(protocol::AGENT_CANCEL, self.source())
                    .with_id(state.env.fresh_id("sig"))
                    .with_request_id(running)
                    .with_thread_id(&*self.thread_id)
                    .with_data(serde_json::json!({"reason": "interrupted by a newer request"}))
                    .build();
                if let Ok(cancel) = cancel {
                    self.step(myself, state, cancel).await;
                }
                state.open().book.readmit(&id, item)
            }
            admission => admission,
        };
        let record = |queued| {
            self.core
                .requests
                .arrived(&id, &self.agent.name, &self.thread_id, queued, now);
        };
        match admission {
            Admission::Queued => {
                record(true);
                instruments().queue_depth.add(1, &[]);
            }
            // Its asker is among the pending ones: the running request's reply answers it.
            // A delivered copy of a running request has nothing of its own to commit.
            Admission::Joined => {
                if let Some(key) = delivered {
                    Self::delivery_settled(state, &key, Ok(()));
                }
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
    async fn step(&self, myself: &ActorRef<ThreadMsg>, state: &mut ThreadState<S>, signal: Signal) {
        let request_span = signal
            .request_id()
            .and_then(|r| state.span(r))
            .and_then(|t| t.span.id());
        let handling = trace::handle_span(
            &self.agent.name,
            &self.thread_id,
            &signal,
            request_span.clone(),
        );
        let delivered = Self::delivery(state, &signal);
        if let Some(key) = &delivered
            && state.deliveries.as_ref().is_some_and(|d| d.applied(key))
        {
            tracing::debug!(parent: &handling, agent = %self.agent.name, %key, "a delivery committed before came again; acknowledged, not handled twice");
            Self::delivery_settled(state, key, Ok(()));
            return;
        }
        // A new request whose commit finds the thread moved on or taken over (another process
        // wrote or claimed it) is decided again once, on the stored thread at its current epoch:
        // its question was not committed, and nothing of the request has run yet.
        let mut reload = signal.signal_type().as_str() == protocol::AGENT_REQUEST;
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
                    if let Some(key) = &delivered {
                        let why = format!("the strategy rejected it: {error}");
                        Self::delivery_settled(state, key, Err(why));
                    }
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
            // The commit point: what the strategy changed is stored before any directive that
            // depends on it runs, with the request still open after them.
            let open = state
                .open
                .as_ref()
                .and_then(|o| o.book.running())
                .filter(|running| !replies_to(&directives, running))
                .map(str::to_owned);
            let waiting = self.agent.strategy.waiting(&state.strategy);
            match self
                .persist(state, open.as_deref(), &waiting, delivered.as_deref())
                .await
            {
                Ok(()) => {
                    if let Some(key) = &delivered {
                        state.deliveries.get_or_insert_default().commit(key);
                    }
                    if signal.signal_type().as_str() == protocol::AGENT_POLICY {
                        // The agent's policy layer changed: the stored meta records the policy
                        // now in force. The state (and so the policy) is committed already; a
                        // meta that failed to follow is only stale until the next change.
                        if let Err(error) = self.write_meta(state).await {
                            tracing::warn!(agent = %self.agent.name, thread = %self.thread_id, %error, "the thread's meta could not record its context policy");
                        }
                    }
                    self.watch_waits(state, &waiting, &signal);
                    break directives;
                }
                Err(
                    crate::store::StoreError::Conflict { .. }
                    | crate::store::StoreError::AlreadyExists { .. }
                    | crate::store::StoreError::Fenced { .. },
                ) if reload => {
                    reload = false;
                    tracing::info!(parent: &handling, agent = %self.agent.name, thread = %self.thread_id, "the thread changed in the store; deciding again on the stored thread");
                    self.reload(state).await;
                    continue;
                }
                Err(error) => {
                    use crate::store::StoreError;
                    let fenced = matches!(error, StoreError::Fenced { .. });
                    let moved_on = fenced
                        || matches!(
                            error,
                            StoreError::Conflict { .. } | StoreError::AlreadyExists { .. }
                        );
                    tracing::error!(parent: &handling, agent = %self.agent.name, thread = %self.thread_id, %error, fenced, "could not store the thread; the step's directives are not run");
                    trace::failed(&handling, "store_error", &error.to_string());
                    if let Some(key) = &delivered {
                        let why = format!("could not store the thread: {error}");
                        Self::delivery_settled(state, key, Err(why));
                    }
                    if let Some(request) = signal.request_id() {
                        let message = error.to_string();
                        let failure = AskError::Store {
                            message: message.clone(),
                        };
                        self.abandon(state, request, "store_error", &message, failure);
                    }
                    if moved_on {
                        // Another writer moved the thread on or took it over: what this actor
                        // held of it is no longer the thread. It takes the stored thread as
                        // that writer left it, at its epoch, without claiming it back (a
                        // successor that claimed would fence the new owner in turn): a new
                        // question is then decided on it, and refused as busy while the new
                        // owner's request runs. Unread (the store down too), the thread goes
                        // back to what is stored before its next signal, as below.
                        if !self.reload(state).await {
                            state.diverged = true;
                        }
                    } else {
                        // The write failed (the store down, a connection lost): the strategy
                        // still holds what the step changed (a request it thinks runs, entries
                        // the store lacks). The thread goes back to what is stored, now if the
                        // store answers, else before the next signal.
                        state.diverged = true;
                        if let Err(error) = self.catch_up(state).await {
                            tracing::warn!(parent: &handling, agent = %self.agent.name, thread = %self.thread_id, %error, "could not read the thread back after a failed commit; trying again with the next signal");
                        }
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
        let run = execute::Run::for_step(&directives);
        for directive in directives {
            self.execute(myself, state, &signal, directive, parent.clone(), run);
        }
    }

    /// The asker of `request` stopped waiting after `after`: when the request is still open
    /// ([`RequestBook::holds`]), its asker is told [`AskError::Timeout`] and the cancel that
    /// ends it is returned, to be handled as any cancel; when it ended, its reply was sent
    /// before this message was read, and nothing is done.
    fn expired(
        &self,
        state: &mut ThreadState<S>,
        request: &str,
        after: std::time::Duration,
    ) -> Option<Signal> {
        let open = state.open.as_mut().filter(|o| o.book.holds(request))?;
        if let Some(asker) = open.pending.remove(request) {
            let _ = asker.send(Err(AskError::Timeout(after)));
        }
        let why = format!("no answer within {} s", after.as_secs_f64());
        Signal::builder(protocol::AGENT_CANCEL, self.source())
            .with_id(state.env.fresh_id("sig"))
            .with_request_id(request)
            .with_thread_id(&*self.thread_id)
            .with_data(motet_agents::AgentCancel { reason: Some(why) })
            .build()
            .ok()
    }

    /// The key of `signal` when a durable bus consumer waits for its commit.
    fn delivery(state: &ThreadState<S>, signal: &Signal) -> Option<String> {
        let deliveries = state.deliveries.as_ref()?;
        let key = deliveries::key(signal);
        deliveries.is_open(&key).then_some(key)
    }

    /// Tells the consumer waiting for `key` how its delivery ended.
    fn delivery_settled(state: &mut ThreadState<S>, key: &str, outcome: Result<(), String>) {
        if let Some(deliveries) = state.deliveries.as_mut() {
            deliveries.answer(key, outcome);
        }
    }

    /// Puts this thread under the runtime's supervisor, which restarts it when it fails.
    ///
    /// Done with the first message the thread handles rather than at spawn: until then it has
    /// run nothing that can fail (its `pre_start` failing fails the spawn itself), and an agent
    /// spawned and never asked costs no supervision link. Linking a running actor also spares
    /// the supervisor an `ActorStarted` event per thread.
    async fn supervise(&self, myself: &ActorRef<ThreadMsg>) -> Result<(), ActorProcessingErr> {
        let supervisor = super::supervise::supervisor(&self.core)
            .await
            .map_err(ActorProcessingErr::from)?;
        self.core.thread_keys.insert(
            myself.get_id(),
            (self.agent.name.clone(), self.thread_id.clone()),
        );
        myself.get_cell().link(supervisor.get_cell());
        Ok(())
    }

    /// Remembers a call made for the request `cause` belongs to, dropping finished ones.
    fn track(&self, state: &mut ThreadState<S>, cause: &Signal, call: AbortHandle) {
        if let Some(request) = cause.request_id() {
            let calls = state.open().calls.entry(request.to_owned()).or_default();
            calls.retain(|c| !c.is_finished());
            calls.push(call);
        }
    }

    /// `signal` (request `id`) as [`book::arrival`] decides it: the request the stored thread
    /// was left in the middle of, sent again, becomes a resume of it.
    fn on_arrival(&self, state: &mut ThreadState<S>, signal: Signal, id: &str) -> Signal {
        let interrupted = state
            .occasional
            .as_ref()
            .and_then(|o| o.interrupted.as_deref());
        let arrival = book::arrival(signal.signal_type().as_str(), id, interrupted);
        if arrival != book::Arrival::AsSent
            && let Some(occasional) = state.occasional.as_mut()
        {
            occasional.interrupted = None;
        }
        if arrival != book::Arrival::CarryOn {
            return signal;
        }
        let resume = Signal::builder(protocol::AGENT_RESUME, self.source())
            .with_id(signal.id().clone())
            .with_request_id(id)
            .with_thread_id(&*self.thread_id)
            .with_trace(signal.trace().clone())
            .with_data(protocol::AgentResume {
                idempotent_tools: self.agent.idempotent_tools(),
            })
            .build();
        match resume {
            Ok(resume) => {
                tracing::info!(agent = %self.agent.name, thread = %self.thread_id, request = %id, "a request sent again after its process stopped is carried on, not asked again");
                resume
            }
            Err(_) => signal,
        }
    }

    /// Who this thread's LLM calls for `cause` are made for.
    fn scope(&self, cause: &Signal, kind: motet_providers::CallKind) -> motet_providers::CallScope {
        let labels = self.agent.labels.as_deref();
        motet_providers::CallScope {
            agent: self.agent.name.clone(),
            thread: self.thread_id.clone(),
            request: cause.request_id().map(Arc::from),
            tenant: labels.and_then(|l| l.tenant.clone()),
            priority: labels.map(|l| l.priority).unwrap_or_default(),
            kind,
        }
    }

    fn source(&self) -> String {
        format!("motet.agent.{}", self.agent.name)
    }
}

/// Whether `directives` end the request `request`.
fn replies_to(directives: &[motet_directives::Directive], request: &str) -> bool {
    directives.iter().any(|d| {
        matches!(d, motet_directives::Directive::Reply(reply) if reply.signal.request_id() == Some(request))
    })
}

/// The store id of `thread` of `agent`.
pub(crate) fn store_id(agent: &str, thread: &str) -> String {
    format!("{agent}/{thread}")
}

#[cfg(test)]
mod tests {
    use super::{ThreadActor, ThreadState};
    use motet_agents::ReAct;

    /// A thread actor's state and handler live in its tokio task for as long as the actor
    /// runs, and tokio rounds a task to 128 bytes: with ractor 0.16's task around them, state
    /// and handler of at most 368 bytes make a task of 1,024 bytes, a few more one of 1,152
    /// (docs/PERFORMANCE.md, "Lean agents"). A field added to either lands here first.
    #[test]
    fn a_react_thread_fits_its_task_in_1024_bytes() {
        let held = size_of::<ThreadState<ReAct>>() + size_of::<ThreadActor<ReAct>>();
        assert!(
            held <= 368,
            "a ReAct thread actor holds {held} bytes in its task"
        );
    }
}
