//! OpenAI errors — HTTP bodies and in-stream `error` / `response.failed` events — as
//! [`ProviderError`]s.
//!
//! The error `code` decides first, the HTTP status second, because OpenAI reuses 429 for two
//! different situations: `rate_limit_exceeded` passes with time, `insufficient_quota` (the
//! account is out of credit) does not. Quota is therefore reported as
//! [`ProviderError::Authentication`] — the account lacks permission to spend, a person has to
//! act, and no retry policy should retry it — with OpenAI's message kept.

use crate::error::ProviderError;

use super::wire::{ApiError, ErrorBody, code_text};

/// Longest excerpt of a non-JSON error body kept in an error message.
const BODY_EXCERPT_CHARS: usize = 500;

/// Maps an HTTP error response of the Responses API to a typed error.
pub(crate) fn classify_error(status: u16, body: &str) -> ProviderError {
    let error = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .and_then(|parsed| parsed.error);
    match error {
        Some(error) => classify_api_error(status, &error),
        None => classify_parts(status, None, None, excerpt(body)),
    }
}

/// Maps an error object (from an HTTP body, an `error` event or `response.failed`).
/// `status` is 0 for errors that arrive inside a 200 stream.
pub(super) fn classify_api_error(status: u16, error: &ApiError) -> ProviderError {
    let code = code_text(error.code.as_ref());
    let message = error
        .message
        .clone()
        .unwrap_or_else(|| code.clone().unwrap_or_else(|| "unknown error".to_owned()));
    classify_parts(status, error.kind.as_deref(), code.as_deref(), message)
}

fn classify_parts(
    status: u16,
    kind: Option<&str>,
    code: Option<&str>,
    message: String,
) -> ProviderError {
    let message = redact_keys(&message);
    let by_code = code.or(kind);
    match by_code {
        Some("context_length_exceeded") => {
            return ProviderError::ContextLengthExceeded { message };
        }
        Some("insufficient_quota" | "invalid_api_key" | "authentication_error") => {
            return ProviderError::Authentication { status, message };
        }
        Some("rate_limit_exceeded" | "rate_limit_error" | "tokens" | "requests") => {
            return ProviderError::RateLimited {
                retry_after: None,
                message,
            };
        }
        Some("server_is_overloaded" | "overloaded" | "slow_down") => {
            return ProviderError::Overloaded { message };
        }
        Some("content_filter" | "content_policy_violation") => {
            return ProviderError::ContentFiltered { message };
        }
        // OpenAI uses `invalid_prompt` for prompts its safety system flagged.
        Some("invalid_prompt") if mentions_policy(&message) => {
            return ProviderError::ContentFiltered { message };
        }
        Some("server_error" | "internal_error") => {
            return ProviderError::Server { status, message };
        }
        _ => {}
    }
    if mentions_context_window(&message) {
        return ProviderError::ContextLengthExceeded { message };
    }
    match status {
        401 | 403 => ProviderError::Authentication { status, message },
        429 => ProviderError::RateLimited {
            retry_after: None,
            message,
        },
        503 | 529 => ProviderError::Overloaded { message },
        400..=499 => ProviderError::InvalidRequest { status, message },
        _ => ProviderError::Server { status, message },
    }
}

fn mentions_context_window(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("context window") || lower.contains("maximum context length")
}

fn mentions_policy(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("flagged") || lower.contains("usage policy")
}

/// The start of a body that is not an OpenAI error object (a proxy's HTML page, plain text).
pub(crate) fn excerpt(body: &str) -> String {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "empty error body".to_owned();
    }
    trimmed.chars().take(BODY_EXCERPT_CHARS).collect()
}

/// Replaces anything that looks like an API key with `[redacted]`.
pub(crate) fn redact_keys(message: &str) -> String {
    crate::error::redact_keys(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_is_not_a_rate_limit() {
        let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(
            classify_error(429, body),
            ProviderError::Authentication {
                status: 429,
                message:
                    "You exceeded your current quota, please check your plan and billing details."
                        .to_owned()
            }
        );
    }

    #[test]
    fn rate_limit_context_and_auth_by_code_and_status() {
        let rate = r#"{"error":{"message":"Rate limit reached for gpt-5 on tokens per min","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
        assert!(matches!(
            classify_error(429, rate),
            ProviderError::RateLimited { .. }
        ));
        let context = r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            classify_error(400, context),
            ProviderError::ContextLengthExceeded { .. }
        ));
        let auth = r#"{"error":{"message":"Incorrect API key provided: sk-proj-abc***************xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        match classify_error(401, auth) {
            ProviderError::Authentication { status, message } => {
                assert_eq!(status, 401);
                assert!(!message.contains("sk-proj"), "{message}");
                assert!(message.starts_with("Incorrect API key provided: [redacted]. You"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn invalid_request_keeps_the_message_and_the_status() {
        let body = r#"{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}"#;
        assert_eq!(
            classify_error(400, body),
            ProviderError::InvalidRequest {
                status: 400,
                message: "Unsupported parameter: 'temperature' is not supported with this model."
                    .to_owned()
            }
        );
    }

    #[test]
    fn server_overload_and_non_json_bodies() {
        assert!(matches!(
            classify_error(503, "<html>Service Unavailable</html>"),
            ProviderError::Overloaded { .. }
        ));
        assert_eq!(
            classify_error(502, "bad gateway"),
            ProviderError::Server {
                status: 502,
                message: "bad gateway".to_owned()
            }
        );
        assert!(matches!(
            classify_error(
                500,
                r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#
            ),
            ProviderError::Server { status: 500, .. }
        ));
        let flagged = r#"{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy.","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}"#;
        assert!(matches!(
            classify_error(400, flagged),
            ProviderError::ContentFiltered { .. }
        ));
    }

    #[test]
    fn redaction_leaves_words_that_merely_contain_sk_alone() {
        assert_eq!(redact_keys("ask-me sk-123 done"), "ask-me [redacted] done");
    }
}
