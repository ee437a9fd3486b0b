//! What a thread actor's mailbox receives ([`ThreadMsg`]), and a signal put in it.

use std::time::Duration;

use motet_signals::Signal;
use ractor::ActorRef;
use tokio::sync::oneshot;

use crate::agent::errors::AskError;

/// Puts `signal` in the thread's mailbox; one for a thread that stopped is dropped.
pub(crate) fn deliver(to: &ActorRef<ThreadMsg>, signal: Signal) {
    if let Err(error) = to.cast(ThreadMsg::Signal(signal)) {
        tracing::debug!(%error, "a result arrived after its agent stopped");
    }
}

/// What a thread actor's mailbox receives.
#[derive(Debug)]
pub(crate) enum ThreadMsg {
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
        after: Duration,
    },
    /// Stop if nothing happened for the idle timeout and no request is open.
    IdleCheck,
    /// Stop now if no request is open: a virtual agent's thread, deactivated to make room.
    Evict,
    /// A copy of the thread this actor keeps (if its strategy keeps one).
    GetThread(oneshot::Sender<Option<motet_agents::Thread>>),
    /// A signal from a durable bus consumer, which is told on `committed` once the step that
    /// handled it committed (or why it was not), so the bus acknowledges it only then. One
    /// already committed (same `source` and `id`) is answered at once and not handled again.
    Delivered {
        /// The signal for the strategy.
        signal: Signal,
        /// Where the outcome goes: `Ok` once committed, else why not.
        committed: crate::agent::host::deliveries::Committed,
        /// For a timer's firing, the write that settles the timer, committed by the step that
        /// handles the signal (boxed: most messages carry none).
        settles: Option<Box<crate::store::TimerWrite>>,
    },
}

impl ThreadMsg {
    /// Whether the message can go to another node of a cluster (over the node link): an ask,
    /// a signal or an expired wait.
    pub(crate) fn crosses_nodes(&self) -> bool {
        matches!(
            self,
            Self::Ask { .. } | Self::Signal(_) | Self::Expire { .. }
        )
    }
}
