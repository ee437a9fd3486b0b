//! The benchmark scenarios. Each module exposes `run() -> Vec<Report>`; add it to [`ALL`].

use crate::report::Report;

mod agents;
mod append;
mod bus;
mod pg_append;
mod prefix;
mod project;
mod router;
mod sse;

/// A scenario's entry point.
pub(crate) type RunFn = fn() -> Vec<Report>;

/// Every scenario by name, in the order `all` runs them.
pub(crate) const ALL: &[(&str, RunFn)] = &[
    ("router", router::run),
    ("bus", bus::run),
    ("project", project::run),
    ("prefix", prefix::run),
    ("append", append::run),
    ("pg_append", pg_append::run),
    ("sse", sse::run),
    ("spawn", agents::run_spawn),
    ("ping", agents::run_ping),
    ("react", agents::run_react),
    ("fanout", agents::run_fanout),
    ("memory", agents::run_memory),
];

pub(crate) use agents::react_child;
