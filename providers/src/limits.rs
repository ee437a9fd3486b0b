//! Shared limits of a provider account: requests, input and output tokens per minute and
//! streams at once, configured and learned from the provider's own headers, with one backoff
//! for every caller when the provider answers 429, and fair, prioritised turns for the calls
//! that wait.
//!
//! # Layout
//! - `plan` — [`Governor`]: the pure decisions (buckets, backoff, fair queue), time passed in.
//! - `kind` — [`Kind`]: what a bucket counts (requests, input, output or all tokens).
//! - `headers` — [`Learned`]: OpenAI's `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`
//!   and `retry-after` read from a response.
//! - `driver` — [`SharedLimits`]: the governors of every account behind one async
//!   [`SharedLimits::acquire`], and the [`RateObserver`] the HTTP client reports responses to.
//!
//! ```
//! use std::time::Duration;
//! use motet_providers::limits::{Claim, Rates, SharedLimits, Spent};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let limits = SharedLimits::new()
//!     .with_account("openai", Rates::unlimited().with_requests_per_minute(500).with_concurrent(32));
//! let model = "openai:gpt-5.2".parse()?;
//! let permit = limits.acquire(&model, Claim::new("researcher", 1200, 800)).await?;
//! // ... the call ...
//! permit.finish(Spent { input_tokens: 1180, output_tokens: 240 });
//! # Ok(())
//! # }
//! ```

mod driver;
mod headers;
mod kind;
mod plan;

pub use driver::{LimitError, Permit, SharedLimits};
pub use headers::{Learned, Window, go_duration, until_instant};
pub use kind::Kind;
pub use plan::{Claim, ClaimId, Governor, Rates, Spent};

use motet_directives::ModelRef;

/// Told of every response head a client receives, so an account's limits are learned from
/// its headers and a 429 holds every caller, not only the one that met it. The client's own
/// retries are reported too, and wait out [`RateObserver::hold`] before they go.
pub trait RateObserver: Send + Sync + std::fmt::Debug {
    /// A response to a call for `model` arrived with this status and these headers.
    fn observed(&self, model: &ModelRef, status: u16, headers: &[(&str, &str)]);

    /// How long calls for `model` should hold off from now (the shared backoff); zero when
    /// they need not.
    fn hold(&self, model: &ModelRef) -> std::time::Duration {
        let _ = model;
        std::time::Duration::ZERO
    }
}
