//! Error bodies as typed errors (placeholder).

use crate::error::ProviderError;

/// Classifies an HTTP error response.
pub(crate) fn classify_error(status: u16, body: &str) -> ProviderError {
    ProviderError::Server {
        status,
        message: body.chars().take(200).collect(),
    }
}
