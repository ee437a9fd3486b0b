//! The endings of a request the actor decides itself — a queued request cancelled before it
//! ran, a request abandoned on a failure before its directives ran, a signal turned away while
//! the thread cannot be read back — and the thread settling once no request is open. (A
//! request the strategy answers ends in the `Reply` executor.)

use motet_agents::{AgentCancel, Strategy, protocol};
use motet_directives::Directive;
use motet_signals::Signal;

use super::{ThreadActor, ThreadState};
use crate::agent::errors::AskError;
use crate::agent::host::tracked::{Ending, Here};

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// A thread whose last open request ended settles: a short one gives back the room its
    /// list of entries grew ahead of appends, since a thread sits quiet between requests far
    /// longer than it works (see [`motet_agents::Thread::settle`]).
    pub(super) fn settle_thread(&self, state: &mut ThreadState<S>) {
        if state.tracked.open.is_none()
            && let Some(thread) = self.agent.strategy.thread_mut(&mut state.strategy)
        {
            thread.settle();
        }
    }

    /// Ends the queued request `cancel` names (taken out of the book already): the strategy
    /// never saw it, so the runtime answers it, an `agent.failed` saying it was cancelled
    /// before it ran.
    pub(super) fn cancel_queued(
        &self,
        here: &Here<'_>,
        state: &mut ThreadState<S>,
        cancel: &Signal,
    ) {
        let Some(request) = cancel.request_id() else {
            return;
        };
        let reason = cancel
            .data_as::<AgentCancel>()
            .ok()
            .and_then(|c| c.reason)
            .unwrap_or_else(|| "no reason given".to_owned());
        let why = format!("cancelled before it ran: {reason}");
        match protocol::failed(cancel, &state.env, why.as_str()) {
            Ok(Directive::Reply(reply)) => {
                let ending = Ending::Replied {
                    status: reply.status,
                    reply: &reply.signal,
                };
                state.tracked.end_request(here, request, ending);
                self.settle_thread(state);
            }
            // `failed` builds a reply, or fails for a cancel naming no request (ruled out above).
            _ => {
                let failure = AskError::Strategy {
                    message: why.clone(),
                };
                self.abandon(here, state, request, "cancelled", &why, failure);
            }
        }
    }

    /// Ends `request` on a failure before its directives ran: it is recorded failed, its span
    /// closes with `kind`, it is no longer the running one, and its asker gets `failure`.
    pub(super) fn abandon(
        &self,
        here: &Here<'_>,
        state: &mut ThreadState<S>,
        request: &str,
        kind: &'static str,
        message: &str,
        failure: AskError,
    ) {
        let ending = Ending::Abandoned {
            kind,
            message,
            failure,
        };
        state.tracked.end_request(here, request, ending);
        self.settle_thread(state);
    }

    /// Turns `signal` away while the thread cannot be read back after a failed commit
    /// (`error`): nothing is handed to a strategy whose state the store does not hold. A
    /// request fails with [`AskError::Store`], a durable delivery is told why (the bus delivers
    /// it again), anything else is dropped.
    pub(super) fn refuse_unread(
        &self,
        here: &Here<'_>,
        state: &mut ThreadState<S>,
        signal: &Signal,
        error: crate::store::StoreError,
    ) {
        let message = format!("could not read the thread back after a failed commit: {error}");
        tracing::warn!(agent = %self.agent.name, thread = %self.thread_id, signal = %signal.signal_type().as_str(), %error, "a signal turned away: the thread is not as stored and cannot be read");
        if let Some(key) = Self::delivery(state, signal) {
            Self::delivery_settled(state, &key, Err(message.clone()));
        }
        if protocol::starts_request(signal.signal_type().as_str())
            && let Some(request) = signal.request_id()
        {
            let failure = AskError::Store(error.into());
            self.abandon(here, state, request, "store_error", &message, failure);
        }
    }
}
