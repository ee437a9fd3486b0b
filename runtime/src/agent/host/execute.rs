//! Carrying out the directives a strategy returns: a short dispatch to one executor per
//! directive kind (in `execute/`), each starting the work and sending its result back to the
//! thread's actor as a signal. The executors see the thread through [`Here`] and [`Tracked`],
//! never the strategy.

use motet_directives::Directive;

use super::tracked::{Job, Tracked};

pub(crate) use schedule::{Planned, plan};
pub(crate) use spawn::restore as restore_children;

mod emit;
mod llm;
mod reply;
mod schedule;
mod spawn;
mod summary;
mod tool;

/// Carries out `directive` as `job` says; its result comes back to the thread's actor as a
/// signal.
pub(crate) fn execute(job: &Job<'_>, tracked: &mut Tracked, directive: Directive) {
    match directive {
        Directive::LlmStream(call) => llm::stream(job, tracked, call),
        Directive::ToolExec(exec) => tool::run(job, tracked, exec),
        Directive::Summarize(summarize) => summary::summarize(job, tracked, summarize),
        Directive::Emit(emit) => emit::emit(job, emit),
        Directive::Reply(reply) => reply::reply(job, tracked, reply),
        // Taken out of the step before its commit, which wrote their timers (`plan`).
        Directive::Schedule(_) => schedule::unplanned("schedule"),
        Directive::Cron(_) => schedule::unplanned("cron"),
        Directive::CancelSchedule(_) => schedule::unplanned("cancel_schedule"),
        Directive::Spawn(spawn) => spawn::spawn(job, spawn),
        Directive::StopChild(stop) => spawn::stop_child(job.here, &stop),
        Directive::Stop(stop) => {
            let here = job.here;
            let _span = crate::agent::trace::directive_span("stop", here.agent, job.parent.clone());
            here.core.stops_itself(here.myself.get_id());
            here.myself.stop(Some(stop.reason));
        }
    }
}
