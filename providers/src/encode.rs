//! A request body written out: the last step of every dialect's `render` and `encode`, kept
//! apart from the response side (`body`), which reads what comes back.

use serde::Serialize;
use serde_json::Value;

use crate::error::ProviderError;

/// A request body as JSON text, for the client to send.
pub(crate) fn to_json(body: &impl Serialize) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body).map_err(|e| ProviderError::Protocol {
        message: format!("the request body could not be encoded: {e}"),
    })
}

/// A request body as a `Value`, for [`Dialect::render`](crate::Dialect::render).
pub(crate) fn to_value(body: &impl Serialize) -> Result<Value, ProviderError> {
    serde_json::to_value(body).map_err(|e| ProviderError::Protocol {
        message: format!("the request body could not be rendered: {e}"),
    })
}
