//! The caller's side: what a user holds. The [`Runtime`](runtime::Runtime) and its builder, an
//! agent's spec, its handle and the tickets of its requests, a person's answers, structured
//! answers and the ReAct front door. It reaches the agents through the host's core only.

pub(crate) mod handle;
pub(crate) mod person;
pub(crate) mod react;
pub(crate) mod runtime;
pub(crate) mod spec;
pub(crate) mod structured;
pub(crate) mod ticket;
