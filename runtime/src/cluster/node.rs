//! The node: this process's membership in the cluster and the leases it holds.
//!
//! It joins (a new generation), sends a heartbeat every third of the lease's time to live, and
//! takes an agent's lease before the agent is activated here. A heartbeat the store no longer
//! acknowledges in time, or one it answers [`Heartbeat::Gone`], means the other nodes may have
//! taken this node's agents: it gives them all up (their commits would be refused anyway) and
//! joins again as a new generation. Which of that happens when is decided by
//! [`plan::standing`]; this file only carries it out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use futures::future::BoxFuture;
use tokio::time::Instant;

use super::plan::{self, Member, Standing};
use crate::agent::RuntimeError;
use crate::store::{ClusterStore, Heartbeat, LeaseFence, LeaseGrant, MemberRecord, StoreError};

/// The default time to live of a membership, and so of the leases it holds: a dead node's
/// agents move after at most this long.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(5);

/// How a runtime takes part in a cluster ([`RuntimeBuilder::cluster`]).
///
/// [`RuntimeBuilder::cluster`]: crate::agent::RuntimeBuilder::cluster
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// This node's id, stable across its restarts (`MOTET_NODE_ID`).
    pub node: String,
    /// Where the other nodes reach this one; by default its id.
    pub address: String,
    /// How long a membership, and every lease it holds, lives without a heartbeat.
    pub lease_ttl: Duration,
}

impl ClusterConfig {
    /// A node named `node`, reached at its name, under [`DEFAULT_LEASE_TTL`].
    pub fn new(node: impl Into<String>) -> Self {
        let node = node.into();
        Self {
            address: node.clone(),
            node,
            lease_ttl: DEFAULT_LEASE_TTL,
        }
    }

    /// The time to live of the membership and its leases (at least 300 ms).
    #[must_use]
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl.max(Duration::from_millis(300));
        self
    }

    /// Where other nodes reach this one.
    #[must_use]
    pub fn with_address(mut self, address: impl Into<String>) -> Self {
        self.address = address.into();
        self
    }
}

/// This start of the node as a member: its generation and when the last heartbeat the store
/// acknowledged was sent.
#[derive(Debug, Clone, Copy)]
struct Joined {
    generation: u64,
    last_ok: Instant,
}

/// A lease this node holds: under which generation, at which epoch.
#[derive(Debug, Clone, Copy)]
struct Held {
    generation: u64,
    epoch: u64,
}

/// What the node asks of the runtime it is part of.
pub(crate) trait Hosting: Send + Sync {
    /// Whether the runtime still runs (the node leaves once it does not).
    fn alive(&self) -> bool;
    /// Every leased agent is to stop now: its threads stop as they can, and it is deactivated.
    fn give_up_all(&self);
    /// The virtual agents active here.
    fn hosted(&self) -> Vec<String>;
    /// `agent` belongs on another node now: its threads stop once no request of theirs is
    /// open, and it is deactivated, giving its lease back (a busy one stays until it is idle).
    fn hand_over(&self, agent: &str);
    /// Takes `agent` over from a member that died or left: activates it here (taking its
    /// lease) and resumes what its threads `threads` (store ids) owe.
    fn adopt(&self, agent: String, threads: Vec<String>) -> BoxFuture<'static, ()>;
}

/// How many orphaned agents a node looks at per heartbeat.
const ADOPT_PAGE: usize = 256;

/// This process's membership and leases.
pub(crate) struct Node {
    config: ClusterConfig,
    store: Arc<dyn ClusterStore>,
    joined: Mutex<Option<Joined>>,
    /// Notified at each join.
    joins: tokio::sync::Notify,
    leases: DashMap<String, Held>,
    members: Mutex<Vec<MemberRecord>>,
    /// Set once the node left: it does not join again.
    left: std::sync::atomic::AtomicBool,
}

impl Node {
    /// A node of `config` over `store`, not joined yet ([`Node::run`] joins).
    pub(crate) fn new(config: ClusterConfig, store: Arc<dyn ClusterStore>) -> Self {
        Self {
            config,
            store,
            joined: Mutex::new(None),
            joins: tokio::sync::Notify::new(),
            leases: DashMap::new(),
            members: Mutex::new(Vec::new()),
            left: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Where the other nodes reach this one.
    pub(crate) fn address(&self) -> &str {
        &self.config.address
    }

    fn joined(&self) -> Option<Joined> {
        self.joined.lock().ok().and_then(|j| *j)
    }

    /// The generation of this start, once joined.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.joined().map(|j| j.generation)
    }

    /// The live members, as last read.
    pub(crate) fn members(&self) -> Vec<MemberRecord> {
        self.members.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The lease `agent`'s commits carry, if this node holds it under its current generation.
    pub(crate) fn fence<'a>(&self, agent: &'a str) -> Option<LeaseFence<'a>> {
        let generation = self.generation()?;
        let held = self.leases.get(agent)?;
        (held.generation == generation).then_some(LeaseFence {
            agent,
            generation,
            epoch: held.epoch,
        })
    }

    /// Takes the lease of `agent` for this node, or says who holds it.
    ///
    /// # Errors
    /// [`RuntimeError::Elsewhere`] when another live node holds it; [`RuntimeError::NotHosting`]
    /// when this node has not joined within a time to live, stands in doubt or lost its
    /// membership; [`RuntimeError::Store`] when the store fails.
    pub(crate) async fn acquire(&self, agent: &str) -> Result<(), RuntimeError> {
        let joined = self.wait_joined(agent).await?;
        if self
            .leases
            .get(agent)
            .is_some_and(|h| h.generation == joined.generation)
        {
            return Ok(());
        }
        let standing = plan::standing(joined.last_ok.elapsed(), self.config.lease_ttl);
        if standing != Standing::Healthy {
            return Err(not_hosting(
                agent,
                "its membership is in doubt (heartbeats are late)",
            ));
        }
        let grant = self
            .store
            .acquire(agent, joined.generation)
            .await
            .map_err(|e| RuntimeError::Store(e.into()))?;
        match grant {
            LeaseGrant::Held { epoch, taken } => {
                self.leases.insert(
                    agent.to_owned(),
                    Held {
                        generation: joined.generation,
                        epoch,
                    },
                );
                tracing::info!(target: "motet::lease", %agent, node = %self.config.node, generation = joined.generation, epoch, taken, "lease acquired");
                Ok(())
            }
            LeaseGrant::Elsewhere(holder) => Err(RuntimeError::Elsewhere {
                name: agent.to_owned(),
                node: holder.node,
                address: holder.address,
            }),
            LeaseGrant::NotMember => Err(not_hosting(agent, "its membership is gone")),
        }
    }

    /// Waits for the node to have joined, at most a time to live.
    async fn wait_joined(&self, agent: &str) -> Result<Joined, RuntimeError> {
        let deadline = Instant::now() + self.config.lease_ttl;
        loop {
            let joining = self.joins.notified();
            if let Some(joined) = self.joined() {
                return Ok(joined);
            }
            if tokio::time::timeout_at(deadline, joining).await.is_err() {
                return Err(not_hosting(agent, "it has not joined the cluster"));
            }
        }
    }

    /// Gives the lease of `agent` back (the agent was deactivated here), in the background.
    pub(crate) fn release(&self, agent: &str) {
        let Some((_, held)) = self.leases.remove(agent) else {
            return;
        };
        let store = Arc::clone(&self.store);
        let agent = agent.to_owned();
        let node = self.config.node.clone();
        tokio::spawn(async move {
            match store.release(&agent, held.generation, held.epoch).await {
                Ok(released) => {
                    tracing::info!(target: "motet::lease", %agent, %node, generation = held.generation, epoch = held.epoch, released, "lease released");
                }
                Err(error) => {
                    tracing::warn!(target: "motet::lease", %agent, %node, %error, "a lease could not be given back: it ends with the membership");
                }
            }
        });
    }

    /// Forgets the lease of `agent` without giving it back: a commit found it lost.
    pub(crate) fn lost(&self, agent: &str) {
        if let Some((_, held)) = self.leases.remove(agent) {
            tracing::warn!(target: "motet::lease", %agent, node = %self.config.node, generation = held.generation, epoch = held.epoch, "lease lost");
        }
    }

    /// Joins, then keeps the membership alive until `host` is gone; on a lost membership
    /// gives up every agent and joins again. Ends by leaving the cluster when the runtime is
    /// dropped.
    pub(crate) async fn run(self: Arc<Self>, host: Arc<dyn Hosting>) {
        let every = plan::heartbeat_every(self.config.lease_ttl);
        let mut retry = Duration::from_millis(100);
        loop {
            if self.left.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            if !host.alive() {
                break;
            }
            let Some(joined) = self.joined() else {
                let sent = Instant::now();
                match self
                    .store
                    .join(
                        &self.config.node,
                        &self.config.address,
                        self.config.lease_ttl,
                    )
                    .await
                {
                    Ok(generation) => {
                        tracing::info!(target: "motet::cluster", node = %self.config.node, generation, "joined the cluster");
                        self.set_joined(Some(Joined {
                            generation,
                            last_ok: sent,
                        }));
                        self.joins.notify_waiters();
                        self.refresh().await;
                        retry = Duration::from_millis(100);
                    }
                    Err(error) => {
                        tracing::warn!(target: "motet::cluster", node = %self.config.node, %error, "could not join the cluster; trying again");
                        tokio::time::sleep(retry).await;
                        retry = (retry * 2).min(every);
                    }
                }
                continue;
            };
            tokio::time::sleep(every).await;
            let sent = Instant::now();
            let beat = self
                .store
                .heartbeat(joined.generation, self.config.lease_ttl)
                .await;
            let gone = match beat {
                Ok(Heartbeat::Alive) => {
                    self.set_joined(Some(Joined {
                        last_ok: sent,
                        ..joined
                    }));
                    false
                }
                Ok(Heartbeat::Gone) => true,
                Err(error) => {
                    tracing::warn!(target: "motet::cluster", node = %self.config.node, %error, "a heartbeat failed");
                    false
                }
            };
            let standing = self.joined().map_or(Standing::Lost, |j| {
                plan::standing(j.last_ok.elapsed(), self.config.lease_ttl)
            });
            if gone || standing == Standing::Lost {
                tracing::warn!(target: "motet::cluster", node = %self.config.node, generation = joined.generation, "membership lost: every agent here is given up, and the node joins again");
                self.set_joined(None);
                let lost: Vec<String> = self.leases.iter().map(|e| e.key().clone()).collect();
                for agent in lost {
                    self.lost(&agent);
                }
                host.give_up_all();
                continue;
            }
            self.refresh().await;
            if standing == Standing::Healthy {
                self.rebalance(host.as_ref(), joined.generation).await;
            }
        }
        if let Some(joined) = self.joined() {
            let _ = self.store.leave(joined.generation).await;
        }
    }

    fn set_joined(&self, joined: Option<Joined>) {
        if let Ok(mut slot) = self.joined.lock() {
            *slot = joined;
        }
    }

    /// Reads the live members and declares the expired ones dead.
    async fn refresh(&self) {
        if let Err(error) = self.store.declare_dead().await {
            tracing::debug!(target: "motet::cluster", %error, "could not declare expired members dead");
        }
        match self.store.members().await {
            Ok(members) => {
                if let Ok(mut kept) = self.members.lock() {
                    *kept = members;
                }
            }
            Err(error) => {
                tracing::debug!(target: "motet::cluster", %error, "could not read the members");
            }
        }
    }

    /// The members an agent may be placed on: the live ones not draining.
    pub(crate) fn placement(&self) -> Vec<Member> {
        self.members()
            .into_iter()
            .filter(|m| !m.draining)
            .map(|m| Member {
                node: m.node,
                generation: m.generation,
            })
            .collect()
    }

    /// Where `agent` belongs when that is another node: its member record (for its address).
    pub(crate) fn placed_elsewhere(&self, agent: &str) -> Option<MemberRecord> {
        let placement = self.placement();
        let place = plan::place(agent, &placement)?;
        if place.node == self.config.node {
            return None;
        }
        self.members()
            .into_iter()
            .find(|m| m.generation == place.generation)
    }

    /// Adopts the orphaned agents placed here, and hands over the idle agents placed
    /// elsewhere.
    async fn rebalance(&self, host: &dyn Hosting, generation: u64) {
        let placement = self.placement();
        let me = self.config.node.as_str();
        match self.store.orphans(ADOPT_PAGE).await {
            Ok(orphans) => {
                for agent in orphans {
                    if plan::place(&agent, &placement).is_none_or(|m| m.node != me) {
                        continue;
                    }
                    let threads = match self.store.threads_of(&agent).await {
                        Ok(threads) => threads,
                        Err(error) => {
                            tracing::warn!(target: "motet::cluster", %agent, %error, "could not list an orphaned agent's threads");
                            continue;
                        }
                    };
                    tracing::info!(target: "motet::cluster", %agent, node = %me, generation, threads = threads.len(), "adopting an agent whose member is gone");
                    host.adopt(agent, threads).await;
                }
            }
            Err(error) => {
                tracing::debug!(target: "motet::cluster", %error, "could not read the orphaned leases");
            }
        }
        let hosted = host.hosted();
        let hosted: Vec<plan::Hosted<'_>> = hosted
            .iter()
            .map(|agent| plan::Hosted {
                agent,
                // Asked to stop, a thread with a request open turns it down itself.
                idle: true,
            })
            .collect();
        for agent in plan::hand_over(&hosted, me, &placement, false) {
            host.hand_over(agent);
        }
    }

    /// Leaves the cluster now (a clean shutdown): the leases go back at once.
    pub(crate) async fn leave(&self) -> Result<(), StoreError> {
        self.left.store(true, std::sync::atomic::Ordering::Release);
        let Some(joined) = self.joined() else {
            return Ok(());
        };
        self.set_joined(None);
        self.leases.clear();
        self.store.leave(joined.generation).await
    }
}

fn not_hosting(agent: &str, reason: &str) -> RuntimeError {
    RuntimeError::NotHosting {
        name: agent.to_owned(),
        reason: format!("this node cannot host it: {reason}"),
    }
}
