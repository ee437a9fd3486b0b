//! The actor that hosts one thread of an agent: requests admitted through the book, each signal
//! stepped through the strategy, what the step changed committed before its directives run
//! (persist.rs), the directives carried out by the executors (`host/execute`), and every ending
//! of a request torn down in one place (finish.rs).

use motet_agents::{Env as _, Strategy, protocol};
use motet_directives::Directive;
use motet_signals::Signal;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::AbortHandle;

use super::core::{AgentEntry as _, ThreadKey, ThreadMsg, deliver};
use super::deliveries::{self, Deliveries};
use super::tracked::{Occasional, RequestSpan, Run, Tracked};
use super::{execute, waits};
use crate::agent::book::{self, Admission, Screen};
use crate::agent::env::SystemEnv;
use crate::agent::errors::AskError;
use crate::agent::events::{CHILD_STOPPED, ChildEvent};
use crate::agent::signals::{self, SCHEDULE_FIRED};
use crate::agent::trace;
use crate::store::StoreError;
use crate::telemetry::instruments;

mod finish;
mod persist;
mod state;

pub(crate) use persist::{open_request, stored_waiting};
pub(crate) use state::{ThreadActor, ThreadState};

impl<S> Actor for ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    type Msg = ThreadMsg;
    type State = ThreadState<S>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<ThreadMsg>,
        _args: (),
    ) -> Result<ThreadState<S>, ActorProcessingErr> {
        let env = SystemEnv;
        // A thread that was never stored starts fresh and is written to the store with its
        // first change, so agents that are spawned and never asked cost the store nothing.
        // Boxed, as `handle`'s work is: an idle actor's task holds only what it needs.
        let loaded = Box::pin(self.starting_state()).await?;
        if let Some(idle) = self.agent.idle_timeout {
            self.core.watch_idle(idle);
        }
        Ok(ThreadState {
            supervised: false,
            strategy: loaded.strategy,
            stored_rev: loaded.rev,
            epoch: loaded.epoch,
            stored: loaded.stored,
            saved: loaded.saved,
            last_active: std::time::Instant::now(),
            retiring: false,
            diverged: false,
            env,
            tracked: Tracked {
                occasional: loaded.interrupted.map(|request| {
                    Box::new(Occasional {
                        interrupted: Some(request),
                        ..Occasional::default()
                    })
                }),
                ..Tracked::default()
            },
            deliveries: Deliveries::remembering(loaded.applied),
        })
    }

    async fn post_stop(
        &self,
        myself: ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
    ) -> Result<(), ActorProcessingErr> {
        let held = match state.tracked.occasional.take() {
            Some(mut occasional) => {
                for (_, schedule) in occasional.schedules.drain() {
                    schedule.abort();
                }
                std::mem::take(&mut occasional.held)
            }
            None => Vec::new(),
        };
        if let Some(mut open) = state.tracked.open.take() {
            for (_, calls) in open.calls.drain() {
                calls.iter().for_each(AbortHandle::abort);
            }
            for (_, trace) in open.spans.drain() {
                trace::failed(&trace.span, "agent_stopped", "the agent thread stopped");
            }
            for (_, reply) in open.pending.drain() {
                let _ = reply.send(Err(AskError::AgentStopped {
                    agent: self.agent.name.to_string(),
                }));
            }
        }
        // The supervisor hears of this stop and forgets the thread (one that stopped itself may
        // restart); the registry's entry goes here, or passes to the successor.
        if held.is_empty() {
            self.agent.forget_thread(&self.thread_id, myself.get_id());
        } else {
            let key = ThreadKey::new(self.agent.name.clone(), self.thread_id.clone());
            self.core.succeed(&key, myself.get_id(), held).await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ThreadMsg>,
        msg: ThreadMsg,
        state: &mut ThreadState<S>,
    ) -> Result<(), ActorProcessingErr> {
        // The work of one message is a large future (a step, its commit, inline work); boxed,
        // it takes memory while it runs, rather than in every actor's task all the time.
        Box::pin(self.receive(myself, msg, state)).await
    }
}

/// How many results of inline work one message may handle before the rest go through the
/// mailbox (a ReAct request with one tool per turn is two per LLM call).
const INLINE_STEPS: usize = 64;

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// One message: a signal admitted and stepped, an ask recorded, an idle check, a copy of
    /// the thread.
    async fn receive(
        &self,
        myself: ActorRef<ThreadMsg>,
        msg: ThreadMsg,
        state: &mut ThreadState<S>,
    ) -> Result<(), ActorProcessingErr> {
        if state.retiring {
            self.hold(msg, state);
            return Ok(());
        }
        if !state.supervised && !matches!(msg, ThreadMsg::IdleCheck) {
            if let Err(error) = self.supervise(&myself).await {
                // Unsupervised, nobody would restart it: leave the registry now, so the next
                // signal for this thread starts a fresh actor.
                self.agent.forget_thread(&self.thread_id, myself.get_id());
                return Err(error);
            }
            state.supervised = true;
        }
        let Some(signal) = self.take(&myself, msg, state) else {
            return Ok(());
        };
        state.last_active = std::time::Instant::now();
        self.admit(&myself, state, signal).await;
        self.run_ready(&myself, state).await;
        // Work done inline outside any request (a strategy's directive for a plain signal)
        // made the open requests' box for its result alone: give it back.
        state.tracked.release_room();
        Ok(())
    }

    /// A message that reached a retiring thread: held for its successor (an idle check is
    /// moot, a copy of the thread is still given).
    fn hold(&self, msg: ThreadMsg, state: &mut ThreadState<S>) {
        match msg {
            ThreadMsg::IdleCheck => {}
            ThreadMsg::GetThread(reply) => {
                let _ = reply.send(self.agent.strategy.thread(&state.strategy).cloned());
            }
            msg => state.tracked.occasional().held.push(msg),
        }
    }

    /// Does what `msg` asks of the thread itself, and returns the signal it brings for the
    /// strategy, if any.
    fn take(
        &self,
        myself: &ActorRef<ThreadMsg>,
        msg: ThreadMsg,
        state: &mut ThreadState<S>,
    ) -> Option<Signal> {
        let signal = match msg {
            ThreadMsg::IdleCheck => {
                let idle_for = state.last_active.elapsed();
                let quiet = state.tracked.is_quiet();
                if book::retires(quiet, idle_for, self.agent.idle_timeout) {
                    // Closing the mailbox rather than stopping at once: whatever a sender put
                    // in it before it closed is handed to the thread's next actor, and a sender
                    // that finds it closed waits for that actor (`RuntimeCore::send`).
                    state.retiring = true;
                    if myself.drain().is_err() {
                        myself.stop(Some("idle".to_owned()));
                    }
                }
                return None;
            }
            ThreadMsg::GetThread(reply) => {
                let _ = reply.send(self.agent.strategy.thread(&state.strategy).cloned());
                return None;
            }
            ThreadMsg::Signal(signal) => signal,
            ThreadMsg::Expire { request, after } => self.expired(state, &request, after)?,
            ThreadMsg::Delivered { signal, committed } => {
                let deliveries = state.deliveries.get_or_insert_default();
                deliveries.open(&signal, committed);
                signal
            }
            ThreadMsg::Ask { signal, reply } => {
                let Some(request) = signal.request_id() else {
                    let _ = reply.send(Err(AskError::NoRequestId));
                    return None;
                };
                state
                    .tracked
                    .open()
                    .pending
                    .insert(request.to_owned(), reply);
                signal
            }
        };
        if signal.signal_type().as_str() == SCHEDULE_FIRED {
            // Internal bookkeeping only: never seen by the strategy.
            if let Ok(id) = signal.data_as::<String>()
                && let Some(occasional) = state.tracked.occasional.as_mut()
            {
                occasional.schedules.remove(&id);
            }
            return None;
        }
        if signal.signal_type().as_str() == CHILD_STOPPED
            && let Ok(child) = signal.data_as::<ChildEvent>()
            && let Some(occasional) = state.tracked.occasional.as_mut()
        {
            // The child is gone: its tag no longer names it (the strategy hears of it next).
            occasional.children.remove(&child.tag);
        }
        Some(signal)
    }

    /// Admits the queued requests a finished one lets in, and steps the results of work that
    /// finished inline, until neither is left (or, fair to the mailbox, [`INLINE_STEPS`]).
    async fn run_ready(&self, myself: &ActorRef<ThreadMsg>, state: &mut ThreadState<S>) {
        let mut inline = 0;
        loop {
            while let Some(next) = state.tracked.open.as_mut().and_then(|o| o.book.next()) {
                instruments().queue_depth.add(-1, &[]);
                self.admit(myself, state, next).await;
            }
            let Some(result) = state
                .tracked
                .open
                .as_mut()
                .and_then(|o| o.ready.pop_front())
            else {
                return;
            };
            inline += 1;
            if inline > INLINE_STEPS {
                // A chain of work that never waits yields to the mailbox now and then, its
                // results queued behind whatever arrived meanwhile.
                deliver(myself, result);
                if let Some(open) = state.tracked.open.as_mut() {
                    open.ready.drain(..).for_each(|r| deliver(myself, r));
                }
                return;
            }
            self.admit(myself, state, result).await;
        }
    }

    /// Lets a signal through to the strategy, or queues it while another request runs, as the
    /// book decides.
    async fn admit(
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
            let trace = RequestSpan { span, llm_calls: 0 };
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

    /// One signal through the strategy, what it changed committed, and its directives
    /// carried out.
    async fn step(&self, myself: &ActorRef<ThreadMsg>, state: &mut ThreadState<S>, signal: Signal) {
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
        let step = Step {
            signal: &signal,
            delivered: delivered.as_deref(),
            span: &handling,
        };
        let Some(directives) = self.decide(myself, state, &step).await else {
            return;
        };
        if !handling.is_disabled() {
            handling.record("motet.directives", directives.len());
            handling.record("motet.thread.rev", state.stored_rev);
        }
        // Directive spans hang off the request's span (a flat, readable tree), or off this
        // signal's span when it belongs to no request of this thread.
        let parent = request_span.or_else(|| handling.id());
        self.perform(myself, state, &signal, directives, parent);
    }

    /// The strategy's directives for the step's signal, once what it changed is committed;
    /// `None` when the strategy rejected the signal or the commit failed (its request is then
    /// abandoned). A new request whose commit lost a race to another writer is decided again,
    /// once, on the stored thread ([`book::decide_again`]).
    async fn decide(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        step: &Step<'_>,
    ) -> Option<Vec<Directive>> {
        let ty = step.signal.signal_type().as_str();
        let mut tried = false;
        loop {
            let directives =
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
            match self
                .persist(state, open.as_deref(), &waiting, step.delivered)
                .await
            {
                Ok(()) => {
                    self.committed(myself, state, step, &waiting).await;
                    return Some(directives);
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

    /// Carries out a committed step's directives through the executors, then lets the
    /// thread settle if no request is left open.
    fn perform(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        signal: &Signal,
        directives: Vec<Directive>,
        parent: Option<tracing::Id>,
    ) {
        let run = Run::for_step(&directives);
        let here = self.here(myself);
        for directive in directives {
            let tracked = &mut state.tracked;
            execute::execute(&here, tracked, signal, directive, parent.clone(), run);
        }
        self.settle_thread(state);
    }

    /// The asker of `request` stopped waiting after `after`: when the request is still open
    /// ([`RequestBook::expire`](book::RequestBook::expire)), its asker is told
    /// [`AskError::Timeout`] and the cancel that ends it is returned, to be handled as any
    /// cancel; when it ended, its reply was sent before this message was read, and nothing is
    /// done.
    fn expired(
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

    /// The key of `signal` when a durable bus consumer waits for its commit.
    fn delivery(state: &ThreadState<S>, signal: &Signal) -> Option<String> {
        let deliveries = state.deliveries.as_ref()?;
        let key = deliveries::key(signal);
        deliveries.is_open(&key).then_some(key)
    }

    /// Tells the consumer waiting for `key` how its delivery ended.
    fn delivery_settled(state: &mut ThreadState<S>, key: &str, outcome: Result<(), String>) {
        if let Some(deliveries) = state.deliveries.as_mut() {
            deliveries.answer(key, outcome);
        }
    }

    /// Puts this thread under the runtime's supervisor, which restarts it when it fails.
    ///
    /// Done with the first message the thread handles rather than at spawn: until then it has
    /// run nothing that can fail (its `pre_start` failing fails the spawn itself), and an agent
    /// spawned and never asked costs no supervision link. Linking a running actor also spares
    /// the supervisor an `ActorStarted` event per thread.
    async fn supervise(&self, myself: &ActorRef<ThreadMsg>) -> Result<(), ActorProcessingErr> {
        let supervisor = super::supervise::supervisor(&self.core)
            .await
            .map_err(ActorProcessingErr::from)?;
        self.core.watch_thread(
            myself.get_id(),
            ThreadKey::new(self.agent.name.clone(), self.thread_id.clone()),
        );
        myself.get_cell().link(supervisor.get_cell());
        Ok(())
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

/// One signal being stepped: whether a durable consumer waits for its commit (its key), and
/// the span of its handling.
struct Step<'a> {
    signal: &'a Signal,
    delivered: Option<&'a str>,
    span: &'a tracing::Span,
}

/// Whether `directives` end the request `request`.
fn replies_to(directives: &[motet_directives::Directive], request: &str) -> bool {
    directives.iter().any(|d| {
        matches!(d, motet_directives::Directive::Reply(reply) if reply.signal.request_id() == Some(request))
    })
}

#[cfg(test)]
mod tests {
    use super::{ThreadActor, ThreadState};
    use motet_agents::ReAct;

    /// A thread actor's state and handler live in its tokio task for as long as the actor
    /// runs, and tokio rounds a task to 128 bytes: with ractor 0.16's task around them, state
    /// and handler of at most 368 bytes make a task of 1,024 bytes, a few more one of 1,152
    /// (docs/PERFORMANCE.md, "Lean agents"). A field added to either lands here first.
    #[test]
    fn a_react_thread_fits_its_task_in_1024_bytes() {
        let held = size_of::<ThreadState<ReAct>>() + size_of::<ThreadActor<ReAct>>();
        assert!(
            held <= 368,
            "a ReAct thread actor holds {held} bytes in its task"
        );
    }
}
