//! `Spawn` and `StopChild`: a child agent of a registered kind started under this thread
//! (answered `agent.child.started` or `agent.child.failed`), and a child stopped by its tag.

use motet_directives::{Spawn, StopChild};
use tracing::Instrument as _;

use crate::agent::errors::RuntimeError;
use crate::agent::events::{CHILD_FAILED, CHILD_STARTED, ChildEvent};
use crate::agent::host::core::{Parent, ThreadMsg};
use crate::agent::host::tracked::{Here, Job, Tracked};
use crate::agent::signals::result_signal;
use crate::agent::trace;

/// Starts the child `spawn` describes; its start is reported to this thread.
pub(super) fn spawn(job: &Job<'_>, tracked: &mut Tracked, spawn: Spawn) {
    let (here, cause) = (job.here, job.cause);
    let name = spawn
        .spec
        .name
        .clone()
        .unwrap_or_else(|| format!("{}/{}", here.agent, spawn.tag));
    tracked
        .occasional()
        .children
        .insert(spawn.tag.clone(), name.clone());
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

/// Stops the child tagged `stop.tag` (and its own children).
pub(super) fn stop_child(here: &Here<'_>, tracked: &mut Tracked, stop: &StopChild) {
    // The thread's own map, else the registry: a thread that idled or restarted since the
    // spawn holds no map, but each child is registered with its parent thread and tag.
    let child = tracked
        .occasional
        .as_mut()
        .and_then(|o| o.children.remove(&stop.tag))
        .or_else(|| here.core.child_of(here.agent, here.thread, &stop.tag));
    match child {
        Some(name) => here.core.stop_agent(&name, &stop.reason, false),
        None => {
            tracing::warn!(agent = %here.agent, tag = %stop.tag, "no child with that tag");
        }
    }
}
