//! A2A's errors as JSON-RPC errors: each its code (JSON-RPC's own, or A2A's from -32001) and a
//! `google.rpc.ErrorInfo` detail with A2A's reason, as the A2A 1.0 JSON-RPC binding says.

use serde_json::{Value, json};

/// What went wrong with one JSON-RPC call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum A2aError {
    /// The body is not JSON.
    #[error("the body is not JSON: {0}")]
    Parse(String),
    /// The body is JSON but not a JSON-RPC 2.0 request.
    #[error("{0}")]
    InvalidRequest(String),
    /// No such method.
    #[error("no method `{0}`")]
    MethodNotFound(String),
    /// The parameters are not what the method takes.
    #[error("{0}")]
    InvalidParams(String),
    /// The runtime failed.
    #[error("{0}")]
    Internal(String),
    /// No such task, or one the caller may not reach.
    #[error("no task `{0}`")]
    TaskNotFound(String),
    /// The task has ended: it cannot be cancelled.
    #[error("task `{0}` has ended and cannot be cancelled")]
    TaskNotCancelable(String),
    /// Push notifications are not served.
    #[error("push notifications are not served")]
    PushNotificationNotSupported,
    /// What was asked is not served, or not in the task's state.
    #[error("{0}")]
    UnsupportedOperation(String),
    /// A part of a kind the agent does not take (a file).
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// The request's `A2A-Version` is not served.
    #[error("A2A version `{0}` is not served: this server speaks 1.0 (send `A2A-Version: 1.0`)")]
    VersionNotSupported(String),
}

impl A2aError {
    /// Its JSON-RPC error code.
    pub(crate) fn code(&self) -> i64 {
        match self {
            Self::Parse(_) => -32700,
            Self::InvalidRequest(_) => -32600,
            Self::MethodNotFound(_) => -32601,
            Self::InvalidParams(_) => -32602,
            Self::Internal(_) => -32603,
            Self::TaskNotFound(_) => -32001,
            Self::TaskNotCancelable(_) => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation(_) => -32004,
            Self::ContentTypeNotSupported(_) => -32005,
            Self::VersionNotSupported(_) => -32009,
        }
    }

    /// A2A's reason for it (the `ErrorInfo` detail's).
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Self::Parse(_) => "PARSE_ERROR",
            Self::InvalidRequest(_) => "INVALID_REQUEST",
            Self::MethodNotFound(_) => "METHOD_NOT_FOUND",
            Self::InvalidParams(_) => "INVALID_PARAMS",
            Self::Internal(_) => "INTERNAL_ERROR",
            Self::TaskNotFound(_) => "TASK_NOT_FOUND",
            Self::TaskNotCancelable(_) => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::VersionNotSupported(_) => "VERSION_NOT_SUPPORTED",
        }
    }

    /// The JSON-RPC response that answers request `id` with it.
    pub(crate) fn response(&self, id: &Value) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": self.code(),
                "message": self.to_string(),
                "data": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": self.reason(),
                    "domain": "a2a-protocol.org",
                    "metadata": {},
                }],
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_a2a_s_code_and_reason() {
        let cases = [
            (A2aError::Parse("x".into()), -32700),
            (A2aError::InvalidRequest("x".into()), -32600),
            (A2aError::MethodNotFound("x".into()), -32601),
            (A2aError::InvalidParams("x".into()), -32602),
            (A2aError::Internal("x".into()), -32603),
            (A2aError::TaskNotFound("t".into()), -32001),
            (A2aError::TaskNotCancelable("t".into()), -32002),
            (A2aError::PushNotificationNotSupported, -32003),
            (A2aError::UnsupportedOperation("x".into()), -32004),
            (A2aError::ContentTypeNotSupported("x".into()), -32005),
            (A2aError::VersionNotSupported("0.3".into()), -32009),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code, "{error:?}");
        }
        let answer = A2aError::TaskNotFound("t-1".into()).response(&json!(7));
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], -32001);
        assert_eq!(answer["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
        assert!(answer.get("result").is_none());
    }
}
