//! The runtime's supervisor of thread actors: when one fails (a panic or an error in its
//! strategy or executor), it is removed from the registry and, within the agent's restart
//! intensity, started again at once with a fresh state for the same thread; past the
//! intensity the agent is stopped. The decision is [`crate::supervisor::decide`]
//! (one_for_one, transient: a thread that stops normally stays stopped).
//!
//! An ask in flight on a failed thread is answered [`super::AskError::AgentRestarted`]; it is
//! not resumed. The restarted thread reloads its history from the runtime's store. Each
//! restart is published on the bus as `agent.thread.restarted`, and an agent stopped past its
//! intensity as `agent.stopped`, so work sent by signal (not by ask) can be sent again.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use motet_signals::Signal;

use super::core::RuntimeCore;
use crate::agent::events::{AGENT_STOPPED, THREAD_RESTARTED, ThreadFailure};
use crate::supervisor::{Decision, ExitReason, Restart, RestartHistory, RestartStrategy, decide};

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
                let Some(key) = core.forget_thread(cell.get_id()) else {
                    return Ok(());
                };
                let (agent, thread) = (key.agent.to_string(), key.thread.to_string());
                let Some(running) = core.agent(&agent) else {
                    return Ok(());
                };
                let now_ms = u64::try_from(state.started.elapsed().as_millis()).unwrap_or(u64::MAX);
                let decision = decide(
                    RestartStrategy::OneForOne,
                    &[Restart::Transient],
                    0,
                    &ExitReason::Failed(error.to_string()),
                    running.intensity(),
                    state.histories.entry(agent.clone()).or_default(),
                    now_ms,
                );
                match decision {
                    Decision::Restart { start, .. } if !start.is_empty() => {
                        tracing::warn!(%agent, %thread, %error, "agent thread failed; restarting it");
                        crate::telemetry::instruments().restarts.add(
                            1,
                            &[opentelemetry::KeyValue::new(
                                "motet.agent.id",
                                agent.clone(),
                            )],
                        );
                        // A message sent since the failure may have started the thread again
                        // already (`RuntimeCore::send`): that actor is the restart.
                        match core.ensure_thread(&running, &thread, None).await {
                            Ok(_) => publish(&core, THREAD_RESTARTED, agent, thread, &error),
                            Err(spawn_error) => {
                                tracing::error!(%agent, %thread, %spawn_error, "could not restart an agent thread");
                            }
                        }
                    }
                    Decision::Restart { .. } => {}
                    Decision::Escalate { restarts } => {
                        tracing::error!(%agent, restarts, %error, "agent threads failed too often; stopping the agent");
                        // As any stop: its children first, its groups, then its threads.
                        core.stop_agent(&agent, "restart intensity exceeded");
                        publish(&core, AGENT_STOPPED, agent, thread, &error);
                    }
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                core.forget_thread(cell.get_id());
            }
            _ => {}
        }
        Ok(())
    }
}

/// Tells the bus that a thread of `agent` failed: `kind` is what became of it.
fn publish(
    core: &RuntimeCore,
    kind: &str,
    agent: String,
    thread: String,
    error: &ActorProcessingErr,
) {
    let data = ThreadFailure {
        agent,
        thread,
        error: error.to_string(),
    };
    match Signal::builder(kind, crate::agent::signals::RUNTIME)
        .with_data(data)
        .build()
    {
        Ok(signal) => {
            core.bus.publish(&signal);
        }
        Err(error) => tracing::error!(%error, kind, "could not build a supervision signal"),
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
