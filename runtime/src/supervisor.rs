//! Supervision of agent actors, OTP style: restart strategies (one_for_one, one_for_all,
//! rest_for_one), restart types (permanent, transient, temporary) and restart intensity.
//!
//! # Layout
//! - `policy` — the restart decision as a pure function ([`decide`]): which children to stop,
//!   start again or forget when one exits, or that the supervisor must escalate. The actor
//!   that applies it to ractor's supervision events lands with the runtime issue.

mod policy;

pub use policy::{
    Decision, ExitReason, Intensity, Restart, RestartHistory, RestartStrategy, decide,
};
