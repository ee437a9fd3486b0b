//! What the OpenAI-compatible endpoint refuses or fails with, each answered in OpenAI's error
//! shape (`{"error": {"message", "type", "param", "code"}}`) with its status.

use std::time::Duration;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Why a request to the OpenAI-compatible endpoint got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OpenAiError {
    /// No served agent by that name reaches the caller (unknown, or another token's).
    #[error("the model `{model}` does not exist or you do not have access to it")]
    UnknownModel {
        /// The name asked for.
        model: String,
    },
    /// The body is not a request the endpoint takes.
    #[error("{message}")]
    BadRequest {
        /// What is wrong, for the client.
        message: String,
        /// The field at fault (`messages[2].role`), when one is.
        param: Option<String>,
    },
    /// The body is larger than the endpoint reads.
    #[error("the request body is larger than the server takes")]
    TooLarge,
    /// The agent ended the request with a failure.
    #[error("{reason}")]
    AgentFailed {
        /// Its reason, as the runtime states it.
        reason: String,
    },
    /// The agent is not running (stopped, or its thread cannot start).
    #[error("the agent is unavailable: {reason}")]
    Unavailable {
        /// Why.
        reason: String,
    },
    /// The server shuts down before the answer came; the request is not cancelled.
    #[error(
        "the server is shutting down; request `{request}` on thread `{thread}` is not cancelled \
         and its answer, when it comes, is kept on that thread"
    )]
    ShuttingDown {
        /// The request.
        request: String,
        /// Its thread.
        thread: String,
    },
    /// No answer in time; the request goes on.
    #[error(
        "the agent has not answered within {}s; request `{request}` on thread `{thread}` goes on",
        waited.as_secs()
    )]
    Timeout {
        /// How long the endpoint waited.
        waited: Duration,
        /// The request.
        request: String,
        /// Its thread.
        thread: String,
    },
}

impl OpenAiError {
    /// A bad request about `param` (none: the body as a whole).
    pub(crate) fn bad(message: impl Into<String>, param: Option<&str>) -> Self {
        Self::BadRequest {
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }

    /// The HTTP status it is answered with.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::UnknownModel { .. } => StatusCode::NOT_FOUND,
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::AgentFailed { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Self::ShuttingDown { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The error object OpenAI's clients read.
    pub(crate) fn body(&self) -> ErrorBody {
        let (kind, code) = match self {
            Self::UnknownModel { .. } => ("invalid_request_error", Some("model_not_found")),
            Self::BadRequest { .. } => ("invalid_request_error", None),
            Self::TooLarge => ("invalid_request_error", Some("request_too_large")),
            Self::AgentFailed { .. } => ("server_error", Some("agent_failed")),
            Self::Unavailable { .. } => ("server_error", Some("agent_unavailable")),
            Self::Timeout { .. } => ("server_error", Some("timeout")),
            Self::ShuttingDown { .. } => ("server_error", Some("shutting_down")),
        };
        let param = match self {
            Self::BadRequest { param, .. } => param.clone(),
            Self::UnknownModel { .. } => Some("model".to_owned()),
            _ => None,
        };
        ErrorBody {
            error: ErrorObject {
                message: self.to_string(),
                kind,
                param,
                code,
            },
        }
    }
}

/// `{"error": {...}}`.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorBody {
    pub(crate) error: ErrorObject,
}

/// OpenAI's error object.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorObject {
    pub(crate) message: String,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) param: Option<String>,
    pub(crate) code: Option<&'static str>,
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        (self.status(), Json(self.body())).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_status_and_openai_shape() {
        let cases = [
            (
                OpenAiError::UnknownModel { model: "x".into() },
                404,
                serde_json::json!({"message": "the model `x` does not exist or you do not have access to it",
                    "type": "invalid_request_error", "param": "model", "code": "model_not_found"}),
            ),
            (
                OpenAiError::bad("messages must not be empty", Some("messages")),
                400,
                serde_json::json!({"message": "messages must not be empty",
                    "type": "invalid_request_error", "param": "messages", "code": null}),
            ),
            (
                OpenAiError::TooLarge,
                413,
                serde_json::json!({"message": "the request body is larger than the server takes",
                    "type": "invalid_request_error", "param": null, "code": "request_too_large"}),
            ),
            (
                OpenAiError::Timeout {
                    waited: Duration::from_secs(5),
                    request: "r".into(),
                    thread: "t".into(),
                },
                504,
                serde_json::json!({"message": "the agent has not answered within 5s; request `r` on thread `t` goes on",
                    "type": "server_error", "param": null, "code": "timeout"}),
            ),
            (
                OpenAiError::ShuttingDown {
                    request: "r".into(),
                    thread: "t".into(),
                },
                503,
                serde_json::json!({"message": "the server is shutting down; request `r` on thread `t` is not cancelled and its answer, when it comes, is kept on that thread",
                    "type": "server_error", "param": null, "code": "shutting_down"}),
            ),
        ];
        for (error, status, body) in cases {
            assert_eq!(error.status().as_u16(), status, "{error}");
            let json = serde_json::to_value(error.body()).unwrap_or_default();
            assert_eq!(json, serde_json::json!({ "error": body }));
        }
    }
}
