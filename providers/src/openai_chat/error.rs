//! Chat Completions errors. The bodies (`{"error": {message, type, code, param}}`), the codes
//! and the statuses are OpenAI's, the same as the Responses API's, so the classification is
//! shared; it also reads the `{"error": …}` chunk a server may send inside a 200 stream
//! (status 0).

use crate::error::ProviderError;

/// Classifies an HTTP error response (or, with status 0, an in-stream error chunk).
pub(crate) fn classify_error(status: u16, body: &str) -> ProviderError {
    crate::openai_responses::classify_error(status, body)
}
