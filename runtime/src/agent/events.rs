//! The signals the runtime itself publishes or sends: a child's start, failure or stop, a thread's
//! restart, an agent's stop, the fragments of a streaming LLM call, and an LLM call's wait for
//! its provider account.

use motet_directives::CallId;
use serde::Serialize;

/// The type of the signal that tells a parent its child started.
pub const CHILD_STARTED: &str = "agent.child.started";

/// The type of the signal that tells a parent its child could not start.
pub const CHILD_FAILED: &str = "agent.child.failed";

/// The type of the signal that tells a parent its child stopped: past its restart intensity,
/// or stopped by the application (not when the parent stopped it with `StopChild`).
pub const CHILD_STOPPED: &str = "agent.child.stopped";

/// Data of `agent.child.started`, `agent.child.failed` and `agent.child.stopped`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChildEvent {
    /// The tag the parent gave in its `Spawn`.
    pub tag: String,
    /// The child's agent name (send it signals with `Emit` to this agent).
    pub name: String,
    /// Why it could not start, or why it stopped.
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

/// The type of the notice that an LLM call is waiting for its provider account's capacity
/// (a shared rate limit or backoff), published once per call that waits longer than
/// [`LLM_WAITING_AFTER`] (for UIs: "waiting for the provider").
pub const LLM_WAITING: &str = "llm.waiting";

/// How long an LLM call waits for its account before [`LLM_WAITING`] is published.
pub const LLM_WAITING_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// Data of `llm.waiting`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LlmWaiting {
    /// The `LlmStream` directive's call id.
    pub call_id: CallId,
    /// The provider account it waits for (`openai`, or `openai:gpt-5.2`).
    pub account: String,
    /// Calls waiting for that account, this one included.
    pub waiting: usize,
    /// How long the shared backoff after a 429 still holds, in milliseconds (0: none; the
    /// call waits for its turn).
    pub backoff_ms: u64,
}

/// Data of `llm.delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LlmDelta {
    /// The `LlmStream` directive's call id.
    pub call_id: CallId,
    /// What the fragment is.
    pub kind: DeltaKind,
    /// The fragment (empty for [`DeltaKind::Discard`]).
    pub delta: String,
    /// The agent that wrote it, when it is not the one asked: an agent the asked one called
    /// as a tool (or handed the conversation to), whose fragments its caller's ticket sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
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
