//! A person in the loop, from the caller's side: listing the tool calls that wait for a person
//! (from the store, so they are listed after a crash or a restart without any thread running)
//! and answering one (checked against that list first, so a wrong answer is a typed error, not
//! a note in the thread).

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{AGENT_RESPOND, AgentRespond, Env as _, Waiting};
use motet_directives::{Pause, Response, ToolArgs};
use motet_signals::Signal;

use super::actor::{ThreadMsg, store_id, stored_waiting};
use super::env::SystemEnv;
use super::errors::RuntimeError;
use super::handle::AgentHandle;
use super::registry::RuntimeCore;
use super::ticket::traced;
use crate::store::{StoreError, ThreadStore, UnreadableThread};

/// How long a request resumed to take a response is awaited by nobody: its answer goes to the
/// request records and the bus.
const RESUMED_PATIENCE: Duration = Duration::from_secs(3600);

fn store_error(e: StoreError) -> RuntimeError {
    RuntimeError::Store {
        message: e.to_string(),
    }
}

/// The tool calls waiting for a person on every thread of `store` (of `agent` only, when
/// given), oldest first, as last committed — what [`Runtime::waiting`](super::Runtime::waiting)
/// lists, for a program that only reads the store (one read per thread).
///
/// # Errors
/// [`RuntimeError::Store`] when the store cannot be listed or read, or a stored state is not
/// one the runtime wrote: one damaged thread fails the whole listing
/// ([`waiting_readable`] goes on past it).
pub async fn waiting_in(
    store: &dyn ThreadStore,
    agent: Option<&str>,
) -> Result<Vec<Waiting>, RuntimeError> {
    let listing = waiting_readable(store, agent).await?;
    match listing.unreadable.into_iter().next() {
        Some(unreadable) => Err(store_error(unreadable.error)),
        None => Ok(listing.waiting),
    }
}

/// The calls waiting for a person that a store could read, and the threads it could not.
#[derive(Debug, Default)]
pub struct WaitingListing {
    /// The waiting calls, oldest first.
    pub waiting: Vec<Waiting>,
    /// The threads whose row, meta or stored state could not be read: whether anything
    /// waits on them is unknown.
    pub unreadable: Vec<UnreadableThread>,
}

/// As [`waiting_in`], going on past a thread whose row, meta or stored state cannot be read:
/// that thread is set aside with its error, so one damaged thread does not hide what waits
/// on every other.
///
/// # Errors
/// [`RuntimeError::Store`] when the store cannot be listed at all.
pub async fn waiting_readable(
    store: &dyn ThreadStore,
    agent: Option<&str>,
) -> Result<WaitingListing, RuntimeError> {
    let listing = store.list_readable().await.map_err(store_error)?;
    let mut waiting = Vec::new();
    let mut unreadable = listing.unreadable;
    for summary in listing.threads {
        match waits_on_stored(store, &summary.id, agent).await {
            Ok(waits) => waiting.extend(waits),
            Err(error) => unreadable.push(UnreadableThread {
                thread_id: summary.id,
                error,
            }),
        }
    }
    waiting.sort_by_key(|w| w.since_ms);
    Ok(WaitingListing {
        waiting,
        unreadable,
    })
}

/// The calls waiting on the stored thread `stored` when it is one of `agent`'s (any agent's,
/// when `None`); nothing for a thread no agent of the runtime keeps.
async fn waits_on_stored(
    store: &dyn ThreadStore,
    stored: &str,
    agent: Option<&str>,
) -> Result<Vec<Waiting>, StoreError> {
    let Some(meta) = store.get_meta(stored).await? else {
        return Ok(Vec::new());
    };
    let (Some(owner), Some(thread)) = (
        meta.strategy_config_id.as_deref(),
        meta.extra.get("thread").and_then(|t| t.as_str()),
    ) else {
        return Ok(Vec::new());
    };
    if agent.is_some_and(|a| a != owner) {
        return Ok(Vec::new());
    }
    let id = store_id(owner, thread);
    let saved = match store.load_state(&id).await {
        Ok(saved) => saved,
        Err(StoreError::NotFound { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let Some(saved) = saved else {
        return Ok(Vec::new());
    };
    let mut waits = stored_waiting(&saved).map_err(|reason| StoreError::CorruptThread {
        thread_id: id.clone(),
        reason: format!("its stored agent state cannot be read: {reason}"),
    })?;
    for w in &mut waits {
        owner.clone_into(&mut w.agent);
        thread.clone_into(&mut w.thread);
    }
    Ok(waits)
}

/// The calls waiting on thread `thread` of `agent` in `store`, as last committed (one read):
/// [`waiting_in`] for a single thread.
///
/// # Errors
/// [`RuntimeError::Store`] when the store cannot be read, or the stored state is not one the
/// runtime wrote.
pub async fn waiting_on(
    store: &dyn ThreadStore,
    agent: &str,
    thread: &str,
) -> Result<Vec<Waiting>, RuntimeError> {
    let saved = match store.load_state(&store_id(agent, thread)).await {
        Ok(saved) => saved,
        Err(StoreError::NotFound { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(store_error(e)),
    };
    let Some(saved) = saved else {
        return Ok(Vec::new());
    };
    let mut waits = stored_waiting(&saved).map_err(|reason| RuntimeError::Store {
        message: format!(
            "the stored state of thread `{thread}` of agent `{agent}` cannot be read: {reason}"
        ),
    })?;
    for w in &mut waits {
        agent.clone_into(&mut w.agent);
        thread.clone_into(&mut w.thread);
    }
    Ok(waits)
}

impl RuntimeCore {
    /// The calls waiting on thread `thread` of `agent`, as last committed.
    pub(crate) async fn waits_of(
        &self,
        agent: &str,
        thread: &str,
    ) -> Result<Vec<Waiting>, RuntimeError> {
        waiting_on(self.store.as_ref(), agent, thread).await
    }

    /// The calls waiting on every stored thread (of `agent` only, when given), oldest first.
    pub(crate) async fn all_waits(
        &self,
        agent: Option<&str>,
    ) -> Result<Vec<Waiting>, RuntimeError> {
        waiting_in(self.store.as_ref(), agent).await
    }

    /// Answers call `tool_call_id` of request `request` on thread `thread` of `agent`. A
    /// request this runtime does not run (it paused in a process that stopped) is resumed
    /// first; its answer then goes to the request records and the bus.
    pub(crate) async fn respond(
        self: &Arc<Self>,
        agent: &str,
        thread: &str,
        request: &str,
        tool_call_id: &str,
        response: Response,
    ) -> Result<(), RuntimeError> {
        let waits = self.waits_of(agent, thread).await?;
        let of_request: Vec<&Waiting> = waits.iter().filter(|w| w.request_id == request).collect();
        let Some(waiting) = of_request.iter().find(|w| w.tool_call_id == tool_call_id) else {
            return Err(self
                .not_waiting(agent, thread, request, tool_call_id, &of_request)
                .await);
        };
        if !response.fits(&waiting.pause) {
            return Err(RuntimeError::WrongResponse {
                tool_call_id: tool_call_id.to_owned(),
                waits_for: match waiting.pause {
                    Pause::Approval(_) => "approval",
                    Pause::Question { .. } => "an answer",
                },
                response: response.kind(),
            });
        }
        if let Response::Edit { args } = &response
            && let Some(problem) = ToolArgs::from_text(args.as_str()).problem()
        {
            return Err(RuntimeError::InvalidEdit {
                tool_call_id: tool_call_id.to_owned(),
                message: problem,
            });
        }
        let running_here = self
            .requests
            .get(request)
            .is_some_and(|r| r.status.is_running());
        if !running_here {
            let handle = AgentHandle {
                name: agent.to_owned(),
                core: self.clone(),
            };
            handle
                .resume_request(thread, request, RESUMED_PATIENCE)
                .await
                .map_err(|e| RuntimeError::NotRunning {
                    name: format!("{agent} ({e})"),
                })?;
        }
        let signal = Signal::builder(AGENT_RESPOND, "motet.respond")
            .with_id(SystemEnv.fresh_id("sig"))
            .with_request_id(request)
            .with_thread_id(thread)
            .with_data(AgentRespond {
                tool_call_id: tool_call_id.to_owned(),
                response,
                by: None,
            })
            .build()
            .map_err(|_| RuntimeError::NotRunning {
                name: agent.to_owned(),
            })?;
        self.send(agent, thread, ThreadMsg::Signal(traced(signal)))
            .await
    }

    /// Why call `tool_call_id` of `request` cannot be answered: it waited once and was
    /// answered (the thread mentions it), the request waits on other calls, or on none.
    async fn not_waiting(
        &self,
        agent: &str,
        thread: &str,
        request: &str,
        tool_call_id: &str,
        of_request: &[&Waiting],
    ) -> RuntimeError {
        let seen = match self.store.load(&store_id(agent, thread)).await {
            Ok(Some(stored)) => stored
                .to_list()
                .iter()
                .any(|e| e.refs.tool_call_id.as_deref() == Some(tool_call_id)),
            _ => false,
        };
        if seen {
            return RuntimeError::AlreadyAnswered {
                request: request.to_owned(),
                tool_call_id: tool_call_id.to_owned(),
            };
        }
        if of_request.is_empty() {
            return RuntimeError::RequestNotPaused {
                request: request.to_owned(),
            };
        }
        RuntimeError::UnknownCall {
            request: request.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            waiting: of_request.iter().map(|w| w.tool_call_id.clone()).collect(),
        }
    }
}

/// The key a ticket remembers a wait it showed by: the same call can wait twice (approved, then
/// its tool asks a question).
pub(crate) fn wait_key(waiting: &Waiting) -> (String, u64) {
    (waiting.tool_call_id.clone(), waiting.since_ms)
}
