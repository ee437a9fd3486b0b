//! What every agent of a runtime shares (`RuntimeCore`: the agents by name, the bus, the store,
//! the LLM client and its limits, groups, kinds, requests) and one agent's threads behind a
//! strategy-free face (`RunningAgent`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use motet_agents::{Env, Strategy};
use motet_providers::LlmClient;
use motet_signals::{Bus, Delivery, Signal, Subscription};
use ractor::{Actor, ActorRef};

use super::actor::{LiveAgent, ThreadActor, ThreadMsg};
use super::env::SystemEnv;
use super::errors::RuntimeError;
use super::requests::Requests;
use super::spec::{AgentSpec, DEFAULT_THREAD, NEW_THREAD};
use crate::store::ThreadStore;
use crate::supervisor::Intensity;

/// A concurrent map keyed by names and ids that arrive with requests: foldhash, seeded at
/// random per map, costs a fraction of SipHash on these short keys and still keeps an outsider
/// choosing thread ids from predicting collisions.
pub(crate) type Registry<K, V> = DashMap<K, V, foldhash::fast::RandomState>;

/// What every agent of a runtime shares.
pub(crate) struct RuntimeCore {
    pub(crate) llm: Arc<dyn LlmClient>,
    pub(crate) bus: Arc<Bus>,
    /// The registry, first level: the agents by name. Each agent holds the second: its running
    /// threads by thread id (`RunningAgent::thread`), so (agent, thread id) → the owning actor.
    pub(crate) agents: Registry<String, Arc<dyn RunningAgent>>,
    /// The registry the other way round for supervised threads, so the supervisor finds a
    /// failed actor's (agent, thread) at once.
    pub(crate) thread_keys: Registry<ractor::ActorId, (Arc<str>, Arc<str>)>,
    /// Each provider account's shared limits: streams at once, requests and tokens per
    /// minute, the shared backoff, and whose call goes next.
    pub(crate) limits: motet_providers::limits::SharedLimits,
    /// The longest an LLM call waits for its account's capacity before it fails; `None`: as
    /// long as it takes.
    pub(crate) llm_max_wait: Option<Duration>,
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
    /// Where agents' durable consumers consume: the builder's durable bus, else the
    /// in-process bus behind the same trait ([`crate::bus::LocalBus`]).
    pub(crate) signal_bus: Arc<dyn crate::bus::SignalBus>,
    /// The durable bus the runtime was built with, which `Emit`s to the bus and replies also reach.
    pub(crate) external_bus: Option<super::durable::ExternalBus>,
    /// What the agents have done so far: calls and tokens, for [`super::Runtime::activity`].
    pub(crate) activity: Arc<super::activity::Activity>,
    /// The price table, the hard budgets and what each budgeted level has spent.
    pub(crate) costs: super::costs::Costs,
}

impl RuntimeCore {
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
        let swept = |core: &Self| {
            let current = core
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
        let core = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(core) = core.upgrade() else {
                    break;
                };
                let threads = core.all_threads();
                drop(core);
                for thread in threads {
                    let _ = thread.cast(ThreadMsg::IdleCheck);
                }
            }
        });
        *sweep = Some(task.abort_handle());
        self.idle_period_ns
            .store(period_ns, std::sync::atomic::Ordering::Release);
    }
}

impl RuntimeCore {
    /// Removes the agent `name` from the registry and ends its bus subscriptions.
    pub(crate) fn remove_agent(&self, name: &str) -> Option<Arc<dyn RunningAgent>> {
        let (_, family) = self.agents.remove(name)?;
        family.end_subscriptions();
        Some(family)
    }

    /// Forgets the supervised thread actor `id`, returning its (agent, thread) when it was
    /// registered. (The reverse entry is written when the thread joins the supervisor,
    /// `ThreadActor::supervise`.)
    pub(crate) fn forget_thread(&self, id: ractor::ActorId) -> Option<(Arc<str>, Arc<str>)> {
        let (_, key) = self.thread_keys.remove(&id)?;
        if let Some(family) = self.agents.get(&*key.0).map(|f| f.value().clone()) {
            family.forget_thread(&key.1, id);
        }
        Some(key)
    }

    /// Every running thread actor of every agent.
    pub(crate) fn all_threads(&self) -> Vec<ActorRef<ThreadMsg>> {
        let families: Vec<Arc<dyn RunningAgent>> =
            self.agents.iter().map(|e| e.value().clone()).collect();
        families.iter().flat_map(|f| f.threads()).collect()
    }

    /// The thread id a caller means: the default thread for `None`, a fresh id for `"new"`.
    pub(crate) fn thread_id(wanted: Option<&str>) -> String {
        match wanted {
            None => DEFAULT_THREAD.to_owned(),
            Some(NEW_THREAD) => SystemEnv.fresh_id("thread"),
            Some(id) => id.to_owned(),
        }
    }

    /// Sends `msg` to thread `thread` of `agent`, starting the thread's actor when none runs.
    ///
    /// An actor on its way out (draining after its idle timeout, or failed) turns the message
    /// away; it is then sent again, to the actor that comes after once the old one has left the
    /// registry (the messages it still held are handed to that successor first, see
    /// `ThreadActor::post_stop`), so a message is never lost to an actor that was stopping and
    /// one sender's messages keep their order.
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when the agent is not (or no longer) registered, or its
    /// thread would not take the message for [`SEND_PATIENCE`]; [`RuntimeError::SpawnFailed`]
    /// when the thread's actor cannot start.
    pub(crate) async fn send(
        self: &Arc<Self>,
        agent: &str,
        thread: &str,
        mut msg: ThreadMsg,
    ) -> Result<(), RuntimeError> {
        let not_running = || RuntimeError::NotRunning {
            name: agent.to_owned(),
        };
        let deadline = tokio::time::Instant::now() + SEND_PATIENCE;
        loop {
            let family = self
                .agents
                .get(agent)
                .map(|f| f.value().clone())
                .ok_or_else(not_running)?;
            let actor = self.thread_actor(&family, thread).await?;
            match actor.cast(msg) {
                Ok(()) => return Ok(()),
                Err(ractor::MessagingErr::SendErr(back)) => msg = back,
                Err(_) => return Err(not_running()),
            }
            // Wait for the leaving actor to leave the registry, then send again.
            let mut pause = std::time::Duration::from_micros(50);
            while family
                .thread(thread)
                .is_some_and(|a| a.get_id() == actor.get_id())
            {
                if tokio::time::Instant::now() >= deadline {
                    return Err(not_running());
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_millis(10));
            }
        }
    }

    /// The running actor of `thread` of `family`'s agent, started when none runs.
    async fn thread_actor(
        self: &Arc<Self>,
        family: &Arc<dyn RunningAgent>,
        thread: &str,
    ) -> Result<ActorRef<ThreadMsg>, RuntimeError> {
        if let Some(actor) = family.thread(thread) {
            return Ok(actor);
        }
        // One spawn per thread even when many asks race for it.
        let _guard = family.spawning().lock().await;
        if let Some(actor) = family.thread(thread) {
            return Ok(actor);
        }
        let actor = family
            .clone()
            .spawn_thread(self.clone(), thread.to_owned())
            .await?;
        family.insert_thread(thread.to_owned(), actor.clone());
        Ok(actor)
    }

    /// Starts the successor of the thread actor `leaving` and hands it `held`, the messages
    /// `leaving` received before it closed its mailbox, in order, before any sender waiting for
    /// `leaving` to go can reach the successor.
    pub(crate) async fn succeed(
        self: &Arc<Self>,
        agent: &str,
        thread: &str,
        leaving: ractor::ActorId,
        held: Vec<ThreadMsg>,
    ) {
        let Some(family) = self.agents.get(agent).map(|f| f.value().clone()) else {
            return;
        };
        let _guard = family.spawning().lock().await;
        let successor = match family.thread(thread) {
            Some(actor) if actor.get_id() != leaving => Ok(actor),
            _ => {
                family
                    .clone()
                    .spawn_thread(self.clone(), thread.to_owned())
                    .await
            }
        };
        match successor {
            Ok(actor) => {
                let mut lost = 0;
                for msg in held {
                    if actor.cast(msg).is_err() {
                        lost += 1;
                    }
                }
                if lost > 0 {
                    tracing::warn!(%agent, %thread, lost, "messages for a stopping thread could not be handed on");
                }
                family.insert_thread(thread.to_owned(), actor);
            }
            Err(error) => {
                family.forget_thread(thread, leaving);
                tracing::error!(%agent, %thread, %error, "could not start a thread to take the messages its stopping actor held");
            }
        }
    }
}

/// How long [`RuntimeCore::send`] waits for a thread whose actor is stopping.
pub(crate) const SEND_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// A bus delivery to an agent's default thread: cast at once when the thread runs and takes
/// it, else sent on a task (starting the thread, or waiting for a stopping actor's successor).
/// Never blocks the publisher.
fn deliver_to(core: &std::sync::Weak<RuntimeCore>, agent: &str, signal: &Signal) -> Delivery {
    let Some(core) = core.upgrade() else {
        return Delivery::Closed;
    };
    let Some(family) = core.agents.get(agent).map(|f| f.value().clone()) else {
        return Delivery::Closed;
    };
    let msg = ThreadMsg::Signal(signal.clone());
    let msg = match family.thread(DEFAULT_THREAD) {
        Some(actor) => match actor.cast(msg) {
            Ok(()) => return Delivery::Delivered,
            Err(ractor::MessagingErr::SendErr(back)) => back,
            Err(_) => return Delivery::Closed,
        },
        None => msg,
    };
    let agent = agent.to_owned();
    tokio::spawn(async move {
        if let Err(error) = core.send(&agent, DEFAULT_THREAD, msg).await {
            tracing::debug!(%agent, %error, "a bus delivery to an agent was dropped");
        }
    });
    Delivery::Delivered
}

impl RuntimeCore {
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
    core: &Arc<RuntimeCore>,
    spec: AgentSpec<S>,
    parent: Option<Parent>,
) -> Result<(), RuntimeError>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    let name = spec.name;
    core.costs.set_agent(&name, &spec.budgets);
    let config = Arc::new(LiveAgent {
        name: Arc::from(name.as_str()),
        strategy: spec.strategy,
        tools: spec.tools,
        policy: spec.policy,
        idle_timeout: spec.idle_timeout,
        // Boxed: most agents have no parent, and hold one word for it.
        parent: parent.map(Box::new),
        spawning: tokio::sync::Mutex::new(()),
        intensity: spec.intensity,
        attached: std::sync::Mutex::new(None),
        threads: std::sync::Mutex::new(super::actor::few::Few::default()),
        labels: (spec.tenant.is_some() || spec.priority != motet_providers::Priority::Normal).then(
            || {
                Box::new(super::actor::Labels {
                    tenant: spec.tenant,
                    priority: spec.priority,
                })
            },
        ),
    });
    // The agent's spawning lock is taken before the agent becomes visible, so no racing ask can
    // start its default thread first and the thread needs no lookup before it starts. The lock
    // is new: `try_lock` cannot fail.
    let spawning = config.spawning.try_lock().ok();
    match core.agents.entry(name.clone()) {
        dashmap::Entry::Occupied(_) => return Err(RuntimeError::NameTaken { name }),
        dashmap::Entry::Vacant(slot) => {
            slot.insert(config.clone());
        }
    }
    // The default thread starts now, so a spawn that cannot start fails here. The agent's type
    // is known here, so it starts without going through `dyn RunningAgent`.
    match config
        .clone()
        .spawn(core.clone(), DEFAULT_THREAD.to_owned())
        .await
    {
        Ok(actor) => config.insert_thread(DEFAULT_THREAD.to_owned(), actor),
        Err(error) => {
            core.remove_agent(&name);
            return Err(error);
        }
    }
    drop(spawning);
    if !spec.consumers.is_empty() {
        let consumers = super::durable::start_consumers(core, &name, spec.consumers).await;
        if let Some(family) = core.agents.get(&name) {
            family.keep_consumers(consumers);
        }
    }
    if !spec.subscriptions.is_empty() {
        let subscriptions: Vec<Subscription> = spec
            .subscriptions
            .into_iter()
            .map(|pattern| {
                let weak = Arc::downgrade(core);
                let agent = name.clone();
                core.bus.subscribe(pattern, move |signal: &Signal| {
                    deliver_to(&weak, &agent, signal)
                })
            })
            .collect();
        if let Some(family) = core.agents.get(&name) {
            family.keep_subscriptions(subscriptions);
        }
    }
    for group in spec.groups {
        core.groups.entry(group).or_default().push(name.clone());
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
            Arc<RuntimeCore>,
            String,
            &serde_json::Value,
            Option<Parent>,
        ) -> futures::future::BoxFuture<'static, Result<(), RuntimeError>>
        + Send
        + Sync,
>;

impl RuntimeCore {
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

/// One agent's threads, whatever its strategy type.
#[async_trait::async_trait]
pub(crate) trait RunningAgent: Send + Sync {
    fn spawning(&self) -> &tokio::sync::Mutex<()>;
    fn intensity(&self) -> Intensity;
    fn keep_subscriptions(&self, subscriptions: Vec<Subscription>);
    /// Keeps the tasks of the agent's durable consumers, aborted with its subscriptions.
    fn keep_consumers(&self, consumers: Vec<tokio::task::AbortHandle>);
    /// Drops the agent's bus subscriptions (its threads may outlive it briefly while they stop).
    fn end_subscriptions(&self);
    fn parent(&self) -> Option<&Parent>;
    fn idempotent_tools(&self) -> Vec<String>;
    /// The running actor of thread `id`.
    fn thread(&self, id: &str) -> Option<ActorRef<ThreadMsg>>;
    /// Records the running actor of thread `id`.
    fn insert_thread(&self, id: String, actor: ActorRef<ThreadMsg>);
    /// Removes thread `id` from the agent's running threads, returning its actor.
    fn remove_thread(&self, id: &str) -> Option<ActorRef<ThreadMsg>>;
    /// Forgets thread `id` when `actor` is still the one running it.
    fn forget_thread(&self, id: &str, actor: ractor::ActorId);
    /// The actors of the agent's running threads.
    fn threads(&self) -> Vec<ActorRef<ThreadMsg>>;
    /// How many threads of the agent are running.
    fn thread_count(&self) -> usize;
    async fn spawn_thread(
        self: Arc<Self>,
        core: Arc<RuntimeCore>,
        thread_id: String,
    ) -> Result<ActorRef<ThreadMsg>, RuntimeError>;
}

#[async_trait::async_trait]
impl<S> RunningAgent for LiveAgent<S>
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
        self.parent.as_deref()
    }

    fn idempotent_tools(&self) -> Vec<String> {
        self.tools
            .as_ref()
            .map(|tools| tools.idempotent_tools())
            .unwrap_or_default()
    }

    fn keep_subscriptions(&self, subscriptions: Vec<Subscription>) {
        if let Ok(mut kept) = self.attached.lock() {
            kept.get_or_insert_default()
                .subscriptions
                .extend(subscriptions);
        }
    }

    fn keep_consumers(&self, consumers: Vec<tokio::task::AbortHandle>) {
        if let Ok(mut kept) = self.attached.lock() {
            kept.get_or_insert_default().consumers.extend(consumers);
        }
    }

    fn thread(&self, id: &str) -> Option<ActorRef<ThreadMsg>> {
        self.running_threads().get(id).cloned()
    }

    fn insert_thread(&self, id: String, actor: ActorRef<ThreadMsg>) {
        self.running_threads().insert(id, actor);
    }

    fn remove_thread(&self, id: &str) -> Option<ActorRef<ThreadMsg>> {
        self.running_threads().remove(id)
    }

    fn forget_thread(&self, id: &str, actor: ractor::ActorId) {
        let mut threads = self.running_threads();
        if threads.get(id).is_some_and(|a| a.get_id() == actor) {
            threads.remove(id);
        }
    }

    fn threads(&self) -> Vec<ActorRef<ThreadMsg>> {
        self.running_threads().values().cloned().collect()
    }

    fn thread_count(&self) -> usize {
        self.running_threads().len()
    }

    fn end_subscriptions(&self) {
        // Taken out of the lock first: a subscription ends as it is dropped.
        let ended = self.attached.lock().ok().and_then(|mut kept| kept.take());
        if let Some(ended) = ended {
            ended
                .consumers
                .iter()
                .for_each(tokio::task::AbortHandle::abort);
        }
    }

    async fn spawn_thread(
        self: Arc<Self>,
        core: Arc<RuntimeCore>,
        thread_id: String,
    ) -> Result<ActorRef<ThreadMsg>, RuntimeError> {
        self.spawn(core, thread_id).await
    }
}

impl<S> LiveAgent<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// Starts the actor of one of this agent's threads (not yet registered, not yet linked:
    /// the thread joins the supervisor with the first message it handles).
    async fn spawn(
        self: Arc<Self>,
        core: Arc<RuntimeCore>,
        thread_id: String,
    ) -> Result<ActorRef<ThreadMsg>, RuntimeError> {
        let server = ThreadActor {
            store_id: super::actor::store_id(&self.name, &thread_id).into_boxed_str(),
            agent: self.clone(),
            thread_id: thread_id.into(),
            core,
        };
        let (actor, _join) = Actor::spawn(None, server, ())
            .await
            .map_err(|e| spawn_failure(&self.name, e))?;
        Ok(actor)
    }
}

/// Why a thread's actor did not start, as the caller should read it. A thread whose stored
/// history cannot be loaded is the store's failure, with the store's words (naming the thread
/// and what is wrong), not ractor's "actor panicked during startup" around them: nothing
/// panicked.
fn spawn_failure(agent: &str, error: ractor::SpawnErr) -> RuntimeError {
    if let ractor::SpawnErr::StartupFailed(cause) = &error
        && let Some(store) = cause.downcast_ref::<crate::store::StoreError>()
    {
        return RuntimeError::Store {
            message: store.to_string(),
        };
    }
    RuntimeError::SpawnFailed {
        name: agent.to_owned(),
        message: error.to_string(),
    }
}
