//! The native API's errors: each a status code and a JSON body `{"error": {"code", "message"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use motet_runtime::agent::RuntimeError;

/// What went wrong with one request to the native API.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiError {
    /// The request is malformed (a bad header, a query that cannot be read).
    #[error("{0}")]
    BadRequest(String),
    /// No such agent, thread, run or wait — or one the caller's token does not reach.
    #[error("no such {0}")]
    NotFound(&'static str),
    /// The request conflicts with the state of what it names (a run that ended, a wait
    /// answered already).
    #[error("{0}")]
    Conflict(String),
    /// The body is larger than the server takes.
    #[error("the body is larger than the server takes")]
    TooLarge,
    /// The body is JSON of the wrong shape, or a value it holds is not acceptable.
    #[error("{0}")]
    Unprocessable(String),
    /// The server is at its bound of streams.
    #[error("{0}")]
    Busy(String),
    /// The runtime or its store failed.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The status code it is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// A short, stable name for it, for clients to match on.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::TooLarge => "too_large",
            Self::Unprocessable(_) => "unprocessable",
            Self::Busy(_) => "busy",
            Self::Internal(_) => "internal",
        }
    }

    /// A runtime error as the API answers it.
    pub(crate) fn runtime(error: RuntimeError) -> Self {
        match error {
            RuntimeError::UnknownCall { .. } | RuntimeError::UnknownThread { .. } => {
                Self::NotFound("wait")
            }
            RuntimeError::AlreadyAnswered { .. }
            | RuntimeError::RequestNotPaused { .. }
            | RuntimeError::RequestNotRunning { .. } => Self::Conflict(error.to_string()),
            RuntimeError::WrongResponse { .. }
            | RuntimeError::InvalidEdit { .. }
            | RuntimeError::EmptySteer { .. } => Self::Unprocessable(error.to_string()),
            RuntimeError::NotRunning { .. } => Self::NotFound("agent"),
            other => {
                tracing::warn!(error = %other, "the runtime failed a request");
                Self::Internal(other.to_string())
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": { "code": self.code(), "message": self.to_string() }
        });
        (self.status(), Json(body)).into_response()
    }
}

/// A JSON body the API could not take, as its typed error: too large → 413, not JSON → 400,
/// the wrong shape → 422.
impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        use axum::extract::rejection::JsonRejection as R;
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Self::TooLarge;
        }
        match rejection {
            R::JsonDataError(e) => Self::Unprocessable(e.body_text()),
            R::MissingJsonContentType(e) => Self::BadRequest(e.body_text()),
            other => Self::BadRequest(other.body_text()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_status_and_code() {
        let cases = [
            (ApiError::BadRequest("x".into()), 400, "bad_request"),
            (ApiError::NotFound("run"), 404, "not_found"),
            (ApiError::Conflict("x".into()), 409, "conflict"),
            (ApiError::TooLarge, 413, "too_large"),
            (ApiError::Unprocessable("x".into()), 422, "unprocessable"),
            (ApiError::Busy("x".into()), 503, "busy"),
            (ApiError::Internal("x".into()), 500, "internal"),
        ];
        for (error, status, code) in cases {
            assert_eq!((error.status().as_u16(), error.code()), (status, code));
        }
    }
}
