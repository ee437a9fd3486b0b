//! Signals: the messages motet's agents exchange.
//!
//! A [`Signal`] is a CloudEvents 1.0 envelope with motet's extensions (correlation, causation,
//! thread and request ids, W3C trace context). Types are dot-separated segments
//! (`react.input`, `llm.result`); a [`Router`] matches them against patterns with `*` (one segment)
//! and `**` (zero or more); a [`Bus`] delivers published signals to subscribers.
//!
//! # Layout
//! - `signal` — the envelope, its builder and serde form.
//! - `signal_type` — validated types and patterns.
//! - `router` — the trie router.
//! - `bus` — in-process pub/sub with bounded, counted delivery.
//! - `error` — [`SignalError`].
