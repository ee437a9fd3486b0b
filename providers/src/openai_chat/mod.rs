//! The OpenAI Chat Completions dialect (`POST /chat/completions`, `stream: true`), spoken by
//! OpenAI and every OpenAI-compatible server (llama.cpp, Ollama, vLLM, OpenRouter).
//!
//! # Layout
//! - `request` — our [`motet_directives::LlmRequest`] rendered as a Chat Completions body.
//! - `stream` — `chat.completion.chunk` events turned into [`crate::LlmEvent`]s.
//! - `error` — HTTP error bodies and in-stream errors as [`crate::ProviderError`].

// Placeholder module: being written; reached through the dialect dispatch.
#![allow(dead_code, unused_imports)]

mod error;
pub(crate) mod request;
pub(crate) mod stream;

pub(crate) use error::classify_error;
