//! The benchmark scenarios. Each module exposes `run() -> Vec<Report>`; add it to [`ALL`].

use crate::report::Report;

/// Every scenario by name, in the order `all` runs them.
pub(crate) const ALL: &[(&str, fn() -> Vec<Report>)] = &[];
