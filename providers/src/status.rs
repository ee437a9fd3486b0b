//! HTTP error statuses as [`ProviderError`]s, for every dialect: the one status table each
//! falls back on once its error body's own type or code has said nothing, the status an
//! error inside a 200 stream stands for, and the excerpt kept of a body that is not JSON.

use std::time::Duration;

use serde_json::Value;

use crate::error::ProviderError;

/// Longest excerpt of a non-JSON error body kept in an error message.
const BODY_EXCERPT_CHARS: usize = 500;

/// The error an HTTP `status` stands for, with the provider's `message` (already redacted)
/// and, for a 429, how long the provider asked to wait. 529 is Anthropic's "overloaded"; 503
/// is everyone's.
pub(crate) fn from_status(
    status: u16,
    message: String,
    retry_after: Option<Duration>,
) -> ProviderError {
    match status {
        401 | 403 => ProviderError::Authentication { status, message },
        429 => ProviderError::RateLimited {
            retry_after,
            message,
        },
        503 | 529 => ProviderError::Overloaded { message },
        400..=499 => ProviderError::InvalidRequest { status, message },
        _ => ProviderError::Server { status, message },
    }
}

/// The HTTP status an error inside a 200 stream stands for, or 0 when it names none: a
/// numeric `code` that is an HTTP error status (OpenRouter, vLLM), else a `type` or `code`
/// that says the request was at fault (OpenAI's and Groq's `invalid_request_error`, vLLM's
/// `BadRequestError`, the Responses API's `invalid_*` and image codes of `response.failed`).
pub(crate) fn stream_status(kind: Option<&str>, code: Option<&Value>) -> u16 {
    if let Some(status) = code
        .and_then(Value::as_u64)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (400..=599).contains(n))
    {
        return status;
    }
    let code = code.and_then(Value::as_str);
    for name in [code, kind].into_iter().flatten() {
        match name {
            "not_found_error" | "NotFoundError" | "model_not_found" => return 404,
            "request_too_large" => return 413,
            "UnprocessableEntityError" => return 422,
            "invalid_request_error"
            | "BadRequestError"
            | "tool_use_failed"
            | "unsupported_parameter"
            | "unsupported_value" => return 400,
            name if name.starts_with("invalid_")
                || name.starts_with("image_")
                || name.starts_with("unsupported_")
                || name.starts_with("empty_")
                || name.starts_with("failed_to_download") =>
            {
                return 400;
            }
            _ => {}
        }
    }
    0
}

/// The start of a body that is not the provider's error object (a proxy's HTML page, plain
/// text).
pub(crate) fn excerpt(body: &str) -> String {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "empty error body".to_owned();
    }
    trimmed.chars().take(BODY_EXCERPT_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_has_one_error() {
        let of = |status| from_status(status, "m".into(), None);
        let table = [
            (
                401,
                ProviderError::Authentication {
                    status: 401,
                    message: "m".into(),
                },
            ),
            (
                403,
                ProviderError::Authentication {
                    status: 403,
                    message: "m".into(),
                },
            ),
            (
                429,
                ProviderError::RateLimited {
                    retry_after: None,
                    message: "m".into(),
                },
            ),
            (
                503,
                ProviderError::Overloaded {
                    message: "m".into(),
                },
            ),
            (
                529,
                ProviderError::Overloaded {
                    message: "m".into(),
                },
            ),
            (
                404,
                ProviderError::InvalidRequest {
                    status: 404,
                    message: "m".into(),
                },
            ),
            (
                500,
                ProviderError::Server {
                    status: 500,
                    message: "m".into(),
                },
            ),
            (
                0,
                ProviderError::Server {
                    status: 0,
                    message: "m".into(),
                },
            ),
        ];
        for (status, expected) in table {
            assert_eq!(of(status), expected, "{status}");
        }
        let wait = Some(Duration::from_secs(3));
        assert_eq!(
            from_status(429, "m".into(), wait),
            ProviderError::RateLimited {
                retry_after: wait,
                message: "m".into()
            }
        );
    }
}
