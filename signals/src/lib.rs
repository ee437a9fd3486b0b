//! Signals: the messages motet's agents exchange, and how they find their receivers.
//!
//! A [`Signal`] is a CloudEvents 1.0 envelope with motet's extensions (correlation, causation,
//! thread and request ids, W3C trace context). Types are dot-separated segments
//! (`agent.request`, `llm.result`); a [`Router`] matches them against [`Pattern`]s with `*` (one
//! segment) and `**` (zero or more); a [`Bus`] delivers published signals to subscribers without
//! ever blocking the publisher, and counts what it could not deliver.
//!
//! # Layout
//! - `signal` — the envelope, its builder and its structured-mode JSON form.
//! - `cloudevents` — CloudEvents 1.0.2's attribute formats, checked at the edge (times, media
//!   types, URIs, extension values).
//! - `signal_type` — validated types and patterns, and their syntax.
//! - `router` — the trie router.
//! - `bus` — in-process pub/sub with bounded, counted delivery.
//! - `error` — [`SignalError`].
//!
//! # Example
//! ```
//! use motet_signals::{Bus, Delivery, Pattern, Signal};
//! use std::sync::mpsc;
//!
//! let bus = Bus::new();
//! let (tx, rx) = mpsc::sync_channel(8);
//! let _workers = bus.subscribe(Pattern::new("task.*.assigned")?, tx);
//! let _auditor = bus.subscribe(Pattern::new("**")?, |s: &Signal| {
//!     println!("audit: {}", s.signal_type());
//!     Delivery::Delivered
//! });
//!
//! let assigned = Signal::builder("task.7.assigned", "coordinator").with_data(7).build()?;
//! bus.publish(&assigned);
//! assert_eq!(rx.try_recv().map(|s| s.data_as::<u32>()), Ok(Ok(7)));
//! # Ok::<(), motet_signals::SignalError>(())
//! ```
//!
//! # Features
//! - `tokio` (off by default): `tokio::sync::mpsc::Sender<Signal>` as a bus target.

mod bus;
mod cloudevents;
mod error;
mod router;
mod signal;
mod signal_type;

pub use bus::{
    Bus, BusStats, Delivery, PublishOutcome, SubscriberTarget, Subscription, SubscriptionStats,
};
pub use error::SignalError;
pub use router::{Matches, Predicate, RouteId, Router, SignalMatches};
pub use signal::{SPEC_VERSION, Signal, SignalBuilder, SignalData, SignalId, TraceContext};
pub use signal_type::{Pattern, PatternSegment, SignalType};
