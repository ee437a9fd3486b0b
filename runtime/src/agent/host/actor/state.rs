//! The thread actor's own types: [`ThreadActor`] (what it is: an agent's thread in a runtime)
//! and [`ThreadState`] (what it holds: the strategy's state, what the runtime tracks for it,
//! and where the thread stands in the store).

use std::sync::Arc;

use motet_agents::Strategy;
use ractor::ActorRef;

use crate::agent::env::SystemEnv;
use crate::agent::host::core::{HostedAgent, RuntimeCore, ThreadMsg};
use crate::agent::host::deliveries::Deliveries;
use crate::agent::host::tracked::{Here, Tracked};

/// The actor hosting one conversation thread of an agent: the strategy, its state for that
/// thread, and the execution of its directives.
pub(crate) struct ThreadActor<S: Strategy> {
    pub(crate) agent: Arc<HostedAgent<S>>,
    pub(crate) thread_id: Arc<str>,
    /// The thread's id in the store (and in the strategy's Thread): `<agent>/<thread>`, so two
    /// agents' threads of the same name never share a history. Made once: every commit uses it.
    pub(crate) store_id: Box<str>,
    pub(crate) core: Arc<RuntimeCore>,
}

/// The actor's state: the strategy's state plus what the runtime tracks for it.
pub(crate) struct ThreadState<S: Strategy> {
    /// Whether the thread has joined the runtime's supervisor (on its first message).
    pub(super) supervised: bool,
    pub(super) strategy: S::State,
    pub(super) env: SystemEnv,
    /// The open requests, the work in flight, timers, children and waits.
    pub(super) tracked: Tracked,
    /// Whether the thread exists in the store yet.
    pub(super) stored: bool,
    /// Entries of the strategy's thread already in the store.
    pub(super) stored_rev: u64,
    /// The fencing epoch this actor claimed the thread at (0: created it, or never stored);
    /// every commit is fenced with it.
    pub(super) epoch: u64,
    /// The state snapshot last stored (or the fresh state's, before the first write).
    pub(super) saved: Option<Fingerprint>,
    /// When the thread last handled a message (for the idle timeout).
    pub(super) last_active: std::time::Instant,
    /// Set when the idle timeout closed the mailbox: what is still in it is held for the
    /// successor (`held`), never run here.
    pub(super) retiring: bool,
    /// Set when a commit failed: the strategy's state holds what the store does not, and is
    /// taken back as stored (`catch_up`) before the thread handles anything else.
    pub(super) diverged: bool,
    /// Signals from durable bus consumers (none for most threads: boxed, one word).
    pub(super) deliveries: Option<Box<Deliveries>>,
}

impl<S: Strategy> ThreadActor<S> {
    /// Who and where this thread is, for the executors.
    pub(super) fn here<'a>(&'a self, myself: &'a ActorRef<ThreadMsg>) -> Here<'a> {
        Here {
            core: &self.core,
            agent: &self.agent.name,
            thread: &self.thread_id,
            tools: self.agent.tools.as_ref(),
            parent: self.agent.parent.as_deref(),
            labels: self.agent.labels.as_deref(),
            myself,
        }
    }

    /// The `source` of the signals this thread makes.
    pub(super) fn source(&self) -> String {
        crate::agent::signals::agent_source(&self.agent.name)
    }
}

/// What a thread actor remembers of the snapshot it last stored: a 64-bit hash of it, not the
/// text, which would be a second copy of it beside the store's (hundreds of bytes per running
/// thread). It is only ever compared with the next snapshot, so a new snapshot that differs
/// and still matches (a chance of 2^-64 per commit) would skip one write of the state; the
/// entries are written regardless. The hash is never 0, so an absent fingerprint costs no
/// extra word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint(std::num::NonZeroU64);

impl Fingerprint {
    pub(crate) fn of(snapshot: &str) -> Self {
        use std::hash::BuildHasher as _;
        let hash =
            foldhash::quality::FixedState::with_seed(0x6d6f_7465_745f_3031).hash_one(snapshot);
        Self(std::num::NonZeroU64::new(hash).unwrap_or(std::num::NonZeroU64::MIN))
    }
}
