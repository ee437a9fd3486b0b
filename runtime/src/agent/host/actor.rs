//! The actor that hosts one thread of an agent: requests admitted through the book, each signal
//! stepped through the strategy, what the step changed committed before its directives run
//! (persist.rs), the directives carried out by the executors (`host/execute`), and every ending
//! of a request torn down in one place (finish.rs).

use motet_agents::Strategy;
use motet_signals::Signal;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::AbortHandle;

use super::children;
use super::core::{AgentEntry as _, ThreadKey, ThreadMsg, deliver};
use super::deliveries::{self, Deliveries};
use super::execute::restore_children;
use super::tracked::{Occasional, Tracked};
use crate::agent::book;
use crate::agent::env::SystemEnv;
use crate::agent::errors::AskError;
use crate::agent::events::{CHILD_FAILED, CHILD_STOPPED, ChildEvent};
use crate::agent::trace;
use crate::telemetry::instruments;

mod admit;
mod finish;
mod persist;
mod state;
mod step;

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
        if !loaded.children.is_empty() {
            let (agent, thread) = (&self.agent.name, &self.thread_id);
            Box::pin(restore_children(
                &self.core,
                agent,
                thread,
                &loaded.children,
            ))
            .await;
        }
        let occasional = (loaded.interrupted.is_some() || !loaded.children.is_empty()).then(|| {
            Box::new(Occasional {
                interrupted: loaded.interrupted,
                children: loaded.children,
                ..Occasional::default()
            })
        });
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
                occasional,
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
        // The thread's timers are the timekeeper's: they outlive this actor.
        let held = match state.tracked.occasional.take() {
            Some(mut occasional) => std::mem::take(&mut occasional.held),
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
            // A virtual agent whose last thread retired (idle, or to make room) leaves memory
            // now; one whose thread failed stays for its supervisor to restart it.
            if state.retiring && self.agent.activation.is_some() {
                self.core.deactivate(&self.agent.name);
            }
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
        if !state.supervised && !matches!(msg, ThreadMsg::IdleCheck | ThreadMsg::Evict) {
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
            ThreadMsg::IdleCheck | ThreadMsg::Evict => {}
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
            ThreadMsg::IdleCheck | ThreadMsg::Evict => {
                let idle_for = state.last_active.elapsed();
                let quiet = state.tracked.is_quiet();
                let timeout = match msg {
                    ThreadMsg::Evict => Some(std::time::Duration::ZERO),
                    _ => self.agent.idle_timeout,
                };
                if book::retires(quiet, idle_for, timeout) {
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
            ThreadMsg::Delivered {
                signal,
                committed,
                settles,
            } => {
                let deliveries = state.deliveries.get_or_insert_default();
                deliveries.open(&signal, committed, settles);
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
        if matches!(signal.signal_type().as_str(), CHILD_STOPPED | CHILD_FAILED)
            && let Ok(child) = signal.data_as::<ChildEvent>()
            && let Some(occasional) = state.tracked.occasional.as_mut()
        {
            // The child is gone: its tag no longer names it (the strategy hears of it next,
            // and the step's commit stores the map without it).
            children::forget(&mut occasional.children, &child.tag, &child.name);
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
