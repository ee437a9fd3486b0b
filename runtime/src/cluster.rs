//! The cluster: motet nodes sharing one PostgreSQL and one NATS server (docs/cluster.md).
//!
//! A node is one process running a [`Runtime`](crate::agent::Runtime) with a cluster
//! configuration. Nodes find each other through a membership table in PostgreSQL, each start
//! of a node a new member with a generation of its own; a virtual agent is active on one node
//! at a time, the one holding its lease, and every commit of that agent carries the lease, so a
//! node that lost it cannot write: the store refuses the commit in the commit's transaction.
//!
//! # Layout
//! - [`link`] — the node-to-node transport: a call with a streamed reply, tells, listeners
//!   (the [`Link`](link::Link) trait, its promises, and [`LocalLink`](link::LocalLink) in one
//!   process; `motet_jetstream::NatsLink` between processes).
//! - [`plan`] — the pure decisions: where an agent belongs (rendezvous hashing over the live
//!   members), whether a node still stands after its last heartbeat, which agents a node hands
//!   over when it is no longer their place.
pub mod link;
pub mod plan;
