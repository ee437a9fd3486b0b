//! Agents: a pure strategy hosted by a ractor actor that executes the directives it returns.
//!
//! Every signal an agent receives goes to its strategy; the directives that come back are
//! executed by the [`ThreadActor`], and every outcome — an LLM response or failure, a tool
//! result, a scheduled signal — returns to the same actor's mailbox as a signal. State changes
//! therefore happen in one place, one signal at a time; the actor decides nothing itself.
//!
//! Each conversation thread of an agent is its own actor, found through a registry keyed by
//! (agent, thread id) and started on first use: requests on different threads run
//! concurrently and never see each other's history; requests on one thread queue and run in
//! order ([`RequestPolicy::Queue`], the default; `Reject` hands them to the strategy, which
//! answers busy; `Interrupt` cancels the running one). Every agent has a default thread
//! ([`DEFAULT_THREAD`]); the thread id [`NEW_THREAD`] starts a fresh one. Threads are stored
//! under `<agent>/<thread>` in the runtime's [`crate::store::ThreadStore`]: what a strategy
//! appends is committed before that step's directives run, and a thread actor stopped when
//! idle comes back from the store on its next signal.
//!
//! An [`AgentHandle::ask`] sends a `agent.request` signal with a fresh request id and waits for
//! the agent to emit a reply for it: the first emitted signal carrying that request id whose
//! type is one of the spec's reply types (`agent.completed` / `agent.failed` by default).
//!
//! # Layout
//! - `env` — [`SystemEnv`]: the clock and UUIDv7 ids the pure strategy is given.
//! - `server` — [`ThreadActor`], its messages and the directive executor.
//! - `supervise` — the supervisor of thread actors: restart on failure within the agent's
//!   restart intensity, stop the agent past it.
//! - `requests` — request tracking: [`RequestRecord`] with status, timestamps and result.
//! - `handle` — [`Runtime`], [`AgentSpec`], [`AgentHandle`], [`AskOptions`], [`AskError`].
//!
//! Directives executed so far: `LlmStream` (through the runtime's [`LlmClient`]), `ToolExec`
//! (through the agent's [`crate::tool::ToolSet`]), `Summarize` (an LLM call over the thread's
//! entries in range, with the directive's model or the thread's last one), `Emit` to the bus, an
//! agent, a group or the parent, `Spawn` (an agent kind registered with
//! [`RuntimeBuilder::kind`], answered `agent.child.started` / `agent.child.failed`), `StopChild`
//! (the child and its own children), `Schedule` / `CancelSchedule`, `Stop`.
//!
//! [`LlmClient`]: motet_providers::LlmClient

mod actor;
mod book;
mod env;
mod errors;
mod events;
mod handle;
mod react;
mod registry;
mod requests;
mod runtime;
mod spec;
mod supervise;
mod ticket;
mod trace;

pub use actor::{RequestPolicy, ThreadActor, ThreadMsg};
pub use env::SystemEnv;
pub use errors::{AskError, RuntimeError};
pub use events::{
    AGENT_STOPPED, CHILD_FAILED, CHILD_STARTED, ChildEvent, DeltaKind, LLM_DELTA, LlmDelta,
    THREAD_RESTARTED, ThreadFailure,
};
pub use handle::{AgentHandle, DEFAULT_THREAD, NEW_THREAD};
pub use react::ReActAgent;
pub use requests::{FINISHED_REQUESTS_KEPT, RequestRecord, RequestStatus};
pub use runtime::{Runtime, RuntimeBuilder};
pub use spec::{AgentSpec, AskOptions, DEFAULT_IDLE_TIMEOUT, DEFAULT_LLM_CONCURRENCY, IntoSpec};
pub use ticket::{Answer, Ticket};
