//! The host's side: what runs agents. The shared context ([`core`]), the registry, the thread
//! actor, the executors of directives, the supervisor and the durable bus's consumers and
//! publisher. Leaves first: `core`, `outbox`, `few`, `deliveries`, then `children`, `tracked`
//! (what the runtime tracks per thread), `call` (an LLM call), `waits`, `execute`, and on top
//! the `actor` that drives them, `registry`, `supervise` and `consumers`.

pub(crate) mod actor;
pub(crate) mod call;
pub(crate) mod children;
pub(crate) mod consumers;
pub(crate) mod core;
pub(crate) mod deliveries;
pub(crate) mod execute;
pub(crate) mod few;
pub(crate) mod outbox;
pub(crate) mod registry;
pub(crate) mod supervise;
pub(crate) mod timekeeper;
pub(crate) mod tracked;
pub(crate) mod virtuals;
pub(crate) mod waits;
