//! The runtime's supervisor of thread actors: when one fails (a panic or an error in its
//! strategy or executor), or stops itself, it is removed from the registry and the decision
//! is [`crate::supervisor::decide`] over the agent's supervised threads, as the agent's
//! [`Supervision`](crate::supervisor::Supervision) says: which threads start again
//! (one-for-one, one-for-all, rest-for-one; permanent, transient, temporary), after what
//! backoff, and past the restart intensity the agent is stopped and its parent told.
//!
//! An ask in flight on a failed thread is answered [`super::AskError::AgentRestarted`]; it is
//! not resumed. The restarted thread reloads its history from the runtime's store. Each
//! restart is published on the bus as `agent.thread.restarted`, and an agent stopped past its
//! intensity as `agent.stopped`, so work sent by signal (not by ask) can be sent again.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::core::{AgentEntry, RuntimeCore, Supervised, ThreadKey};
use crate::agent::events::{AGENT_STOPPED, THREAD_RESTARTED, ThreadFailure};
use crate::supervisor::{Decision, ExitReason, RestartHistory, decide};

/// The supervisor actor. Its only messages are supervision events.
pub(crate) struct ThreadSupervisor {
    pub(crate) core: Weak<RuntimeCore>,
}

/// Restart histories per agent, on the supervisor's monotonic clock.
pub(crate) struct SupervisorState {
    started: Instant,
    histories: HashMap<String, RestartHistory>,
}

impl Actor for ThreadSupervisor {
    type Msg = ();
    type State = SupervisorState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<()>,
        _args: (),
    ) -> Result<SupervisorState, ActorProcessingErr> {
        Ok(SupervisorState {
            started: Instant::now(),
            histories: HashMap::new(),
        })
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<()>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let Some(core) = self.core.upgrade() else {
            return Ok(());
        };
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                let id = cell.get_id();
                if let Some(exited) = core.forget_thread(id) {
                    let reason = ExitReason::Failed(error.to_string());
                    state.exited(&core, exited, id, &reason).await;
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                // A thread that stopped itself (a `Stop` directive) exited normally, which
                // restarts a permanent one; any other stop (idle, a reset, its agent stopped,
                // a sibling's restart) is the runtime's own, and final.
                let id = cell.get_id();
                let itself = core.stopped_itself(id);
                if let Some(exited) = core.forget_thread(id)
                    && itself
                {
                    state.exited(&core, exited, id, &ExitReason::Normal).await;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl SupervisorState {
    /// Decides what follows the exit of thread `exited` (actor `id`) with `reason`, as its
    /// agent's supervision says, and carries it out: at once, or on a task of its own when it
    /// waits out a backoff (the supervisor goes on meanwhile).
    async fn exited(
        &mut self,
        core: &Arc<RuntimeCore>,
        exited: Supervised,
        id: ActorId,
        reason: &ExitReason,
    ) {
        let agent = exited.key.agent.to_string();
        let thread = exited.key.thread.to_string();
        let Some(running) = core.agent(&agent) else {
            return;
        };
        let supervision = running.supervision();
        // The agent's supervised threads in the order they started, the exited one among them.
        let mut threads = core.supervised_threads(&agent);
        let at = threads.partition_point(|(s, _)| s.seq < exited.seq);
        threads.insert(at, (exited, id));
        let restart_types = vec![supervision.restart; threads.len()];
        let now_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let decision = decide(
            supervision.strategy,
            &restart_types,
            at,
            reason,
            supervision.intensity,
            self.histories.entry(agent.clone()).or_default(),
            now_ms,
        );
        let error = match reason {
            ExitReason::Failed(error) => error.clone(),
            _ => "it stopped itself".to_owned(),
        };
        match decision {
            Decision::Restart {
                restarts,
                stop,
                start,
                ..
            } if !start.is_empty() => {
                tracing::warn!(%agent, %thread, %error, restarts, "agent thread exited; restarting it");
                let pick = |indexes: Vec<usize>| -> Vec<ThreadKey> {
                    indexes
                        .into_iter()
                        .filter_map(|i| threads.get(i).map(|(s, _)| s.key.clone()))
                        .collect()
                };
                let plan = Plan {
                    stop: pick(stop),
                    start: pick(start),
                    delay: supervision.backoff.delay(restarts),
                    error,
                };
                if plan.delay.is_zero() {
                    plan.carry_out(core.clone(), running).await;
                } else {
                    tokio::spawn(plan.carry_out(core.clone(), running));
                }
            }
            Decision::Restart { .. } => {
                tracing::info!(%agent, %thread, %error, "agent thread exited; not restarted (its restart type)");
            }
            Decision::Escalate { restarts } => {
                tracing::error!(%agent, restarts, %error, "agent threads failed too often; stopping the agent");
                // As any stop: its children first, its groups, then its threads; its parent
                // is told.
                core.stop_agent(&agent, "restart intensity exceeded", true);
                publish(core, AGENT_STOPPED, agent, thread, &error);
            }
        }
    }
}

/// A restart decided: the siblings to stop first (last started first), the threads to start
/// again (in start order) after `delay`.
struct Plan {
    stop: Vec<ThreadKey>,
    start: Vec<ThreadKey>,
    delay: Duration,
    error: String,
}

impl Plan {
    /// Stops the siblings, waits out the backoff (messages for the threads wait too), then
    /// starts the threads again, each restart published on the bus.
    async fn carry_out(self, core: Arc<RuntimeCore>, agent: Arc<dyn AgentEntry>) {
        let due = tokio::time::Instant::now() + self.delay;
        if !self.delay.is_zero() {
            for key in &self.start {
                core.restart_at(key.clone(), due);
            }
        }
        for key in &self.stop {
            if let Some(actor) = agent.thread(&key.thread) {
                let reason = Some("a sibling thread failed".to_owned());
                let _ = actor.stop_and_wait(reason, Some(SIBLING_STOP)).await;
            }
        }
        if !self.delay.is_zero() {
            tokio::time::sleep_until(due).await;
        }
        for key in &self.start {
            core.restarted(key);
            // A message sent since the exit may have started the thread again already: that
            // actor is the restart.
            match core.ensure_thread(&agent, &key.thread, None).await {
                Ok(_) => {
                    crate::telemetry::instruments().restarts.add(
                        1,
                        &[opentelemetry::KeyValue::new(
                            "motet.agent.id",
                            key.agent.to_string(),
                        )],
                    );
                    let (agent, thread) = (key.agent.to_string(), key.thread.to_string());
                    publish(&core, THREAD_RESTARTED, agent, thread, &self.error);
                }
                Err(spawn_error) => {
                    tracing::error!(agent = %key.agent, thread = %key.thread, %spawn_error, "could not restart an agent thread");
                }
            }
        }
    }
}

/// How long a sibling stopped for a failed thread's restart is given to stop.
const SIBLING_STOP: Duration = Duration::from_secs(5);

/// Tells the bus that a thread of `agent` failed: `kind` is what became of it.
fn publish(core: &RuntimeCore, kind: &str, agent: String, thread: String, error: &str) {
    let data = ThreadFailure {
        agent,
        thread,
        error: error.to_owned(),
    };
    if let Some(signal) = crate::agent::signals::notice(kind, None, data) {
        core.bus.publish(&signal);
    }
}

/// Hands the supervisor of `core`, starting it on first use.
pub(crate) async fn supervisor(core: &Arc<RuntimeCore>) -> Result<ActorRef<()>, String> {
    core.supervisor
        .get_or_try_init(|| async {
            let handler = ThreadSupervisor {
                core: Arc::downgrade(core),
            };
            Actor::spawn(None, handler, ())
                .await
                .map(|(actor, _)| actor)
                .map_err(|e| e.to_string())
        })
        .await
        .cloned()
}
