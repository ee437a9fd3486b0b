//! Google API errors as [`ProviderError`]s.
//!
//! Gemini reports errors as `{"error": {"code", "message", "status", "details"}}` — in the
//! body of a failed HTTP response, and occasionally as a chunk of a 200 stream. The canonical
//! `status` decides first, the HTTP code second. Two cases need the message or the details: an
//! invalid key is a 400 `INVALID_ARGUMENT` whose details carry `API_KEY_INVALID`, and an
//! over-long prompt is a 400 `INVALID_ARGUMENT` saying the input token count exceeds the maximum.
//! A 429 may say how long to wait in a `google.rpc.RetryInfo` detail (`"retryDelay": "37s"`).

use std::time::Duration;

use serde_json::Value;

use super::wire::{ApiError, ErrorBody};
use crate::error::ProviderError;
use crate::status::{excerpt, from_status};

/// Maps an HTTP error response of the Gemini API to a typed error.
pub(crate) fn classify_error(status: u16, body: &str) -> ProviderError {
    match serde_json::from_str::<ErrorBody>(body)
        .ok()
        .and_then(first_error)
    {
        Some(error) => classify_api_error(status, &error),
        None => by_status(status, excerpt(body), None),
    }
}

fn first_error(body: ErrorBody) -> Option<ApiError> {
    match body {
        ErrorBody::One { error } => Some(error),
        ErrorBody::Many(bodies) => bodies.into_iter().find_map(first_error),
    }
}

/// Maps an error object. `status` is the HTTP status, or 0 inside a stream (the error's own
/// `code` is used then).
pub(super) fn classify_api_error(status: u16, error: &ApiError) -> ProviderError {
    let status = match (status, error.code.as_ref().and_then(Value::as_u64)) {
        (0, Some(code)) => u16::try_from(code).unwrap_or(0),
        _ => status,
    };
    let message = error
        .message
        .clone()
        .or_else(|| error.status.clone())
        .unwrap_or_else(|| "unknown error".to_owned());
    let retry_after = retry_delay(&error.details);
    if api_key_invalid(error) {
        return ProviderError::Authentication {
            status: if status == 0 { 400 } else { status },
            message,
        };
    }
    match error.status.as_deref() {
        Some("UNAUTHENTICATED" | "PERMISSION_DENIED") => {
            ProviderError::Authentication { status, message }
        }
        Some("RESOURCE_EXHAUSTED") => ProviderError::RateLimited {
            retry_after,
            message,
        },
        Some("UNAVAILABLE") => ProviderError::Overloaded { message },
        Some("INTERNAL" | "DEADLINE_EXCEEDED" | "UNKNOWN") => {
            ProviderError::Server { status, message }
        }
        Some("INVALID_ARGUMENT") if exceeds_context(&message) => {
            ProviderError::ContextLengthExceeded { message }
        }
        Some("INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "NOT_FOUND" | "OUT_OF_RANGE") => {
            ProviderError::InvalidRequest {
                status: if status == 0 { 400 } else { status },
                message,
            }
        }
        _ => by_status(status, message, retry_after),
    }
}

fn by_status(status: u16, message: String, retry_after: Option<Duration>) -> ProviderError {
    if exceeds_context(&message) {
        return ProviderError::ContextLengthExceeded { message };
    }
    from_status(status, message, retry_after)
}

/// "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
fn exceeds_context(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("exceeds the maximum number of tokens") || lower.contains("input token count")
}

fn api_key_invalid(error: &ApiError) -> bool {
    error
        .details
        .iter()
        .any(|detail| detail.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID"))
        || error
            .message
            .as_deref()
            .is_some_and(|m| m.contains("API key not valid"))
}

/// `google.rpc.RetryInfo.retryDelay`, a protobuf duration such as `"37s"` or `"1.5s"`.
fn retry_delay(details: &[Value]) -> Option<Duration> {
    details.iter().find_map(|detail| {
        let kind = detail.get("@type").and_then(Value::as_str)?;
        if !kind.ends_with("google.rpc.RetryInfo") {
            return None;
        }
        let delay = detail.get("retryDelay").and_then(Value::as_str)?;
        let seconds: f64 = delay.strip_suffix('s')?.parse().ok()?;
        Duration::try_from_secs_f64(seconds).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_key_is_authentication_although_it_is_a_400() {
        let body = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}"#;
        assert_eq!(
            classify_error(400, body),
            ProviderError::Authentication {
                status: 400,
                message: "API key not valid. Please pass a valid API key.".to_owned()
            }
        );
    }

    #[test]
    fn quota_carries_the_retry_delay() {
        let body = r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}"#;
        assert_eq!(
            classify_error(429, body),
            ProviderError::RateLimited {
                retry_after: Some(Duration::from_secs(37)),
                message:
                    "You exceeded your current quota, please check your plan and billing details."
                        .to_owned()
            }
        );
    }

    #[test]
    fn context_overflow_overload_and_invalid_requests() {
        let long = r#"[{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#;
        assert!(matches!(
            classify_error(400, long),
            ProviderError::ContextLengthExceeded { .. }
        ));
        let busy = r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#;
        assert!(matches!(
            classify_error(503, busy),
            ProviderError::Overloaded { .. }
        ));
        let bad = r#"{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts.","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(
            classify_error(400, bad),
            ProviderError::InvalidRequest {
                status: 400,
                message: "Function call is missing a thought_signature in functionCall parts."
                    .to_owned()
            }
        );
        assert!(matches!(
            classify_error(500, "<html>oops</html>"),
            ProviderError::Server { status: 500, .. }
        ));
        assert!(matches!(
            classify_error(403, ""),
            ProviderError::Authentication { status: 403, .. }
        ));
    }

    #[test]
    fn an_error_inside_the_stream_uses_its_own_code() {
        let error = ApiError {
            code: Some(Value::from(500)),
            message: Some("An internal error has occurred.".to_owned()),
            status: Some("INTERNAL".to_owned()),
            details: Vec::new(),
        };
        assert_eq!(
            classify_api_error(0, &error),
            ProviderError::Server {
                status: 500,
                message: "An internal error has occurred.".to_owned()
            }
        );
    }
}
