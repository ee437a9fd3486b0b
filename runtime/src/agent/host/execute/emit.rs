//! `Emit`: a signal to the bus (and the durable bus), to an agent, to a group's members or to
//! the agent's parent. An `agent.request` emitted to an agent is an ask: its reply — or an
//! `agent.failed` saying why none came — is delivered to the thread that emitted it, and to
//! nobody else (a team hears its own members' replies without subscribing to everyone's).

use motet_directives::{Emit, EmitTarget};

use std::sync::Arc;

use motet_agents::{AGENT_FAILED, AGENT_REQUEST};
use motet_signals::Signal;
use tokio::sync::oneshot;

use crate::agent::errors::AskError;
use crate::agent::host::core::{DEFAULT_THREAD, RuntimeCore, ThreadMsg};
use crate::agent::host::outbox::Outgoing;
use crate::agent::host::tracked::Job;
use crate::agent::signals::traced;
use crate::agent::trace;

/// Sends `emit`'s signal where it goes, carrying the current trace.
pub(super) fn emit(job: &Job<'_>, emit: Emit) {
    let here = job.here;
    let span = trace::directive_span(
        "emit",
        emit.signal.signal_type().as_str(),
        job.parent.clone(),
    );
    let _inside = span.enter();
    let signal = traced(emit.signal, &span);
    let core = here.core.clone();
    match emit.target {
        EmitTarget::Bus => {
            core.bus.publish(&signal);
            core.publish_durable(&signal, Outgoing::Emit);
        }
        EmitTarget::Agent(name) => {
            let from = here.agent.clone();
            // A request asks: its reply goes back to the thread that sent it.
            if signal.signal_type().as_str() == AGENT_REQUEST
                && let Some(request) = signal.request_id().map(str::to_owned)
            {
                let asker = here.thread.clone();
                tokio::spawn(ask(core, signal, name, request, (from, asker)));
                return;
            }
            tokio::spawn(async move {
                let thread = RuntimeCore::thread_id(signal.thread_id());
                let msg = ThreadMsg::Signal(signal);
                if let Err(error) = core.send(&name, &thread, msg).await {
                    tracing::warn!(agent = %from, to = %name, %error, "emit to an agent dropped");
                }
            });
        }
        // A child's parent is the agent thread that spawned it; a top-level agent's parent is
        // whoever asked (the reply).
        EmitTarget::Parent => {
            if let Some(parent) = here.parent.cloned() {
                tokio::spawn(async move {
                    let msg = ThreadMsg::Signal(signal);
                    if let Err(error) = core.send(&parent.agent, &parent.thread, msg).await {
                        tracing::warn!(parent = %parent.agent, %error, "emit to a parent dropped");
                    }
                });
            }
        }
        EmitTarget::Group(group) => {
            tokio::spawn(async move {
                for member in core.group_members(&group) {
                    let msg = ThreadMsg::Signal(signal.clone());
                    if let Err(error) = core.send(&member, DEFAULT_THREAD, msg).await {
                        tracing::warn!(%group, %member, %error, "emit to a group member dropped");
                    }
                }
            });
        }
    }
}

/// Asks agent `to` with `signal` (request `request`) for thread `asker` (agent, thread), and
/// delivers the reply there: the callee's own reply, or an `agent.failed` when it could not be
/// reached or its thread stopped before it answered.
async fn ask(
    core: Arc<RuntimeCore>,
    signal: Signal,
    to: String,
    request: String,
    asker: (Arc<str>, Arc<str>),
) {
    let thread = RuntimeCore::thread_id(signal.thread_id());
    let (reply, answer) = oneshot::channel();
    let heard = match core
        .send(&to, &thread, ThreadMsg::Ask { signal, reply })
        .await
    {
        Err(error) => Err(format!("agent `{to}` could not be asked: {error}")),
        Ok(()) => match answer.await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(AskError::Failed { reply })) => Ok(*reply),
            Ok(Err(error)) => Err(format!("agent `{to}` did not answer: {error}")),
            Err(_) => Err(format!("agent `{to}`'s thread stopped before it answered")),
        },
    };
    let heard = match heard {
        Ok(reply) => reply,
        Err(message) => {
            let data = serde_json::json!({ "message": message });
            let built = Signal::builder(AGENT_FAILED, crate::agent::signals::RUNTIME)
                .with_request_id(&request)
                .with_thread_id(&thread)
                .with_data(data)
                .build();
            match built {
                Ok(failed) => failed,
                Err(error) => {
                    tracing::error!(%error, "could not build the failure of an ask");
                    return;
                }
            }
        }
    };
    let (agent, thread) = asker;
    if let Err(error) = core.send(&agent, &thread, ThreadMsg::Signal(heard)).await {
        tracing::debug!(%agent, %error, "a reply reached its asker after it stopped");
    }
}
