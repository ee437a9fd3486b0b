//! `Spawn` and `StopChild`: a child agent of a registered kind started under this thread
//! (answered `agent.child.started` or `agent.child.failed`), and a child stopped by its tag.
//! The thread's map of its children changed with the step's commit ([`children::after_step`]);
//! these carry the change out.

use motet_directives::{Spawn, StopChild};
use tracing::Instrument as _;

use crate::agent::errors::RuntimeError;
use crate::agent::events::{CHILD_FAILED, CHILD_STARTED, ChildEvent};
use crate::agent::host::children::{self, StoredChild};
use crate::agent::host::core::{Parent, RuntimeCore, ThreadMsg};
use crate::agent::host::tracked::{Here, Job};
use crate::agent::signals::result_signal;
use crate::agent::trace;

/// Starts the child `spawn` describes; its start is reported to this thread.
pub(super) fn spawn(job: &Job<'_>, spawn: Spawn) {
    let (here, cause) = (job.here, job.cause);
    let name = children::child_name(here.agent, &spawn);
    let span = trace::directive_span("spawn", &name, job.parent.clone());
    let core = here.core.clone();
    let task_cause = cause.clone();
    let source = here.source();
    let home = Parent {
        agent: here.agent.to_string(),
        thread: here.thread.to_string(),
        tag: spawn.tag.clone(),
    };
    // The result goes through the registry, not to this actor directly: a child may take
    // longer to start than this thread stays running.
    let task = async move {
        let started = match core.kinds.get(&spawn.spec.kind) {
            Some(start) => {
                start(
                    core.clone(),
                    name.clone(),
                    &spawn.spec.config,
                    Some(home.clone()),
                )
                .await
            }
            None => Err(RuntimeError::SpawnFailed {
                name: name.clone(),
                message: format!("no agent kind `{}` is registered", spawn.spec.kind),
            }),
        };
        let (ty, message) = match started {
            Ok(()) => (CHILD_STARTED, None),
            Err(error) => (CHILD_FAILED, Some(error.to_string())),
        };
        let event = ChildEvent {
            tag: spawn.tag,
            name,
            message,
        };
        let msg = ThreadMsg::Signal(result_signal(ty, &source, &task_cause, event));
        if let Err(error) = core.send(&home.agent, &home.thread, msg).await {
            tracing::debug!(%error, "a child's start was reported after its parent stopped");
        }
    };
    tokio::spawn(task.instrument(span));
}

/// Stops the child tagged `stop.tag` (and its own children), if it runs: each child is
/// registered with its parent thread and tag. (The thread's map forgot the tag before the
/// step's commit.)
pub(super) fn stop_child(here: &Here<'_>, stop: &StopChild) {
    match here.core.child_of(here.agent, here.thread, &stop.tag) {
        Some(name) => here.core.stop_agent(&name, &stop.reason, false),
        None => {
            tracing::warn!(agent = %here.agent, tag = %stop.tag, "no running child with that tag");
        }
    }
}

/// Starts again the children of thread `thread` of `agent`, starting, that its stored map names and
/// that do not run in this process (it restarted, or they stopped with it), each from the
/// spec it was spawned with; no `agent.child.started` is sent for them. Awaited before the
/// thread takes its first message, so a `StopChild` it then decides finds them.
pub(crate) async fn restore(
    core: &std::sync::Arc<RuntimeCore>,
    agent: &str,
    thread: &str,
    remembered: &children::Children,
) {
    for (tag, StoredChild { name, spec }) in remembered {
        if core.agent(name).is_some() {
            continue;
        }
        let Some(start) = core.kinds.get(&spec.kind) else {
            tracing::warn!(parent = %agent, %tag, kind = %spec.kind, "a remembered child's kind is not registered: not started again");
            continue;
        };
        let home = Parent {
            agent: agent.to_owned(),
            thread: thread.to_owned(),
            tag: tag.clone(),
        };
        match start(core.clone(), name.clone(), &spec.config, Some(home)).await {
            Ok(()) => {
                tracing::info!(parent = %agent, child = %name, %tag, "a remembered child started again")
            }
            Err(error) => {
                tracing::warn!(parent = %agent, child = %name, %tag, %error, "a remembered child could not be started again")
            }
        }
    }
}
