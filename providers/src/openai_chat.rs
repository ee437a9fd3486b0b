//! The OpenAI Chat Completions dialect (`POST {base}/chat/completions`, `stream: true`), spoken
//! by OpenAI and every OpenAI-compatible server (llama.cpp, Ollama, vLLM, OpenRouter).
//!
//! # Layout
//! - `request` — our [`motet_directives::LlmRequest`] rendered as a Chat Completions body.
//!   Chat Completions has no way to carry reasoning back, so reasoning blocks and every
//!   provider's meta are dropped on replay (text and tool calls never are), except
//!   OpenRouter's `reasoning_details`, sent back to the model that produced them.
//! - `stream` — `chat.completion.chunk` events turned into [`crate::LlmEvent`]s: tool-call
//!   deltas keyed by `index`; reasoning from `reasoning_content`, `reasoning` or Mistral's
//!   `thinking` parts; the trailing usage chunk, after the finish reason or not; `[DONE]`;
//!   error chunks typed by their code.
//! - `wire` — the private serde types of the chunks.
//! - `details` — OpenRouter's `reasoning_details` fragments merged over a stream.
//! - `error` — the error bodies are OpenAI's, shared with the Responses dialect.

mod details;
mod error;
pub(crate) mod request;
pub(crate) mod stream;
mod wire;

pub(crate) use error::classify_error;
