//! How a request ends: answered with the strategy's reply, or abandoned on a failure before its
//! directives ran — recorded, its span closed, the book told, its calls aborted, its asker
//! answered. One place, so every ending tears down the same things.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use motet_agents::{AgentCancel, Env, Strategy, protocol};
use motet_directives::{Directive, ReplyStatus};
use motet_signals::Signal;
use tokio::task::AbortHandle;

use super::execute::failure_text;
use super::{ThreadActor, ThreadState, trace};
use crate::agent::errors::AskError;
use crate::agent::requests::RequestStatus;
use crate::telemetry::instruments;

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// Ends `request` with the strategy's reply: recorded, its span closed, its calls still
    /// running aborted, the next request let in, and its asker answered.
    pub(super) fn answer(
        &self,
        state: &mut ThreadState<S>,
        request: &str,
        status: ReplyStatus,
        signal: &Signal,
    ) {
        let (recorded, failure) = match status {
            ReplyStatus::Completed => (RequestStatus::Completed, None),
            ReplyStatus::Failed => (RequestStatus::Failed, Some(failure_text(signal))),
        };
        self.core
            .requests
            .finished(request, recorded, Some(signal.clone()), state.env.now_ms());
        self.end_request_span(
            state,
            request,
            failure.as_deref().map(|text| ("request_failed", text)),
        );
        let asker = state.open.as_mut().and_then(|open| {
            open.book.finished(request);
            if let Some(calls) = open.calls.remove(request) {
                calls.iter().for_each(AbortHandle::abort);
            }
            open.pending.remove(request)
        });
        if let Some(asker) = asker {
            let answer = match status {
                ReplyStatus::Completed => Ok(signal.clone()),
                ReplyStatus::Failed => Err(AskError::Failed {
                    reply: Box::new(signal.clone()),
                }),
            };
            let _ = asker.send(answer);
        }
        release_room(state);
        self.settle_thread(state);
    }

    /// A thread whose last open request ended settles: a short one gives back the room its
    /// list of entries grew ahead of appends, since a thread sits quiet between requests far
    /// longer than it works (see [`motet_agents::Thread::settle`]).
    fn settle_thread(&self, state: &mut ThreadState<S>) {
        if state.open.is_none()
            && let Some(thread) = self.agent.strategy.thread_mut(&mut state.strategy)
        {
            thread.settle();
        }
    }

    /// Ends the queued request `cancel` names (taken out of the book already): the strategy
    /// never saw it, so the runtime answers it, an `agent.failed` saying it was cancelled
    /// before it ran.
    pub(super) fn cancel_queued(&self, state: &mut ThreadState<S>, cancel: &Signal) {
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
            Ok(Directive::Reply(reply)) => self.answer(state, request, reply.status, &reply.signal),
            // `failed` builds a reply, or fails for a cancel naming no request (ruled out above).
            _ => {
                let failure = AskError::Strategy {
                    message: why.clone(),
                };
                self.abandon(state, request, "cancelled", &why, failure);
            }
        }
    }

    /// Ends `request` on a failure before its directives ran: it is recorded failed, its span
    /// closes with `kind`, it is no longer the running one, and its asker gets `failure`.
    pub(super) fn abandon(
        &self,
        state: &mut ThreadState<S>,
        request: &str,
        kind: &'static str,
        message: &str,
        failure: AskError,
    ) {
        self.core
            .requests
            .finished(request, RequestStatus::Failed, None, state.env.now_ms());
        self.end_request_span(state, request, Some((kind, message)));
        let reply = state.open.as_mut().and_then(|open| {
            open.book.finished(request);
            // Its LLM calls would stream for a request that is over.
            if let Some(calls) = open.calls.remove(request) {
                calls.iter().for_each(AbortHandle::abort);
            }
            open.pending.remove(request)
        });
        if let Some(reply) = reply {
            let _ = reply.send(Err(failure));
        }
        release_room(state);
        self.settle_thread(state);
    }

    /// Turns `signal` away while the thread cannot be read back after a failed commit
    /// (`error`): nothing is handed to a strategy whose state the store does not hold. A
    /// request fails with [`AskError::Store`], a durable delivery is told why (the bus delivers
    /// it again), anything else is dropped.
    pub(super) fn refuse_unread(
        &self,
        state: &mut ThreadState<S>,
        signal: &Signal,
        error: &crate::store::StoreError,
    ) {
        let message = format!("could not read the thread back after a failed commit: {error}");
        tracing::warn!(agent = %self.agent.name, thread = %self.thread_id, signal = %signal.signal_type().as_str(), %error, "a signal turned away: the thread is not as stored and cannot be read");
        if let Some(key) = Self::delivery(state, signal) {
            Self::delivery_settled(state, &key, Err(message.clone()));
        }
        if protocol::starts_request(signal.signal_type().as_str())
            && let Some(request) = signal.request_id()
        {
            let failure = AskError::Store {
                message: message.clone(),
            };
            self.abandon(state, request, "store_error", &message, failure);
        }
    }

    /// Closes a request's `invoke_agent` span (marked failed with `(error type, text)` when
    /// given) and counts the request.
    fn end_request_span(
        &self,
        state: &mut ThreadState<S>,
        request: &str,
        failure: Option<(&'static str, &str)>,
    ) {
        let status = if failure.is_some() {
            "failed"
        } else {
            "completed"
        };
        instruments().requests.add(
            1,
            &[opentelemetry::KeyValue::new("motet.request.status", status)],
        );
        let Some(trace) = state.open.as_mut().and_then(|o| o.spans.remove(request)) else {
            return;
        };
        if let Some((error_type, text)) = failure {
            trace::failed(&trace.span, error_type, text);
            instruments()
                .errors
                .add(1, &[opentelemetry::KeyValue::new("error.type", error_type)]);
        }
    }
}

/// Gives back the room of the hash maps a request emptied: each keeps its capacity otherwise,
/// which a conversing thread would hold for as long as it runs; the occasional part goes
/// whole once it holds nothing. (The asker and the span of a request are in
/// [`Few`](super::few::Few)s, which keep nothing once empty.)
pub(super) fn release_room<S: Strategy>(state: &mut ThreadState<S>) {
    fn shrink<K: Eq + Hash, V, H: BuildHasher>(map: &mut HashMap<K, V, H>) {
        if map.is_empty() {
            map.shrink_to_fit();
        }
    }
    if state.open.as_ref().is_some_and(|o| o.is_empty()) {
        state.open = None;
    } else if let Some(open) = state.open.as_mut() {
        shrink(&mut open.calls);
    }
    if state.occasional.as_ref().is_some_and(|o| o.is_empty()) {
        state.occasional = None;
    } else if let Some(occasional) = state.occasional.as_mut() {
        shrink(&mut occasional.schedules);
    }
}
