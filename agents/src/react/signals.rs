//! The signals the ReAct strategy consumes and emits: type names and typed payloads. The
//! results of its directives (`llm.result`, `tool.result`, ...) are the runtime's, defined
//! beside the directives in `motet_directives::results` and re-exported here.
//!
//! The thread id and request id travel on the signal's extensions (`threadid`, `requestid`),
//! not in these payloads; results echo the `call_id` of the directive that caused them.

use motet_directives::Usage;
pub use motet_directives::results::{
    LLM_FAILED, LLM_RESULT, LlmError, LlmErrorKind, LlmFailed, LlmResult, SUMMARY_FAILED,
    SUMMARY_RESULT, SummaryFailed, SummaryResult, TOOL_PAUSED, TOOL_RESULT, ToolPaused,
    ToolResultSignal,
};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use crate::error::StrategyError;
use crate::protocol::{AGENT_COMPLETED, AGENT_FAILED};

/// Data of ReAct's `agent.completed`: the protocol's [`AgentCompleted`](crate::AgentCompleted)
/// fields (`answer`, `usage`) and more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReactCompleted {
    /// The request.
    pub request_id: String,
    /// The final answer's text.
    pub answer: String,
    /// Usage of this request's LLM calls.
    pub usage: Usage,
    /// Usage of the whole thread so far.
    pub thread_usage: Usage,
    /// LLM calls made for this request.
    pub iterations: u32,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailureReason {
    /// `agent.cancel` stopped it.
    Cancelled {
        /// The reason given, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The LLM failed and the retry budget was spent (or the error was not retryable).
    Llm {
        /// The last error.
        error: LlmError,
    },
    /// The request reached `max_iterations` LLM calls without a final answer.
    MaxIterations {
        /// The limit.
        max_iterations: u32,
    },
    /// The context could not be projected within the budget.
    Projection {
        /// The projector's error.
        message: String,
    },
    /// A requested summary could not be made (a range outside the thread, or the summary
    /// call failed); the thread is unchanged apart from an error entry.
    Summary {
        /// What went wrong.
        message: String,
    },
    /// Another request on this thread was still running; the query was not committed.
    Busy {
        /// The running request.
        active_request_id: String,
    },
    /// The query was empty or only white space; it was not committed (some providers refuse
    /// empty content, and a thread holding it would fail every later request there).
    EmptyQuery,
    /// The answer did not match the request's response format, and was sent back to the
    /// model `max_format_retries` times without one that does.
    Nonconforming {
        /// What is wrong with the last answer (where it breaks the schema).
        message: String,
        /// Answers given, the last included.
        attempts: u32,
    },
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cancelled { reason: Some(why) } => write!(f, "cancelled: {why}"),
            Self::Cancelled { reason: None } => f.write_str("cancelled"),
            Self::Llm { error } => write!(f, "llm call failed: {error}"),
            Self::MaxIterations { max_iterations } => {
                write!(f, "no answer after {max_iterations} llm calls")
            }
            Self::Projection { message } => write!(f, "context projection failed: {message}"),
            Self::Summary { message } => write!(f, "summary failed: {message}"),
            Self::Busy { active_request_id } => {
                write!(f, "request {active_request_id} is still running")
            }
            Self::EmptyQuery => f.write_str("the question is empty"),
            Self::Nonconforming { message, attempts } => write!(
                f,
                "no answer matched the response format in {attempts} tries: {message}"
            ),
        }
    }
}

/// Data of `agent.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReactFailed {
    /// The request.
    pub request_id: String,
    /// Why it failed.
    pub reason: FailureReason,
    /// Usage of this request's LLM calls.
    pub usage: Usage,
}

/// A ReAct agent's reply as whoever asked reads it: `agent.completed` or `agent.failed`,
/// decoded, so a caller matches on this type instead of on signal type strings.
///
/// # Example
/// ```
/// use motet_agents::{AGENT_COMPLETED, ReactCompleted, ReactReply};
/// use motet_signals::Signal;
///
/// let done = ReactCompleted {
///     request_id: "req_1".into(),
///     answer: "391".into(),
///     usage: Default::default(),
///     thread_usage: Default::default(),
///     iterations: 2,
/// };
/// let signal = Signal::builder(AGENT_COMPLETED, "react").with_data(&done).build()?;
/// match ReactReply::of(&signal)? {
///     Some(ReactReply::Completed(done)) => assert_eq!(done.answer, "391"),
///     other => panic!("not an answer: {other:?}"),
/// }
/// let other = Signal::builder("swarm.tool", "worker").build()?;
/// assert_eq!(ReactReply::of(&other)?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReactReply {
    /// `agent.completed`: the answer.
    Completed(ReactCompleted),
    /// `agent.failed`: why not.
    Failed(ReactFailed),
}

impl ReactReply {
    /// The reply `signal` carries, or `None` for a signal that is no reply.
    ///
    /// # Errors
    /// [`StrategyError::InvalidData`] when `signal` is a reply whose data is not ReAct's (a
    /// reply from a strategy of another kind).
    pub fn of(signal: &Signal) -> Result<Option<Self>, StrategyError> {
        let reply = match signal.signal_type().as_str() {
            AGENT_COMPLETED => signal.data_as().map(Self::Completed),
            AGENT_FAILED => signal.data_as().map(Self::Failed),
            _ => return Ok(None),
        };
        reply.map(Some).map_err(|e| StrategyError::InvalidData {
            signal_type: signal.signal_type().as_str().to_owned(),
            message: e.to_string(),
        })
    }

    /// The request answered.
    pub fn request_id(&self) -> &str {
        match self {
            Self::Completed(done) => &done.request_id,
            Self::Failed(failed) => &failed.request_id,
        }
    }

    /// What the request's LLM calls used.
    pub fn usage(&self) -> Usage {
        match self {
            Self::Completed(done) => done.usage,
            Self::Failed(failed) => failed.usage,
        }
    }
}

impl TryFrom<&Signal> for ReactReply {
    type Error = StrategyError;

    /// The reply `signal` carries; a signal that is no reply is
    /// [`StrategyError::Unhandled`].
    fn try_from(signal: &Signal) -> Result<Self, StrategyError> {
        Self::of(signal)?.ok_or_else(|| StrategyError::Unhandled {
            signal_type: signal.signal_type().as_str().to_owned(),
        })
    }
}

/// Published when a projection had to drop history or nears its budget: [`ContextWarning`].
/// A UI or a supervisor can then summarize, switch to a larger model or start a new thread.
pub const CONTEXT_WARNING: &str = "context.warning";

/// Why a [`ContextWarning`] was published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextWarningReason {
    /// History inside the window had to be dropped.
    Truncated,
    /// The context fills at least the policy's `warn_at` fraction of the budget.
    NearBudget,
}

/// Data of `context.warning` (seed 002): how full the context of one LLM call is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextWarning {
    /// Why.
    pub reason: ContextWarningReason,
    /// The LLM call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Estimated tokens of the context (tools included).
    pub estimated_tokens: u64,
    /// Of those, the tools' schemas.
    pub tool_tokens: u64,
    /// The input budget.
    pub budget: u64,
    /// Entries shown and entries in the thread.
    pub entries_included: usize,
    /// Entries in the thread.
    pub entries_total: usize,
}

impl ContextWarning {
    /// The warning for a projection with `meta`.
    pub fn of(reason: ContextWarningReason, meta: &crate::projector::ProjectionMeta) -> Self {
        Self {
            reason,
            call_id: meta.call_id.clone(),
            estimated_tokens: meta.estimated_tokens,
            tool_tokens: meta.tool_tokens,
            budget: meta.budget,
            entries_included: meta.entries_included,
            entries_total: meta.entries_total,
        }
    }
}
