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
//! under `<agent>/<thread>` in the runtime's [`crate::store::ThreadStore`]: what a step changed
//! — new thread entries and a snapshot of the strategy's whole state — is committed before that
//! step's directives run, and a thread actor stopped when idle, restarted after a crash or
//! started in a new process comes back from the store as it committed.
//!
//! [`AgentHandle::ask`] sends an `agent.request` (`motet_agents::protocol`) with a fresh request
//! id and waits for the strategy's `Directive::Reply` for it, returned as an [`Answer`].
//!
//! # Layout
//! - `runtime` — [`Runtime`], [`RuntimeBuilder`]; `spec` — [`AgentSpec`], [`AskOptions`],
//!   [`IntoSpec`]; `react` — [`ReActAgent`], a ReAct agent in one chain.
//! - `handle` — [`AgentHandle`]; `ticket` — [`Ticket`] (a submitted request) and [`Answer`];
//!   `structured` — [`AgentHandle::ask_structured`]: an answer decoded into a type, checked
//!   against its JSON Schema ([`StructuredError`]).
//! - `registry` — what every agent of a runtime shares, and each agent's threads.
//! - `actor` — [`ThreadActor`]: admission, the strategy step and the commit point; `actor/`
//!   holds the directive executor (`execute`), LLM calls (`llm`), the store side (`persist`)
//!   and the end of a request (`finish`).
//! - `book` — the pure request book: which request runs, which wait, what a newcomer does.
//! - `supervise` — the supervisor of thread actors: restart on failure within the agent's
//!   restart intensity, stop the agent past it.
//! - `requests` — request tracking: [`RequestRecord`] with status, timestamps and result.
//! - `errors`, `events`, `env` ([`SystemEnv`]), `trace` (the GenAI spans).
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
mod actor;
mod book;
mod costs;
mod durable;
mod env;
mod errors;
mod events;
mod handle;
mod person;
mod react;
mod registry;
mod requests;
mod runtime;
mod spec;
mod structured;
mod supervise;
mod ticket;
mod trace;

pub use activity::ActivitySnapshot;
pub use actor::{ThreadActor, ThreadMsg};
pub use book::RequestPolicy;
pub use costs::{DEFAULT_BUDGETED_MAX_TOKENS, LevelBudgets};
pub use env::SystemEnv;
pub use errors::{AskError, RuntimeError};
pub use events::{
    AGENT_STOPPED, CHILD_FAILED, CHILD_STARTED, ChildEvent, DeltaKind, LLM_DELTA, LLM_WAITING,
    LLM_WAITING_AFTER, LlmDelta, LlmWaiting, THREAD_RESTARTED, ThreadFailure,
};
pub use handle::AgentHandle;
pub use person::{WaitingListing, waiting_in, waiting_on, waiting_readable};
pub use react::ReActAgent;
pub use requests::{FINISHED_REQUESTS_KEPT, RequestRecord, RequestStatus};
pub use runtime::{Runtime, RuntimeBuilder};
pub use spec::{
    AgentSpec, AskOptions, DEFAULT_IDLE_TIMEOUT, DEFAULT_LLM_CONCURRENCY, DEFAULT_THREAD, IntoSpec,
    NEW_THREAD,
};
pub use structured::StructuredError;
pub use ticket::{Answer, Ticket, TicketEvent};
