//! Teams: orchestration strategies that ask other agents, by name, over the protocol alone.
//!
//! A team member is any agent the runtime hosts (ReAct or a strategy of one's own). A team
//! asks it with an `agent.request` emitted to its name, on a thread of its own, and hears its
//! `agent.completed` / `agent.failed` reply: the runtime delivers the reply of an ask to the
//! thread that asked (or an `agent.failed` when the member cannot be reached or stops first),
//! so a team needs no subscription and hears no one else's replies. A cancel of the team's
//! request is sent on to every member still working, and a member's answer is never awaited
//! past its timeout (a `Schedule`). Everything a team decides is pure; it is tested as
//! transcripts, signals in and directives out.
//!
//! - [`Supervisor`] routes a request to members (by a function or by a model's choice) and
//!   collects their answers into one reply.
//! - [`GroupChat`] lets named members speak in turn (round-robin or a selector) until a
//!   termination condition holds: a number of turns, a stop phrase, a predicate.
//! - [`FanOut`] splits a request into tasks for members (map), joins their answers (reduce)
//!   under a rule for failures: [`Join::All`], [`Join::AtLeast`], [`Join::BestEffort`].
//!
//! Each replies `agent.completed` with [`TeamCompleted`] (the protocol's `answer` and `usage`,
//! the members' usage summed, and each member's answer), or `agent.failed` with [`TeamFailed`]
//! (a typed [`TeamFailure`]).

mod ask;
mod fan_out;
mod gather;
mod group_chat;
mod step;
mod supervisor;

use motet_directives::Usage;
use serde::{Deserialize, Serialize};

pub use ask::{Heard, heard};
pub use fan_out::{FanOut, FanOutState, Task};
pub use gather::{AskView, Join};
pub use group_chat::{GroupChat, GroupChatState, Turn};
pub use supervisor::{Member, ROUTE_TOOL, Route, Supervisor, SupervisorState};

/// A member's answer did not come within its timeout: scheduled by a team for itself, data
/// [`TeamTimeout`].
pub const TEAM_TIMEOUT: &str = "team.timeout";

/// Data of [`TEAM_TIMEOUT`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamTimeout {
    /// The member's request that timed out.
    pub request_id: String,
}

/// One member's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberAnswer {
    /// The member's agent name.
    pub agent: String,
    /// Its answer's text.
    pub answer: String,
    /// What its request used.
    #[serde(default)]
    pub usage: Usage,
}

/// Data of a team's `agent.completed`: the protocol's fields and the members' answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamCompleted {
    /// The team's answer.
    pub answer: String,
    /// Every member's usage and the team's own calls', summed.
    pub usage: Usage,
    /// Each member's answer, in task (or turn) order.
    pub answers: Vec<MemberAnswer>,
}

/// Why a team's request failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TeamFailure {
    /// A member answered with a failure.
    #[error("{agent} failed: {message}")]
    Member {
        /// The member.
        agent: String,
        /// Its reply's reason.
        message: String,
    },
    /// A member did not answer within the team's timeout.
    #[error("{agent} did not answer within {timeout_ms} ms")]
    TimedOut {
        /// The member.
        agent: String,
        /// The timeout.
        timeout_ms: u64,
    },
    /// Fewer members answered than the join rule needs.
    #[error("{answered} of the {needed} answers needed came ({failed} failed)")]
    TooFew {
        /// Answers the rule needs.
        needed: usize,
        /// Answers that came.
        answered: usize,
        /// Members that failed or timed out.
        failed: usize,
    },
    /// No member was chosen for the request.
    #[error("no member to ask: {message}")]
    NoRoute {
        /// Why.
        message: String,
    },
    /// The team's request was cancelled; members still working were cancelled too.
    #[error("cancelled")]
    Cancelled {
        /// The reason given, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The team stopped (a crash, a restart) while members worked: their answers are lost.
    #[error("the team stopped while its members worked")]
    Interrupted,
    /// The team was sent something it does not do (a summary of a thread it does not keep).
    #[error("a team does not take `{signal_type}`")]
    Unsupported {
        /// The signal's type.
        signal_type: String,
    },
    /// Another request of this team's thread was still open.
    #[error("request {active_request_id} is still open")]
    Busy {
        /// The open request.
        active_request_id: String,
    },
}

/// Data of a team's `agent.failed`: `message` as every `agent.failed` carries it, and the
/// typed reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamFailed {
    /// The reason, as text.
    pub message: String,
    /// The reason.
    pub failure: TeamFailure,
    /// What was used before it failed.
    #[serde(default)]
    pub usage: Usage,
}

impl TeamFailed {
    /// The failure, with `usage`.
    pub fn new(failure: TeamFailure, usage: Usage) -> Self {
        Self {
            message: failure.to_string(),
            failure,
            usage,
        }
    }
}

/// The default reduce: one answer as it is; several as `agent: answer` lines.
pub fn joined(answers: &[MemberAnswer]) -> String {
    match answers {
        [one] => one.answer.clone(),
        many => many
            .iter()
            .map(|a| format!("{}: {}", a.agent, a.answer.trim()))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[cfg(test)]
mod tests;
