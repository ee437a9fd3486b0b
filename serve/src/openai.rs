//! The openai routes.

use std::sync::Arc;

use crate::Shared;

/// The openai routes, on the shared state.
pub(crate) fn routes() -> axum::Router<Arc<Shared>> {
    axum::Router::new()
}
