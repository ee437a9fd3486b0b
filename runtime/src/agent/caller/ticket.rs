//! What an ask gives back: a [`Ticket`] for a request on its way (await it, cancel it, read
//! its deltas) and the [`Answer`] it ends with.

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{
    AGENT_CANCEL, AGENT_STEER, AGENT_WAITING, AgentCancel, AgentCompleted, AgentSteer, Waiting,
};
use motet_directives::{Response, Usage};
use motet_signals::{Bus, Delivery, Pattern, Signal, Subscription};
use tokio::sync::oneshot;

use crate::agent::errors::{AskError, RuntimeError};
use crate::agent::events::{LLM_DELTA, LlmDelta};
use crate::agent::host::core::{RuntimeCore, ThreadMsg};
use crate::agent::signals::from_caller;

/// A request's answer: the reply's text and usage, where it ran, and the reply itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The answer's text: the reply's `answer` field (every `agent.completed` has one), else
    /// the reply's data when it is a string, else its data as JSON text.
    pub text: String,
    /// What the request's LLM calls used, as the reply reports it.
    pub usage: Usage,
    /// The thread the request ran on.
    pub thread: String,
    /// The request's id (see [`Runtime::request`](crate::agent::Runtime::request)).
    pub request_id: String,
    /// The reply signal, for strategies that say more than a text (decode it with
    /// [`Signal::data_as`]).
    pub signal: Signal,
}

impl Answer {
    /// The answer `reply` carries, for the request `request_id` on `thread`.
    pub(crate) fn of(reply: Signal, thread: &str, request_id: &str) -> Self {
        let (text, usage) = match reply.data_as::<AgentCompleted>() {
            Ok(done) => (done.answer, done.usage),
            Err(_) => match reply.data_as::<serde_json::Value>() {
                Ok(serde_json::Value::String(text)) => (text, Usage::default()),
                Ok(serde_json::Value::Null) | Err(_) => (String::new(), Usage::default()),
                Ok(other) => (other.to_string(), Usage::default()),
            },
        };
        Self {
            text,
            usage,
            thread: thread.to_owned(),
            request_id: request_id.to_owned(),
            signal: reply,
        }
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A request on its way: await its answer, cancel it, or read its deltas.
pub struct Ticket {
    pub(crate) id: String,
    pub(crate) thread: String,
    /// The agent it was submitted to.
    pub(crate) agent: String,
    pub(crate) core: Arc<RuntimeCore>,
    pub(crate) answer: oneshot::Receiver<Result<Signal, AskError>>,
    /// The reply, when it arrived while deltas were read.
    pub(crate) ready: Option<Result<Result<Signal, AskError>, oneshot::error::RecvError>>,
    pub(crate) timeout: Duration,
    /// Whether the request outlives a timed-out wait.
    pub(crate) keep_running: bool,
    pub(crate) deltas: Option<Deltas>,
    /// The calls of this request that wait for a person, once asked for.
    pub(crate) waits: Option<Box<Waits>>,
}

/// What a ticket reports while its request runs ([`Ticket::next_event`]).
#[derive(Debug, Clone, PartialEq)]
pub enum TicketEvent {
    /// A fragment the model wrote (with [`AskOptions::stream`](crate::agent::AskOptions::stream)).
    Delta(LlmDelta),
    /// A tool call now waits for a person: answer it with [`Ticket::respond`].
    Waiting(Waiting),
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("id", &self.id)
            .field("thread", &self.thread)
            .finish_non_exhaustive()
    }
}

impl Ticket {
    /// The ticket of request `id` submitted to thread `thread` of `agent`, its reply coming on
    /// `answer`.
    pub(crate) fn new(
        core: &Arc<RuntimeCore>,
        agent: &str,
        id: String,
        thread: String,
        answer: oneshot::Receiver<Result<Signal, AskError>>,
        timeout: Duration,
    ) -> Self {
        Self {
            id,
            thread,
            agent: agent.to_owned(),
            core: core.clone(),
            answer,
            ready: None,
            timeout,
            keep_running: false,
            deltas: None,
            waits: None,
        }
    }

    /// The request id (see [`Runtime::request`](crate::agent::Runtime::request) for its status).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The thread it runs on.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The next text or reasoning fragment the model wrote for this request, while it runs;
    /// `None` when the request was not submitted with [`AskOptions::stream`](crate::agent::AskOptions::stream)
    /// or no more will come (the answer is then ready).
    pub async fn next_delta(&mut self) -> Option<LlmDelta> {
        let deltas = self.deltas.as_mut()?;
        if let Ok(delta) = deltas.rx.try_recv() {
            return Some(delta);
        }
        if self.ready.is_some() {
            return None;
        }
        tokio::select! {
            biased;
            delta = deltas.rx.recv() => delta,
            // The reply came: whatever was written is already in the channel.
            reply = &mut self.answer => {
                self.ready = Some(reply);
                deltas.rx.try_recv().ok()
            }
        }
    }

    /// The next fragment the model wrote, or the next tool call that waits for a person,
    /// whichever comes first; `None` once the request has its answer.
    pub async fn next_event(&mut self) -> Option<TicketEvent> {
        self.next(true).await
    }

    /// The next tool call of this request that waits for a person (an approval, a tool's
    /// question), one this ticket has not shown yet — including one that was waiting before
    /// this was called; `None` once the request has its answer. Deltas are left for
    /// [`next_delta`](Self::next_delta).
    pub async fn next_waiting(&mut self) -> Option<Waiting> {
        match self.next(false).await {
            Some(TicketEvent::Waiting(waiting)) => Some(waiting),
            _ => None,
        }
    }

    async fn next(&mut self, deltas: bool) -> Option<TicketEvent> {
        if self.waits.is_none() {
            // Subscribed first, then the stored list read: a call that starts waiting in
            // between is in one or the other (both, at worst: shown once).
            let mut watch = Waits::subscribe(&self.core.bus, &self.id);
            if let Ok(stored) =
                super::person::waiting_on(self.core.store.as_ref(), &self.agent, &self.thread).await
            {
                watch
                    .backlog
                    .extend(stored.into_iter().filter(|w| w.request_id == self.id));
            }
            self.waits = Some(Box::new(watch));
        }
        loop {
            let watch = self.waits.as_mut()?;
            if let Some(waiting) = watch.backlog.pop_front() {
                if watch.first_time(&waiting) {
                    // A wait of an agent this request asked (relayed): answered there.
                    if waiting.request_id != self.id {
                        watch.relayed.push(waiting.clone());
                    }
                    return Some(TicketEvent::Waiting(self.placed(waiting)));
                }
                continue;
            }
            if deltas && let Some(delta) = self.deltas.as_mut().and_then(|d| d.rx.try_recv().ok()) {
                return Some(TicketEvent::Delta(delta));
            }
            if self.ready.is_some() {
                return None;
            }
            let watch = self.waits.as_mut()?;
            let delta_rx = self.deltas.as_mut().filter(|_| deltas).map(|d| &mut d.rx);
            tokio::select! {
                biased;
                Some(delta) = async { match delta_rx { Some(rx) => rx.recv().await, None => None } } => {
                    return Some(TicketEvent::Delta(delta));
                }
                Some(waiting) = watch.rx.recv() => watch.backlog.push_back(waiting),
                reply = &mut self.answer => self.ready = Some(reply),
            }
        }
    }

    /// `waiting` with the agent and thread of this ticket filled in.
    fn placed(&self, mut waiting: Waiting) -> Waiting {
        if waiting.agent.is_empty() {
            waiting.agent.clone_from(&self.agent);
        }
        if waiting.thread.is_empty() {
            waiting.thread.clone_from(&self.thread);
        }
        waiting
    }

    /// The tool calls of this request that wait for a person now, as last committed.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot be read.
    pub async fn waiting(&self) -> Result<Vec<Waiting>, RuntimeError> {
        let mut all =
            super::person::waiting_on(self.core.store.as_ref(), &self.agent, &self.thread).await?;
        all.retain(|w| w.request_id == self.id);
        Ok(all)
    }

    /// Answers the tool call `tool_call_id` this request waits on: approve it (as asked, or
    /// with edited arguments), reject it with a reason the model reads, or answer the tool's
    /// question (docs/runtime.md, "A person in the loop"). A wait this ticket showed that
    /// belongs to an agent the request asked (an `AgentTool`, a `Handoff`) is answered where it
    /// waits, in that agent's request.
    ///
    /// # Errors
    /// [`RuntimeError::RequestNotPaused`] when the request waits for nobody;
    /// [`RuntimeError::UnknownCall`] for a call it does not wait on;
    /// [`RuntimeError::AlreadyAnswered`] for one answered already;
    /// [`RuntimeError::WrongResponse`] for an approval of a question or an answer to an
    /// approval; [`RuntimeError::InvalidEdit`] for edited arguments that are not a JSON object;
    /// [`RuntimeError::NotRunning`] when the agent has stopped.
    pub async fn respond(
        &self,
        tool_call_id: &str,
        response: Response,
    ) -> Result<(), RuntimeError> {
        let relayed = self.waits.as_ref().and_then(|watch| {
            watch
                .relayed
                .iter()
                .rev()
                .find(|w| w.tool_call_id == tool_call_id)
        });
        let (agent, thread, request) = match relayed {
            Some(w) => (&w.agent, &w.thread, &w.request_id),
            None => (&self.agent, &self.thread, &self.id),
        };
        super::person::respond(&self.core, agent, thread, request, tool_call_id, response).await
    }

    /// Asks the agent to stop working on the request (`agent.cancel`); its LLM calls and
    /// tools are aborted and [`Ticket::wait`] returns the failure reply.
    ///
    /// # Errors
    /// [`RuntimeError::NotRunning`] when the agent has stopped.
    pub async fn cancel(&self, reason: impl Into<String>) -> Result<(), RuntimeError> {
        let cancel = AgentCancel {
            reason: Some(reason.into()),
        };
        self.tell(AGENT_CANCEL, cancel).await
    }

    /// Sends the request's thread a signal of type `ty` about this request.
    async fn tell(&self, ty: &str, data: impl serde::Serialize) -> Result<(), RuntimeError> {
        let signal =
            from_caller(ty, &self.thread, Some(&self.id), data).map_err(RuntimeError::Signal)?;
        self.core
            .send(&self.agent, &self.thread, ThreadMsg::Signal(signal))
            .await
    }

    /// Adds `text` to the running request as a user message (`agent.steer`), taken in at its
    /// next turn boundary: after the results of the tool calls it waits for, before its next
    /// LLM call (docs/runtime.md, "Steering"). Several steers keep their order; one that
    /// arrives after the request ended is noted in the thread and not taken in.
    ///
    /// # Errors
    /// [`RuntimeError::EmptySteer`] for blank text; [`RuntimeError::RequestNotRunning`] when
    /// the request waits its turn or has ended; [`RuntimeError::NotRunning`] when the agent
    /// has stopped.
    pub async fn steer(&self, text: impl Into<String>) -> Result<(), RuntimeError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(RuntimeError::EmptySteer {
                request: self.id.clone(),
            });
        }
        if let Some(record) = self.core.requests.get(&self.id)
            && !record.status.is_running()
        {
            return Err(RuntimeError::RequestNotRunning {
                request: self.id.clone(),
                status: record.status,
            });
        }
        self.tell(AGENT_STEER, AgentSteer { text }).await
    }

    /// Waits for the answer (up to the ask's timeout; a request not answered in time is
    /// cancelled unless it was asked to keep running).
    ///
    /// # Errors
    /// As [`AgentHandle::ask`](crate::agent::AgentHandle::ask).
    pub async fn wait(mut self) -> Result<Answer, AskError> {
        let received = match self.ready.take() {
            Some(received) => received,
            None => match tokio::time::timeout(self.timeout, &mut self.answer).await {
                Ok(received) => received,
                Err(_) if self.keep_running => return Err(AskError::Timeout(self.timeout)),
                // The thread decides, in its order of events, whether the request ended before
                // the wait did (its reply is then on its way) or is cancelled now (the reply is
                // the timeout): the asker's outcome and the thread always agree.
                Err(_) => match self.expire().await {
                    Some(received) => received,
                    None => return Err(AskError::Timeout(self.timeout)),
                },
            },
        };
        let reply = interpret(&self.core, &self.agent, received)?;
        Ok(Answer::of(reply, &self.thread, &self.id))
    }

    /// Tells the thread this wait timed out and takes its verdict: the request's reply when it
    /// ended first, else [`AskError::Timeout`] from the thread, which cancelled it. `None` when
    /// the thread cannot be told or gives no verdict within [`VERDICT_WAIT`] (a store that
    /// hangs a step).
    async fn expire(
        &mut self,
    ) -> Option<Result<Result<Signal, AskError>, oneshot::error::RecvError>> {
        let expire = ThreadMsg::Expire {
            request: self.id.clone(),
            after: self.timeout,
        };
        if let Err(error) = self.core.send(&self.agent, &self.thread, expire).await {
            tracing::debug!(%error, request = %self.id, "a timed-out request could not be cancelled");
            return None;
        }
        tokio::time::timeout(VERDICT_WAIT, &mut self.answer)
            .await
            .ok()
    }
}

/// How long a wait that timed out waits for the thread's verdict on its request.
const VERDICT_WAIT: Duration = Duration::from_secs(5);

/// The `agent.waiting` signals of one request, from the bus, and the waits shown so far.
pub(crate) struct Waits {
    rx: tokio::sync::mpsc::UnboundedReceiver<Waiting>,
    backlog: std::collections::VecDeque<Waiting>,
    shown: Vec<(String, u64)>,
    /// Waits shown that belong to an agent this request asked (as a tool, or by a handoff):
    /// [`Ticket::respond`] answers them where they wait.
    relayed: Vec<Waiting>,
    _subscription: Option<Subscription>,
}

impl Waits {
    fn subscribe(bus: &Bus, request_id: &str) -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let id = request_id.to_owned();
        let subscription = AGENT_WAITING.parse::<Pattern>().ok().map(|pattern| {
            bus.subscribe(pattern, move |signal: &Signal| {
                if signal.request_id() != Some(id.as_str()) {
                    return Delivery::Delivered;
                }
                match signal.data_as::<Waiting>() {
                    Ok(waiting) => match tx.send(waiting) {
                        Ok(()) => Delivery::Delivered,
                        Err(_) => Delivery::Closed,
                    },
                    Err(_) => Delivery::Delivered,
                }
            })
        });
        Self {
            rx,
            backlog: std::collections::VecDeque::new(),
            shown: Vec::new(),
            relayed: Vec::new(),
            _subscription: subscription,
        }
    }

    /// True the first time `waiting` is seen.
    fn first_time(&mut self, waiting: &Waiting) -> bool {
        let key = wait_key(waiting);
        if self.shown.contains(&key) {
            return false;
        }
        self.shown.push(key);
        true
    }
}

/// The `llm.delta` signals of one request, from the bus.
pub(crate) struct Deltas {
    rx: tokio::sync::mpsc::UnboundedReceiver<LlmDelta>,
    _subscription: Option<Subscription>,
}

impl Deltas {
    pub(crate) fn subscribe(bus: &Bus, request_id: &str) -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let id = request_id.to_owned();
        let pattern = LLM_DELTA.parse::<Pattern>();
        let subscription = pattern.ok().map(|pattern| {
            bus.subscribe(pattern, move |signal: &Signal| {
                if signal.request_id() != Some(id.as_str()) {
                    return Delivery::Delivered;
                }
                match signal.data_as::<LlmDelta>() {
                    Ok(delta) => match tx.send(delta) {
                        Ok(()) => Delivery::Delivered,
                        Err(_) => Delivery::Closed,
                    },
                    Err(_) => Delivery::Delivered,
                }
            })
        });
        Self {
            rx,
            _subscription: subscription,
        }
    }
}

/// What a received (or lost) reply to an ask of `agent` means.
pub(crate) fn interpret(
    core: &RuntimeCore,
    agent: &str,
    received: Result<Result<Signal, AskError>, oneshot::error::RecvError>,
) -> Result<Signal, AskError> {
    match received {
        // The thread's state went away without answering: it failed. The agent still running
        // means it was restarted.
        Err(_) if core.agents.contains_key(agent) => Err(AskError::AgentRestarted {
            agent: agent.to_owned(),
        }),
        Err(_) => Err(AskError::AgentStopped {
            agent: agent.to_owned(),
        }),
        // The strategy's reply: a failure arrives as `AskError::Failed` already.
        Ok(reply) => reply,
    }
}

/// The key a ticket remembers a wait it showed by: the same call can wait twice (approved, then
/// its tool asks a question).
fn wait_key(waiting: &Waiting) -> (String, u64) {
    (waiting.tool_call_id.clone(), waiting.since_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(data: serde_json::Value) -> Signal {
        Signal::builder("agent.completed", "test")
            .with_id("s")
            .with_data(data)
            .build()
            .expect("a valid signal")
    }

    #[test]
    fn an_answer_reads_the_protocols_fields_and_falls_back_to_the_data() {
        let react = reply(serde_json::json!({
            "request_id": "r", "answer": "391", "iterations": 2,
            "usage": {"input_tokens": 5, "output_tokens": 3},
        }));
        let answer = Answer::of(react, "t", "r");
        assert_eq!(answer.text, "391");
        assert_eq!(answer.usage.output_tokens, 3);
        assert_eq!(
            (answer.thread.as_str(), answer.request_id.as_str()),
            ("t", "r")
        );

        assert_eq!(
            Answer::of(reply(serde_json::json!("plain")), "t", "r").text,
            "plain"
        );
        assert_eq!(
            Answer::of(reply(serde_json::json!({"count": 3})), "t", "r").text,
            r#"{"count":3}"#
        );
    }
}
