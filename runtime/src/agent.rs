//! Agents: a pure strategy hosted by a ractor actor that executes the directives it returns.
//!
//! Every signal an agent receives goes to its strategy; the directives that come back are
//! executed by the thread's actor, and every outcome — an LLM response or failure, a tool
//! result, a scheduled signal — returns to the same actor's mailbox as a signal. State changes
//! therefore happen in one place, one signal at a time; the actor decides nothing itself.
//!
//! Each conversation thread of an agent is its own actor, found through a registry keyed by
//! (agent, thread id) and started on first use: requests on different threads run
//! concurrently and never see each other's history; requests on one thread queue and run in
//! order ([`RequestPolicy::Queue`], the default; `Reject` hands them to the strategy, which
//! answers busy; `Interrupt` cancels the running one). Every agent has a default thread
//! ([`DEFAULT_THREAD`]); the thread id [`NEW_THREAD`] starts a fresh one. Threads are stored
//! under `<agent>/<thread>` in the runtime's [`crate::store::ThreadStore`]: what a step changed
//! — new thread entries and a snapshot of the strategy's whole state — is committed before that
//! step's directives run, and a thread actor stopped when idle, restarted after a crash or
//! started in a new process comes back from the store as it committed.
//!
//! [`AgentHandle::ask`] sends an `agent.request` (`motet_agents::protocol`) with a fresh request
//! id and waits for the strategy's `Directive::Reply` for it, returned as an [`Answer`].
//!
//! # Layout
//! Two sides and what both share (docs/architecture.md, "The runtime, room by room"):
//! - `caller/` — what a user holds: [`Runtime`] and [`RuntimeBuilder`], [`AgentSpec`] and
//!   [`AskOptions`], [`AgentHandle`], [`Ticket`] and [`Answer`], a person's answers, structured
//!   answers ([`StructuredError`]) and [`ReActAgent`].
//! - `host/` — what runs agents: the shared context (`core`), the registry, the thread actor,
//!   one executor per directive (`execute/`), the supervisor and the durable bus's consumers
//!   and publisher.
//! - shared leaves: `book` (the pure decisions of a thread), `signals` (every protocol signal
//!   the runtime makes), `requests` ([`RequestRecord`]), `costs`, `activity`, `errors`,
//!   `events`, `trace`, `env` ([`SystemEnv`]), `fork` ([`fork_stored`]: a thread's prefix
//!   stored as a new thread).
//!
//! Directives executed so far: `LlmStream` (through the runtime's [`LlmClient`]), `ToolExec`
//! (through the agent's [`crate::tool::ToolSet`]), `Summarize` (the summary call the strategy
//! built, streamed as it is), `Emit` to the bus, an
//! agent, a group or the parent, `Spawn` (an agent kind registered with
//! [`RuntimeBuilder::kind`], answered `agent.child.started` / `agent.child.failed`), `StopChild`
//! (the child and its own children), `Schedule` / `CancelSchedule`, `Stop`.
//!
//! [`LlmClient`]: motet_providers::LlmClient

mod activity;
mod book;
mod caller;
mod costs;
pub(crate) mod delegate;
mod env;
mod errors;
mod events;
mod fork;
mod host;
mod requests;
mod signals;
mod trace;

pub use activity::ActivitySnapshot;
pub use book::RequestPolicy;
pub use caller::handle::AgentHandle;
pub use caller::person::{WaitingListing, waiting_in, waiting_on, waiting_readable};
pub use caller::react::ReActAgent;
pub use caller::runtime::{Runtime, RuntimeBuilder};
pub use caller::spec::{
    AgentSpec, AskOptions, DEFAULT_IDLE_TIMEOUT, DEFAULT_LLM_CONCURRENCY, IntoSpec,
};
pub use caller::structured::StructuredError;
pub use caller::ticket::{Answer, Ticket, TicketEvent};
pub use costs::{DEFAULT_BUDGETED_MAX_TOKENS, LevelBudgets};
pub use delegate::{
    AgentTool, CalleeThread, DEFAULT_MAX_DEPTH, DelegateError, Handoff, HistoryFilter,
};
pub use env::SystemEnv;
pub use errors::{AskError, RuntimeError, StoreFailure};
pub use events::{
    AGENT_STOPPED, CHILD_FAILED, CHILD_STARTED, CHILD_STOPPED, ChildEvent, DeltaKind, LLM_DELTA,
    LLM_WAITING, LLM_WAITING_AFTER, LlmDelta, LlmWaiting, THREAD_RESTARTED, ThreadFailure,
};
pub use fork::fork_stored;
pub use host::core::{DEFAULT_THREAD, NEW_THREAD};
pub use host::virtuals::{DEFAULT_MAX_ACTIVE, KIND_SEPARATOR, MAX_KEY_BYTES};
pub use requests::{FINISHED_REQUESTS_KEPT, RequestRecord, RequestStatus};
