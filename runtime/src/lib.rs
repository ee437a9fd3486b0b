//! The runtime: supervised agent actors that execute the directives their strategies return.
//!
//! # Layout
//! - [`store`] — thread persistence: the `ThreadStore` trait, in-memory and SQLite stores.
//! - [`supervisor`] — OTP restart strategies, restart types and intensity; the restart decision
//!   is a pure, tested function.
//! - [`tool`] — the `Tool` trait, typed tools (`tool_fn`), and the `ToolSet` dispatcher with
//!   a per-agent allowlist, time limit, panic containment and output size limit.

pub mod store;
pub mod supervisor;
pub mod tool;
