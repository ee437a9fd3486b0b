//! The Gemini dialect (`models/{model}:streamGenerateContent?alt=sse`; the key travels in the
//! `x-goog-api-key` header, never in the URL).
//!
//! # Layout
//! - `request` — our [`motet_directives::LlmRequest`] rendered as a `GenerateContentRequest`,
//!   with thought signatures replayed on the `functionCall` and `text` parts they came on, and
//!   the parts motet does not model (`executableCode`, `codeExecutionResult`, …) written back
//!   byte for byte.
//! - `stream` — `GenerateContentResponse` chunks (CRLF-separated SSE, no end sentinel,
//!   cumulative `usageMetadata` on every chunk) turned into [`crate::LlmEvent`]s.
//! - `error` — Google API error bodies (`{"error": {code, message, status, details}}`) and
//!   in-stream errors as [`crate::ProviderError`].
//! - `wire` — the private serde types of both directions.

mod error;
pub(crate) mod request;
pub(crate) mod stream;
mod wire;

pub(crate) use error::classify_error;

/// The provider family of the opaque blocks this dialect produces and replays.
pub(crate) const PROVIDER: &str = "gemini";
