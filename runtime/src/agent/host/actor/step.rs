//! A step: one signal through the strategy, what it changed committed (decided again once if
//! the commit lost a race) with the timers its directives set or cancel, and its directives
//! performed by the executors; a rejected signal or a failed commit ends its request.

use motet_agents::{Strategy, protocol};
use motet_directives::Directive;
use motet_signals::Signal;
use ractor::ActorRef;

use super::persist::Commit;
use super::{ThreadActor, ThreadState};
use crate::agent::book;
use crate::agent::errors::AskError;
use crate::agent::host::core::ThreadMsg;
use crate::agent::host::tracked::{Job, Run};
use crate::agent::host::{children, execute, waits};
use crate::agent::trace;
use crate::store::StoreError;

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// One signal through the strategy, what it changed committed, and its directives
    /// carried out.
    pub(super) async fn step(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        signal: Signal,
    ) {
        let request_span = signal
            .request_id()
            .and_then(|r| state.tracked.span(r))
            .and_then(|t| t.span.id());
        let handling = trace::handle_span(
            &self.agent.name,
            &self.thread_id,
            &signal,
            request_span.clone(),
        );
        let delivered = Self::delivery(state, &signal);
        if let Some(key) = &delivered
            && state.deliveries.as_ref().is_some_and(|d| d.applied(key))
        {
            tracing::debug!(parent: &handling, agent = %self.agent.name, %key, "a delivery committed before came again; acknowledged, not handled twice");
            Self::delivery_settled(state, key, Ok(()));
            return;
        }
        // Directive spans hang off the request's span (a flat, readable tree), or off this
        // signal's span when it belongs to no request of this thread.
        let parent = request_span.or_else(|| handling.id());
        let step = Step {
            signal: &signal,
            delivered: delivered.as_deref(),
            span: &handling,
            parent: parent.as_ref(),
        };
        let Some((directives, timers)) = self.decide(myself, state, &step).await else {
            return;
        };
        if !handling.is_disabled() {
            handling.record("motet.directives", directives.len() + timers.len());
            handling.record("motet.thread.rev", state.stored_rev);
        }
        self.perform(myself, state, &signal, (directives, timers), parent);
    }

    /// The strategy's directives for the step's signal, once what it changed is committed —
    /// its timer directives apart, their timers written in the same commit; `None` when the
    /// strategy rejected the signal or the commit failed (its request is then abandoned). A new
    /// request whose commit lost a race to another writer is decided again, once, on the
    /// stored thread ([`book::decide_again`]).
    async fn decide(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        step: &Step<'_>,
    ) -> Option<(Vec<Directive>, execute::Planned)> {
        let ty = step.signal.signal_type().as_str();
        let mut tried = false;
        loop {
            let mut directives =
                match self
                    .agent
                    .strategy
                    .handle(&mut state.strategy, step.signal, &state.env)
                {
                    Ok(directives) => directives,
                    Err(error) => {
                        self.rejected(myself, state, step, &error);
                        return None;
                    }
                };
            // The commit point: what the strategy changed is stored before any directive that
            // depends on it runs, with the request still open after them.
            let open = state
                .tracked
                .open
                .as_ref()
                .and_then(|o| o.book.running())
                .filter(|running| !replies_to(&directives, running))
                .map(str::to_owned);
            let waiting = self.agent.strategy.waiting(&state.strategy);
            let timers = execute::plan(&self.here(myself), &mut directives, step.parent);
            let children =
                children::after_step(state.tracked.children(), &self.agent.name, &directives);
            let commit = Commit {
                open: open.as_deref(),
                waiting: &waiting,
                delivered: step.delivered,
                timers: &timers.writes,
                children: children.as_ref(),
            };
            match self.persist(state, &commit).await {
                Ok(()) => {
                    if let Some(children) = children {
                        state.tracked.replace_children(children);
                    }
                    self.committed(myself, state, step, &waiting).await;
                    return Some((directives, timers));
                }
                Err(error) if book::decide_again(ty, error.lost_race(), tried) => {
                    tried = true;
                    tracing::info!(parent: step.span, agent = %self.agent.name, thread = %self.thread_id, "the thread changed in the store; deciding again on the stored thread");
                    self.reload(state).await;
                }
                Err(error) => {
                    self.commit_failed(myself, state, step, error).await;
                    return None;
                }
            }
        }
    }

    /// The strategy rejected the step's signal: its request fails, a delivery is told why.
    fn rejected(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        step: &Step<'_>,
        error: &motet_agents::StrategyError,
    ) {
        let signal = step.signal;
        tracing::warn!(parent: step.span, agent = %self.agent.name, signal = %signal.signal_type().as_str(), %error, "the strategy rejected a signal");
        trace::failed(step.span, "strategy_error", &error.to_string());
        if let Some(key) = step.delivered {
            let why = format!("the strategy rejected it: {error}");
            Self::delivery_settled(state, key, Err(why));
        }
        if let Some(request) = signal.request_id() {
            let message = error.to_string();
            let failure = AskError::Strategy {
                message: message.clone(),
            };
            let here = self.here(myself);
            self.abandon(&here, state, request, "strategy_error", &message, failure);
        }
    }

    /// What follows a commit: a delivery marked applied, the stored meta of a new policy, the
    /// waits for a person brought in line.
    async fn committed(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        step: &Step<'_>,
        waiting: &[motet_agents::Waiting],
    ) {
        if let Some(key) = step.delivered {
            state.deliveries.get_or_insert_default().commit(key);
        }
        if step.signal.signal_type().as_str() == protocol::AGENT_POLICY {
            // The agent's policy layer changed: the stored meta records the policy now in
            // force. The state (and so the policy) is committed already; a meta that failed to
            // follow is only stale until the next change.
            if let Err(error) = self.write_meta(state).await {
                tracing::warn!(agent = %self.agent.name, thread = %self.thread_id, %error, "the thread's meta could not record its context policy");
            }
        }
        waits::watch(&self.here(myself), &mut state.tracked, waiting, step.signal);
    }

    /// The step's commit failed (`error`): its directives do not run, its request fails, a
    /// delivery is told why, and the thread goes back to what is stored.
    async fn commit_failed(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        step: &Step<'_>,
        error: StoreError,
    ) {
        let lost_race = error.lost_race();
        let fenced = matches!(error, StoreError::Fenced { .. });
        if matches!(error, StoreError::LeaseLost { .. }) {
            // Another node hosts the agent now: every thread of it here stops.
            self.core.lease_lost(&self.agent.name);
        }
        tracing::error!(parent: step.span, agent = %self.agent.name, thread = %self.thread_id, %error, fenced, "could not store the thread; the step's directives are not run");
        trace::failed(step.span, "store_error", &error.to_string());
        if let Some(key) = step.delivered {
            let why = format!("could not store the thread: {error}");
            Self::delivery_settled(state, key, Err(why));
        }
        if let Some(request) = step.signal.request_id() {
            let message = error.to_string();
            let failure = AskError::Store(error.into());
            let here = self.here(myself);
            self.abandon(&here, state, request, "store_error", &message, failure);
        }
        if lost_race {
            // Another writer moved the thread on or took it over: what this actor held of it
            // is no longer the thread. It takes the stored thread as that writer left it, at
            // its epoch, without claiming it back (a successor that claimed would fence the new
            // owner in turn): a new question is then decided on it, and refused as busy while
            // the new owner's request runs. Unread (the store down too), the thread goes back
            // to what is stored before its next signal, as below.
            if !self.reload(state).await {
                state.diverged = true;
            }
        } else {
            // The write failed (the store down, a connection lost): the strategy still holds
            // what the step changed (a request it thinks runs, entries the store lacks). The
            // thread goes back to what is stored, now if the store answers, else before the
            // next signal.
            state.diverged = true;
            if let Err(error) = self.catch_up(state).await {
                tracing::warn!(parent: step.span, agent = %self.agent.name, thread = %self.thread_id, %error, "could not read the thread back after a failed commit; trying again with the next signal");
            }
        }
    }

    /// Hands a committed step's timers to the timekeeper and carries out its other directives
    /// through the executors, then lets the thread settle if no request is left open.
    fn perform(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        signal: &Signal,
        (directives, timers): (Vec<Directive>, execute::Planned),
        parent: Option<tracing::Id>,
    ) {
        let run = Run::for_step(&directives);
        let here = self.here(myself);
        timers.committed(&here);
        for directive in directives {
            let job = Job {
                here: &here,
                cause: signal,
                parent: parent.clone(),
                run,
            };
            execute::execute(&job, &mut state.tracked, directive);
        }
        self.settle_thread(state);
    }
}

/// One signal being stepped: whether a durable consumer waits for its commit (its key), and
/// the span of its handling.
struct Step<'a> {
    signal: &'a Signal,
    delivered: Option<&'a str>,
    span: &'a tracing::Span,
    /// The span the step's directives hang off.
    parent: Option<&'a tracing::Id>,
}

/// Whether `directives` end the request `request`.
fn replies_to(directives: &[motet_directives::Directive], request: &str) -> bool {
    directives.iter().any(|d| {
        matches!(d, motet_directives::Directive::Reply(reply) if reply.signal.request_id() == Some(request))
    })
}
