//! Joining the registry: an agent started from its spec (its default thread, its durable
//! consumers, its bus subscriptions, its groups), and the thread actors of a registered agent
//! started for [`RuntimeCore::ensure_thread`].

use std::sync::Arc;

use motet_agents::Strategy;
use motet_signals::{Delivery, Signal, Subscription};
use ractor::{Actor, ActorRef};

use super::actor::ThreadActor;
use super::core::{
    AgentEntry, DEFAULT_THREAD, HostedAgent, Labels, Parent, RuntimeCore, ThreadKey, ThreadMsg,
};
use super::few::Few;
use super::virtuals::Activation;
use crate::agent::caller::spec::AgentSpec;
use crate::agent::errors::RuntimeError;
use crate::store::StoreError;
use crate::supervisor::Supervision;

/// A bus delivery to an agent's default thread: cast at once when the thread runs and takes
/// it, else sent on a task (starting the thread, or waiting for a stopping actor's successor).
/// Never blocks the publisher.
fn deliver_to(core: &std::sync::Weak<RuntimeCore>, agent: &str, signal: &Signal) -> Delivery {
    let Some(core) = core.upgrade() else {
        return Delivery::Closed;
    };
    let Some(running) = core.agent(agent) else {
        return Delivery::Closed;
    };
    let msg = ThreadMsg::Signal(signal.clone());
    let msg = match running.thread(DEFAULT_THREAD) {
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
    install(core, spec, parent, None).await
}

/// Activates the virtual agent `spec` describes: registered with its mark, no thread started
/// (each starts, from the store, with the first message for it).
pub(crate) async fn activate_agent<S>(
    core: &Arc<RuntimeCore>,
    spec: AgentSpec<S>,
) -> Result<(), RuntimeError>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    let mark = Activation::new(core.activations.tick());
    install(core, spec, None, Some(Box::new(mark))).await
}

/// Registers an agent: a spawned one (`activation` `None`) with its default thread started, a
/// virtual one with none.
async fn install<S>(
    core: &Arc<RuntimeCore>,
    spec: AgentSpec<S>,
    parent: Option<Parent>,
    activation: Option<Box<Activation>>,
) -> Result<(), RuntimeError>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    let name = spec.name;
    let is_virtual = activation.is_some();
    core.costs.set_agent(&name, &spec.budgets);
    let config = Arc::new(HostedAgent {
        name: Arc::from(name.as_str()),
        strategy: spec.strategy,
        tools: spec.tools,
        policy: spec.policy,
        idle_timeout: spec.idle_timeout,
        // Boxed: most agents have no parent, and hold one word for it.
        parent: parent.map(Box::new),
        spawning: tokio::sync::Mutex::new(()),
        supervision: (spec.supervision != Supervision::default())
            .then(|| Box::new(spec.supervision)),
        attached: std::sync::Mutex::new(None),
        threads: std::sync::Mutex::new(Few::default()),
        labels: (spec.tenant.is_some() || spec.priority != motet_providers::Priority::Normal).then(
            || {
                Box::new(Labels {
                    tenant: spec.tenant,
                    priority: spec.priority,
                })
            },
        ),
        activation,
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
    if is_virtual {
        // Its place was taken by the activation (`RuntimeCore::activate`).
        drop(spawning);
        attach(core, &name, spec.consumers, spec.subscriptions).await;
        return Ok(());
    }
    // The default thread starts now, so a spawn that cannot start fails here. The agent's type
    // is known here, so it starts without going through `dyn AgentEntry`.
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
    attach(core, &name, spec.consumers, spec.subscriptions).await;
    for group in spec.groups {
        core.groups.entry(group).or_default().push(name.clone());
    }
    // Timers the store holds for this agent from an earlier run fire from now on.
    core.timekeeper
        .agent_added(&core.timer_host(), Some(name.clone()));
    Ok(())
}

/// Starts the registered agent `name`'s durable consumers and bus subscriptions, kept with
/// the agent and ended when it is removed.
async fn attach(
    core: &Arc<RuntimeCore>,
    name: &str,
    consumers: Vec<crate::bus::ConsumerSpec>,
    subscriptions: Vec<motet_signals::Pattern>,
) {
    if !consumers.is_empty() {
        let consumers = super::consumers::start_consumers(core, name, consumers).await;
        if let Some(running) = core.agent(name) {
            running.keep_consumers(consumers);
        }
    }
    if !subscriptions.is_empty() {
        let subscriptions: Vec<Subscription> = subscriptions
            .into_iter()
            .map(|pattern| {
                let weak = Arc::downgrade(core);
                let agent = name.to_owned();
                core.bus.subscribe(pattern, move |signal: &Signal| {
                    deliver_to(&weak, &agent, signal)
                })
            })
            .collect();
        if let Some(running) = core.agent(name) {
            running.keep_subscriptions(subscriptions);
        }
    }
}

#[async_trait::async_trait]
impl<S> AgentEntry for HostedAgent<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    fn spawning(&self) -> &tokio::sync::Mutex<()> {
        &self.spawning
    }

    fn supervision(&self) -> Supervision {
        self.supervision.as_deref().copied().unwrap_or_default()
    }

    fn parent(&self) -> Option<&Parent> {
        self.parent.as_deref()
    }

    fn activation(&self) -> Option<&Activation> {
        self.activation.as_deref()
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn idempotent_tools(&self) -> Vec<String> {
        HostedAgent::idempotent_tools(self)
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

impl<S> HostedAgent<S>
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
            store_id: ThreadKey::store_id_of(&self.name, &thread_id).into_boxed_str(),
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
    let error = match error {
        ractor::SpawnErr::StartupFailed(cause) => match cause.downcast::<StoreError>() {
            Ok(store) => return RuntimeError::Store((*store).into()),
            Err(cause) => ractor::SpawnErr::StartupFailed(cause),
        },
        error => error,
    };
    RuntimeError::SpawnFailed {
        name: agent.to_owned(),
        message: error.to_string(),
    }
}
