//! The signals the ReAct strategy consumes and emits: type names and typed payloads. The
//! results of its directives (`llm.result`, `tool.result`, ...) are the runtime's, defined
//! beside the directives in `motet_directives::results` and re-exported here.
//!
//! The thread id and request id travel on the signal's extensions (`threadid`, `requestid`),
//! not in these payloads; results echo the `call_id` of the directive that caused them.

use motet_directives::Usage;
pub use motet_directives::results::{
    LLM_FAILED, LLM_RESULT, LlmError, LlmErrorKind, LlmFailed, LlmResult, SUMMARY_FAILED,
    SUMMARY_RESULT, SummaryFailed, SummaryResult, TOOL_RESULT, ToolResultSignal,
};
use serde::{Deserialize, Serialize};

use crate::policy::PolicyOverride;

/// A user query starts a request: [`ReactInput`].
pub const REACT_INPUT: &str = "react.input";
/// Cancels the active request: [`ReactCancel`].
pub const REACT_CANCEL: &str = "react.cancel";
/// Carries on with what a thread restored from storage still owes: [`ReactResume`].
pub const REACT_RESUME: &str = "react.resume";
/// Summarizes a range of the thread on request: [`ReactSummarize`]. Answered with
/// `react.completed` (the summary is the answer) or `react.failed`.
pub const REACT_SUMMARIZE: &str = "react.summarize";
/// Emitted when a request completes: [`ReactCompleted`].
pub const REACT_COMPLETED: &str = "react.completed";
/// Emitted when a request fails or is cancelled: [`ReactFailed`].
pub const REACT_FAILED: &str = "react.failed";

/// Data of `react.summarize`: summarize entries `from_seq..=to_seq` into one summary entry,
/// which the projection then shows in their place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReactSummarize {
    /// First entry covered.
    pub from_seq: u64,
    /// Last entry covered (inclusive).
    pub to_seq: u64,
}

/// Data of `react.input`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReactInput {
    /// What the user asks.
    pub query: String,
    /// Changes to the context policy for this request only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_policy: Option<PolicyOverride>,
}

/// Data of `react.resume`: what the runtime knows that the pure strategy does not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReactResume {
    /// Tools safe to run twice: a call of one whose result is missing is run again (same
    /// tool-call id); any other gets an error result saying it may or may not have run.
    #[serde(default)]
    pub idempotent_tools: Vec<String>,
}

/// Data of `react.cancel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReactCancel {
    /// Why, for the failure report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Data of `react.completed`.
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
    /// `react.cancel` stopped it.
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
        }
    }
}

/// Data of `react.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReactFailed {
    /// The request.
    pub request_id: String,
    /// Why it failed.
    pub reason: FailureReason,
    /// Usage of this request's LLM calls.
    pub usage: Usage,
}
