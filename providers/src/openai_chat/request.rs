//! Request rendering (placeholder).

use motet_directives::LlmRequest;
use serde_json::Value;

use crate::error::ProviderError;

/// Renders a request body.
pub(crate) fn render(req: &LlmRequest) -> Result<Value, ProviderError> {
    Err(ProviderError::Config {
        message: format!("dialect not yet available for `{}`", req.model),
    })
}
