//! An agent as the host holds it ([`HostedAgent`]): its strategy, tools, policies and running
//! threads, what it holds on the bus, its tenant and priority, and its parent.

use std::sync::Arc;
use std::time::Duration;

use motet_signals::Subscription;
use ractor::ActorRef;
use tokio::task::AbortHandle;

use super::mailbox::ThreadMsg;
use crate::agent::book::RequestPolicy;
use crate::agent::host::few::Few;
use crate::supervisor::Supervision;
use crate::tool::ToolSet;

/// Where a child agent's `Emit` to its parent goes: the parent agent's thread that spawned it,
/// and the tag it knows the child by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parent {
    pub(crate) agent: String,
    pub(crate) thread: String,
    pub(crate) tag: String,
}

/// What an agent holds on the bus; it ends when the agent is removed.
#[derive(Default)]
pub(crate) struct Attached {
    /// Bus subscriptions; they end when dropped.
    pub(crate) subscriptions: Vec<Subscription>,
    /// The tasks of the agent's durable bus consumers; aborted when the agent is removed.
    pub(crate) consumers: Vec<AbortHandle>,
}

/// What every thread of one agent shares: its entry in the registry.
pub(crate) struct HostedAgent<S> {
    pub(crate) name: Arc<str>,
    pub(crate) strategy: S,
    pub(crate) tools: Option<Arc<ToolSet>>,
    pub(crate) policy: RequestPolicy,
    /// Stop a thread's actor after this long without messages (it comes back from the store).
    pub(crate) idle_timeout: Option<Duration>,
    /// The agent thread that spawned this one, for `Emit` to the parent.
    pub(crate) parent: Option<Box<Parent>>,
    /// Held while one of the agent's threads starts, so racing asks start it once.
    pub(crate) spawning: tokio::sync::Mutex<()>,
    /// How the agent's threads are supervised; `None` for the default, which most agents keep
    /// (boxed: one word for it).
    pub(crate) supervision: Option<Box<Supervision>>,
    /// The agent's bus subscriptions and durable consumers, which most agents have none of
    /// (one word for them).
    pub(crate) attached: std::sync::Mutex<Option<Box<Attached>>>,
    /// The agent's running threads by thread id: the registry's second level. Almost always
    /// one (the default thread) or none, held in place rather than in a map's table.
    pub(crate) threads: std::sync::Mutex<Few<ActorRef<ThreadMsg>>>,
    /// The agent's tenant and priority, which most agents leave at their defaults (boxed: one
    /// word for them).
    pub(crate) labels: Option<Box<Labels>>,
    /// A virtual agent's last use and whether it was deactivated; `None` for a spawned agent
    /// (boxed: one word for it).
    pub(crate) activation: Option<Box<crate::agent::host::virtuals::Activation>>,
}

/// An agent's tenant and priority, for its LLM calls' [`CallScope`](motet_providers::CallScope).
pub(crate) struct Labels {
    pub(crate) tenant: Option<Arc<str>>,
    pub(crate) priority: motet_providers::Priority,
}

impl<S> HostedAgent<S> {
    /// The running threads, locked. Nothing panics while holding the lock (map operations
    /// only), so a poisoned lock still holds a consistent map.
    pub(crate) fn running_threads(&self) -> std::sync::MutexGuard<'_, Few<ActorRef<ThreadMsg>>> {
        self.threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The names of the agent's tools that are safe to run twice.
    pub(crate) fn idempotent_tools(&self) -> Vec<String> {
        self.tools
            .as_ref()
            .map(|tools| tools.idempotent_tools())
            .unwrap_or_default()
    }
}
