//! The Anthropic Messages dialect (`POST /v1/messages`, `stream: true`).
//!
//! # Layout
//! - `request` — our [`motet_directives::LlmRequest`] rendered as a Messages body.
//! - `stream` — `message_start` … `message_stop` events turned into [`crate::LlmEvent`]s.
//! - `error` — HTTP error bodies and in-stream errors as [`crate::ProviderError`].

// Placeholder module: being written; reached through the dialect dispatch.
#![allow(dead_code, unused_imports)]

mod error;
pub(crate) mod request;
pub(crate) mod stream;

pub(crate) use error::classify_error;
