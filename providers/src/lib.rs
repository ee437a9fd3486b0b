//! LLM providers: streaming clients for the OpenAI, Anthropic and Gemini dialects.
//!
//! # Layout
//! - `event` — [`LlmEvent`], the provider-agnostic streaming event.
//! - `sse` — [`SseEvent`] and the SSE decoder.
//! - `decoder` — [`StreamDecoder`], one dialect's SSE events into [`LlmEvent`]s.
//! - `error` — [`ProviderError`].

mod anthropic;
mod decoder;
mod error;
mod event;
mod gemini;
mod openai_chat;
mod openai_responses;
mod sse;

pub use decoder::StreamDecoder;
pub use error::ProviderError;
pub use event::LlmEvent;
pub use sse::SseEvent;
