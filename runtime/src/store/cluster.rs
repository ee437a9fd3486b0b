//! What a cluster keeps in its store (docs/cluster.md): the members, one row per start of a
//! node, and the leases, which member hosts which agent under which epoch.
//!
//! Only the PostgreSQL store keeps them ([`ThreadStore::cluster`]): the lease a commit is made
//! under is checked in the commit's own transaction ([`StepCommit::lease`]), so between the
//! check and the write no other node can take the agent over. The memory and SQLite stores
//! refuse a commit that carries a lease ([`StoreError::NoLeases`]).
//!
//! [`ThreadStore::cluster`]: super::ThreadStore::cluster
//! [`StepCommit::lease`]: super::StepCommit::lease
//! [`StoreError::NoLeases`]: super::StoreError::NoLeases

use std::time::Duration;

use async_trait::async_trait;

use super::StoreError;

/// The lease a commit is made under: the agent, the member holding it and the lease's epoch.
/// The store writes the commit only while that member still holds the lease at that epoch and
/// its membership has not expired, by the store's clock; otherwise it fails with
/// [`StoreError::LeaseLost`] and writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseFence<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The generation of the member holding the lease.
    pub generation: u64,
    /// The lease's epoch: bumped each time the agent changes hands.
    pub epoch: u64,
}

/// One member of the cluster, as its row in the store says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRecord {
    /// The generation: this start of the node, unique in the cluster.
    pub generation: u64,
    /// The node's configured id.
    pub node: String,
    /// Where other nodes reach it (its link address).
    pub address: String,
    /// Whether it is draining: it keeps what it hosts until it hands it over, takes nothing new
    /// and is no place for an agent.
    pub draining: bool,
    /// How long until its membership expires without another heartbeat, by the store's clock.
    pub expires_in: Duration,
}

/// What a heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    /// The membership is live and now runs for another time to live.
    Alive,
    /// The membership expired or was declared dead or left: it never comes back. The node gives
    /// up what it hosts and joins again as a new generation.
    Gone,
}

/// What asking for an agent's lease got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseGrant {
    /// The member holds the lease at `epoch` now; `taken` when it was not its before (the epoch
    /// was bumped, and whoever held it before can no longer commit).
    Held {
        /// The lease's epoch, which every commit of the agent carries.
        epoch: u64,
        /// Whether this call took it (rather than finding it held already).
        taken: bool,
    },
    /// Another live member holds it.
    Elsewhere(MemberRecord),
    /// The asking member is not live (expired, draining, dead or gone): it takes no lease.
    NotMember,
}

/// The members and leases of a cluster, kept in the shared store.
///
/// Every time in these rows is the store's: no node's clock decides whether a membership has
/// expired, so clocks that drift apart cannot make two nodes both believe they hold an agent.
#[async_trait]
pub trait ClusterStore: Send + Sync {
    /// Adds a member for a start of `node`, reachable at `address`, live for `ttl`; returns its
    /// new generation. Earlier generations of the same node still live are declared dead in the
    /// same transaction: their process is gone, or it must stop writing now.
    async fn join(&self, node: &str, address: &str, ttl: Duration) -> Result<u64, StoreError>;

    /// Extends the membership of `generation` by `ttl` from now, if it has not expired: an
    /// expired membership is declared dead instead, and never extended.
    async fn heartbeat(&self, generation: u64, ttl: Duration) -> Result<Heartbeat, StoreError>;

    /// Marks `generation` draining: it takes no new lease and is no agent's place.
    async fn drain(&self, generation: u64) -> Result<Heartbeat, StoreError>;

    /// Ends the membership of `generation` (a clean shutdown). Its leases are orphans from now
    /// on: the members they are placed on take them over at once and resume what they owe, as
    /// after a death, without waiting out the time to live.
    async fn leave(&self, generation: u64) -> Result<(), StoreError>;

    /// The members whose membership has not expired, draining ones included, by generation.
    async fn members(&self) -> Result<Vec<MemberRecord>, StoreError>;

    /// Declares dead every member whose membership expired; returns their generations.
    async fn declare_dead(&self) -> Result<Vec<u64>, StoreError>;

    /// Takes the lease of `agent` for `generation` unless another live member holds it
    /// (decided by [`crate::cluster::plan::lease_move`], under the lease row's lock).
    async fn acquire(&self, agent: &str, generation: u64) -> Result<LeaseGrant, StoreError>;

    /// Gives the lease of `agent` back, if `generation` still holds it at `epoch`; returns
    /// whether it did. The epoch stays: the next holder's is higher.
    async fn release(&self, agent: &str, generation: u64, epoch: u64) -> Result<bool, StoreError>;

    /// The agents whose leases a member no longer live holds (expired, dead or left without
    /// releasing them), at most `limit`: what a failover adopts. Each survivor takes those
    /// placed on it.
    async fn orphans(&self, limit: usize) -> Result<Vec<String>, StoreError>;

    /// The store ids of the threads of `agent` (`<agent>/<thread>`): what an adopting node
    /// resumes.
    async fn threads_of(&self, agent: &str) -> Result<Vec<String>, StoreError>;

    /// The live member holding the lease of `agent`, if any.
    async fn holder(&self, agent: &str) -> Result<Option<MemberRecord>, StoreError>;
}
