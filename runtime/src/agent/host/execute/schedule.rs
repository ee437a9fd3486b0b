//! `Schedule` and `CancelSchedule`: a signal delivered to the thread after a delay, on a timer
//! the thread holds until it fires or is cancelled.

use motet_directives::{CancelSchedule, Schedule};

use crate::agent::host::core::deliver;
use crate::agent::host::tracked::{Job, Tracked};
use crate::agent::signals::{schedule_fired, traced};
use crate::agent::trace;

/// Starts the timer of `schedule`, replacing one of the same id.
pub(super) fn schedule(job: &Job<'_>, tracked: &mut Tracked, schedule: Schedule) {
    let here = job.here;
    let me = here.myself.clone();
    let id = schedule.schedule_id.as_str().to_owned();
    let span = trace::directive_span("schedule", &id, job.parent.clone());
    let signal = traced(schedule.signal, &span);
    let delay = schedule.delay;
    let fired = schedule_fired(&here.source(), &id);
    let task = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        deliver(&me, signal);
        if let Some(fired) = fired {
            deliver(&me, fired);
        }
    });
    if let Some(old) = tracked
        .occasional()
        .schedules
        .insert(id, task.abort_handle())
    {
        old.abort();
    }
}

/// Cancels the timer `cancel` names, if it has not fired.
pub(super) fn cancel(tracked: &mut Tracked, cancel: &CancelSchedule) {
    let cancelled = tracked
        .occasional
        .as_mut()
        .and_then(|o| o.schedules.remove(cancel.schedule_id.as_str()));
    if let Some(task) = cancelled {
        task.abort();
    }
}
