//! The signals the runtime itself publishes or sends: a child's start or failure, a thread's
//! restart, an agent's stop, and the fragments of a streaming LLM call.

use motet_directives::CallId;
use serde::Serialize;

/// The type of the signal that tells a parent its child started.
pub const CHILD_STARTED: &str = "agent.child.started";

/// The type of the signal that tells a parent its child could not start.
pub const CHILD_FAILED: &str = "agent.child.failed";

/// Data of `agent.child.started` and `agent.child.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChildEvent {
    /// The tag the parent gave in its `Spawn`.
    pub tag: String,
    /// The child's agent name (send it signals with `Emit` to this agent).
    pub name: String,
    /// Why it could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Published on the bus when the supervisor restarted a failed thread of an agent: requests
/// that were running on it are lost, and whoever sent them can send them again.
pub const THREAD_RESTARTED: &str = "agent.thread.restarted";

/// Published on the bus when an agent's threads failed past its restart intensity and the
/// agent was stopped.
pub const AGENT_STOPPED: &str = "agent.stopped";

/// Data of `agent.thread.restarted` and `agent.stopped`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ThreadFailure {
    /// The agent.
    pub agent: String,
    /// The thread that failed.
    pub thread: String,
    /// Why it failed (the panic or error message).
    pub error: String,
}

/// The type of the signals that carry streamed text while an LLM call runs (for UIs).
pub const LLM_DELTA: &str = "llm.delta";

/// Data of `llm.delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LlmDelta {
    /// The `LlmStream` directive's call id.
    pub call_id: CallId,
    /// What the fragment is.
    pub kind: DeltaKind,
    /// The fragment (empty for [`DeltaKind::Discard`]).
    pub delta: String,
}

/// What an [`LlmDelta`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaKind {
    /// Answer text.
    Text,
    /// Reasoning the model showed.
    Reasoning,
    /// The call failed after some of its fragments were delivered: everything this call id
    /// wrote is void. The strategy may call the model again (a new call id, streaming from
    /// the start); whoever showed the fragments should mark them as discarded.
    Discard,
}
