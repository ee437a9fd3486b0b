//! Supervision of agent actors, OTP style: restart strategies (one_for_one, one_for_all,
//! rest_for_one), restart types (permanent, transient, temporary) and restart intensity.
//!
//! # Layout
//! - `policy` — the restart decision as a pure function ([`decide`]): which children to stop,
//!   start again or forget when one exits, or that the supervisor must escalate; and how long
//!   a restart waits ([`Backoff`]). The runtime's supervisor of thread actors
//!   (`agent/host/supervise.rs`) applies it to an agent's threads as the agent's spec chooses
//!   ([`Supervision`]).

mod policy;

pub use policy::{
    Backoff, Decision, ExitReason, Intensity, Restart, RestartHistory, RestartStrategy, decide,
};

/// How an agent's threads are supervised, as its spec chooses
/// (`AgentSpec::with_supervision`): how a failed thread's siblings are treated, which exits
/// restart a thread, how long a restart waits, and how many restarts are too many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Supervision {
    /// Which of the agent's threads restart with a failed one: only it (`OneForOne`, the
    /// default), all (`OneForAll`), or it and those started after it (`RestForOne`).
    pub strategy: RestartStrategy,
    /// Which exits restart a thread: `Transient` (the default) after a failure; `Permanent`
    /// also after it stopped itself (a `Stop` directive); `Temporary` never (a later message
    /// starts it again, as any thread).
    pub restart: Restart,
    /// How long a restart waits (default: not at all). Messages for the thread meanwhile wait
    /// for it.
    pub backoff: Backoff,
    /// At most this many restarts in this window; one more and the agent is stopped (default
    /// 3 in 5 s).
    pub intensity: Intensity,
}

impl Default for Supervision {
    fn default() -> Self {
        Self {
            strategy: RestartStrategy::OneForOne,
            restart: Restart::Transient,
            backoff: Backoff::default(),
            intensity: Intensity::default(),
        }
    }
}
