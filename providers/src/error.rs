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
    /// The provider sent something that does not follow its protocol (an event that is not
    /// JSON, a delta for an unknown block). A model's tool arguments that are not JSON are not
    /// one: the call keeps them verbatim and its tool answers with an error result.
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
    /// A hosted tool (web search, code execution, a remote MCP server) that the dialect or the
    /// model cannot run, or cannot run with the options asked for; refused before anything is
    /// sent, never dropped in silence.
    #[error("{dialect} cannot run the hosted tool `{tool}`: {reason}")]
    UnsupportedHostedTool {
        /// The dialect the request would be sent in.
        dialect: crate::Dialect,
        /// The tool's kind: `web_search`, `code_execution`, `mcp_server`.
        tool: &'static str,
        /// Why, naming the model or the option when one is the reason.
        reason: String,
    },
    /// A response format (structured output) that the dialect or the model cannot give, or a
    /// schema its constrained decoding cannot take; refused before anything is sent, never
    /// dropped in silence.
    #[error("{dialect} cannot give the response format asked for: {reason}")]
    UnsupportedResponseFormat {
        /// The dialect the request would be sent in.
        dialect: crate::Dialect,
        /// Why, naming the model, the keyword or the place in the schema when one is the reason.
        reason: String,
    },
    /// An image, document or sound the dialect has no form for, or that a known model
    /// documents it cannot read; refused before anything is sent, never dropped in silence.
    #[error("{dialect} cannot send the {kind} part to `{model}`: {reason}")]
    UnsupportedContent {
        /// The dialect the request would be sent in.
        dialect: crate::Dialect,
        /// The model ref.
        model: String,
        /// The part's kind: `image`, `document` or `audio`.
        kind: &'static str,
        /// Why, naming the format or the model's inputs.
        reason: String,
    },
    /// A part, or all the parts of a request, larger than the provider takes; refused before
    /// anything is sent.
    #[error("{what} is {size} bytes as sent, more than the {limit} the provider takes")]
    ContentTooLarge {
        /// What is too large: one part of a kind, or the request's parts together.
        what: String,
        /// Its size in the body (base64), in bytes.
        size: usize,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The response passed [`Limits::max_response_bytes`](crate::Limits) (text, reasoning,
    /// tool calls and the provider data kept with them); the stream was stopped there.
    #[error(
        "the response passed {limit} bytes of text, reasoning, tool calls and the provider data kept with them"
    )]
    ResponseTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A hard budget refused the call before it was sent (the runtime's budgets; nothing
    /// was spent on it).
    #[error("budget exhausted: {0}")]
    BudgetExceeded(crate::budget::BudgetExceeded),
    /// A soft budget limit stopped the call before it was sent: it may go on once a person
    /// approves (the runtime's budgets; nothing was spent on it).
    #[error("{}", crate::budget::describe(.0))]
    BudgetApproval(crate::budget::SoftLimit),
    /// Configuration is missing or wrong (no key, unknown provider, bad URL).
    #[error("configuration error: {message}")]
    Config {
        /// What is wrong, naming the setting.
        message: String,
    },
}

/// Prefixes of the providers' API keys: OpenAI (`sk-`, `sk-proj-`), Anthropic (`sk-ant-`),
/// Google (`AIza`).
const KEY_PREFIXES: [&str; 2] = ["sk-", "AIza"];

/// Replaces every word that starts like an API key with `[redacted]`. OpenAI echoes a masked
/// key in its 401 message (`Incorrect API key provided: sk-abc…xyz`), a proxy may echo a whole
/// one; even masked, a key does not belong in an error that may be logged.
pub(crate) fn redact_keys(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    loop {
        let next = KEY_PREFIXES.iter().filter_map(|p| rest.find(p)).min();
        let Some(at) = next else { break };
        let starts_word = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '.' | ',' | '"' | '\'' | ')'))
            .unwrap_or(after.len());
        let end = end.max(1);
        if starts_word {
            out.push_str("[redacted]");
        } else {
            out.push_str(&after[..end]);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The shortest run of a configured key's characters that is redacted: long enough that an
/// ordinary word never matches, short enough to catch a key echoed without its prefix or
/// masked down to its tail.
const SECRET_RUN: usize = 8;

/// Replaces, in `message`, every run of at least [`SECRET_RUN`] bytes that also occurs in
/// `secret` (the whole key, the key without its prefix, a long tail of it) with `[redacted]`.
pub(crate) fn redact_secret(message: &str, secret: &str) -> String {
    let (text, key) = (message.as_bytes(), secret.as_bytes());
    if key.len() < SECRET_RUN {
        return if key.is_empty() {
            message.to_owned()
        } else {
            message.replace(secret, "[redacted]")
        };
    }
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let longest = (0..key.len())
            .map(|from| {
                text[at..]
                    .iter()
                    .zip(&key[from..])
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        if longest >= SECRET_RUN {
            out.extend_from_slice(b"[redacted]");
            at += longest;
        } else {
            out.push(text[at]);
            at += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl ProviderError {
    /// The kind a failed call is recorded under (`llm.failed`, the thread's error entry).
    /// Matched without a catch-all, so a new variant cannot fall into `other` unnoticed.
    pub fn llm_error_kind(&self) -> motet_directives::results::LlmErrorKind {
        use motet_directives::results::LlmErrorKind as K;
        match self {
            Self::Authentication { .. } => K::Auth,
            Self::RateLimited { .. } => K::RateLimited,
            Self::Overloaded { .. } => K::Overloaded,
            Self::InvalidRequest { .. } => K::InvalidRequest,
            Self::ContextLengthExceeded { .. } => K::ContextLength,
            Self::ContentFiltered { .. } => K::ContentFiltered,
            Self::Server { .. } => K::Server,
            Self::StreamTruncated { .. } => K::StreamTruncated,
            Self::Protocol { .. } => K::Protocol,
            Self::MaxTokensInToolCall { .. } => K::MaxTokens,
            Self::Connect { .. } => K::Connect,
            Self::Timeout { .. } => K::Timeout,
            Self::UnsupportedModel { .. }
            | Self::UnsupportedHostedTool { .. }
            | Self::UnsupportedResponseFormat { .. }
            | Self::UnsupportedContent { .. } => K::Unsupported,
            Self::ContentTooLarge { .. } => K::InvalidRequest,
            Self::ResponseTooLarge { .. } => K::ResponseTooLarge,
            Self::BudgetExceeded(_) => K::Budget,
            Self::BudgetApproval(_) => K::BudgetApproval,
            Self::Config { .. } => K::Config,
        }
    }

    /// The same error with anything that looks like an API key removed from its message.
    pub(crate) fn redacted(self) -> Self {
        self.map_message(|m| redact_keys(&m))
    }

    /// The same error with every run of 8 or more characters of each of `secrets` (the
    /// configured API key, the MCP servers' tokens a request carried) removed from its message:
    /// a provider may quote a token it failed to use, or echo a key without its prefix (an
    /// `openai-compat` token has no known prefix at all).
    pub(crate) fn without_secrets<'a>(self, secrets: impl IntoIterator<Item = &'a str>) -> Self {
        secrets.into_iter().fold(self, |error, secret| {
            error.map_message(|m| redact_secret(&m, secret))
        })
    }

    /// The same error with `r` applied to its message.
    fn map_message(self, r: impl Fn(String) -> String) -> Self {
        use ProviderError as E;
        match self {
            E::Authentication { status, message } => E::Authentication {
                status,
                message: r(message),
            },
            E::RateLimited {
                retry_after,
                message,
            } => E::RateLimited {
                retry_after,
                message: r(message),
            },
            E::Overloaded { message } => E::Overloaded {
                message: r(message),
            },
            E::InvalidRequest { status, message } => E::InvalidRequest {
                status,
                message: r(message),
            },
            E::ContextLengthExceeded { message } => E::ContextLengthExceeded {
                message: r(message),
            },
            E::ContentFiltered { message } => E::ContentFiltered {
                message: r(message),
            },
            E::Server { status, message } => E::Server {
                status,
                message: r(message),
            },
            E::StreamTruncated { reason } => E::StreamTruncated { reason: r(reason) },
            E::Protocol { message } => E::Protocol {
                message: r(message),
            },
            E::Connect { message } => E::Connect {
                message: r(message),
            },
            E::Config { message } => E::Config {
                message: r(message),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_key_is_redacted_in_any_form() {
        let key = "tok_live_4f9a2c7e1b3d5a";
        let table = [
            (
                "bad token tok_live_4f9a2c7e1b3d5a.",
                "bad token [redacted].",
            ),
            // Without its prefix, or only its tail.
            ("key 4f9a2c7e1b3d5a rejected", "key [redacted] rejected"),
            ("key ...c7e1b3d5a rejected", "key ...[redacted] rejected"),
            // Short runs of its characters are ordinary text.
            ("live tokens only", "live tokens only"),
            ("status 4f9a", "status 4f9a"),
        ];
        for (message, expected) in table {
            assert_eq!(redact_secret(message, key), expected, "{message}");
        }
        let error = ProviderError::Authentication {
            status: 401,
            message: format!("invalid token {}", &key[4..]),
        };
        let scrubbed = error.redacted().without_secrets([key]);
        assert!(!scrubbed.to_string().contains("4f9a2c7e"), "{scrubbed}");
    }

    #[test]
    fn keys_of_every_provider_are_redacted_but_words_that_contain_the_prefix_are_not() {
        assert_eq!(
            redact_keys("Incorrect API key provided: sk-proj-abc123. See docs."),
            "Incorrect API key provided: [redacted]. See docs."
        );
        assert_eq!(
            redact_keys("key sk-ant-api03-xyz rejected"),
            "key [redacted] rejected"
        );
        assert_eq!(redact_keys("bad key AIzaSyD-123"), "bad key [redacted]");
        assert_eq!(
            redact_keys("ask-me task-1 AIza"),
            "ask-me task-1 [redacted]"
        );
        assert_eq!(redact_keys("no keys here"), "no keys here");
        let e = ProviderError::Server {
            status: 500,
            message: "upstream said sk-live-SECRET".into(),
        }
        .redacted();
        assert!(!e.to_string().contains("SECRET"));
    }
}
