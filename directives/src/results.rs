//! What comes back from a directive: the signal types the runtime sends a strategy when the
//! work a directive described is done, their payloads, and [`Outcome`] to decode them.
//!
//! Every result echoes the `call_id` of its directive, so a strategy can match it to what it
//! asked and ignore a stale one. Failures are data too: an LLM call that failed is
//! `llm.failed`, a tool that failed is an error result in `tool.result` (the model reads it).
//!
//! | directive | result |
//! |---|---|
//! | [`LlmStream`](crate::LlmStream) | `llm.result` ([`LlmResult`]) or `llm.failed` ([`LlmFailed`]) |
//! | [`ToolExec`](crate::ToolExec) | `tool.result` ([`ToolResultSignal`]), or `tool.paused` ([`ToolPaused`]) when the call waits for a person |
//! | [`Summarize`](crate::Summarize) | `summary.result` ([`SummaryResult`]) or `summary.failed` ([`SummaryFailed`]) |
//! | [`Schedule`](crate::Schedule) | the signal it carries, when it fires |
//! | [`Cron`](crate::Cron) | a copy of the signal it carries at each occurrence, or `schedule.failed` ([`ScheduleFailed`]) when its time zone is unknown |

use motet_signals::{Signal, SignalError};
use serde::{Deserialize, Serialize};

use crate::{CallId, LlmResponse, Pause, ToolArgs, ToolResult, Usage};

/// An LLM call finished: [`LlmResult`].
pub const LLM_RESULT: &str = "llm.result";
/// An LLM call failed: [`LlmFailed`].
pub const LLM_FAILED: &str = "llm.failed";
/// A tool run finished (successfully or with an error result): [`ToolResultSignal`].
pub const TOOL_RESULT: &str = "tool.result";
/// A tool call waits for a person (an approval before it runs, or its tool's question):
/// [`ToolPaused`].
pub const TOOL_PAUSED: &str = "tool.paused";
/// A summary was produced for a `Summarize` directive: [`SummaryResult`].
pub const SUMMARY_RESULT: &str = "summary.result";
/// A summary could not be produced: [`SummaryFailed`].
pub const SUMMARY_FAILED: &str = "summary.failed";
/// A timer could not be set (a `Cron` directive's time zone is unknown here): [`ScheduleFailed`].
pub const SCHEDULE_FAILED: &str = "schedule.failed";

/// Data of `llm.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmResult {
    /// The `LlmStream` directive's call id.
    pub call_id: CallId,
    /// The assembled response.
    pub response: LlmResponse,
}

/// What kind of LLM failure happened: one kind per kind of provider error, so a stored
/// failure says what went wrong without reading its message.
///
/// A kind this build does not know (written by a newer one) reads as [`Other`](Self::Other).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LlmErrorKind {
    /// The key was missing, wrong or lacks permission (HTTP 401, 403).
    Auth,
    /// HTTP 429 or the provider's rate-limit error.
    RateLimited,
    /// The provider is overloaded (HTTP 529, 503).
    Overloaded,
    /// The request was rejected as invalid (HTTP 400).
    InvalidRequest,
    /// The prompt exceeded the model's context window.
    ContextLength,
    /// The provider's content filter refused the request or stopped the response.
    ContentFiltered,
    /// The provider failed (HTTP 5xx other than overload).
    Server,
    /// The stream ended before the response was complete.
    StreamTruncated,
    /// The provider sent something that does not follow its protocol.
    Protocol,
    /// The response hit its token limit in the middle of a tool call.
    MaxTokens,
    /// The provider could not be reached.
    Connect,
    /// The call timed out.
    Timeout,
    /// The model, a hosted tool or the response format asked for is not supported.
    Unsupported,
    /// The response passed the client's limit on its size.
    ResponseTooLarge,
    /// The client is not configured to make the call (no key, unknown provider, bad URL).
    Config,
    /// A hard budget (tokens or dollars, per request, thread, agent or tenant) refused the call
    /// before it was sent: trying again cannot help.
    Budget,
    /// A soft budget limit stopped the call before it was sent: it may go on once a person
    /// approves ([`LlmError::soft_limit`] names the limit).
    BudgetApproval,
    /// Anything else.
    #[serde(other)]
    Other,
}

impl LlmErrorKind {
    /// The kind as serialized (`rate_limited`, `context_length`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
            Self::InvalidRequest => "invalid_request",
            Self::ContextLength => "context_length",
            Self::ContentFiltered => "content_filtered",
            Self::Server => "server",
            Self::StreamTruncated => "stream_truncated",
            Self::Protocol => "protocol",
            Self::MaxTokens => "max_tokens",
            Self::Connect => "connect",
            Self::Timeout => "timeout",
            Self::Unsupported => "unsupported",
            Self::ResponseTooLarge => "response_too_large",
            Self::Config => "config",
            Self::Budget => "budget",
            Self::BudgetApproval => "budget_approval",
            Self::Other => "other",
        }
    }
}

/// An LLM failure, as data the strategy acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{}: {message}", kind.as_str())]
pub struct LlmError {
    /// What kind of failure.
    pub kind: LlmErrorKind,
    /// The provider's description (no secrets).
    pub message: String,
    /// Whether trying again may succeed.
    pub retryable: bool,
    /// For a call stopped at a soft budget limit ([`LlmErrorKind::BudgetApproval`]): the
    /// limit, for a person to approve going past.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_limit: Option<crate::budget::SoftLimit>,
}

/// Data of `llm.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmFailed {
    /// The `LlmStream` directive's call id.
    pub call_id: CallId,
    /// What went wrong.
    pub error: LlmError,
}

/// Data of `tool.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultSignal {
    /// The `ToolExec` directive's call id.
    pub call_id: CallId,
    /// The result (an error result if the tool reported one, e.g. for unparsable arguments).
    pub result: ToolResult,
    /// What the tool's own work spent on models: an agent asked as a tool reports its
    /// answer's usage here, and the caller counts it with its request's. Zero for most tools.
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    /// The agent the conversation was handed to, when the tool was a handoff: the result's
    /// content is that agent's answer, and the caller ends its request with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
}

impl ToolResultSignal {
    /// `result` for the `ToolExec` whose call id is `call_id`: nothing spent, no handoff.
    pub fn new(call_id: CallId, result: ToolResult) -> Self {
        Self {
            call_id,
            result,
            usage: Usage::default(),
            handoff: None,
        }
    }
}

/// Data of `tool.paused`: the call did not run (an approval) or ran and asked instead of
/// answering (a question); either way no `tool.result` follows until the strategy runs the call
/// again approved, or answers it itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPaused {
    /// The `ToolExec` directive's call id.
    pub call_id: CallId,
    /// The model's id of the call.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments the call was made with.
    pub args: ToolArgs,
    /// What it waits for.
    pub pause: Pause,
}

/// Data of `summary.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryResult {
    /// The `Summarize` directive's call id.
    pub call_id: CallId,
    /// The summary text.
    pub content: String,
    /// What the summary call consumed, for the strategy to count with its request's and its
    /// thread's (zero in a signal written before summaries were counted).
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
}

impl SummaryResult {
    /// The summary `content` for the directive `call_id`, with nothing counted.
    pub fn new(call_id: CallId, content: impl Into<String>) -> Self {
        Self {
            call_id,
            content: content.into(),
            usage: Usage::default(),
        }
    }

    /// Sets what the call consumed.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

/// Data of `schedule.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleFailed {
    /// The directive's schedule id.
    pub schedule_id: crate::ScheduleId,
    /// Why the timer was not set.
    pub reason: String,
}

/// Data of `summary.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryFailed {
    /// The `Summarize` directive's call id.
    pub call_id: CallId,
    /// What went wrong.
    pub message: String,
}

/// A directive's result, decoded from its signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `llm.result`.
    Llm(LlmResult),
    /// `llm.failed`.
    LlmFailed(LlmFailed),
    /// `tool.result`.
    Tool(ToolResultSignal),
    /// `tool.paused`.
    ToolPaused(ToolPaused),
    /// `summary.result`.
    Summary(SummaryResult),
    /// `summary.failed`.
    SummaryFailed(SummaryFailed),
}

impl Outcome {
    /// The result `signal` carries: `None` when its type is not a directive result.
    ///
    /// # Errors
    /// A [`SignalError`] when the type is a result's but the data does not fit it.
    pub fn of(signal: &Signal) -> Option<Result<Self, SignalError>> {
        let outcome = match signal.signal_type().as_str() {
            LLM_RESULT => signal.data_as().map(Self::Llm),
            LLM_FAILED => signal.data_as().map(Self::LlmFailed),
            TOOL_RESULT => signal.data_as().map(Self::Tool),
            TOOL_PAUSED => signal.data_as().map(Self::ToolPaused),
            SUMMARY_RESULT => signal.data_as().map(Self::Summary),
            SUMMARY_FAILED => signal.data_as().map(Self::SummaryFailed),
            _ => return None,
        };
        Some(outcome)
    }

    /// The call id of the directive it answers.
    pub fn call_id(&self) -> &CallId {
        match self {
            Self::Llm(r) => &r.call_id,
            Self::LlmFailed(r) => &r.call_id,
            Self::Tool(r) => &r.call_id,
            Self::ToolPaused(r) => &r.call_id,
            Self::Summary(r) => &r.call_id,
            Self::SummaryFailed(r) => &r.call_id,
        }
    }

    /// The signal type it travels as.
    pub fn signal_type(&self) -> &'static str {
        match self {
            Self::Llm(_) => LLM_RESULT,
            Self::LlmFailed(_) => LLM_FAILED,
            Self::Tool(_) => TOOL_RESULT,
            Self::ToolPaused(_) => TOOL_PAUSED,
            Self::Summary(_) => SUMMARY_RESULT,
            Self::SummaryFailed(_) => SUMMARY_FAILED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(ty: &str, data: serde_json::Value) -> Signal {
        Signal::builder(ty, "test")
            .with_json_data(data)
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn each_llm_error_kind_is_stored_under_its_name_and_an_unknown_one_reads_as_other() {
        use LlmErrorKind as K;
        let kinds = [
            K::Auth,
            K::RateLimited,
            K::Overloaded,
            K::InvalidRequest,
            K::ContextLength,
            K::ContentFiltered,
            K::Server,
            K::StreamTruncated,
            K::Protocol,
            K::MaxTokens,
            K::Connect,
            K::Timeout,
            K::Unsupported,
            K::ResponseTooLarge,
            K::Config,
            K::Budget,
            K::BudgetApproval,
            K::Other,
        ];
        for kind in kinds {
            let stored = serde_json::to_value(&kind).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(stored, serde_json::json!(kind.as_str()));
            let back: K = serde_json::from_value(stored).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(back, kind);
        }
        let newer: K =
            serde_json::from_str("\"quota_exhausted\"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(newer, K::Other);
    }

    #[test]
    fn each_result_decodes_to_its_variant_and_back_to_its_type() {
        let cases = [
            signal(
                TOOL_RESULT,
                serde_json::json!({"call_id": "c1", "result": {"tool_use_id": "t1", "content": "3", "is_error": false}}),
            ),
            signal(
                LLM_FAILED,
                serde_json::json!({"call_id": "c2", "error": {"kind": "overloaded", "message": "later", "retryable": true}}),
            ),
            signal(
                SUMMARY_RESULT,
                serde_json::json!({"call_id": "c3", "content": "short"}),
            ),
            signal(
                SUMMARY_FAILED,
                serde_json::json!({"call_id": "c4", "message": "no"}),
            ),
        ];
        for (case, call) in cases.iter().zip(["c1", "c2", "c3", "c4"]) {
            let outcome = Outcome::of(case)
                .unwrap_or_else(|| panic!("{case:?} is a result"))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(outcome.signal_type(), case.signal_type().as_str());
            assert_eq!(outcome.call_id().as_str(), call);
        }
    }

    #[test]
    fn other_signals_are_not_results_and_bad_data_is_an_error() {
        assert!(Outcome::of(&signal("agent.request", serde_json::json!({"query": "q"}))).is_none());
        let bad = signal(TOOL_RESULT, serde_json::json!({"call_id": 7}));
        assert!(matches!(Outcome::of(&bad), Some(Err(_))));
    }
}
