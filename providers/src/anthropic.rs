//! The Anthropic Messages dialect (`POST {base}/v1/messages`, `stream: true`).
//!
//! # Layout
//! - `request` — our [`motet_directives::LlmRequest`] rendered as a Messages body: thinking
//!   blocks replayed with their signature, redacted thinking replayed as is, tool results as
//!   `tool_result` blocks of a user turn, blocks kept opaquely sent back byte for byte; the
//!   headers a request needs (`anthropic-version`, the interleaved-thinking beta when thinking
//!   is on).
//! - `stream` — `message_start` … `message_stop` events turned into [`crate::LlmEvent`]s,
//!   blocks keyed by their `index`; server tool calls and results, MCP blocks, compaction and
//!   block types it does not know kept opaquely.
//! - `wire` — the private serde types of both directions, and of error bodies.
//! - `error` — `{"type": "error", "error": {type, message}}` bodies and in-stream `error`
//!   events as [`crate::ProviderError`].

mod error;
pub(crate) mod request;
pub(crate) mod stream;
mod wire;

pub(crate) use error::classify_error;

/// The provider family of the opaque blocks this dialect produces and replays.
pub(crate) const PROVIDER: &str = "anthropic";
