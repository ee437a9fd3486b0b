//! Carrying out the directives a strategy returns: a short dispatch to one executor per
//! directive kind (in `execute/`), each starting the work and sending its result back to the
//! thread's actor as a signal. The executors see the thread through [`Here`] and [`Tracked`],
//! never the strategy.

use motet_directives::Directive;
use motet_signals::Signal;

use super::tracked::{Here, Run, Tracked};

mod emit;
mod llm;
mod reply;
mod schedule;
mod spawn;
mod summary;
mod tool;

/// Carries out one directive for the signal `cause`, its span under `parent`; its result
/// comes back to the thread's actor as a signal.
pub(crate) fn execute(
    here: &Here<'_>,
    tracked: &mut Tracked,
    cause: &Signal,
    directive: Directive,
    parent: Option<tracing::Id>,
    run: Run,
) {
    match directive {
        Directive::LlmStream(call) => llm::stream(here, tracked, cause, call, parent, run),
        Directive::ToolExec(exec) => tool::run(here, tracked, cause, exec, parent, run),
        Directive::Summarize(summarize) => {
            summary::summarize(here, tracked, cause, summarize, parent, run);
        }
        Directive::Emit(emit) => emit::emit(here, emit, parent),
        Directive::Reply(reply) => reply::reply(here, tracked, reply, parent),
        Directive::Schedule(schedule) => schedule::schedule(here, tracked, schedule, parent),
        Directive::CancelSchedule(cancel) => schedule::cancel(tracked, &cancel),
        Directive::Spawn(spawn) => spawn::spawn(here, tracked, cause, spawn, parent),
        Directive::StopChild(stop) => spawn::stop_child(here, tracked, &stop),
        Directive::Stop(stop) => {
            let _span = crate::agent::trace::directive_span("stop", here.agent, parent);
            here.core.stops_itself(here.myself.get_id());
            here.myself.stop(Some(stop.reason));
        }
    }
}
