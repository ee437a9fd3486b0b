//! Typed provider errors. They never contain an API key.

use std::time::Duration;

/// What can go wrong talking to a provider. Comparable and cloneable so the runtime can hand it
/// to a strategy as data (`llm.failed`) and tests can `assert_eq!` it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The key was missing, wrong or lacks permission (401/403).
    #[error("authentication failed ({status}): {message}")]
    Authentication {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Too many requests (429); `retry_after` is the provider's hint.
    #[error("rate limited: {message}")]
    RateLimited {
        /// How long the provider asked us to wait.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The provider is overloaded (Anthropic 529, `overloaded_error`, 503).
    #[error("provider overloaded: {message}")]
    Overloaded {
        /// The provider's message.
        message: String,
    },
    /// The provider rejected the request (400, 404, 422); its message is kept.
    #[error("invalid request ({status}): {message}")]
    InvalidRequest {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The prompt is longer than the model's context window.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded {
        /// The provider's message.
        message: String,
    },
    /// The provider filtered the prompt or the output.
    #[error("content filtered: {message}")]
    ContentFiltered {
        /// The provider's reason.
        message: String,
    },
    /// A server error (5xx) or an error event in the stream.
    #[error("server error ({status}): {message}")]
    Server {
        /// HTTP status (0 for an error event inside a 200 stream).
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The stream ended without its terminator or finish reason.
    #[error("stream truncated: {reason}")]
    StreamTruncated {
        /// What was missing.
        reason: String,
    },
    /// The provider sent something that does not follow its protocol (bad JSON, a delta for an
    /// unknown block, tool arguments that are not JSON after assembly).
    #[error("protocol error: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// The output token limit was reached in the middle of a tool call; the partial call is
    /// not runnable and is not handed out.
    #[error("max tokens reached in the middle of tool call `{tool}`")]
    MaxTokensInToolCall {
        /// The tool being called.
        tool: String,
    },
    /// The connection could not be made or broke.
    #[error("connection failed: {message}")]
    Connect {
        /// What happened.
        message: String,
    },
    /// A timeout elapsed.
    #[error("timed out waiting for {phase}")]
    Timeout {
        /// Which wait: `connect`, `first byte`, `next event`.
        phase: String,
    },
    /// The model cannot do what was asked (seed 004 §1.3).
    #[error("unsupported model `{model}`: {reason}")]
    UnsupportedModel {
        /// The model ref.
        model: String,
        /// Why.
        reason: String,
    },
    /// Configuration is missing or wrong (no key, unknown provider, bad URL).
    #[error("configuration error: {message}")]
    Config {
        /// What is wrong, naming the setting.
        message: String,
    },
}
