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

/// Headers this request needs besides authentication (`anthropic-version`, and the
/// interleaved-thinking beta when thinking is on).
pub(crate) fn extra_headers(_req: &LlmRequest) -> Vec<(&'static str, String)> {
    vec![("anthropic-version", "2023-06-01".to_owned())]
}
