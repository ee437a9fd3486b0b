//! `Emit`: a signal to the bus (and the durable bus), to an agent, to a group's members or to
//! the agent's parent.

use motet_directives::{Emit, EmitTarget};

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
