//! The OpenAI Responses API dialect (`POST /v1/responses`, `stream: true`).
//!
//! # Layout
//! - `request` — our [`motet_directives::LlmRequest`] rendered as a Responses request body,
//!   replaying reasoning items (`id` + `encrypted_content`) statelessly (`store: false`).
//! - `stream` — the semantic SSE events (`response.output_item.added`, `…delta`, `…done`,
//!   `response.completed`) turned into [`crate::LlmEvent`]s, keyed by item id.
//! - `error` — HTTP error bodies and in-stream `error` / `response.failed` events as
//!   [`crate::ProviderError`].
//! - `wire` — the private serde types of both directions.

mod error;
pub(crate) mod request;
pub(crate) mod stream;
mod wire;

pub(crate) use error::classify_error;

/// The provider family of the opaque items this dialect produces and replays.
pub(crate) const PROVIDER: &str = "openai";
