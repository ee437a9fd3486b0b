//! An [`AgentHandle`]: ask a running agent, submit requests to it, read, fork and reset its
//! threads.

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{
    AGENT_POLICY, AGENT_REQUEST, AGENT_SUMMARIZE, AgentPolicy, AgentRequest, AgentSummarize,
    ContextPolicy, Env,
};
use motet_signals::Signal;
use tokio::sync::oneshot;

use super::person;
use super::spec::AskOptions;
use super::ticket::{Answer, Deltas, Ticket, interpret};
use crate::agent::env::SystemEnv;
use crate::agent::errors::{AskError, RuntimeError};
use crate::agent::fork::fork_into;
use crate::agent::host::core::{DEFAULT_THREAD, RuntimeCore, ThreadKey, ThreadMsg};
use crate::agent::requests::RequestRecord;
use crate::agent::signals::{from_caller, traced};

/// A running agent.
#[derive(Clone)]
pub struct AgentHandle {
    pub(crate) name: String,
    pub(crate) core: Arc<RuntimeCore>,
}

impl std::fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHandle")
            .field("name", &self.name)
            .finish()
    }
}

impl AgentHandle {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Asks `query` on the agent's default thread and waits (up to 30 s) for the answer.
    ///
    /// # Errors
    /// [`AskError::Failed`] when the agent replies with a failure (its signal's data says why),
    /// [`AskError::Timeout`], [`AskError::AgentStopped`], [`AskError::Strategy`].
    pub async fn ask(&self, query: impl Into<String>) -> Result<Answer, AskError> {
        self.ask_with(query, AskOptions::default()).await
    }

    /// Asks `query` with `options` (thread, timeout, streaming, context policy) and waits for
    /// the answer.
    ///
    /// # Errors
    /// As [`AgentHandle::ask`].
    pub async fn ask_with(
        &self,
        query: impl Into<String>,
        options: AskOptions,
    ) -> Result<Answer, AskError> {
        self.submit(query, options).await?.wait().await
    }

    /// Summarizes entries `from_seq..=to_seq` of thread `thread_id` (the default thread for
    /// `None`) with an LLM call (the agent's summary model, else its model) and appends the
    /// summary entry; from then on the projection shows the summary in place of those entries.
    /// Queued behind a running request like an ask. Returns the summary's text.
    ///
    /// # Errors
    /// [`AskError::Failed`] when the range is not in the thread or the summary call failed
    /// (reason `summary`); otherwise as [`AgentHandle::ask`].
    pub async fn summarize(
        &self,
        thread_id: Option<&str>,
        from_seq: u64,
        to_seq: u64,
        timeout: Duration,
    ) -> Result<String, AskError> {
        let request = SystemEnv.fresh_id("req");
        let thread = RuntimeCore::thread_id(thread_id);
        let data = AgentSummarize { from_seq, to_seq };
        let signal =
            from_caller(AGENT_SUMMARIZE, &thread, Some(&request), data).map_err(AskError::send)?;
        let reply = self.ask_signal(signal, timeout).await?;
        Ok(Answer::of(reply, &thread, &request).text)
    }

    /// Sets the agent's context policy on thread `thread_id` (the default thread for `None`):
    /// the layer below a request's own override and above the strategy's configured policy
    /// (docs/context.md, "Policy"). `None` clears it. Queued behind a running request like an
    /// ask, kept with the thread's state (a restart keeps it) and recorded in the thread's
    /// stored meta.
    ///
    /// # Errors
    /// [`AskError::Strategy`] when the agent's strategy takes no policy (it does not answer
    /// `agent.policy`); otherwise as [`AgentHandle::ask`].
    pub async fn set_context_policy(
        &self,
        thread_id: Option<&str>,
        policy: Option<ContextPolicy>,
        timeout: Duration,
    ) -> Result<(), AskError> {
        let thread = RuntimeCore::thread_id(thread_id);
        let request = SystemEnv.fresh_id("req");
        let data = AgentPolicy {
            context_policy: policy,
        };
        let signal =
            from_caller(AGENT_POLICY, &thread, Some(&request), data).map_err(AskError::send)?;
        self.ask_signal(signal, timeout).await.map(|_| ())
    }

    /// Submits `query` as an `agent.request` and returns at once: the [`Ticket`] can be
    /// awaited, cancelled, and (with [`AskOptions::stream`]) read delta by delta while the
    /// model writes.
    ///
    /// # Errors
    /// [`AskError::AgentStopped`] when the agent is not running.
    pub async fn submit(
        &self,
        query: impl Into<String>,
        options: AskOptions,
    ) -> Result<Ticket, AskError> {
        let request_id = SystemEnv.fresh_id("req");
        let wanted = options.thread_id.clone();
        let thread = RuntimeCore::thread_id(options.thread_id.as_deref());
        let data = AgentRequest {
            query: query.into(),
            context_policy: options.context_policy,
            response_format: options.response_format,
            attachments: options.attachments,
        };
        let signal =
            from_caller(AGENT_REQUEST, &thread, Some(&request_id), data).map_err(AskError::send)?;
        // Subscribed before the request is sent, so no delta is missed.
        let deltas = options
            .stream
            .then(|| Deltas::subscribe(&self.core.bus, &request_id));
        let (reply, answer) = oneshot::channel();
        // A thread handed off to another agent is that agent's to answer.
        let holder = crate::agent::delegate::route(&self.core, &self.name, &thread).await;
        let agent = holder.as_str();
        self.core
            .send(agent, &thread, ThreadMsg::Ask { signal, reply })
            .await
            .map_err(|e| {
                let wanted = wanted.as_deref().unwrap_or(DEFAULT_THREAD);
                AskError::unreachable(agent, wanted, e)
            })?;
        let mut ticket = Ticket::new(
            &self.core,
            agent,
            request_id,
            thread,
            answer,
            options.timeout,
        );
        ticket.keep_running = options.keep_running;
        ticket.deltas = deltas;
        Ok(ticket)
    }

    /// Sends any request signal (it must carry a request id) to the thread it names (or the
    /// default thread) and waits for its reply.
    ///
    /// # Errors
    /// As [`AgentHandle::ask`].
    pub async fn ask_signal(&self, signal: Signal, timeout: Duration) -> Result<Signal, AskError> {
        let thread = RuntimeCore::thread_id(signal.thread_id());
        let (reply, answer) = oneshot::channel();
        let ask = ThreadMsg::Ask {
            signal: traced(signal, &tracing::Span::current()),
            reply,
        };
        self.core
            .send(&self.name, &thread, ask)
            .await
            .map_err(|e| AskError::unreachable(&self.name, &thread, e))?;
        self.outcome(answer, timeout).await
    }

    /// The reply to an ask, as the caller sees it.
    async fn outcome(
        &self,
        answer: oneshot::Receiver<Result<Signal, AskError>>,
        timeout: Duration,
    ) -> Result<Signal, AskError> {
        match tokio::time::timeout(timeout, answer).await {
            Err(_) => Err(AskError::Timeout(timeout)),
            Ok(received) => interpret(&self.core, &self.name, received),
        }
    }

    /// Carries on with the request thread `thread_id` (the default thread for `None`) was in
    /// the middle of when its process stopped: the request its last commit left running, or
    /// else — when a handoff gave the thread to another agent — the holder's thread of that id
    /// resumed the same way, or else the one its last turn belongs to. The strategy gets `agent.resume` for it (ReAct
    /// makes the LLM call that is owed, or runs the tool calls whose results are missing —
    /// idempotent tools again with the same tool-call id, others get an error result saying
    /// they may or may not have run). Returns the resumed request to await, or `None` when the
    /// thread owes nothing it can name.
    ///
    /// # Errors
    /// [`AskError::AgentStopped`] when the agent is not running; store failures as
    /// [`AskError::Store`].
    pub async fn resume(
        &self,
        thread_id: Option<&str>,
        timeout: Duration,
    ) -> Result<Option<Ticket>, AskError> {
        let thread_id = thread_id.unwrap_or(DEFAULT_THREAD);
        let mut at = self.clone();
        let mut passed = vec![self.name.clone()];
        loop {
            match at.owed(thread_id).await? {
                Owed::Request(request_id) => {
                    return at
                        .resume_request(thread_id, &request_id, timeout, person::IfEnded::Replay)
                        .await
                        .map(Some);
                }
                Owed::Nothing => return Ok(None),
                // Handed off with nothing left open here: whoever holds it carries on.
                Owed::HeldBy(holder) => {
                    if passed.contains(&holder) || self.core.agent(&holder).is_none() {
                        return Ok(None);
                    }
                    passed.push(holder.clone());
                    at = Self {
                        name: holder,
                        core: Arc::clone(&self.core),
                    };
                }
            }
        }
    }

    /// What this agent's thread `thread_id` owes: the request its last commit left running,
    /// else — when a handoff moved it on — the agent that holds it, else the request its last
    /// turn belongs to.
    async fn owed(&self, thread_id: &str) -> Result<Owed, AskError> {
        let store_error = |e: crate::store::StoreError| AskError::Store(e.into());
        let store_id = ThreadKey::store_id_of(&self.name, thread_id);
        let open = match self.core.store.load_state(&store_id).await {
            Ok(saved) => saved
                .as_deref()
                .and_then(crate::agent::host::actor::open_request),
            Err(crate::store::StoreError::NotFound { .. }) => return Ok(Owed::Nothing),
            Err(e) => return Err(store_error(e)),
        };
        if let Some(request) = open {
            return Ok(Owed::Request(request));
        }
        let thread = self
            .get_thread(Some(thread_id))
            .await
            .map_err(|e| match e {
                RuntimeError::Store(failure) => AskError::Store(failure),
                _ => AskError::AgentStopped {
                    agent: self.name.clone(),
                },
            })?;
        let Some(thread) = thread else {
            return Ok(Owed::Nothing);
        };
        if let Some(holder) = motet_agents::delegate::holder(&thread) {
            return Ok(Owed::HeldBy(holder.to_owned()));
        }
        Ok(last_turn_request(&thread).map_or(Owed::Nothing, Owed::Request))
    }

    /// Carries on the one request `waiting` belongs to — it paused for a person in a process
    /// that stopped — and returns its ticket, so that the request's answer (or its next wait)
    /// can be followed after [`Runtime::respond`](crate::agent::Runtime::respond). Only that request
    /// of that thread is resumed, unlike [`Runtime::recover`](crate::agent::Runtime::recover), which
    /// resumes every thread owing work. The ticket keeps the request running when a wait on it
    /// times out: a person may still be deciding.
    ///
    /// # Errors
    /// [`AskError::RequestRunning`] when this runtime runs the request already (answer it with
    /// [`Ticket::respond`] on its own ticket); [`AskError::AgentStopped`] when the agent is
    /// not running; [`AskError::ThreadUnavailable`] when its thread cannot start.
    pub async fn resume_waiting(
        &self,
        waiting: &motet_agents::Waiting,
        timeout: Duration,
    ) -> Result<Ticket, AskError> {
        if self
            .core
            .requests
            .get(&waiting.request_id)
            .is_some_and(|r| r.status.is_running())
        {
            return Err(AskError::RequestRunning {
                request: waiting.request_id.clone(),
            });
        }
        let mut ticket = self
            .resume_request(
                &waiting.thread,
                &waiting.request_id,
                timeout,
                person::IfEnded::Replay,
            )
            .await?;
        ticket.keep_running = true;
        Ok(ticket)
    }

    /// Sends `agent.resume` for `request_id` on `thread_id`, and returns its ticket;
    /// `if_ended` says whether it goes ahead for a request another caller carried on.
    pub(crate) async fn resume_request(
        &self,
        thread_id: &str,
        request_id: &str,
        timeout: Duration,
        if_ended: person::IfEnded,
    ) -> Result<Ticket, AskError> {
        let (thread, answer) =
            person::resume(&self.core, &self.name, thread_id, request_id, if_ended).await?;
        let id = request_id.to_owned();
        Ok(Ticket::new(
            &self.core, &self.name, id, thread, answer, timeout,
        ))
    }

    /// The tool calls waiting for a person on thread `thread_id` of this agent (every thread
    /// of it for `None`), as last committed: listed after a crash or a restart too, with no
    /// thread running. Answer one with [`Runtime::respond`](crate::agent::Runtime::respond).
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot be read.
    pub async fn waiting(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Vec<motet_agents::Waiting>, RuntimeError> {
        match thread_id {
            Some(thread) => person::waiting_on(self.core.store.as_ref(), &self.name, thread).await,
            None => person::waiting_in(self.core.store.as_ref(), Some(&self.name)).await,
        }
    }

    /// This agent's requests, oldest first (finished ones are kept up to a bound).
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.core.requests.of_agent(&self.name)
    }

    /// Forgets conversation thread `thread_id` (the default thread for `None`): its actor is
    /// stopped and its stored history deleted; the next signal for it starts it afresh.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot delete it.
    pub async fn reset_thread(&self, thread_id: Option<&str>) -> Result<(), RuntimeError> {
        let thread_id = thread_id.unwrap_or(DEFAULT_THREAD).to_owned();
        let running = self
            .core
            .agent(&self.name)
            .and_then(|agent| agent.remove_thread(&thread_id));
        if let Some(actor) = running {
            let _ = actor
                .stop_and_wait(
                    Some("thread reset".to_owned()),
                    Some(Duration::from_secs(5)),
                )
                .await;
        }
        self.core
            .store
            .delete(&ThreadKey::store_id_of(&self.name, &thread_id))
            .await
            .map(|_| ())
            .map_err(|e| RuntimeError::Store(e.into()))
    }

    /// A copy of the conversation thread `thread_id` (the default thread for `None`), from its
    /// running actor, or from the store when it is not running; `None` when it never existed.
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when the agent has stopped; store failures as
    /// [`RuntimeError::Store`].
    pub async fn get_thread(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Option<motet_agents::Thread>, RuntimeError> {
        let agent = self
            .core
            .agent(&self.name)
            .ok_or_else(|| RuntimeError::NotRunning {
                name: self.name.clone(),
            })?;
        let thread_id = thread_id.unwrap_or(DEFAULT_THREAD).to_owned();
        if let Some(actor) = agent.thread(&thread_id) {
            let (tx, rx) = oneshot::channel();
            if actor.cast(ThreadMsg::GetThread(tx)).is_ok()
                && let Ok(thread) = rx.await
            {
                return Ok(thread);
            }
        }
        self.core
            .store
            .load(&ThreadKey::store_id_of(&self.name, &thread_id))
            .await
            .map_err(|e| RuntimeError::Store(e.into()))
    }

    /// Forks thread `from` (the default thread for `None`): its entries `0..=at` (all of them
    /// for `None`) become a new thread of this agent under a fresh id, which is returned. The
    /// new thread records where it came from ([`Thread::parent`](motet_agents::Thread::parent):
    /// `<agent>/<from>` at `at`), and a question asked on it goes on from that prefix, as if
    /// the rest had never happened. The source is read from its running actor when it runs,
    /// else from the store, and is not changed.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownThread`] when thread `from` does not exist;
    /// [`RuntimeError::Thread`] ([`ThreadError::NoSuchSeq`](motet_agents::ThreadError::NoSuchSeq))
    /// when `at` is past its end; [`RuntimeError::NotRunning`] when the agent has stopped;
    /// store failures as [`RuntimeError::Store`].
    pub async fn fork_thread(
        &self,
        from: Option<&str>,
        at: Option<u64>,
    ) -> Result<String, RuntimeError> {
        let from = from.unwrap_or(DEFAULT_THREAD);
        let from_id = ThreadKey::store_id_of(&self.name, from);
        let source =
            self.get_thread(Some(from))
                .await?
                .ok_or_else(|| RuntimeError::UnknownThread {
                    thread: from_id.clone(),
                })?;
        let to = ThreadKey::new(self.name.as_str(), SystemEnv.fresh_id("thread"));
        fork_into(self.core.store.as_ref(), &source, &from_id, &to, at).await?;
        Ok(to.thread().to_owned())
    }

    /// Creates an empty conversation thread of this agent under a fresh id, which is returned:
    /// stored at once (keyed to this agent, as a fork is), so it is listed and read before its
    /// first request.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot create it.
    pub async fn create_thread(&self) -> Result<String, RuntimeError> {
        let key = ThreadKey::new(self.name.as_str(), SystemEnv.fresh_id("thread"));
        let header = crate::store::ThreadHeader::new(key.store_id(), SystemEnv.now_ms());
        let meta = crate::store::ThreadMeta {
            key: Some(key.clone()),
            ..crate::store::ThreadMeta::default()
        };
        self.core
            .store
            .create_with(&header, Some(&meta), &[])
            .await
            .map_err(|e| RuntimeError::Store(e.into()))?;
        Ok(key.thread().to_owned())
    }

    /// This agent's stored threads, oldest first, each summary's id the thread's id within the
    /// agent (as [`get_thread`](Self::get_thread) takes it). A thread that has not committed
    /// yet is not listed.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot be listed.
    pub async fn threads(&self) -> Result<Vec<crate::store::ThreadSummary>, RuntimeError> {
        let all = self
            .core
            .store
            .list()
            .await
            .map_err(|e| RuntimeError::Store(e.into()))?;
        Ok(all
            .into_iter()
            .filter_map(|mut summary| {
                let thread = ThreadKey::thread_in(&self.name, &summary.id)?.to_owned();
                summary.id = thread;
                Some(summary)
            })
            .collect())
    }

    /// Whether the agent is in memory now: a spawned agent until it stops, a virtual agent
    /// while active (a message for an inactive one activates it).
    pub fn is_active(&self) -> bool {
        self.core.agents.contains_key(&self.name)
    }

    /// Sends a signal to the thread it names (or the default thread) without waiting.
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when the agent has stopped.
    pub async fn send(&self, signal: Signal) -> Result<(), RuntimeError> {
        let thread = RuntimeCore::thread_id(signal.thread_id());
        self.core
            .send(
                &self.name,
                &thread,
                ThreadMsg::Signal(traced(signal, &tracing::Span::current())),
            )
            .await
    }
}

/// The request the last turn of `thread` (a question, an answer, a tool result) belongs to.
/// What a thread owes a resume.
enum Owed {
    /// This request, to carry on.
    Request(String),
    /// Nothing here: the thread was handed off to this agent.
    HeldBy(String),
    /// Nothing.
    Nothing,
}

fn last_turn_request(thread: &motet_agents::Thread) -> Option<String> {
    thread
        .to_list()
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e.body,
                motet_agents::EntryBody::User { .. }
                    | motet_agents::EntryBody::Assistant { .. }
                    | motet_agents::EntryBody::ToolResult { .. }
            )
        })
        .and_then(|e| e.refs.request_id.as_deref().map(str::to_owned))
}
