//! Anthropic errors — HTTP bodies and in-stream `error` events — as [`ProviderError`]s.
//!
//! The error `type` decides first (`overloaded_error` arrives as 529 over HTTP and inside a
//! 200 stream alike), the HTTP status second.

use super::wire::ErrorBody;
use crate::error::{ProviderError, redact_keys};
use crate::status::{excerpt, from_status, stream_status};

/// Classifies an HTTP error response, or with status 0 an `error` event inside the stream.
/// An event's status comes from its error `type` (`invalid_request_error` is a 400, as over
/// HTTP), so an error the request caused is not retried as a passing server fault.
pub(crate) fn classify_error(status: u16, body: &str) -> ProviderError {
    let parsed = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .and_then(|b| b.error);
    let (kind, message) = match parsed {
        Some(error) => {
            let kind = error.kind.unwrap_or_default();
            let message = error.message.unwrap_or_else(|| kind.clone());
            (kind, redact_keys(&message))
        }
        None => (String::new(), redact_keys(&excerpt(body))),
    };
    let status = if status == 0 {
        stream_status(Some(&kind), None)
    } else {
        status
    };
    match kind.as_str() {
        "authentication_error" | "permission_error" | "billing_error" => {
            return ProviderError::Authentication { status, message };
        }
        "rate_limit_error" => {
            return ProviderError::RateLimited {
                retry_after: None,
                message,
            };
        }
        "overloaded_error" => return ProviderError::Overloaded { message },
        "api_error" | "timeout_error" => return ProviderError::Server { status, message },
        "invalid_request_error" if too_long(&message) => {
            return ProviderError::ContextLengthExceeded { message };
        }
        _ => {}
    }
    from_status(status, message, None)
}

fn too_long(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("prompt is too long") || lower.contains("context window")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_types_decide_before_statuses() {
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            classify_error(529, overloaded),
            ProviderError::Overloaded {
                message: "Overloaded".into()
            }
        );
        assert!(matches!(
            classify_error(0, overloaded),
            ProviderError::Overloaded { .. }
        ));
        let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            classify_error(400, too_long),
            ProviderError::ContextLengthExceeded { .. }
        ));
        let invalid = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}"#;
        assert_eq!(
            classify_error(400, invalid),
            ProviderError::InvalidRequest {
                status: 400,
                message: "max_tokens: field required".into()
            }
        );
        let auth = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert!(matches!(
            classify_error(401, auth),
            ProviderError::Authentication { status: 401, .. }
        ));
    }

    #[test]
    fn an_error_event_is_typed_by_its_type_as_over_http() {
        let invalid = r#"{"type":"error","error":{"type":"invalid_request_error","message":"tool_use ids must be unique"}}"#;
        assert_eq!(
            classify_error(0, invalid),
            ProviderError::InvalidRequest {
                status: 400,
                message: "tool_use ids must be unique".into()
            }
        );
        let missing = r#"{"type":"error","error":{"type":"not_found_error","message":"model: x"}}"#;
        assert!(matches!(
            classify_error(0, missing),
            ProviderError::InvalidRequest { status: 404, .. }
        ));
        let api =
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
        assert!(matches!(
            classify_error(0, api),
            ProviderError::Server { status: 0, .. }
        ));
    }

    #[test]
    fn html_pages_fall_back_to_the_status() {
        let page = "<html><body><h1>502 Bad Gateway</h1></body></html>";
        match classify_error(502, page) {
            ProviderError::Server { status, message } => {
                assert_eq!(status, 502);
                assert!(message.contains("502 Bad Gateway"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            classify_error(529, ""),
            ProviderError::Overloaded { .. }
        ));
    }
}
