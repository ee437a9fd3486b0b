//! The benchmark scenarios. Each module exposes `run() -> Vec<Report>`; add it to [`ALL`].

use crate::report::Report;

mod agents;
mod append;
mod budget;
mod bus;
mod cache;
mod delegate;
mod estimate;
mod jetstream;
mod limits;
mod link;
mod pg_append;
mod prefix;
mod project;
mod router;
mod serve;
mod sse;
mod timers;
mod virtuals;

/// A scenario's entry point.
pub(crate) type RunFn = fn() -> Vec<Report>;

/// Every scenario by name, in the order `all` runs them.
pub(crate) const ALL: &[(&str, RunFn)] = &[
    ("router", router::run),
    ("bus", bus::run),
    ("project", project::run),
    ("prefix", prefix::run),
    ("estimate", estimate::run),
    ("append", append::run),
    ("sse", sse::run),
    ("spawn", agents::run_spawn),
    ("ping", agents::run_ping),
    ("react", agents::run_react),
    ("new_thread", agents::run_new_thread),
    ("fanout", agents::run_fanout),
    ("memory", agents::run_memory),
    ("limits", limits::run),
    ("budget", budget::run),
    ("serve", serve::run),
    ("delegate", delegate::run),
    ("timers", timers::run),
];

/// Scenarios that need an external server (a llama.cpp server named by `MOTET_LOCAL_LLM_URL`,
/// PostgreSQL named by `MOTET_DATABASE_URL`, NATS named by `MOTET_NATS_URL`): run only when
/// named, never by `all`.
pub(crate) const ON_REQUEST: &[(&str, RunFn)] = &[
    ("cache", cache::run),
    ("estimate_live", estimate::run_live),
    ("pg_append", pg_append::run),
    ("jetstream", jetstream::run),
    ("link", link::run),
    ("virtual", virtuals::run),
];

pub(crate) use agents::react_child;
