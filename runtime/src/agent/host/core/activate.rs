//! Virtual agents in the registry: activated by the first message addressed to them,
//! deactivated once their threads have stopped, and, past the cap's high water, the least
//! recently used idle ones asked to stop (host/virtuals.rs decides which).

use std::sync::{Arc, Weak};
use std::time::Duration;

use motet_signals::{Delivery, Pattern, Signal};

use super::{AgentEntry, DEFAULT_THREAD, RuntimeCore, ThreadMsg};
use crate::agent::errors::RuntimeError;
use crate::agent::host::virtuals::{self, Candidate};

/// How long an activation waits for room when the cap is reached before it goes over it
/// (with a warning): every active agent may be busy.
const ROOM_PATIENCE: Duration = Duration::from_secs(60);

/// How many times an activation is tried when the agent is deactivated again before its first
/// message reaches it.
const ACTIVATION_ATTEMPTS: usize = 8;

/// How long a round of deactivations waits for the threads it asked to stop.
const ROUND_PATIENCE: Duration = Duration::from_secs(2);

impl RuntimeCore {
    /// The registered agent `name`, or, when it names a virtual agent of a registered kind,
    /// that agent activated now (its threads load from the store as messages reach them).
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when no agent of that name is registered and it names no
    /// virtual agent; [`RuntimeError::SpawnFailed`] when its kind cannot build it.
    pub(crate) async fn activate(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<Arc<dyn AgentEntry>, RuntimeError> {
        if let Some(agent) = self.agent(name) {
            if let Some(mark) = agent.activation() {
                mark.touch(self.activations.tick());
            }
            return Ok(agent);
        }
        let not_running = || RuntimeError::NotRunning {
            name: name.to_owned(),
        };
        let (kind, key) = virtuals::split(name).ok_or_else(not_running)?;
        let factory = self.virtual_kinds.get(kind).ok_or_else(not_running)?;
        // In a cluster, only under its lease: another node's, and the caller is told where.
        if let Some(node) = &self.cluster {
            node.acquire(name).await?;
        }
        let activated = self.activate_virtual(name, key, factory).await;
        if activated.is_err()
            && let Some(node) = &self.cluster
            && self.agent(name).is_none()
        {
            node.release(name);
        }
        activated
    }

    /// Builds the virtual agent `name` (`key` of its kind) with `factory`, making room for it
    /// under the cap, and returns it once registered.
    async fn activate_virtual(
        self: &Arc<Self>,
        name: &str,
        key: &str,
        factory: &super::VirtualFactory,
    ) -> Result<Arc<dyn AgentEntry>, RuntimeError> {
        let not_running = || RuntimeError::NotRunning {
            name: name.to_owned(),
        };
        for _ in 0..ACTIVATION_ATTEMPTS {
            self.take_room().await;
            match factory(Arc::clone(self), name.to_owned(), key.to_owned()).await {
                Ok(()) => {}
                // Activated by a racing message meanwhile, which took a place of its own.
                Err(RuntimeError::NameTaken { .. }) => self.activations.deactivated(),
                Err(error) => {
                    self.activations.deactivated();
                    return Err(error);
                }
            }
            if self.activations.active() > self.activations.high_water() {
                self.make_room();
            }
            if let Some(agent) = self.agent(name) {
                return Ok(agent);
            }
            // Deactivated before a thread of it started (an idle sweep or a round took it,
            // threadless): activated again.
            tracing::debug!(agent = %name, "a virtual agent left before its first message reached it; activating it again");
        }
        Err(not_running())
    }

    /// Subscribes each route on the bus: a signal it matches goes to the default thread of
    /// `<kind>:<subject>`.
    pub(crate) fn add_routes(self: &Arc<Self>, routes: Vec<(Pattern, String)>) {
        if routes.is_empty() {
            return;
        }
        let subscriptions: Vec<_> = routes
            .into_iter()
            .map(|(pattern, kind)| {
                let core = Arc::downgrade(self);
                self.bus
                    .subscribe(pattern, move |signal: &Signal| route(&core, &kind, signal))
            })
            .collect();
        if let Ok(mut kept) = self.routes.lock() {
            kept.extend(subscriptions);
        }
    }

    /// Whether `name` names a virtual agent of a registered kind (active or not).
    pub(crate) fn is_virtual(&self, name: &str) -> bool {
        virtuals::split(name).is_some_and(|(kind, _)| self.virtual_kinds.contains_key(kind))
    }

    /// The registered virtual kinds.
    pub(crate) fn virtual_kind_names(&self) -> Vec<String> {
        self.virtual_kinds.keys().cloned().collect()
    }

    /// Takes a place among the active agents for one more, waiting while the cap is reached
    /// for a round of deactivations to make room — a round every [`ROUND_PATIENCE`] at most,
    /// as busy agents become idle — and past [`ROOM_PATIENCE`] goes over the cap.
    async fn take_room(self: &Arc<Self>) {
        let deadline = tokio::time::Instant::now() + ROOM_PATIENCE;
        loop {
            // Made before the try: a place given back in between wakes it.
            let room = self.activations.room.notified();
            if self.activations.reserve() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(
                    cap = self.activations.cap,
                    "every active virtual agent is busy: one more is activated over the cap"
                );
                self.activations.activated();
                return;
            }
            self.make_room();
            let next_round = (tokio::time::Instant::now() + ROUND_PATIENCE).min(deadline);
            let _ = tokio::time::timeout_at(next_round, room).await;
        }
    }

    /// Starts a round of deactivations unless one runs: the least recently used idle virtual
    /// agents are asked to stop their threads until the low water is reached.
    pub(crate) fn make_room(self: &Arc<Self>) {
        if !self.activations.begin_round() {
            return;
        }
        let core = Arc::clone(self);
        tokio::spawn(async move {
            core.deactivation_round().await;
            core.activations.end_round();
        });
    }

    /// One round: the victims chosen, those without threads deactivated at once, the others'
    /// threads asked to stop when quiet ([`ThreadMsg::Evict`]) and deactivated as they do.
    async fn deactivation_round(self: &Arc<Self>) {
        let round = self.activations.tick();
        let mut names = Vec::new();
        let mut candidates = Vec::new();
        for entry in self.agents.iter() {
            let Some(mark) = entry.value().activation() else {
                continue;
            };
            let last_used = mark.last_used();
            names.push(entry.key().clone());
            candidates.push(Candidate {
                last_used,
                held: last_used >= round,
            });
        }
        let chosen = virtuals::victims(&candidates, self.activations.low_water());
        // Those without threads leave now; the others' threads stop as they handle the
        // message (busy ones stay), and the last to stop deactivates its agent (actor.rs).
        let mut stopping = Vec::new();
        for index in chosen {
            let name = &names[index];
            if self.deactivate(name) {
                continue;
            }
            if let Some(agent) = self.agent(name) {
                for thread in agent.threads() {
                    if thread.cast(ThreadMsg::Evict).is_ok() {
                        stopping.push(thread);
                    }
                }
            }
        }
        // The round ends once they have stopped, or at [`ROUND_PATIENCE`] (a busy thread
        // stays): meanwhile no other round starts on the same victims.
        let deadline = tokio::time::Instant::now() + ROUND_PATIENCE;
        let mut pause = Duration::from_micros(200);
        while self.activations.active() > self.activations.high_water()
            && stopping
                .iter()
                .any(|t| t.get_status() == ractor::ActorStatus::Running)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Takes the virtual agent `name` out of the registry when none of its threads runs and
    /// none is starting (it holds nothing then: everything it did is committed); returns
    /// whether it did. A message for it afterwards activates it again.
    pub(crate) fn deactivate(&self, name: &str) -> bool {
        let Some(agent) = self.agent(name) else {
            return false;
        };
        let Some(mark) = agent.activation() else {
            return false;
        };
        // A thread starting holds the spawning lock: leave the agent be.
        let Ok(_starting) = agent.spawning().try_lock() else {
            return false;
        };
        if agent.thread_count() > 0 || self.restarting_any(name) {
            return false;
        }
        mark.retire();
        let removed = self
            .agents
            .remove_if(name, |_, entry| Arc::ptr_eq(entry, &agent))
            .is_some();
        if removed {
            agent.end_subscriptions();
            self.costs.forget_agent(name);
            self.activations.deactivated();
            if let Some(node) = &self.cluster {
                node.release(name);
            }
        }
        removed
    }

    /// In a cluster, a commit found the lease of `name` lost: every thread of it here stops
    /// as soon as it is quiet, and the agent is deactivated (a message for it afterwards asks
    /// for the lease again, and learns who holds it).
    pub(crate) fn lease_lost(&self, name: &str) {
        if let Some(node) = &self.cluster {
            node.lost(name);
        }
        if self.deactivate(name) {
            return;
        }
        if let Some(agent) = self.agent(name) {
            for thread in agent.threads() {
                let _ = thread.cast(ThreadMsg::Evict);
            }
        }
    }

    /// Deactivates every virtual agent whose threads have all stopped (the idle sweeper's
    /// pass).
    pub(crate) fn deactivate_stopped(&self) {
        let idle: Vec<String> = self
            .agents
            .iter()
            .filter(|e| e.value().activation().is_some() && e.value().thread_count() == 0)
            .map(|e| e.key().clone())
            .collect();
        for name in idle {
            self.deactivate(&name);
        }
    }
}

impl RuntimeCore {
    /// The virtual agents active here.
    pub(crate) fn hosted_virtual(&self) -> Vec<String> {
        self.agents
            .iter()
            .filter(|e| e.value().activation().is_some())
            .map(|e| e.key().clone())
            .collect()
    }

    /// In a cluster, `name` belongs on another node now: its threads stop once quiet (a busy
    /// one turns it down) and it is deactivated, giving its lease back.
    pub(crate) fn hand_over(&self, name: &str) {
        if self.deactivate(name) {
            return;
        }
        if let Some(agent) = self.agent(name) {
            for thread in agent.threads() {
                let _ = thread.cast(ThreadMsg::Evict);
            }
        }
    }

    /// The node lost its membership: every virtual agent here stops.
    pub(crate) fn give_up_all(&self) {
        let leased: Vec<String> = self
            .agents
            .iter()
            .filter(|e| e.value().activation().is_some())
            .map(|e| e.key().clone())
            .collect();
        for name in leased {
            self.lease_lost(&name);
        }
    }
}

/// Delivers a routed `signal` to the default thread of `<kind>:<subject>`, on a task (which
/// activates the agent if need be): the publisher never waits.
fn route(core: &Weak<RuntimeCore>, kind: &str, signal: &Signal) -> Delivery {
    let Some(core) = core.upgrade() else {
        return Delivery::Closed;
    };
    let Some(name) = signal
        .subject()
        .and_then(|key| virtuals::name_of(kind, key).ok())
    else {
        tracing::debug!(%kind, signal = %signal.id(), "a routed signal has no subject that keys an agent: not delivered");
        return Delivery::Delivered;
    };
    let msg = ThreadMsg::Signal(signal.clone());
    tokio::spawn(async move {
        if let Err(error) = core.send(&name, DEFAULT_THREAD, msg).await {
            tracing::warn!(agent = %name, %error, "a routed signal could not be delivered");
        }
    });
    Delivery::Delivered
}
