//! Admission: a signal screened and admitted as the book decides — a stale result dropped, a
//! queued request's cancel answered, a request run, queued, joined, passed or interrupting the
//! running one — and an expired wait turned into a cancel.

use motet_agents::{Env as _, Strategy, protocol};
use motet_signals::Signal;
use ractor::ActorRef;

use super::{ThreadActor, ThreadState};
use crate::agent::book::{self, Admission, Screen};
use crate::agent::errors::AskError;
use crate::agent::host::core::ThreadMsg;
use crate::agent::host::tracked::RequestSpan;
use crate::agent::signals;
use crate::agent::trace;
use crate::telemetry::instruments;

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// Lets a signal through to the strategy, or queues it while another request runs, as the
    /// book decides.
    pub(super) async fn admit(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        signal: Signal,
    ) {
        let ty = signal.signal_type().as_str();
        let book = state.tracked.open.as_mut().map(|o| &mut o.book);
        let requests = &self.core.requests;
        match book::screen(book, ty, signal.request_id(), |id| requests.has_ended(id)) {
            Screen::Pass => {}
            Screen::Stale => {
                tracing::debug!(agent = %self.agent.name, thread = %self.thread_id, request = ?signal.request_id(), signal = %ty, "a result of work for a request that ended is dropped");
                return;
            }
            Screen::CancelledQueued { item, .. } => {
                instruments().queue_depth.add(-1, &[]);
                // A delivered request cancelled before it ran was decided: nothing to handle
                // again.
                if let Some(key) = Self::delivery(state, &item) {
                    Self::delivery_settled(state, &key, Ok(()));
                }
                self.cancel_queued(&self.here(myself), state, &signal);
                return;
            }
        }
        if state.diverged
            && let Err(error) = self.catch_up(state).await
        {
            self.refuse_unread(&self.here(myself), state, &signal, error);
            return;
        }
        match self.opened(state, &signal) {
            Some(id) => {
                let signal = self.on_arrival(state, signal, &id);
                self.admit_request(myself, state, signal, id).await;
            }
            None => self.step(myself, state, signal).await,
        }
    }

    /// The id of the request `signal` starts (its `invoke_agent` span opened on first sight),
    /// or `None` for a signal that starts none.
    fn opened(&self, state: &mut ThreadState<S>, signal: &Signal) -> Option<String> {
        if !protocol::starts_request(signal.signal_type().as_str()) {
            return None;
        }
        let id = signal.request_id()?;
        if state.tracked.span(id).is_none() {
            let span = trace::request_span(&self.agent.name, &self.thread_id, id, signal);
            let label = |name: &str| {
                signal
                    .extension(name)
                    .and_then(|value| value.as_str())
                    .map(Box::from)
            };
            let trace = RequestSpan {
                span,
                llm_calls: 0,
                chain: label(motet_agents::delegate::CHAIN_EXTENSION),
                payers: label(motet_agents::delegate::PAYERS_EXTENSION),
            };
            state.tracked.open().spans.insert(id.to_owned(), trace);
        }
        Some(id.to_owned())
    }

    /// Admits request `id` as the book decides: it runs, waits, joins the running one, passes
    /// to the strategy, or cancels the running one first.
    async fn admit_request(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        signal: Signal,
        id: String,
    ) {
        let now = state.env.now_ms();
        let delivered = Self::delivery(state, &signal);
        let admission = match state
            .tracked
            .open()
            .book
            .admit(&id, signal, self.agent.policy)
        {
            Admission::Interrupt { running, item } => {
                let why = book::INTERRUPTED.to_owned();
                if let Some(cancel) =
                    signals::cancel(&self.source(), &self.thread_id, &running, why)
                {
                    self.step(myself, state, cancel).await;
                }
                state.tracked.open().book.readmit(&id, item)
            }
            admission => admission,
        };
        let record = |queued| {
            self.core
                .requests
                .arrived(&id, &self.agent.name, &self.thread_id, queued, now);
        };
        match admission {
            Admission::Queued => {
                record(true);
                instruments().queue_depth.add(1, &[]);
            }
            // Its asker is among the pending ones: the running request's reply answers it.
            // A delivered copy of a running request has nothing of its own to commit.
            Admission::Joined => {
                if let Some(key) = delivered {
                    Self::delivery_settled(state, &key, Ok(()));
                }
            }
            // `readmit` never interrupts; were it to, the request still runs rather than vanish.
            Admission::Run(signal)
            | Admission::Pass(signal)
            | Admission::Interrupt { item: signal, .. } => {
                record(false);
                self.step(myself, state, signal).await;
            }
        }
    }

    /// The asker of `request` stopped waiting after `after`: when the request is still open
    /// ([`RequestBook::expire`](book::RequestBook::expire)), its asker is told
    /// [`AskError::Timeout`] and the cancel that ends it is returned, to be handled as any
    /// cancel; when it ended, its reply was sent before this message was read, and nothing is
    /// done.
    pub(super) fn expired(
        &self,
        state: &mut ThreadState<S>,
        request: &str,
        after: std::time::Duration,
    ) -> Option<Signal> {
        let open = state
            .tracked
            .open
            .as_mut()
            .filter(|o| o.book.expire(request))?;
        if let Some(asker) = open.pending.remove(request) {
            let _ = asker.send(Err(AskError::Timeout(after)));
        }
        let why = format!("no answer within {} s", after.as_secs_f64());
        signals::cancel(&self.source(), &self.thread_id, request, why)
    }

    /// `signal` (request `id`) as [`book::arrival`] decides it: the request the stored thread
    /// was left in the middle of, sent again, becomes a resume of it.
    fn on_arrival(&self, state: &mut ThreadState<S>, signal: Signal, id: &str) -> Signal {
        let interrupted = state
            .tracked
            .occasional
            .as_ref()
            .and_then(|o| o.interrupted.as_deref());
        let arrival = book::arrival(signal.signal_type().as_str(), id, interrupted);
        if arrival != book::Arrival::AsSent
            && let Some(occasional) = state.tracked.occasional.as_mut()
        {
            occasional.interrupted = None;
        }
        if arrival != book::Arrival::CarryOn {
            return signal;
        }
        let tools = self.agent.idempotent_tools();
        match signals::resume(&self.source(), &self.thread_id, id, &signal, tools) {
            Some(resume) => {
                tracing::info!(agent = %self.agent.name, thread = %self.thread_id, request = %id, "a request sent again after its process stopped is carried on, not asked again");
                resume
            }
            None => signal,
        }
    }
}
