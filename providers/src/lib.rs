//! LLM providers: streaming clients for the OpenAI, Anthropic and Gemini dialects.
//!
//! # Layout
//! - `event` — [`LlmEvent`], the provider-agnostic streaming event.
//! - [`sse`] — [`SseEvent`] and the incremental [`sse::SseDecoder`].
//! - `decoder` — [`StreamDecoder`], one dialect's SSE events into [`LlmEvent`]s.
//! - `assembler` — [`BlockAssembler`]: events into one ordered [`motet_directives::LlmResponse`].
//! - `dialect` — [`Dialect`]: dispatch to `openai_chat/`, `openai_responses/`, `anthropic/`,
//!   `gemini/` (each: `request` rendering, `stream` decoding, `error` classification).
//! - [`transcript`] — a recorded body assembled offline (tests, `motet-transcript`).
//! - `error` — [`ProviderError`].

mod anthropic;
mod assembler;
mod decoder;
mod dialect;
mod error;
mod event;
mod gemini;
mod openai_chat;
mod openai_responses;
pub mod sse;
pub mod transcript;

pub use assembler::{BlockAssembler, StreamAssemblyError};
pub use decoder::StreamDecoder;
pub use dialect::Dialect;
pub use error::ProviderError;
pub use event::LlmEvent;
pub use sse::SseEvent;
