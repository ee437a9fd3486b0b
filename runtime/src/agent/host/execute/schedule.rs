//! `Schedule`, `Cron` and `CancelSchedule`: a timer handed to the runtime's timekeeper, which
//! keeps it in the store and delivers its signal to the thread when due (`host/timekeeper.rs`).

use motet_directives::results::{SCHEDULE_FAILED, ScheduleFailed};
use motet_directives::{CancelSchedule, Cron, Schedule};

use crate::agent::host::core::deliver;
use crate::agent::host::timekeeper::now_ms;
use crate::agent::host::tracked::Job;
use crate::agent::signals::traced;
use crate::agent::trace;
use crate::store::{CronTimer, StoredTimer, ThreadKey};

/// Sets the timer of `schedule`, replacing one of the same id.
pub(super) fn schedule(job: &Job<'_>, schedule: Schedule) {
    let here = job.here;
    let id = schedule.schedule_id.as_str().to_owned();
    let span = trace::directive_span("schedule", &id, job.parent.clone());
    let delay = u64::try_from(schedule.delay.as_millis()).unwrap_or(u64::MAX);
    let timer = StoredTimer {
        key: ThreadKey::new(here.agent.clone(), here.thread.clone()),
        id,
        due_ms: now_ms().saturating_add(delay),
        signal: traced(schedule.signal, &span),
        cron: None,
    };
    here.core.timekeeper.set(&here.core.timer_host(), timer);
}

/// Sets the repeating timer of `cron`, replacing one of the same id; a time zone this machine
/// does not know is answered with `schedule.failed`.
pub(super) fn cron(job: &Job<'_>, cron: Cron) {
    let here = job.here;
    let id = cron.schedule_id.as_str().to_owned();
    let span = trace::directive_span("cron", &id, job.parent.clone());
    let first = jiff::tz::TimeZone::get(&cron.zone)
        .map_err(|e| format!("unknown time zone {:?}: {e}", cron.zone))
        .and_then(|zone| {
            cron.expr
                .next_after(jiff::Timestamp::now(), &zone)
                .ok_or_else(|| format!("{} has no occurrence ahead", cron.expr))
        });
    let first = match first {
        Ok(first) => first,
        Err(reason) => {
            trace::failed(&span, "cron", &reason);
            let failed = ScheduleFailed {
                schedule_id: cron.schedule_id,
                reason,
            };
            match motet_signals::Signal::builder(SCHEDULE_FAILED, here.source())
                .with_thread_id(here.thread.to_string())
                .with_data(failed)
                .build()
            {
                Ok(signal) => deliver(here.myself, signal),
                Err(error) => tracing::error!(%error, "could not build schedule.failed"),
            }
            return;
        }
    };
    let timer = StoredTimer {
        key: ThreadKey::new(here.agent.clone(), here.thread.clone()),
        id,
        due_ms: u64::try_from(first.as_millisecond()).unwrap_or(u64::MAX),
        signal: traced(cron.signal, &span),
        cron: Some(CronTimer {
            expr: cron.expr,
            zone: cron.zone,
            misfire: cron.misfire,
        }),
    };
    here.core.timekeeper.set(&here.core.timer_host(), timer);
}

/// Cancels the timer `cancel` names, here and in the store.
pub(super) fn cancel(job: &Job<'_>, cancel: CancelSchedule) {
    let here = job.here;
    let key = ThreadKey::new(here.agent.clone(), here.thread.clone());
    here.core.timekeeper.cancel(
        &here.core.timer_host(),
        key,
        cancel.schedule_id.as_str().to_owned(),
    );
}
