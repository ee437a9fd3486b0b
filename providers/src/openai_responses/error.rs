//! OpenAI errors — HTTP bodies and in-stream `error` / `response.failed` events — as
//! [`ProviderError`]s.
//!
//! The error `code` decides first, the HTTP status second, because OpenAI reuses 429 for two
//! different situations: `rate_limit_exceeded` passes with time, `insufficient_quota` (the
//! account is out of credit) does not. Quota is therefore reported as
//! [`ProviderError::Authentication`] — the account lacks permission to spend, a person has to
//! act, and no retry policy should retry it — with OpenAI's message kept.

use super::wire::{ApiError, ErrorBody, code_text};
use crate::error::{ProviderError, redact_keys};
use crate::status::{excerpt, from_status, stream_status};

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
/// `status` is 0 for errors that arrive inside a 200 stream: the error's own status then
/// comes from its `code` or `type` ([`stream_status`]), so that an error the request caused
/// (Groq's `tool_use_failed`, OpenRouter's `"code": 400`) is not taken for a passing server
/// fault and retried. A 4xx error from inside a stream keeps its textual code in its message.
pub(super) fn classify_api_error(status: u16, error: &ApiError) -> ProviderError {
    let code = code_text(error.code.as_ref());
    let message = error
        .message
        .clone()
        .unwrap_or_else(|| code.clone().unwrap_or_else(|| "unknown error".to_owned()));
    let in_stream = status == 0;
    let status = if in_stream {
        stream_status(error.kind.as_deref(), error.code.as_ref())
    } else {
        status
    };
    let classified = classify_parts(status, error.kind.as_deref(), code.as_deref(), message);
    match classified {
        ProviderError::InvalidRequest { status, message } if in_stream => {
            let named = code
                .as_deref()
                .filter(|c| c.parse::<u16>().is_err() && !message.contains(c));
            ProviderError::InvalidRequest {
                status,
                message: match named {
                    Some(code) => format!("{message} ({code})"),
                    None => message,
                },
            }
        }
        other => other,
    }
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
    from_status(status, message, None)
}

fn mentions_context_window(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("context window") || lower.contains("maximum context length")
}

fn mentions_policy(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("flagged") || lower.contains("usage policy")
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
    fn an_error_inside_a_stream_takes_its_status_from_its_code_or_type() {
        // Groq, when a model's tool call does not parse (its documented error object).
        let groq = r#"{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=x>"}}"#;
        assert_eq!(
            classify_error(0, groq),
            ProviderError::InvalidRequest {
                status: 400,
                message: "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details. (tool_use_failed)".to_owned()
            }
        );
        // OpenRouter and vLLM put the HTTP status in `code`.
        let openrouter = r#"{"error":{"code":400,"message":"Token limit reached"}}"#;
        assert_eq!(
            classify_error(0, openrouter),
            ProviderError::InvalidRequest {
                status: 400,
                message: "Token limit reached".to_owned()
            }
        );
        let upstream = r#"{"error":{"code":502,"message":"Provider returned error"}}"#;
        assert!(matches!(
            classify_error(0, upstream),
            ProviderError::Server { status: 502, .. }
        ));
        let vllm = r#"{"error":{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}}"#;
        assert!(matches!(
            classify_error(0, vllm),
            ProviderError::ContextLengthExceeded { .. }
        ));
        let image =
            r#"{"error":{"code":"invalid_image_url","message":"Failed to download the image."}}"#;
        assert!(matches!(
            classify_error(0, image),
            ProviderError::InvalidRequest { status: 400, .. }
        ));
        // A server fault without a status stays one, status 0.
        let server = r#"{"error":{"message":"The server had an error","type":"server_error"}}"#;
        assert!(matches!(
            classify_error(0, server),
            ProviderError::Server { status: 0, .. }
        ));
    }

    #[test]
    fn redaction_leaves_words_that_merely_contain_sk_alone() {
        assert_eq!(redact_keys("ask-me sk-123 done"), "ask-me [redacted] done");
    }
}
