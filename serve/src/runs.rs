//! Runs: an ask on a thread of an agent, carried by a task of its own that writes everything
//! the run does into its [`RunLog`], and the SSE streams that read that log.
//!
//! A run is addressed by ids (its agent, its thread, its id — the runtime's request id), never
//! by a pointer a client holds: on a cluster, the node that hosts the thread hosts its runs,
//! and a request for one is routed there by those ids (docs/serve.md).
//!
//! Layout: `log.rs` (the log and what a subscriber is sent: pure), `admit.rs` (subscriber
//! bounds and stalls: pure), `stream.rs` (one subscriber's SSE stream), this file (the
//! registry and the task that drives a run).

mod admit;
mod log;
mod stream;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use motet_agents::{EntryBody, THREAD_UPDATED, ThreadUpdated};
use motet_runtime::agent::{AgentHandle, AskError, AskOptions, Ticket, TicketEvent};
use motet_signals::{Delivery, Pattern, Signal};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

pub(crate) use admit::Refusal;
pub use admit::StreamLimits;
pub use log::BufferLimits;
pub(crate) use log::{Replay, RunLog, resume_point};
pub(crate) use stream::{Slot, subscribe};

/// How runs are kept and streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// The deltas each run keeps for subscribers that resume.
    pub buffer: BufferLimits,
    /// The bounds on SSE subscribers.
    pub streams: StreamLimits,
    /// How many ended runs stay readable (the oldest are forgotten first).
    pub finished_kept: usize,
    /// How long a run may take; past it, its stream ends with a failure and the request is
    /// left running (its end is then in the thread).
    pub timeout: Duration,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            buffer: BufferLimits::default(),
            streams: StreamLimits::default(),
            finished_kept: 1_000,
            timeout: Duration::from_secs(24 * 60 * 60),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The agent answered.
    Completed {
        /// The answer's text.
        answer: String,
        /// What the run's LLM calls used.
        usage: motet_directives::Usage,
    },
    /// The run failed or was cancelled.
    Failed {
        /// Why.
        error: String,
        /// True when a cancel stopped it (its strategy said so).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancelled: bool,
    },
}

/// What the task driving a run is asked to do on the run's behalf.
enum Control {
    Cancel(oneshot::Sender<Result<(), motet_runtime::agent::RuntimeError>>),
    Steer(
        String,
        oneshot::Sender<Result<(), motet_runtime::agent::RuntimeError>>,
    ),
}

/// One run.
pub(crate) struct Run {
    pub(crate) id: String,
    pub(crate) agent: String,
    pub(crate) thread: String,
    /// The trace of the request that started it (empty when none is recorded): requests about
    /// the run join it.
    pub(crate) trace: motet_signals::TraceContext,
    log: Mutex<RunLog>,
    /// The log's latest id, for subscribers to wait on.
    changed: watch::Sender<u64>,
    control: mpsc::Sender<Control>,
    outcome: Mutex<Option<Outcome>>,
    /// Subscribers streaming it now.
    streams: AtomicUsize,
}

impl Run {
    /// The log's events after `after` (see [`RunLog::since`]).
    pub(crate) fn since(&self, after: u64, max: usize) -> Replay {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .since(after, max)
    }

    /// The id of its latest event.
    pub(crate) fn last_id(&self) -> u64 {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last_id()
    }

    /// A receiver told the log's latest id each time the log grows.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// How it ended, once it has.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Asks it to stop.
    pub(crate) async fn cancel(&self) -> Result<(), ControlError> {
        let (tx, rx) = oneshot::channel();
        self.tell(Control::Cancel(tx), rx).await
    }

    /// Adds `text` to it as a user message, at its next turn boundary.
    pub(crate) async fn steer(&self, text: String) -> Result<(), ControlError> {
        let (tx, rx) = oneshot::channel();
        self.tell(Control::Steer(text, tx), rx).await
    }

    async fn tell(
        &self,
        control: Control,
        reply: oneshot::Receiver<Result<(), motet_runtime::agent::RuntimeError>>,
    ) -> Result<(), ControlError> {
        self.control
            .send(control)
            .await
            .map_err(|_| ControlError::Ended)?;
        match reply.await {
            Ok(result) => result.map_err(ControlError::Runtime),
            Err(_) => Err(ControlError::Ended),
        }
    }

    fn push(&self, durable: bool, name: &'static str, data: &impl Serialize) {
        let Ok(json) = serde_json::to_string(data) else {
            return;
        };
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let id = if durable {
            log.push_durable(name, json.into())
        } else {
            log.push_delta(name, json.into())
        };
        drop(log);
        if let Some(id) = id {
            self.changed.send_replace(id);
        }
    }

    fn finish(&self, outcome: Outcome) {
        let name = match outcome {
            Outcome::Completed { .. } => "answer",
            Outcome::Failed { .. } => "failed",
        };
        let json = serde_json::to_string(&outcome).unwrap_or_default();
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        let id = self
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish(name, json.into());
        if let Some(id) = id {
            self.changed.send_replace(id);
        }
    }
}

/// Why a cancel or a steer did not reach a run.
#[derive(Debug)]
pub(crate) enum ControlError {
    /// The run has ended.
    Ended,
    /// The runtime refused it.
    Runtime(motet_runtime::agent::RuntimeError),
}

/// The runs of one server, by id.
pub(crate) struct Runs {
    pub(crate) limits: RunLimits,
    by_id: Mutex<HashMap<String, Arc<Run>>>,
    finished: Mutex<VecDeque<String>>,
    /// Subscribers streaming now, over every run.
    pub(crate) streams: AtomicUsize,
}

impl Runs {
    /// No runs yet.
    pub(crate) fn new(limits: RunLimits) -> Self {
        Self {
            limits,
            by_id: Mutex::new(HashMap::new()),
            finished: Mutex::new(VecDeque::new()),
            streams: AtomicUsize::new(0),
        }
    }

    /// Run `id`.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Run>> {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// The runs of thread `thread` of `agent`, oldest first.
    pub(crate) fn of_thread(&self, agent: &str, thread: &str) -> Vec<Arc<Run>> {
        let mut runs: Vec<Arc<Run>> = self
            .by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|run| run.agent == agent && run.thread == thread)
            .cloned()
            .collect();
        runs.sort_by(|a, b| a.id.cmp(&b.id));
        runs
    }

    /// Starts a run: `query` asked on `thread` of `agent`, driven by a task of its own.
    pub(crate) async fn start(
        self: &Arc<Self>,
        agent: &AgentHandle,
        bus: &motet_signals::Bus,
        thread: &str,
        query: String,
    ) -> Result<Arc<Run>, AskError> {
        let options = AskOptions {
            thread_id: Some(thread.to_owned()),
            timeout: self.limits.timeout,
            stream: true,
            keep_running: true,
            ..AskOptions::default()
        };
        // Subscribed before the request is sent, so no commit of it is missed.
        let (updated, updates) = mpsc::unbounded_channel();
        let subscription = watch_thread(bus, agent.name(), thread, updated);
        let ticket = agent.submit(query, options).await?;
        let (control, controls) = mpsc::channel(8);
        let run = Arc::new(Run {
            id: ticket.id().to_owned(),
            agent: agent.name().to_owned(),
            thread: ticket.thread().to_owned(),
            trace: motet_runtime::telemetry::context_of(&tracing::Span::current()),
            log: Mutex::new(RunLog::new(self.limits.buffer)),
            changed: watch::channel(0).0,
            control,
            outcome: Mutex::new(None),
            streams: AtomicUsize::new(0),
        });
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run.id.clone(), Arc::clone(&run));
        let driver = Driver {
            run: Arc::clone(&run),
            agent: agent.clone(),
            controls,
            updates,
            entries_seen: 0,
        };
        let runs = Arc::clone(self);
        let span = tracing::Span::current();
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                let _subscription = subscription;
                let id = driver.run.id.clone();
                driver.drive(ticket).await;
                runs.ended(id);
            },
            span,
        ));
        Ok(run)
    }

    /// Remembers that run `id` ended, forgetting the oldest ended runs beyond the bound.
    fn ended(&self, id: String) {
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        finished.push_back(id);
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        while finished.len() > self.limits.finished_kept {
            if let Some(old) = finished.pop_front() {
                by_id.remove(&old);
            }
        }
    }
}

/// Whether `error` is a cancel's doing: the strategy's failure reply says it was cancelled.
fn was_cancelled(error: &AskError) -> bool {
    match error {
        AskError::Failed { reply } => {
            reply
                .data_as::<motet_agents::ReactFailed>()
                .is_ok_and(|failed| {
                    matches!(failed.reason, motet_agents::FailureReason::Cancelled { .. })
                })
        }
        _ => false,
    }
}

/// Sends `()` on `updated` each time thread `thread` of `agent` commits.
fn watch_thread(
    bus: &motet_signals::Bus,
    agent: &str,
    thread: &str,
    updated: mpsc::UnboundedSender<()>,
) -> Option<motet_signals::Subscription> {
    let pattern = THREAD_UPDATED.parse::<Pattern>().ok()?;
    let (agent, thread) = (agent.to_owned(), thread.to_owned());
    let store_id = format!("{agent}/{thread}");
    Some(bus.subscribe(pattern, move |signal: &Signal| {
        let Ok(update) = signal.data_as::<ThreadUpdated>() else {
            return Delivery::Delivered;
        };
        if update.agent != agent || (update.thread_id != thread && update.thread_id != store_id) {
            return Delivery::Delivered;
        }
        match updated.send(()) {
            Ok(()) => Delivery::Delivered,
            Err(_) => Delivery::Closed,
        }
    }))
}

/// The task that carries one run: its deltas, waits and commits into its log, cancels and
/// steers to its ticket, and its end.
struct Driver {
    run: Arc<Run>,
    agent: AgentHandle,
    controls: mpsc::Receiver<Control>,
    updates: mpsc::UnboundedReceiver<()>,
    /// How many of the thread's entries were looked at already.
    entries_seen: usize,
}

/// What woke the driver.
enum Woken {
    Control(Control),
    Committed,
    Event(TicketEvent),
    Done,
}

impl Driver {
    async fn drive(mut self, mut ticket: Ticket) {
        loop {
            let woken = tokio::select! {
                biased;
                Some(control) = self.controls.recv() => Woken::Control(control),
                Some(()) = self.updates.recv() => Woken::Committed,
                event = ticket.next_event() => event.map_or(Woken::Done, Woken::Event),
            };
            match woken {
                Woken::Control(Control::Cancel(reply)) => {
                    let _ = reply.send(ticket.cancel("cancelled over HTTP").await);
                }
                Woken::Control(Control::Steer(text, reply)) => {
                    let _ = reply.send(ticket.steer(text).await);
                }
                Woken::Committed => self.commits().await,
                Woken::Event(TicketEvent::Delta(delta)) => self.run.push(false, "delta", &delta),
                Woken::Event(TicketEvent::Waiting(waiting)) => {
                    self.run.push(true, "waiting", &waiting);
                }
                Woken::Done => break,
            }
        }
        let outcome = match ticket.wait().await {
            Ok(answer) => Outcome::Completed {
                answer: answer.text,
                usage: answer.usage,
            },
            Err(error) => Outcome::Failed {
                cancelled: was_cancelled(&error),
                error: error.to_string(),
            },
        };
        // Every entry the run committed comes before its end.
        self.commits().await;
        self.run.finish(outcome);
        // A cancel or steer that raced the end is told it ended.
        self.controls.close();
    }

    /// Logs the entries of this run the thread committed since last looked at.
    async fn commits(&mut self) {
        while self.updates.try_recv().is_ok() {}
        let thread = match self.agent.get_thread(Some(&self.run.thread)).await {
            Ok(Some(thread)) => thread,
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%error, run = %self.run.id, "the run's thread could not be read");
                return;
            }
        };
        let entries = thread.to_list();
        let new = entries.get(self.entries_seen..).unwrap_or_default();
        for entry in new {
            let ours = entry.refs.request_id.as_deref() == Some(self.run.id.as_str());
            let shown = !matches!(
                entry.body,
                EntryBody::SignalIn { .. } | EntryBody::SignalOut { .. }
            );
            if ours && shown {
                self.run.push(true, "entry", entry.as_ref());
            }
        }
        self.entries_seen = entries.len();
    }
}
