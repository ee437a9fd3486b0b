//! motet's durable signal bus on NATS JetStream: a
//! [`SignalBus`](motet_runtime::bus::SignalBus) whose named consumers get what was published
//! while their agent was down, replay from a sequence or a time, redeliver with backoff, send
//! what keeps failing to a dead-letter stream, and hold at most `max_in_flight` unsettled
//! signals (the server keeps the rest). docs/bus.md is the guide: the wire format, the pattern
//! mapping, what each guarantee means.
//!
//! ```no_run
//! use motet_jetstream::{JetStreamBus, JetStreamConfig};
//! use motet_runtime::bus::{ConsumerSpec, SignalBus, StartAt, settle};
//! use motet_signals::{Pattern, Signal};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let bus = JetStreamBus::connect("nats://127.0.0.1:4222", JetStreamConfig::default()).await?;
//! bus.publish(&Signal::builder("task.created", "/demo").build()?).await?;
//! let spec = ConsumerSpec::new("worker", Pattern::new("task.**")?).starting_at(StartAt::All);
//! let mut inbox = bus.consume(&spec).await?;
//! if let Some(delivered) = inbox.next().await {
//!     let delivered = delivered?;
//!     // ... handle and commit, then:
//!     let decision = settle(Ok(()), delivered.attempt, &spec);
//!     delivered.settle(decision).await?;
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `bus.rs`: [`JetStreamBus`] (connect, the streams, publish, consume), [`DeadLetter`],
//!   [`ConsumerState`].
//! - `inbox.rs`: a consumer's deliveries and how each is settled (double ack, nak with a
//!   delay, dead letter then ack).
//! - `config.rs`: [`JetStreamConfig`], [`StreamLimits`].
//! - `link.rs` + `link/wire.rs`: [`NatsLink`], node links on core NATS (a call with a
//!   streamed reply, tells, listeners; the `Motet-Link` headers).
//! - [`wire`]: signals as NATS messages (the CloudEvents NATS binding, both content modes).
//! - [`subject`]: subjects, patterns as filter subjects, durable names, message ids (pure).
//! - `url.rs`: credentials out of a server URL, and the URL shown masked ([`redact_url`]).

mod bus;
mod config;
mod inbox;
mod link;
pub mod subject;
mod url;
pub mod wire;

pub use bus::{ConsumerState, DeadLetter, JetStreamBus, NATS_URL_VAR};
pub use config::{JetStreamConfig, StreamLimits};
pub use inbox::{DEAD_CONSUMER, DEAD_REASON, DEAD_SEQUENCE, DEAD_SUBJECT};
pub use link::{LINK_PREFIX, NatsLink};
pub use url::redact as redact_url;
