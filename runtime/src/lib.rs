//! The runtime: supervised agent actors that execute the directives their strategies return.
//!
//! # Layout
//! - [`agent`] — [`agent::Runtime`], a ractor actor per conversation thread, asks,
//!   and the execution of directives.
//! - [`bus`] — durable signal buses: the [`bus::SignalBus`] trait a broker implements (named
//!   consumers, acknowledgement after commit, redelivery, dead letters), the pure redelivery
//!   decision and [`bus::LocalBus`], the in-process default.
//! - [`cluster`] — nodes over one PostgreSQL and one NATS server: the pure placement and
//!   membership decisions (docs/cluster.md).
//! - [`store`] — thread persistence: the `ThreadStore` trait, in-memory, SQLite and PostgreSQL
//!   stores, and `open_store` choosing one by URL (`MOTET_DATABASE_URL`).
//! - [`supervisor`] — OTP restart strategies, restart types and intensity; the restart decision
//!   is a pure, tested function.
//! - `testing` (feature `test-utils`) — a scripted model for logic tests.
//! - [`tool`] — the `Tool` trait, typed tools (`tool_fn`), and the `ToolSet` dispatcher with
//!   a per-agent allowlist, time limit, panic containment and output size limit.

pub mod agent;
pub mod bus;
pub mod cluster;
pub mod store;
pub mod supervisor;
pub mod telemetry;
pub mod tool;

#[cfg(feature = "test-utils")]
pub mod testing;
