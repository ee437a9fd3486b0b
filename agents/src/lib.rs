//! The pure agent core: strategies, threads and context projection. No IO happens here.
//!
//! A [`Strategy`] turns one signal into directives, reading time and ids only from an [`Env`].
//! Conversation history lives in an append-only [`Thread`]; every LLM call's messages are a
//! fresh projection of it through a [`ContextPolicy`] ([`project`]). [`ReAct`] is the
//! reason-act loop as such a strategy.
//!
//! # Layout
//! - `env` — [`Env`] (time and fresh ids) and the deterministic [`FixedEnv`].
//! - `thread` — [`Thread`], [`Entry`], [`EntryBody`], [`Refs`]; [`EntryKind`] in a leaf of its
//!   own (`thread/kind.rs`), which policies name.
//! - `estimate` — [`TokenEstimator`] and the seeds' [`Heuristic`], over messages;
//!   `estimate/body.rs` — [`estimate_body`], an entry's estimate.
//! - `policy` — [`ContextPolicy`], [`PolicyOverride`], presets and resolution;
//!   `policy/trigger.rs` — when it asks for a summary (it reads the thread).
//! - `projector` — [`project`]: system ⊕ summary ⊕ history ⊕ pending within a budget.
//! - `strategy` — the [`Strategy`] trait; `wrapped` — [`Wrapped`]: a strategy around another,
//!   every hook forwarded, its `handle` wrapped by a [`Wrap`].
//! - `summary` — [`summary_request`]: the call that summarizes a range of a thread, with
//!   [`SUMMARY_INSTRUCTIONS`] and its [`transcript`].
//! - [`protocol`] — what the runtime sends every strategy (`agent.request`, `agent.cancel`, ...)
//!   and how a strategy replies; [`Input`] decodes it.
//! - `react` — [`ReAct`], its state and its signals.
//! - [`guard`] — [`guard::Guarded`]: hooks and guardrails around a strategy (input, LLM calls,
//!   tool calls, output; `guard/step.rs` one step of it).
//! - [`team`] — teams on the protocol: [`team::Supervisor`], [`team::GroupChat`],
//!   [`team::FanOut`] (`team/gather.rs`: one round of asks under a [`team::Join`] rule).
//! - [`delegate`] — agents working through each other: the delegation [`Chain`](delegate::Chain)
//!   and its limits, the callee's thread, a handoff's history and its holder.
//! - `error` — [`ThreadError`], [`ProjectionError`], [`StrategyError`], [`SummaryError`].
//!
//! # Example
//! ```
//! use motet_agents::{ContextPolicy, FixedEnv, NewEntry, ProjectionIds, ProjectionInput, Thread, project};
//! use motet_directives::{AssistantMessage, Message, ToolDefs, Usage};
//!
//! let env = FixedEnv::new(0);
//! let mut thread = Thread::create(&env);
//! thread.append(&env, NewEntry::user("What's 2+2?"));
//! thread.append(&env, NewEntry::assistant(AssistantMessage::text("4"), Usage::default()));
//! thread.append(&env, NewEntry::user("Now multiply by 3"));
//!
//! let policy = ContextPolicy::new();
//! let tools = ToolDefs::from(Vec::new());
//! let ids = ProjectionIds::default();
//! let input = ProjectionInput {
//!     thread: &thread, policy: &policy, pending: &[], system: Some("You are helpful."),
//!     tools: &tools, ids: &ids,
//! };
//! let projection = project(&input)?;
//! assert_eq!(projection.messages.len(), 4);
//! assert_eq!(projection.messages[3], Message::user("Now multiply by 3"));
//! assert!(!projection.meta.truncated);
//! # Ok::<(), motet_agents::ProjectionError>(())
//! ```

pub mod delegate;
mod env;
mod error;
mod estimate;
pub mod guard;
mod id_text;
mod policy;
mod projector;
pub mod protocol;
mod react;
mod strategy;
mod summary;
pub mod team;
mod thread;
mod wrapped;

pub use env::{Env, FixedEnv};
pub use error::{ProjectionError, StrategyError, SummaryError, ThreadError};
pub use estimate::{
    AUDIO_BYTES_PER_TOKEN, Calibrated, HEURISTIC_MESSAGE_OVERHEAD, Heuristic, IMAGE_TOKENS,
    PDF_PAGE_TOKENS, TokenEstimator, estimate_body, estimate_message, estimate_tools, media_tokens,
};
#[cfg(feature = "tiktoken")]
pub use estimate::{TIKTOKEN_MESSAGE_OVERHEAD, Tiktoken};
pub use id_text::id_text;
pub use policy::{
    ContextPolicy, ContextWindows, EstimatorKind, PolicyOverride, Summarization, SummaryRole,
    SummaryTrigger, WindowMode,
};
pub use projector::{
    DefaultProjector, ProjectionIds, ProjectionInput, ProjectionMeta, ProjectionResult, Projector,
    SUMMARY_PREFIX, project, project_with,
};
pub use protocol::{
    AGENT_CANCEL, AGENT_COMPLETED, AGENT_FAILED, AGENT_POLICY, AGENT_REQUEST, AGENT_RESPOND,
    AGENT_RESUME, AGENT_STEER, AGENT_SUMMARIZE, AGENT_WAITING, AgentCancel, AgentCompleted,
    AgentPolicy, AgentRequest, AgentRespond, AgentResume, AgentSteer, AgentSummarize, Input,
    THREAD_UPDATED, ThreadUpdated, Waiting,
};
pub use react::{
    BUDGET_WAIT_TOOL, BudgetWait, CONTEXT_WARNING, ContextWarning, ContextWarningReason,
    FailureReason, HandedOff, LLM_FAILED, LLM_RESULT, LlmError, LlmErrorKind, LlmFailed, LlmResult,
    PendingSummary, PendingTool, ProjectorRef, ReAct, ReActConfig, ReActState, ReactCompleted,
    ReactFailed, ReactReply, RequestState, SUMMARY_FAILED, SUMMARY_RESULT, Status, StructuredCalls,
    SummaryFailed, SummaryResult, TOOL_PAUSED, TOOL_RESULT, ToolPaused, ToolResultSignal,
};
pub use strategy::Strategy;
pub use summary::{SUMMARY_INSTRUCTIONS, summary_request, transcript};
pub use thread::{
    CallBasis, CallUsage, Entry, EntryBody, EntryId, EntryKind, ForkOrigin, Lineage, NewEntry,
    RefKey, Refs, Thread, ThreadHead, ThreadStats,
};
pub use wrapped::{Wrap, Wrapped};
