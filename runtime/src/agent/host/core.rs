//! What every agent of a runtime shares, in one place: [`RuntimeCore`] (the agents by name, the
//! bus, the store, the LLM client and its limits, groups, kinds, requests), the mailbox every
//! thread actor reads ([`ThreadMsg`]), an agent's entry in the registry ([`HostedAgent`] behind the
//! strategy-free [`AgentEntry`]) and, from the store, the key of a thread ([`ThreadKey`]).
//!
//! A leaf: it names no other part of the host. The actor, the executors, the supervisor and the
//! caller's side all reach each other through it, never the other way round.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use motet_agents::Env as _;
use motet_providers::LlmClient;
use motet_signals::{Bus, Signal, Subscription};
use ractor::{ActorId, ActorRef};
use tokio::task::AbortHandle;

mod activate;
mod hosted;
mod mailbox;
mod remote;

use super::outbox::{ExternalBus, Outgoing};
use crate::agent::activity::Activity;
use crate::agent::costs::Costs;
use crate::agent::env::SystemEnv;
use crate::agent::errors::RuntimeError;
use crate::agent::events::CHILD_STOPPED;
use crate::agent::requests::RequestRecords;
pub(crate) use crate::store::ThreadKey;
use crate::store::ThreadStore;
use crate::supervisor::Supervision;
pub(crate) use hosted::{HostedAgent, Labels, Parent};
pub(crate) use mailbox::{ThreadMsg, deliver};

/// The id of every agent's default thread, used when a caller names none.
pub const DEFAULT_THREAD: &str = "default";

/// The thread id that asks for a fresh thread.
pub const NEW_THREAD: &str = "new";

/// A concurrent map keyed by names and ids that arrive with requests: foldhash, seeded at
/// random per map, costs a fraction of SipHash on these short keys and still keeps an outsider
/// choosing thread ids from predicting collisions.
pub(crate) type Registry<K, V> = DashMap<K, V, foldhash::fast::RandomState>;

/// What every agent of a runtime shares.
pub(crate) struct RuntimeCore {
    pub(crate) llm: Arc<dyn LlmClient>,
    pub(crate) bus: Arc<Bus>,
    /// The registry, first level: the agents by name. Each agent holds the second: its running
    /// threads by thread id (`AgentEntry::thread`), so (agent, thread id) → the owning actor.
    pub(crate) agents: Registry<String, Arc<dyn AgentEntry>>,
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
    /// Virtual agent kinds by name: `<kind>:<key>` is activated by the first message for it.
    pub(crate) virtual_kinds: HashMap<String, VirtualFactory>,
    /// How many virtual agents are active, the cap, and the use clock.
    pub(crate) activations: super::virtuals::Activations,
    /// The bus subscriptions that route signals to virtual agents by subject.
    pub(crate) routes: std::sync::Mutex<Vec<Subscription>>,
    /// Every request's status, timestamps and result.
    pub(crate) requests: RequestRecords,
    /// `llm.delta` as a parsed type, to ask the bus whether anyone listens.
    pub(crate) delta_type: Option<motet_signals::SignalType>,
    /// Where agents' durable consumers consume: the builder's durable bus, else the
    /// in-process bus behind the same trait ([`crate::bus::LocalBus`]).
    pub(crate) signal_bus: Arc<dyn crate::bus::SignalBus>,
    /// The durable bus the runtime was built with, which `Emit`s to the bus and replies also reach.
    pub(crate) external_bus: Option<ExternalBus>,
    /// What the agents have done so far: calls and tokens, for `Runtime::activity`.
    pub(crate) activity: Arc<Activity>,
    /// The price table, the hard budgets and what each budgeted level has spent.
    pub(crate) costs: Costs,
    /// The core's own bookkeeping of running threads.
    pub(crate) housekeeping: Housekeeping,
    /// The timers of every agent, kept in the store and fired on time.
    pub(crate) timekeeper: super::timekeeper::Timekeeper,
    /// Threads handed off to another agent: `(agent, thread)` to the agent its last handoff
    /// went to, one hop ([`RuntimeCore::held_by`]). Empty unless a handoff happened.
    pub(crate) holders: DashMap<(String, String), String>,
    /// In a cluster, this node's membership and the leases of the virtual agents it hosts.
    pub(crate) cluster: Option<Arc<crate::cluster::Node>>,
    /// In a cluster, the link to the other nodes: messages for an agent another node hosts go
    /// there ([`RuntimeCore::send`]).
    pub(crate) link: Option<Arc<dyn crate::cluster::link::Link>>,
    /// What this node answers on its link address, while it listens.
    pub(crate) listening: std::sync::Mutex<Option<crate::cluster::link::Listening>>,
}

/// Whether a message for an agent another node hosts goes there ([`RuntimeCore::send_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forward {
    /// Over the link to the node that hosts it.
    Yes,
    /// Not again: it came from another node, whose asker finds the agent anew.
    No,
}

/// What the core keeps for itself about running threads: which supervised actor runs which
/// thread, and the idle sweeper. Only the core's methods read or change it.
#[derive(Default)]
pub(crate) struct Housekeeping {
    /// The registry the other way round for supervised threads, so the supervisor finds a
    /// failed actor's thread (and when it started, among its agent's) at once.
    thread_keys: Registry<ActorId, Supervised>,
    /// The order supervised threads started in, for rest-for-one.
    started: AtomicU64,
    /// Threads waiting out a restart's backoff, and when they start again: a message for one
    /// waits until then.
    restarting: Registry<ThreadKey, tokio::time::Instant>,
    /// Thread actors that stopped themselves (a `Stop` directive): a normal exit, which
    /// restarts a permanent thread.
    stopped_themselves: Registry<ActorId, ()>,
    /// The sweeper that asks idle threads to stop, started with the first thread that has an
    /// idle timeout; the shortest timeout seen sets its pace. Held while one is started.
    idle_sweep: std::sync::Mutex<Option<AbortHandle>>,
    /// The sweeper's period in nanoseconds (0 while none runs), read without the lock.
    idle_period_ns: AtomicU64,
}

/// How long [`RuntimeCore::send`] waits for a thread whose actor is stopping.
pub(crate) const SEND_PATIENCE: Duration = Duration::from_secs(5);

impl RuntimeCore {
    /// This core as the timekeeper sees it.
    pub(crate) fn timer_host(self: &Arc<Self>) -> Arc<dyn super::timekeeper::TimerHost> {
        Arc::clone(self) as Arc<dyn super::timekeeper::TimerHost>
    }

    /// Records who holds thread `thread` of `agent`, as its committed entries say
    /// ([`motet_agents::delegate::holder`]): `receiver`, or `None` for the agent itself. Set
    /// when the thread is loaded and after each commit that decides it (host/actor/persist.rs),
    /// and by a handoff as it ends (agent/delegate/handoff.rs): the store's word, read back
    /// after a restart as each thread starts.
    pub(crate) fn held_by(&self, agent: &str, thread: &str, receiver: Option<&str>) {
        match receiver {
            Some(receiver) if receiver != agent => {
                self.holders
                    .insert((agent.to_owned(), thread.to_owned()), receiver.to_owned());
            }
            _ => {
                if !self.holders.is_empty() {
                    self.holders.remove(&(agent.to_owned(), thread.to_owned()));
                }
            }
        }
    }

    /// The agent thread `thread` of `agent` is handed to, when a handoff moved it (one hop).
    pub(crate) fn holder(&self, agent: &str, thread: &str) -> Option<String> {
        if self.holders.is_empty() {
            return None;
        }
        self.holders
            .get(&(agent.to_owned(), thread.to_owned()))
            .map(|held| held.value().clone())
    }

    /// The registered child that thread `thread` of `agent` spawned with `tag`, if any.
    pub(crate) fn child_of(&self, agent: &str, thread: &str, tag: &str) -> Option<String> {
        self.agents.iter().find_map(|entry| {
            let parent = entry.value().parent()?;
            (parent.agent == agent && parent.thread == thread && parent.tag == tag)
                .then(|| entry.key().clone())
        })
    }

    /// Whether anyone subscribed to `llm.delta`.
    pub(crate) fn wants_deltas(&self) -> bool {
        self.delta_type
            .as_ref()
            .is_some_and(|ty| self.bus.has_subscribers(ty))
    }

    /// The thread id a caller means: the default thread for `None`, a fresh id for `"new"`.
    pub(crate) fn thread_id(wanted: Option<&str>) -> String {
        match wanted {
            None => DEFAULT_THREAD.to_owned(),
            Some(NEW_THREAD) => SystemEnv.fresh_id("thread"),
            Some(id) => id.to_owned(),
        }
    }

    /// The registered agent `name`.
    pub(crate) fn agent(&self, name: &str) -> Option<Arc<dyn AgentEntry>> {
        self.agents.get(name).map(|f| f.value().clone())
    }

    /// The agents of group `name`.
    pub(crate) fn group_members(&self, name: &str) -> Vec<String> {
        self.groups
            .get(name)
            .map(|g| g.value().clone())
            .unwrap_or_default()
    }

    /// Every running thread actor of every agent.
    pub(crate) fn all_threads(&self) -> Vec<ActorRef<ThreadMsg>> {
        let agents: Vec<Arc<dyn AgentEntry>> =
            self.agents.iter().map(|e| e.value().clone()).collect();
        agents.iter().flat_map(|f| f.threads()).collect()
    }

    /// Sends `msg` to thread `thread` of `agent`, starting the thread's actor when none runs.
    ///
    /// An actor on its way out (draining after its idle timeout, or failed) turns the message
    /// away; it is then sent again, to the actor that comes after once the old one has left the
    /// registry (the messages it still held are handed to that successor first, see
    /// [`RuntimeCore::succeed`]), so a message is never lost to an actor that was stopping and
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
        msg: ThreadMsg,
    ) -> Result<(), RuntimeError> {
        self.send_with(agent, thread, msg, Forward::Yes).await
    }

    /// In a cluster with a link to the other nodes, the member the virtual agent `agent`
    /// is placed on when that is another node and the agent is not active here (an agent
    /// active here stays until it is handed over).
    pub(crate) fn placed_elsewhere(&self, agent: &str) -> Option<crate::store::MemberRecord> {
        let node = self.cluster.as_ref().filter(|_| self.link.is_some())?;
        if !self.is_virtual(agent) || self.agent(agent).is_some() {
            return None;
        }
        node.placed_elsewhere(agent)
    }

    /// [`RuntimeCore::send`], saying whether a message for an agent another node of the
    /// cluster hosts goes there (an ask, a signal or an expired wait; any other message, or
    /// one that came from another node, fails with [`RuntimeError::Elsewhere`]).
    pub(crate) async fn send_with(
        self: &Arc<Self>,
        agent: &str,
        thread: &str,
        mut msg: ThreadMsg,
        forward: Forward,
    ) -> Result<(), RuntimeError> {
        let not_running = || RuntimeError::NotRunning {
            name: agent.to_owned(),
        };
        let deadline = tokio::time::Instant::now() + SEND_PATIENCE;
        // In a cluster, an ask, a signal or an expired wait for a virtual agent not active here
        // goes to the node it is placed on, which activates it (or says which node still
        // holds it). Other messages (a durable delivery, a timer's firing) activate it here if
        // its lease is free, and fail with `Elsewhere` if another node holds it.
        if forward == Forward::Yes
            && msg.crosses_nodes()
            && let Some(link) = &self.link
            && let Some(place) = self.placed_elsewhere(agent)
        {
            return self
                .forward(link, &place.address, agent, thread, msg)
                .map_err(|_| RuntimeError::Elsewhere {
                    name: agent.to_owned(),
                    node: place.node,
                    address: place.address,
                });
        }
        loop {
            let running = match self.activate(agent).await {
                Ok(running) => running,
                Err(RuntimeError::Elsewhere {
                    name,
                    node,
                    address,
                }) => {
                    let elsewhere = RuntimeError::Elsewhere {
                        name,
                        node,
                        address: address.clone(),
                    };
                    let Some(link) = self.link.as_ref().filter(|_| forward == Forward::Yes) else {
                        return Err(elsewhere);
                    };
                    return self
                        .forward(link, &address, agent, thread, msg)
                        .map_err(|_| elsewhere);
                }
                Err(error) => return Err(error),
            };
            let actor = match running.thread(thread) {
                Some(actor) => actor,
                None => match self.ensure_thread(&running, thread, None).await {
                    Ok(actor) => actor,
                    // Deactivated meanwhile: activate it again.
                    Err(_) if is_retired(&running) && tokio::time::Instant::now() < deadline => {
                        continue;
                    }
                    Err(error) => return Err(error),
                },
            };
            match actor.cast(msg) {
                Ok(()) => return Ok(()),
                Err(ractor::MessagingErr::SendErr(back)) => msg = back,
                Err(_) => return Err(not_running()),
            }
            // Wait for the leaving actor to leave the registry, then send again.
            let mut pause = Duration::from_micros(50);
            while running
                .thread(thread)
                .is_some_and(|a| a.get_id() == actor.get_id())
            {
                if tokio::time::Instant::now() >= deadline {
                    return Err(not_running());
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(10));
            }
        }
    }

    /// Makes sure thread `thread` of `agent` runs, and returns its actor: the running one, or
    /// one started now. Starts are serialised by the agent's spawning lock, so racing asks start
    /// a thread once.
    ///
    /// With `leaving` (an actor that is stopping, and the messages it held), a new actor is
    /// started in its place unless another already took it, and the held messages are handed
    /// to it, in order, before it is registered: a sender waiting for `leaving` to go can reach
    /// the successor only after them.
    pub(crate) async fn ensure_thread(
        self: &Arc<Self>,
        agent: &Arc<dyn AgentEntry>,
        thread: &str,
        leaving: Option<(ActorId, Vec<ThreadMsg>)>,
    ) -> Result<ActorRef<ThreadMsg>, RuntimeError> {
        self.wait_out_restart(agent.name(), thread).await;
        let _guard = agent.spawning().lock().await;
        if is_retired(agent) {
            return Err(RuntimeError::NotRunning {
                name: agent.name().to_owned(),
            });
        }
        let leaving_id = leaving.as_ref().map(|(id, _)| *id);
        if let Some(actor) = agent.thread(thread)
            && Some(actor.get_id()) != leaving_id
        {
            // Another actor took the thread (a virtual agent come back meanwhile): it gets
            // what the leaving one held, after what it has.
            if let Some((_, held)) = leaving {
                for msg in held {
                    if actor.cast(msg).is_err() {
                        tracing::warn!(agent = %agent.name(), %thread, "a message for a stopping thread could not be handed on");
                    }
                }
            }
            return Ok(actor);
        }
        let actor = match agent
            .clone()
            .spawn_thread(self.clone(), thread.to_owned())
            .await
        {
            Ok(actor) => actor,
            Err(error) => {
                if let Some(id) = leaving_id {
                    agent.forget_thread(thread, id);
                }
                return Err(error);
            }
        };
        if let Some((_, held)) = leaving {
            let mut lost = 0;
            for msg in held {
                if actor.cast(msg).is_err() {
                    lost += 1;
                }
            }
            if lost > 0 {
                tracing::warn!(agent = %agent.name(), %thread, lost, "messages for a stopping thread could not be handed on");
            }
        }
        agent.insert_thread(thread.to_owned(), actor.clone());
        Ok(actor)
    }

    /// Starts the successor of the thread actor `leaving` and hands it `held`, the messages
    /// `leaving` received before it closed its mailbox ([`RuntimeCore::ensure_thread`]).
    pub(crate) async fn succeed(
        self: &Arc<Self>,
        key: &ThreadKey,
        leaving: ActorId,
        held: Vec<ThreadMsg>,
    ) {
        // A virtual agent deactivated meanwhile comes back for them.
        let agent = match self.activate(&key.agent).await {
            Ok(agent) => agent,
            Err(error) => {
                tracing::warn!(agent = %key.agent, thread = %key.thread, %error, held = held.len(), "messages for a stopping thread were dropped: its agent is gone");
                return;
            }
        };
        if let Err(error) = self
            .ensure_thread(&agent, &key.thread, Some((leaving, held)))
            .await
        {
            tracing::error!(agent = %key.agent, thread = %key.thread, %error, "could not start a thread to take the messages its stopping actor held");
        }
    }

    /// Removes the agent `name` from the registry and ends its bus subscriptions.
    pub(crate) fn remove_agent(&self, name: &str) -> Option<Arc<dyn AgentEntry>> {
        let (_, agent) = self.agents.remove(name)?;
        agent.end_subscriptions();
        Some(agent)
    }

    /// Stops the agent `name` and, first, every agent it started (children, recursively).
    /// With `tell_parent`, the agent's parent (when it has one) is sent `agent.child.stopped`
    /// saying why — not when the parent stopped it itself, nor when it stops with its parent.
    pub(crate) fn stop_agent(self: &Arc<Self>, name: &str, reason: &str, tell_parent: bool) {
        let children: Vec<String> = self
            .agents
            .iter()
            .filter(|e| e.value().parent().is_some_and(|p| p.agent == name))
            .map(|e| e.key().clone())
            .collect();
        for child in children {
            self.stop_agent(&child, reason, false);
        }
        let agent = self.remove_agent(name);
        if tell_parent && let Some(parent) = agent.as_ref().and_then(|a| a.parent().cloned()) {
            self.tell_parent(parent, name, reason);
        }
        for mut group in self.groups.iter_mut() {
            group.retain(|member| member != name);
        }
        for actor in agent.map(|f| f.threads()).unwrap_or_default() {
            actor.stop(Some(reason.to_owned()));
        }
    }

    /// Sends `parent` `agent.child.stopped` about its child `name`, stopped for `reason`.
    fn tell_parent(self: &Arc<Self>, parent: Parent, name: &str, reason: &str) {
        let event = crate::agent::events::ChildEvent {
            tag: parent.tag.clone(),
            name: name.to_owned(),
            message: Some(reason.to_owned()),
        };
        let thread = Some(parent.thread.as_str());
        let Some(signal) = crate::agent::signals::notice(CHILD_STOPPED, thread, event) else {
            return;
        };
        let core = self.clone();
        tokio::spawn(async move {
            let msg = ThreadMsg::Signal(signal);
            if let Err(error) = core.send(&parent.agent, &parent.thread, msg).await {
                tracing::debug!(parent = %parent.agent, %error, "a child's stop was reported after its parent stopped");
            }
        });
    }

    /// Records that the supervised actor `id` runs the thread `key`, started after every
    /// thread watched before it.
    pub(crate) fn watch_thread(&self, id: ActorId, key: ThreadKey) {
        let seq = self.housekeeping.started.fetch_add(1, Ordering::Relaxed);
        self.housekeeping
            .thread_keys
            .insert(id, Supervised { key, seq });
    }

    /// Forgets the supervised thread actor `id`, returning its thread when it was registered,
    /// and takes it out of its agent's running threads if it is still the one running it.
    pub(crate) fn forget_thread(&self, id: ActorId) -> Option<Supervised> {
        let (_, supervised) = self.housekeeping.thread_keys.remove(&id)?;
        if let Some(agent) = self.agent(&supervised.key.agent) {
            agent.forget_thread(&supervised.key.thread, id);
        }
        Some(supervised)
    }

    /// The supervised threads of agent `agent`, in the order they started.
    pub(crate) fn supervised_threads(&self, agent: &str) -> Vec<(Supervised, ActorId)> {
        let mut threads: Vec<(Supervised, ActorId)> = self
            .housekeeping
            .thread_keys
            .iter()
            .filter(|e| &*e.value().key.agent == agent)
            .map(|e| (e.value().clone(), *e.key()))
            .collect();
        threads.sort_by_key(|(s, _)| s.seq);
        threads
    }

    /// Notes that the thread `key` restarts at `at`, after its backoff: messages for it wait.
    pub(crate) fn restart_at(&self, key: ThreadKey, at: tokio::time::Instant) {
        self.housekeeping.restarting.insert(key, at);
    }

    /// The thread `key` has restarted (or will not): messages for it go on.
    pub(crate) fn restarted(&self, key: &ThreadKey) {
        self.housekeeping.restarting.remove(key);
    }

    /// Whether a thread of `agent` waits out a restart's backoff.
    pub(crate) fn restarting_any(&self, agent: &str) -> bool {
        !self.housekeeping.restarting.is_empty()
            && self
                .housekeeping
                .restarting
                .iter()
                .any(|e| &*e.key().agent == agent)
    }

    /// Waits until thread `thread` of `agent` is due to restart, when it waits out a backoff.
    async fn wait_out_restart(&self, agent: &str, thread: &str) {
        if self.housekeeping.restarting.is_empty() {
            return;
        }
        let key = ThreadKey::new(agent, thread);
        let due = self.housekeeping.restarting.get(&key).map(|at| *at.value());
        if let Some(due) = due {
            tokio::time::sleep_until(due).await;
        }
    }

    /// Notes that the thread actor `id` stops itself (a `Stop` directive): a normal exit.
    pub(crate) fn stops_itself(&self, id: ActorId) {
        self.housekeeping.stopped_themselves.insert(id, ());
    }

    /// Whether the thread actor `id`, which terminated, had stopped itself.
    pub(crate) fn stopped_itself(&self, id: ActorId) -> bool {
        self.housekeeping.stopped_themselves.remove(&id).is_some()
    }

    /// Makes sure a sweeper asks every thread, at least every `idle / 2`, whether it has been
    /// idle long enough to stop. One task for the whole runtime, not one per thread.
    pub(crate) fn watch_idle(self: &Arc<Self>, idle: Duration) {
        let period = (idle / 2).max(Duration::from_millis(1));
        // Every thread start asks; all but the first of each timeout get their answer here,
        // without the lock.
        let period_ns = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        let swept = |core: &Self| {
            let current = core.housekeeping.idle_period_ns.load(Ordering::Acquire);
            current != 0 && current <= period_ns
        };
        if swept(self) {
            return;
        }
        let Ok(mut sweep) = self.housekeeping.idle_sweep.lock() else {
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
                let Some(strong) = core.upgrade() else {
                    break;
                };
                // Virtual agents whose threads stopped since the last pass leave memory.
                strong.deactivate_stopped();
                let threads = strong.all_threads();
                drop(strong);
                for thread in threads {
                    let _ = thread.cast(ThreadMsg::IdleCheck);
                }
            }
        });
        *sweep = Some(task.abort_handle());
        self.housekeeping
            .idle_period_ns
            .store(period_ns, Ordering::Release);
    }

    /// Ends the core's own work at shutdown: the supervisor, the idle sweeper and the record of
    /// supervised threads.
    pub(crate) fn shut_down(&self) {
        self.housekeeping.thread_keys.clear();
        if let Some(supervisor) = self.supervisor.get() {
            supervisor.stop(None);
        }
        if let Ok(mut sweep) = self.housekeeping.idle_sweep.lock()
            && let Some(task) = sweep.take()
        {
            task.abort();
            self.housekeeping.idle_period_ns.store(0, Ordering::Release);
        }
        self.timekeeper.stop();
    }

    /// Hands a signal to the durable bus's publisher, when the runtime has a durable bus beside
    /// the in-process one.
    pub(crate) fn publish_durable(&self, signal: &Signal, kind: Outgoing) {
        if let Some(external) = &self.external_bus {
            external.publish(signal, kind);
        }
    }

    /// Waits, at most `patience`, until every signal handed to the durable bus's publisher was
    /// published (or given up); `false` when some were still waiting.
    pub(crate) async fn flush_durable(&self, patience: Duration) -> bool {
        match &self.external_bus {
            Some(external) => external.flush(patience).await,
            None => true,
        }
    }
}

/// A supervised thread actor: its thread and the order it started in.
#[derive(Debug, Clone)]
pub(crate) struct Supervised {
    pub(crate) key: ThreadKey,
    pub(crate) seq: u64,
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

/// Activates the virtual agent named (first) with its key (second): builds its spec and
/// registers it, threads not started.
pub(crate) type VirtualFactory = Arc<
    dyn Fn(
            Arc<RuntimeCore>,
            String,
            String,
        ) -> futures::future::BoxFuture<'static, Result<(), RuntimeError>>
        + Send
        + Sync,
>;

/// Whether `agent` is a virtual agent taken out of the registry.
fn is_retired(agent: &Arc<dyn AgentEntry>) -> bool {
    agent
        .activation()
        .is_some_and(super::virtuals::Activation::is_retired)
}

/// One agent's entry in the registry, whatever its strategy type.
#[async_trait::async_trait]
pub(crate) trait AgentEntry: Send + Sync {
    /// The agent's name.
    fn name(&self) -> &str;
    /// Held while one of the agent's threads starts.
    fn spawning(&self) -> &tokio::sync::Mutex<()>;
    /// How the agent's threads are supervised.
    fn supervision(&self) -> Supervision;
    /// Keeps the agent's bus subscriptions, ended with the agent.
    fn keep_subscriptions(&self, subscriptions: Vec<Subscription>);
    /// Keeps the tasks of the agent's durable consumers, aborted with its subscriptions.
    fn keep_consumers(&self, consumers: Vec<AbortHandle>);
    /// Drops the agent's bus subscriptions (its threads may outlive it briefly while they stop).
    fn end_subscriptions(&self);
    /// The agent thread that spawned this agent.
    fn parent(&self) -> Option<&Parent>;
    /// A virtual agent's mark (last use, retired); `None` for a spawned agent.
    fn activation(&self) -> Option<&super::virtuals::Activation>;
    /// The names of the agent's tools that are safe to run twice.
    fn idempotent_tools(&self) -> Vec<String>;
    /// The running actor of thread `id`.
    fn thread(&self, id: &str) -> Option<ActorRef<ThreadMsg>>;
    /// Records the running actor of thread `id`.
    fn insert_thread(&self, id: String, actor: ActorRef<ThreadMsg>);
    /// Removes thread `id` from the agent's running threads, returning its actor.
    fn remove_thread(&self, id: &str) -> Option<ActorRef<ThreadMsg>>;
    /// Forgets thread `id` when `actor` is still the one running it.
    fn forget_thread(&self, id: &str, actor: ActorId);
    /// The actors of the agent's running threads.
    fn threads(&self) -> Vec<ActorRef<ThreadMsg>>;
    /// How many threads of the agent are running.
    fn thread_count(&self) -> usize;
    /// Starts the actor of thread `thread_id` (not yet registered: [`RuntimeCore::ensure_thread`]
    /// does that).
    async fn spawn_thread(
        self: Arc<Self>,
        core: Arc<RuntimeCore>,
        thread_id: String,
    ) -> Result<ActorRef<ThreadMsg>, RuntimeError>;
}

impl super::timekeeper::TimerHost for RuntimeCore {
    fn timer_store(&self) -> Arc<dyn ThreadStore> {
        Arc::clone(&self.store)
    }

    fn agent_names(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.key().clone()).collect()
    }

    fn has_agent(&self, name: &str) -> bool {
        self.agents.contains_key(name) || self.is_virtual(name)
    }

    fn virtual_kinds(&self) -> Vec<String> {
        self.virtual_kind_names()
    }

    fn deliver(
        self: Arc<Self>,
        key: ThreadKey,
        signal: Signal,
        settles: Option<Box<crate::store::TimerWrite>>,
    ) -> futures::future::BoxFuture<'static, Result<super::timekeeper::Answer, RuntimeError>> {
        Box::pin(async move {
            let (committed, answer) = tokio::sync::oneshot::channel();
            let msg = ThreadMsg::Delivered {
                signal,
                committed,
                settles,
            };
            self.send(key.agent(), key.thread(), msg).await?;
            Ok(answer)
        })
    }
}
