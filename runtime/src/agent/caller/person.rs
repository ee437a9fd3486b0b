//! A person in the loop, from the caller's side: listing the tool calls that wait for a person
//! (from the store, so they are listed after a crash or a restart without any thread running)
//! and answering one (checked against that list first, so a wrong answer is a typed error, not
//! a note in the thread).

use std::sync::Arc;

use motet_agents::{AGENT_RESPOND, AGENT_RESUME, AgentRespond, AgentResume, Env as _, Waiting};
use motet_directives::{Pause, Response, ToolArgs};
use motet_signals::Signal;
use tokio::sync::oneshot;

use crate::agent::env::SystemEnv;
use crate::agent::errors::{AskError, RuntimeError};
use crate::agent::host::actor::stored_waiting;
use crate::agent::host::core::{RuntimeCore, ThreadKey, ThreadMsg};
use crate::agent::requests::{RequestStatus, Resuming};
use crate::agent::signals::from_caller;
use crate::store::{StoreError, ThreadStore, UnreadableThread};

fn store_error(e: StoreError) -> RuntimeError {
    RuntimeError::Store(e.into())
}

/// The tool calls waiting for a person on every thread of `store` (of `agent` only, when
/// given), oldest first, as last committed — what [`Runtime::waiting`](crate::agent::Runtime::waiting)
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
    let Some(key) = meta.key else {
        return Ok(Vec::new());
    };
    let (owner, thread) = (key.agent(), key.thread());
    if agent.is_some_and(|a| a != owner) {
        return Ok(Vec::new());
    }
    let id = key.store_id();
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
    let saved = match store
        .load_state(&ThreadKey::store_id_of(agent, thread))
        .await
    {
        Ok(saved) => saved,
        Err(StoreError::NotFound { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(store_error(e)),
    };
    let Some(saved) = saved else {
        return Ok(Vec::new());
    };
    let mut waits = stored_waiting(&saved).map_err(|reason| {
        store_error(StoreError::CorruptThread {
            thread_id: ThreadKey::store_id_of(agent, thread),
            reason: format!("its stored state cannot be read: {reason}"),
        })
    })?;
    for w in &mut waits {
        agent.clone_into(&mut w.agent);
        thread.clone_into(&mut w.thread);
    }
    Ok(waits)
}

/// Whether a resume goes ahead for a request this runtime runs already or saw end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IfEnded {
    /// Asked for by name (`AgentHandle::resume`): it goes ahead whatever the records say (a
    /// finished request's thread answers again with its answer; a running one is joined).
    Replay,
    /// Owed work read from the store earlier (a process start's recovery, a person's answer):
    /// refused when another caller carried it on meanwhile.
    Refuse,
}

/// Sends `agent.resume` for `request` on `thread` of `agent`, recorded as running from now;
/// the thread it runs on and where its reply comes.
///
/// # Errors
/// [`AskError::AgentStopped`] when the agent is not running; [`AskError::ThreadUnavailable`]
/// when its thread cannot start; [`AskError::RequestRunning`] when it runs here already;
/// [`AskError::RequestEnded`] when it ended here and `if_ended` refuses it.
pub(crate) async fn resume(
    core: &Arc<RuntimeCore>,
    agent: &str,
    thread: &str,
    request: &str,
    if_ended: IfEnded,
) -> Result<(String, oneshot::Receiver<Result<Signal, AskError>>), AskError> {
    // A virtual agent is activated to carry it on.
    let running = core
        .activate(agent)
        .await
        .map_err(|_| AskError::AgentStopped {
            agent: agent.to_owned(),
        })?;
    let wanted = thread;
    let thread = RuntimeCore::thread_id(Some(thread));
    let data = AgentResume {
        idempotent_tools: running.idempotent_tools(),
    };
    let signal = from_caller(AGENT_RESUME, &thread, Some(request), data).map_err(AskError::send)?;
    let (reply, answer) = oneshot::channel();
    // On record as running from now, not from when its thread admits it: a response sent right
    // after (`respond`) must not resume it a second time, nor a recovery that read the store
    // before the request went on to its end.
    let now = SystemEnv.now_ms();
    let (agent_name, thread_name) = (Arc::from(agent), Arc::from(thread.as_str()));
    let resuming = match if_ended {
        IfEnded::Replay => {
            core.requests
                .arrived(request, &agent_name, &thread_name, false, now);
            Resuming::Recorded
        }
        IfEnded::Refuse => core
            .requests
            .resuming(request, &agent_name, &thread_name, now),
    };
    match resuming {
        Resuming::Recorded => {}
        Resuming::Running => {
            return Err(AskError::RequestRunning {
                request: request.to_owned(),
            });
        }
        Resuming::Ended => {
            return Err(AskError::RequestEnded {
                request: request.to_owned(),
            });
        }
    }
    let ask = ThreadMsg::Ask { signal, reply };
    if let Err(error) = core.send(agent, &thread, ask).await {
        let now = SystemEnv.now_ms();
        core.requests
            .finished(request, RequestStatus::Failed, None, now);
        return Err(AskError::unreachable(agent, wanted, error));
    }
    Ok((thread, answer))
}

/// Answers call `tool_call_id` of request `request` on thread `thread` of `agent`. A request
/// this runtime does not run (it paused in a process that stopped) is resumed first; its
/// answer then goes to the request records and the bus.
///
/// # Errors
/// Why the call cannot take `response` ([`RuntimeError::WrongResponse`],
/// [`RuntimeError::InvalidEdit`], [`RuntimeError::AlreadyAnswered`],
/// [`RuntimeError::RequestNotPaused`], [`RuntimeError::UnknownCall`]); the store's failure;
/// [`RuntimeError::NotRunning`] when the agent is not running.
pub(crate) async fn respond(
    core: &Arc<RuntimeCore>,
    agent: &str,
    thread: &str,
    request: &str,
    tool_call_id: &str,
    response: Response,
) -> Result<(), RuntimeError> {
    let waits = waiting_on(core.store.as_ref(), agent, thread).await?;
    let of_request: Vec<&Waiting> = waits.iter().filter(|w| w.request_id == request).collect();
    let Some(waiting) = of_request.iter().find(|w| w.tool_call_id == tool_call_id) else {
        return Err(not_waiting(
            core.store.as_ref(),
            agent,
            thread,
            request,
            tool_call_id,
            &of_request,
        )
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
    if waiting.tool == motet_agents::BUDGET_WAIT_TOOL && matches!(response, Response::Edit { .. }) {
        return Err(RuntimeError::InvalidEdit {
            tool_call_id: tool_call_id.to_owned(),
            message: "a budget approval has no arguments to edit: approve or reject it".to_owned(),
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
    let running_here = core
        .requests
        .get(request)
        .is_some_and(|r| r.status.is_running());
    if !running_here {
        // Nobody waits for the resumed request's answer here: it goes to the request records
        // and the bus.
        match resume(core, agent, thread, request, IfEnded::Refuse).await {
            // Carried on by another caller meanwhile (a process start's recovery): answered
            // there.
            Ok(_) | Err(AskError::RequestRunning { .. }) => {}
            Err(error) => {
                return Err(RuntimeError::NotRunning {
                    name: format!("{agent} ({error})"),
                });
            }
        }
    }
    let data = AgentRespond {
        tool_call_id: tool_call_id.to_owned(),
        response,
        by: None,
    };
    let signal =
        from_caller(AGENT_RESPOND, thread, Some(request), data).map_err(RuntimeError::Signal)?;
    core.send(agent, thread, ThreadMsg::Signal(signal)).await
}

/// Why call `tool_call_id` of `request` cannot be answered: it waited once and was answered
/// (the thread mentions it), the request waits on other calls, or on none.
async fn not_waiting(
    store: &dyn ThreadStore,
    agent: &str,
    thread: &str,
    request: &str,
    tool_call_id: &str,
    of_request: &[&Waiting],
) -> RuntimeError {
    let seen = match store.load(&ThreadKey::store_id_of(agent, thread)).await {
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
