//! The public face: a [`Runtime`] spawns agents from [`AgentSpec`]s and hands out
//! [`AgentHandle`]s to ask them things.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use motet_agents::{
    Env, PolicyOverride, REACT_CANCEL, REACT_INPUT, REACT_RESUME, REACT_SUMMARIZE, ReactCompleted,
    ReactInput, ReactResume, ReactSummarize, Strategy,
};
use motet_providers::LlmClient;
use motet_signals::{Bus, Delivery, Pattern, Signal, Subscription};
use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;

use super::env::SystemEnv;
use super::requests::{RequestRecord, Requests};
use super::server::{AgentConfig, AgentMsg, AgentServer, RequestPolicy};
use crate::store::{MemoryStore, ThreadStore};
use crate::supervisor::Intensity;
use crate::tool::ToolSet;

/// A concurrent map keyed by names and ids that arrive with requests: foldhash, seeded at
/// random per map, costs a fraction of SipHash on these short keys and still keeps an outsider
/// choosing thread ids from predicting collisions.
pub(crate) type Registry<K, V> = DashMap<K, V, foldhash::fast::RandomState>;

/// What every agent of a runtime shares.
pub(crate) struct Services {
    pub(crate) llm: Arc<dyn LlmClient>,
    pub(crate) bus: Arc<Bus>,
    /// The registry, first level: the agents by name. Each agent holds the second: its running
    /// threads by thread id (`Family::thread`), so (agent, thread id) → the owning actor.
    pub(crate) agents: Registry<String, Arc<dyn Family>>,
    /// The registry the other way round for supervised threads, so the supervisor finds a
    /// failed actor's (agent, thread) at once.
    pub(crate) thread_keys: Registry<ractor::ActorId, (String, String)>,
    /// How many LLM calls may run at once per provider (the `provider` part of a model ref).
    pub(crate) llm_limits: DashMap<String, Arc<tokio::sync::Semaphore>>,
    pub(crate) default_llm_limit: usize,
    /// The supervisor of every thread actor, started with the first one.
    pub(crate) supervisor: tokio::sync::OnceCell<ActorRef<()>>,
    /// Named groups of agents, for `Emit` to a group.
    pub(crate) groups: DashMap<String, Vec<String>>,
    /// Where threads are stored.
    pub(crate) store: Arc<dyn ThreadStore>,
    /// Agent kinds a `Spawn` directive can start, by name.
    pub(crate) kinds: HashMap<String, KindFactory>,
    /// Every request's status, timestamps and result.
    pub(crate) requests: Requests,
    /// The sweeper that asks idle threads to stop, started with the first thread that has an
    /// idle timeout; the shortest timeout seen sets its pace. Held while one is started.
    pub(crate) idle_sweep: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// The sweeper's period in nanoseconds (0 while none runs), read without the lock.
    pub(crate) idle_period_ns: std::sync::atomic::AtomicU64,
    /// `llm.delta` as a parsed type, to ask the bus whether anyone listens.
    pub(crate) delta_type: Option<motet_signals::SignalType>,
}

impl Services {
    /// Whether anyone subscribed to `llm.delta`.
    pub(crate) fn wants_deltas(&self) -> bool {
        self.delta_type
            .as_ref()
            .is_some_and(|ty| self.bus.has_subscribers(ty))
    }

    /// Makes sure a sweeper asks every thread, at least every `idle / 2`, whether it has been
    /// idle long enough to stop. One task for the whole runtime, not one per thread.
    pub(crate) fn watch_idle(self: &Arc<Self>, idle: Duration) {
        let period = (idle / 2).max(Duration::from_millis(1));
        // Every thread start asks; all but the first of each timeout get their answer here,
        // without the lock.
        let period_ns = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        let swept = |services: &Self| {
            let current = services
                .idle_period_ns
                .load(std::sync::atomic::Ordering::Acquire);
            current != 0 && current <= period_ns
        };
        if swept(self) {
            return;
        }
        let Ok(mut sweep) = self.idle_sweep.lock() else {
            return;
        };
        // Again under the lock: another start may have begun a sweeper meanwhile.
        if swept(self) {
            return;
        }
        if let Some(old) = sweep.take() {
            old.abort();
        }
        let services = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(services) = services.upgrade() else {
                    break;
                };
                let threads = services.all_threads();
                drop(services);
                for thread in threads {
                    let _ = thread.cast(AgentMsg::IdleCheck);
                }
            }
        });
        *sweep = Some(task.abort_handle());
        self.idle_period_ns
            .store(period_ns, std::sync::atomic::Ordering::Release);
    }
}

impl Services {
    /// Removes the agent `name` from the registry and ends its bus subscriptions.
    pub(crate) fn remove_agent(&self, name: &str) -> Option<Arc<dyn Family>> {
        let (_, family) = self.agents.remove(name)?;
        family.end_subscriptions();
        Some(family)
    }

    /// Forgets the supervised thread actor `id`, returning its (agent, thread) when it was
    /// registered. (The reverse entry is written when the thread joins the supervisor,
    /// `AgentServer::supervise`.)
    pub(crate) fn forget_thread(&self, id: ractor::ActorId) -> Option<(String, String)> {
        let (_, key) = self.thread_keys.remove(&id)?;
        if let Some(family) = self.agents.get(&key.0).map(|f| f.value().clone()) {
            family.forget_thread(&key.1, id);
        }
        Some(key)
    }

    /// Every running thread actor of every agent.
    pub(crate) fn all_threads(&self) -> Vec<ActorRef<AgentMsg>> {
        let families: Vec<Arc<dyn Family>> =
            self.agents.iter().map(|e| e.value().clone()).collect();
        families.iter().flat_map(|f| f.threads()).collect()
    }

    /// Waits for a free slot to call `provider`; the slot is held until the permit drops.
    pub(crate) async fn permit(&self, provider: &str) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let semaphore = self
            .llm_limits
            .entry(provider.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(self.default_llm_limit)))
            .clone();
        semaphore.acquire_owned().await.ok()
    }

    /// The actor that owns `thread` of `agent` (its default thread when `None`, a fresh one for
    /// `"new"`), started on first use.
    pub(crate) async fn thread_actor(
        self: &Arc<Self>,
        agent: &str,
        thread: Option<String>,
    ) -> Result<(ActorRef<AgentMsg>, String), RuntimeError> {
        let family = self
            .agents
            .get(agent)
            .map(|f| f.value().clone())
            .ok_or_else(|| RuntimeError::NotRunning {
                name: agent.to_owned(),
            })?;
        let thread = match thread.as_deref() {
            None => DEFAULT_THREAD.to_owned(),
            Some(NEW_THREAD) => SystemEnv.fresh_id("thread"),
            Some(id) => id.to_owned(),
        };
        if let Some(actor) = family.thread(&thread) {
            return Ok((actor, thread));
        }
        // One spawn per thread even when many asks race for it.
        let _guard = family.spawning().lock().await;
        if let Some(actor) = family.thread(&thread) {
            return Ok((actor, thread));
        }
        let actor = family
            .clone()
            .spawn_thread(self.clone(), thread.clone())
            .await?;
        family.insert_thread(thread.clone(), actor.clone());
        Ok((actor, thread))
    }
}

/// A bus delivery to an agent's default thread: cast at once when the thread runs, or after
/// starting it. Never blocks the publisher.
fn deliver_to(services: &std::sync::Weak<Services>, agent: &str, signal: &Signal) -> Delivery {
    let Some(services) = services.upgrade() else {
        return Delivery::Closed;
    };
    let Some(family) = services.agents.get(agent).map(|f| f.value().clone()) else {
        return Delivery::Closed;
    };
    if let Some(actor) = family.thread(DEFAULT_THREAD) {
        return match actor.cast(AgentMsg::Signal(signal.clone())) {
            Ok(()) => Delivery::Delivered,
            Err(_) => Delivery::Closed,
        };
    }
    let signal = signal.clone();
    let agent = agent.to_owned();
    tokio::spawn(async move {
        if let Ok((actor, _)) = services.thread_actor(&agent, None).await {
            let _ = actor.cast(AgentMsg::Signal(signal));
        }
    });
    Delivery::Delivered
}

impl Services {
    /// The agents of group `name`.
    pub(crate) fn group_members(&self, name: &str) -> Vec<String> {
        self.groups
            .get(name)
            .map(|g| g.value().clone())
            .unwrap_or_default()
    }
}

/// Starts an agent from its spec, as a child of `parent` when given.
pub(crate) async fn register_agent<S>(
    services: &Arc<Services>,
    spec: AgentSpec<S>,
    parent: Option<Parent>,
) -> Result<(), RuntimeError>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    let name = spec.name;
    let config = Arc::new(AgentConfig {
        name: name.clone(),
        strategy: spec.strategy,
        tools: spec.tools,
        request_type: REACT_INPUT,
        cancel_type: REACT_CANCEL,
        summarize_type: REACT_SUMMARIZE,
        policy: spec.policy,
        idle_timeout: spec.idle_timeout,
        parent,
        spawning: tokio::sync::Mutex::new(()),
        intensity: spec.intensity,
        subscriptions: std::sync::Mutex::new(Vec::new()),
        threads: std::sync::Mutex::new(HashMap::default()),
    });
    // The agent's spawning lock is taken before the agent becomes visible, so no racing ask can
    // start its default thread first and the thread needs no lookup before it starts. The lock
    // is new: `try_lock` cannot fail.
    let spawning = config.spawning.try_lock().ok();
    match services.agents.entry(name.clone()) {
        dashmap::Entry::Occupied(_) => return Err(RuntimeError::NameTaken { name }),
        dashmap::Entry::Vacant(slot) => {
            slot.insert(config.clone());
        }
    }
    // The default thread starts now, so a spawn that cannot start fails here. The agent's type
    // is known here, so it starts without going through `dyn Family`.
    match config
        .clone()
        .spawn(services.clone(), DEFAULT_THREAD.to_owned())
        .await
    {
        Ok(actor) => config.insert_thread(DEFAULT_THREAD.to_owned(), actor),
        Err(error) => {
            services.remove_agent(&name);
            return Err(error);
        }
    }
    drop(spawning);
    if !spec.subscriptions.is_empty() {
        let subscriptions: Vec<Subscription> = spec
            .subscriptions
            .into_iter()
            .map(|pattern| {
                let weak = Arc::downgrade(services);
                let agent = name.clone();
                services.bus.subscribe(pattern, move |signal: &Signal| {
                    deliver_to(&weak, &agent, signal)
                })
            })
            .collect();
        if let Some(family) = services.agents.get(&name) {
            family.keep_subscriptions(subscriptions);
        }
    }
    for group in spec.groups {
        services.groups.entry(group).or_default().push(name.clone());
    }
    Ok(())
}

/// Where a child agent's `Emit` to its parent goes: the parent agent's thread that spawned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parent {
    pub(crate) agent: String,
    pub(crate) thread: String,
}

/// Starts an agent of a registered kind under a name, with its configuration.
pub(crate) type KindFactory = Arc<
    dyn Fn(
            Arc<Services>,
            String,
            &serde_json::Value,
            Option<Parent>,
        ) -> futures::future::BoxFuture<'static, Result<(), RuntimeError>>
        + Send
        + Sync,
>;

impl Services {
    /// Stops the agent `name` and, first, every agent it started (children, recursively).
    pub(crate) fn stop_agent(&self, name: &str, reason: &str) {
        let children: Vec<String> = self
            .agents
            .iter()
            .filter(|e| e.value().parent().is_some_and(|p| p.agent == name))
            .map(|e| e.key().clone())
            .collect();
        for child in children {
            self.stop_agent(&child, reason);
        }
        let family = self.remove_agent(name);
        for mut group in self.groups.iter_mut() {
            group.retain(|member| member != name);
        }
        for actor in family.map(|f| f.threads()).unwrap_or_default() {
            actor.stop(Some(reason.to_owned()));
        }
    }
}

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
    /// The request id (see [`Runtime::request`] for its status).
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
    pub async fn next_delta(&mut self) -> Option<super::server::LlmDelta> {
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
    rx: tokio::sync::mpsc::UnboundedReceiver<super::server::LlmDelta>,
    _subscription: Option<Subscription>,
}

impl Deltas {
    fn subscribe(bus: &Bus, request_id: &str) -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let id = request_id.to_owned();
        let pattern = super::server::LLM_DELTA.parse::<Pattern>();
        let subscription = pattern.ok().map(|pattern| {
            bus.subscribe(pattern, move |signal: &Signal| {
                if signal.request_id() != Some(id.as_str()) {
                    return Delivery::Delivered;
                }
                match signal.data_as::<super::server::LlmDelta>() {
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

/// One agent's threads, whatever its strategy type.
#[async_trait::async_trait]
pub(crate) trait Family: Send + Sync {
    fn spawning(&self) -> &tokio::sync::Mutex<()>;
    fn intensity(&self) -> Intensity;
    fn keep_subscriptions(&self, subscriptions: Vec<Subscription>);
    /// Drops the agent's bus subscriptions (its threads may outlive it briefly while they stop).
    fn end_subscriptions(&self);
    fn parent(&self) -> Option<&Parent>;
    fn idempotent_tools(&self) -> Vec<String>;
    /// The running actor of thread `id`.
    fn thread(&self, id: &str) -> Option<ActorRef<AgentMsg>>;
    /// Records the running actor of thread `id`.
    fn insert_thread(&self, id: String, actor: ActorRef<AgentMsg>);
    /// Removes thread `id` from the agent's running threads, returning its actor.
    fn remove_thread(&self, id: &str) -> Option<ActorRef<AgentMsg>>;
    /// Forgets thread `id` when `actor` is still the one running it.
    fn forget_thread(&self, id: &str, actor: ractor::ActorId);
    /// The actors of the agent's running threads.
    fn threads(&self) -> Vec<ActorRef<AgentMsg>>;
    /// How many threads of the agent are running.
    fn thread_count(&self) -> usize;
    async fn spawn_thread(
        self: Arc<Self>,
        services: Arc<Services>,
        thread_id: String,
    ) -> Result<ActorRef<AgentMsg>, RuntimeError>;
}

#[async_trait::async_trait]
impl<S> Family for AgentConfig<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    fn spawning(&self) -> &tokio::sync::Mutex<()> {
        &self.spawning
    }

    fn intensity(&self) -> Intensity {
        self.intensity
    }

    fn parent(&self) -> Option<&Parent> {
        self.parent.as_ref()
    }

    fn idempotent_tools(&self) -> Vec<String> {
        self.tools
            .as_ref()
            .map(|tools| tools.idempotent_tools())
            .unwrap_or_default()
    }

    fn keep_subscriptions(&self, subscriptions: Vec<Subscription>) {
        if let Ok(mut kept) = self.subscriptions.lock() {
            kept.extend(subscriptions);
        }
    }

    fn thread(&self, id: &str) -> Option<ActorRef<AgentMsg>> {
        self.running_threads().get(id).cloned()
    }

    fn insert_thread(&self, id: String, actor: ActorRef<AgentMsg>) {
        self.running_threads().insert(id, actor);
    }

    fn remove_thread(&self, id: &str) -> Option<ActorRef<AgentMsg>> {
        self.running_threads().remove(id)
    }

    fn forget_thread(&self, id: &str, actor: ractor::ActorId) {
        let mut threads = self.running_threads();
        if threads.get(id).is_some_and(|a| a.get_id() == actor) {
            threads.remove(id);
        }
    }

    fn threads(&self) -> Vec<ActorRef<AgentMsg>> {
        self.running_threads().values().cloned().collect()
    }

    fn thread_count(&self) -> usize {
        self.running_threads().len()
    }

    fn end_subscriptions(&self) {
        let ended = self
            .subscriptions
            .lock()
            .map(|mut kept| std::mem::take(&mut *kept));
        drop(ended);
    }

    async fn spawn_thread(
        self: Arc<Self>,
        services: Arc<Services>,
        thread_id: String,
    ) -> Result<ActorRef<AgentMsg>, RuntimeError> {
        self.spawn(services, thread_id).await
    }
}

impl<S> AgentConfig<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// Starts the actor of one of this agent's threads (not yet registered, not yet linked:
    /// the thread joins the supervisor with the first message it handles).
    async fn spawn(
        self: Arc<Self>,
        services: Arc<Services>,
        thread_id: String,
    ) -> Result<ActorRef<AgentMsg>, RuntimeError> {
        let server = AgentServer {
            agent: self.clone(),
            thread_id,
            services,
        };
        let (actor, _join) =
            Actor::spawn(None, server, ())
                .await
                .map_err(|e| RuntimeError::SpawnFailed {
                    name: self.name.clone(),
                    message: e.to_string(),
                })?;
        Ok(actor)
    }
}

/// Why the runtime could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No LLM client was configured.
    #[error("the runtime needs an LLM client: call RuntimeBuilder::llm")]
    NoLlmClient,
    /// An agent with this name is already running.
    #[error("an agent named `{name}` is already running")]
    NameTaken {
        /// The name.
        name: String,
    },
    /// The agent's actor could not start.
    #[error("agent `{name}` could not start: {message}")]
    SpawnFailed {
        /// The agent.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The agent is not running.
    #[error("agent `{name}` is not running")]
    NotRunning {
        /// The agent.
        name: String,
    },
    /// The thread store failed.
    #[error("the thread store failed: {message}")]
    Store {
        /// The store's error.
        message: String,
    },
}

/// Why an ask got no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// No reply came within the timeout.
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    /// The agent stopped before replying.
    #[error("agent `{agent}` stopped before replying")]
    AgentStopped {
        /// The agent.
        agent: String,
    },
    /// The agent's thread failed while the request ran and was restarted; the request is not
    /// resumed (send it again).
    #[error("agent `{agent}` failed and was restarted before replying")]
    AgentRestarted {
        /// The agent.
        agent: String,
    },
    /// The strategy rejected the request.
    #[error("the strategy rejected the request: {message}")]
    Strategy {
        /// Its error.
        message: String,
    },
    /// The agent replied with a failure signal (e.g. `react.failed`); its data says why.
    #[error("the request failed: {}", reply.signal_type().as_str())]
    Failed {
        /// The failure signal.
        reply: Box<Signal>,
    },
    /// The thread's actor could not start — typically its stored history cannot be read. The
    /// thread is never replaced by a fresh, empty one.
    #[error("thread `{thread}` of agent `{agent}` is unavailable: {message}")]
    ThreadUnavailable {
        /// The agent.
        agent: String,
        /// The thread.
        thread: String,
        /// Why (the store's error, naming the thread).
        message: String,
    },
    /// The thread could not be stored, so the request was not carried out.
    #[error("the thread could not be stored: {message}")]
    Store {
        /// The store's error.
        message: String,
    },
    /// The request signal carried no request id to match the reply by.
    #[error("an ask needs a request id")]
    NoRequestId,
    /// The request could not be built or sent.
    #[error("the request could not be sent: {message}")]
    Send {
        /// What went wrong.
        message: String,
    },
}

/// Options of one [`AgentHandle::ask`].
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// The thread the request runs on; `None` for the agent's default thread.
    pub thread_id: Option<String>,
    /// Per-request changes to the context policy.
    pub context_policy: Option<PolicyOverride>,
    /// How long to wait for the reply. Default 30 s. A request not answered in time is
    /// cancelled, unless `keep_running`.
    pub timeout: Duration,
    /// Deliver the model's text as it is written ([`Request::next_delta`]). Default false.
    pub stream: bool,
    /// Leave the request running when the wait times out (its end is then seen with
    /// [`Runtime::request`]). Default false.
    pub keep_running: bool,
}

impl Default for AskOptions {
    fn default() -> Self {
        Self {
            thread_id: None,
            context_policy: None,
            timeout: Duration::from_secs(30),
            stream: false,
            keep_running: false,
        }
    }
}

/// How to start one agent.
pub struct AgentSpec<S> {
    name: String,
    strategy: S,
    tools: Option<Arc<ToolSet>>,
    policy: RequestPolicy,
    intensity: Intensity,
    subscriptions: Vec<Pattern>,
    groups: Vec<String>,
    idle_timeout: Option<Duration>,
}

impl<S: Strategy> AgentSpec<S> {
    /// An agent named `name` running `strategy`, with no tools, replying with
    /// `react.completed` / `react.failed`.
    pub fn new(name: impl Into<String>, strategy: S) -> Self {
        Self {
            name: name.into(),
            strategy,
            tools: None,
            policy: RequestPolicy::Queue,
            intensity: Intensity::default(),
            subscriptions: Vec::new(),
            groups: Vec::new(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }

    /// Stops a thread's actor after this long without messages, to bound the memory of an
    /// agent with many conversations; the next signal for the thread brings it back from the
    /// store. `None` keeps threads running. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub fn with_idle_timeout(mut self, idle: Option<Duration>) -> Self {
        self.idle_timeout = idle.filter(|d| !d.is_zero());
        self
    }

    /// Delivers every bus signal matching `pattern` (`*` one segment, `**` any) to the
    /// agent's default thread.
    pub fn subscribe(mut self, pattern: Pattern) -> Self {
        self.subscriptions.push(pattern);
        self
    }

    /// Makes the agent a member of the group `name`: `Emit` to the group reaches it.
    pub fn join_group(mut self, name: impl Into<String>) -> Self {
        self.groups.push(name.into());
        self
    }

    /// At most this many thread restarts in this window before the agent is stopped
    /// (default 3 in 5 s).
    pub fn with_restart_intensity(mut self, intensity: Intensity) -> Self {
        self.intensity = intensity;
        self
    }

    /// What happens to a request that arrives while another runs on the same thread.
    pub fn with_request_policy(mut self, policy: RequestPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The tools this agent may call.
    pub fn with_tools(mut self, tools: Arc<ToolSet>) -> Self {
        self.tools = Some(tools);
        self
    }
}

/// How long a thread actor waits without messages before it is stopped (10 minutes).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// How many LLM calls run at once per provider unless configured otherwise.
pub const DEFAULT_LLM_CONCURRENCY: usize = 64;

/// Builds a [`Runtime`].
#[derive(Default)]
pub struct RuntimeBuilder {
    llm: Option<Arc<dyn LlmClient>>,
    bus: Option<Arc<Bus>>,
    limits: Vec<(String, usize)>,
    default_limit: Option<usize>,
    store: Option<Arc<dyn ThreadStore>>,
    kinds: HashMap<String, KindFactory>,
}

impl RuntimeBuilder {
    /// The LLM client agents' `LlmStream` directives go through (a
    /// [`motet_providers::Providers`] in production).
    pub fn llm(mut self, client: Arc<dyn LlmClient>) -> Self {
        self.llm = Some(client);
        self
    }

    /// At most `calls` LLM calls at once to `provider` (`anthropic`, `openai`, ...); the rest
    /// wait their turn. Default [`DEFAULT_LLM_CONCURRENCY`].
    pub fn llm_concurrency(mut self, provider: impl Into<String>, calls: usize) -> Self {
        self.limits.push((provider.into(), calls.max(1)));
        self
    }

    /// The limit for providers not named with [`RuntimeBuilder::llm_concurrency`].
    pub fn default_llm_concurrency(mut self, calls: usize) -> Self {
        self.default_limit = Some(calls.max(1));
        self
    }

    /// Where agents' threads are stored: every entry a strategy appends is committed before the
    /// directives of that step run, and a thread actor that comes back (after an idle stop or a
    /// restart) loads its thread from here. In memory by default; a
    /// [`crate::store::SqliteStore`] survives the process.
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Registers an agent kind that a strategy's `Spawn` directive can start as its child:
    /// `factory` turns the child's configuration into its spec (its name is then the one the
    /// directive gives, or `<parent>/<tag>`).
    pub fn kind<S, F>(mut self, kind: impl Into<String>, factory: F) -> Self
    where
        S: Strategy + Send + Sync + 'static,
        S::State: Send + Sync + 'static,
        F: Fn(&serde_json::Value) -> Result<AgentSpec<S>, String> + Send + Sync + 'static,
    {
        let start: KindFactory = Arc::new(move |services, name, config, parent| {
            let spec = factory(config);
            Box::pin(async move {
                let mut spec = spec.map_err(|message| RuntimeError::SpawnFailed {
                    name: name.clone(),
                    message,
                })?;
                spec.name = name;
                register_agent(&services, spec, parent).await
            })
        });
        self.kinds.insert(kind.into(), start);
        self
    }

    /// The bus `Emit` directives publish on; a fresh one by default.
    pub fn bus(mut self, bus: Arc<Bus>) -> Self {
        self.bus = Some(bus);
        self
    }

    /// The runtime.
    ///
    /// # Errors
    /// [`RuntimeError::NoLlmClient`] when no client was given.
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        Ok(Runtime {
            services: Arc::new(Services {
                llm: self.llm.ok_or(RuntimeError::NoLlmClient)?,
                bus: self.bus.unwrap_or_default(),
                agents: Registry::default(),
                thread_keys: Registry::default(),
                llm_limits: self
                    .limits
                    .into_iter()
                    .map(|(p, n)| (p, Arc::new(tokio::sync::Semaphore::new(n))))
                    .collect(),
                default_llm_limit: self.default_limit.unwrap_or(DEFAULT_LLM_CONCURRENCY),
                supervisor: tokio::sync::OnceCell::new(),
                groups: DashMap::new(),
                store: self
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn ThreadStore>),
                kinds: self.kinds,
                requests: Requests::default(),
                idle_sweep: std::sync::Mutex::new(None),
                idle_period_ns: std::sync::atomic::AtomicU64::new(0),
                delta_type: super::server::LLM_DELTA.parse().ok(),
            }),
        })
    }
}

/// Many agents in one process.
#[derive(Clone)]
pub struct Runtime {
    services: Arc<Services>,
}

impl Runtime {
    /// A builder.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The bus agents publish on.
    pub fn bus(&self) -> &Arc<Bus> {
        &self.services.bus
    }

    /// Starts an agent.
    ///
    /// # Errors
    /// [`RuntimeError::NameTaken`] when an agent of that name runs,
    /// [`RuntimeError::SpawnFailed`] when its actor cannot start.
    pub async fn spawn<S>(&self, spec: AgentSpec<S>) -> Result<AgentHandle, RuntimeError>
    where
        S: Strategy + Send + Sync + 'static,
        S::State: Send + Sync + 'static,
    {
        let name = spec.name.clone();
        register_agent(&self.services, spec, None).await?;
        Ok(AgentHandle {
            name,
            services: self.services.clone(),
        })
    }

    /// The running agent named `name`.
    pub fn agent(&self, name: &str) -> Option<AgentHandle> {
        self.services
            .agents
            .contains_key(name)
            .then(|| AgentHandle {
                name: name.to_owned(),
                services: self.services.clone(),
            })
    }

    /// How many agents are running.
    pub fn agent_count(&self) -> usize {
        self.services.agents.len()
    }

    /// How many conversation threads are running (each is one actor).
    pub fn thread_count(&self) -> usize {
        self.services
            .agents
            .iter()
            .map(|e| e.value().thread_count())
            .sum()
    }

    /// What became of request `id` (any agent): status, timestamps, result.
    pub fn request(&self, id: &str) -> Option<RequestRecord> {
        self.services.requests.get(id)
    }

    /// Stops an agent, its children and their threads.
    pub fn stop_agent(&self, name: &str) {
        self.services.stop_agent(name, "stopped by the application");
    }

    /// Stops every agent and waits for each thread to finish the message it is handling.
    pub async fn shutdown(&self) {
        let threads = self.services.all_threads();
        for agent in self.services.agents.iter() {
            agent.value().end_subscriptions();
        }
        self.services.agents.clear();
        self.services.groups.clear();
        // All at once: each stops when its current message is handled.
        let stopping = threads.iter().map(|thread| {
            thread.stop_and_wait(
                Some("runtime shutdown".to_owned()),
                Some(Duration::from_secs(5)),
            )
        });
        futures::future::join_all(stopping).await;
        self.services.thread_keys.clear();
        if let Some(supervisor) = self.services.supervisor.get() {
            supervisor.stop(None);
        }
        if let Ok(mut sweep) = self.services.idle_sweep.lock()
            && let Some(task) = sweep.take()
        {
            task.abort();
            self.services
                .idle_period_ns
                .store(0, std::sync::atomic::Ordering::Release);
        }
    }
}

/// A running agent.
#[derive(Clone)]
pub struct AgentHandle {
    name: String,
    services: Arc<Services>,
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
