//! The runtime: supervised agent actors that execute the directives their strategies return.

pub mod store;
