//! LLM providers: streaming clients for OpenAI Chat Completions (and every OpenAI-compatible
//! server), OpenAI Responses, Anthropic Messages and Gemini, with the reasoning state of each
//! replayed exactly on the next turn.
//!
//! ```no_run
//! use motet_directives::{LlmRequest, Message};
//! use motet_providers::{LlmClient, Providers};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let providers = Providers::from_env()?; // OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...
//! let request = LlmRequest::new("openai:gpt-5.2".parse()?, vec![Message::user("Hello!")]);
//! let response = providers.complete(request).await?;
//! println!("{}", response.message);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `event` — [`LlmEvent`], the provider-agnostic streaming event.
//! - [`sse`] — [`SseEvent`] and the incremental [`sse::SseDecoder`].
//! - `decoder` — [`StreamDecoder`], one dialect's SSE events into [`LlmEvent`]s.
//! - `body` — [`BodyDecoder`]: a response body's bytes into [`LlmEvent`]s within the [`Limits`]
//!   (framing and decoder together; the client and [`transcript`] both use it).
//! - `encode` — a request body written as JSON (each dialect's `render` and `encode` end there).
//! - `assembler` — [`BlockAssembler`]: events into one ordered [`motet_directives::LlmResponse`].
//! - `dialect` — [`Dialect`]: dispatch to `openai_chat/`, `openai_responses/`, `anthropic/`,
//!   `gemini/` (each: `request` rendering, `stream` decoding, `error` classification).
//! - [`transcript`] — a recorded body assembled offline (tests, `motet-transcript`).
//! - `error` — [`ProviderError`].
//! - `status` — HTTP statuses as [`ProviderError`]s: the one table every dialect's error
//!   classifier falls back on.
//! - `count` — token counts read leniently (`null`, `12.0`), as compatible servers write them.
//! - [`client`] — [`LlmClient`], [`Providers`] (picks a dialect per model ref), [`HttpClient`]:
//!   HTTP, per-phase timeouts, retries before content.
//! - [`config`] — [`ApiKey`] (never printed), [`ProvidersConfig`] from the environment.
//! - [`models`] — model refs to dialects, the capability table, request validation.
//! - [`prices`] — [`PriceTable`], [`Price`], [`Cost`]: what a call's usage costs, exactly.
//! - [`budget`] — [`Budget`](budget::Budget) and the pure decision whether a call may start
//!   under the hard budgets of its request, thread, agent and tenant.
//! - [`retry`] — [`RetryPolicy`].
//! - [`limits`] — [`limits::SharedLimits`]: an account's requests and tokens per minute and
//!   streams at once, configured and learned from headers, one backoff on 429, fair turns.
//! - `scope` — [`CallScope`]: who a call is for (agent, thread, request, tenant, [`Priority`]).
//! - `endpoint` — URLs and headers per dialect (beta headers included).
//! - `hosted` — which hosted tools (web search, code execution, remote MCP servers) each
//!   dialect and model can run.
//! - `structured` — response formats (structured output) on the wire: each dialect's shape,
//!   the schema rewrites for constrained decoding, and what is refused before sending.
//! - `testing` (feature `test-utils`) — a hostile provider: a scripted loopback HTTP server.

mod anthropic;
mod assembler;
mod body;
pub mod budget;
pub mod client;
pub mod config;
mod count;
mod decoder;
mod dialect;
mod encode;
mod endpoint;
mod error;
mod event;
mod gemini;
mod hosted;
pub mod limits;
mod media;
pub mod models;
mod openai_chat;
mod openai_responses;
pub mod prices;
pub mod retry;
mod scope;
pub mod sse;
mod status;
mod structured;
#[cfg(feature = "test-utils")]
pub mod testing;
pub mod transcript;

pub use assembler::{BlockAssembler, StreamAssemblyError};
pub use body::BodyDecoder;
pub use client::{HttpClient, LlmClient, LlmEvents, Providers};
pub use config::{ApiKey, Limits, ProviderKind, ProvidersConfig, Timeouts};
pub use decoder::StreamDecoder;
pub use dialect::Dialect;
pub use error::ProviderError;
pub use event::LlmEvent;
pub use models::{Inputs, ModelCaps};
pub use prices::{Cost, PRICES_AS_OF, Price, PriceTable, Rate};
pub use retry::RetryPolicy;
pub use scope::{CallKind, CallScope, Priority};
pub use sse::SseEvent;
