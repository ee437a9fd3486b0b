//! `Schedule`, `Cron` and `CancelSchedule`: worked out before the commit of the step that
//! returned them ([`plan`]), so the timers they set or remove are written in that commit
//! (`ThreadStore::commit_step`), then handed to the runtime's timekeeper, which delivers each
//! timer's signal to the thread when due (`host/timekeeper.rs`).

use motet_directives::results::{SCHEDULE_FAILED, ScheduleFailed};
use motet_directives::{CancelSchedule, Cron, Directive, Schedule};
use motet_signals::Signal;

use crate::agent::host::core::deliver;
use crate::agent::host::timekeeper::now_ms;
use crate::agent::host::tracked::Here;
use crate::agent::signals::traced;
use crate::agent::trace;
use crate::store::{CronTimer, StoredTimer, ThreadKey, TimerWrite};

/// A step's timer directives, worked out before its commit: the changes the commit writes, and
/// the `schedule.failed` answers sent once it is made.
#[derive(Default)]
pub(crate) struct Planned {
    /// The changes to the thread's timers, in the directives' order.
    pub(crate) writes: Vec<TimerWrite>,
    /// A `schedule.failed` for each cron timer that cannot be set.
    failed: Vec<Signal>,
}

impl Planned {
    /// How many directives were planned.
    pub(crate) fn len(&self) -> usize {
        self.writes.len() + self.failed.len()
    }

    /// After the step's commit: the timekeeper fires the timers set and forgets those removed,
    /// and a cron timer that could not be set is answered.
    pub(crate) fn committed(self, here: &Here<'_>) {
        here.core
            .timekeeper
            .committed(&here.core.timer_host(), self.writes);
        for signal in self.failed {
            deliver(here.myself, signal);
        }
    }
}

/// Whether `directive` is one [`plan`] takes.
fn is_timer(directive: &Directive) -> bool {
    matches!(
        directive,
        Directive::Schedule(_) | Directive::Cron(_) | Directive::CancelSchedule(_)
    )
}

/// Takes the `Schedule`, `Cron` and `CancelSchedule` directives out of `directives` (the rest
/// keep their order) and works out the timer changes they make, each under a span of its own
/// below `parent`. A timer's due time counts from now: before its step's commit.
pub(crate) fn plan(
    here: &Here<'_>,
    directives: &mut Vec<Directive>,
    parent: Option<&tracing::Id>,
) -> Planned {
    let mut planned = Planned::default();
    if !directives.iter().any(is_timer) {
        return planned;
    }
    let key = || ThreadKey::new(here.agent.clone(), here.thread.clone());
    for directive in std::mem::take(directives) {
        match directive {
            Directive::Schedule(schedule) => {
                let timer = one_shot(key(), schedule, parent.cloned());
                planned.writes.push(TimerWrite::Put(timer));
            }
            Directive::Cron(cron) => match repeating(here, key(), cron, parent.cloned()) {
                Ok(timer) => planned.writes.push(TimerWrite::Put(timer)),
                Err(failed) => planned.failed.extend(failed),
            },
            Directive::CancelSchedule(CancelSchedule { schedule_id }) => {
                planned.writes.push(TimerWrite::Remove {
                    key: key(),
                    id: schedule_id.as_str().to_owned(),
                });
            }
            other => directives.push(other),
        }
    }
    planned
}

/// The timer of `schedule`, due its delay from now.
fn one_shot(key: ThreadKey, schedule: Schedule, parent: Option<tracing::Id>) -> StoredTimer {
    let id = schedule.schedule_id.as_str().to_owned();
    let span = trace::directive_span("schedule", &id, parent);
    let delay = u64::try_from(schedule.delay.as_millis()).unwrap_or(u64::MAX);
    StoredTimer {
        key,
        id,
        due_ms: now_ms().saturating_add(delay),
        signal: traced(schedule.signal, &span),
        cron: None,
    }
}

/// The repeating timer of `cron`, due at its next occurrence; for a time zone this machine
/// does not know (or an expression with no occurrence ahead), the `schedule.failed` that
/// answers it instead.
fn repeating(
    here: &Here<'_>,
    key: ThreadKey,
    cron: Cron,
    parent: Option<tracing::Id>,
) -> Result<StoredTimer, Option<Signal>> {
    let id = cron.schedule_id.as_str().to_owned();
    let span = trace::directive_span("cron", &id, parent);
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
            return Err(Signal::builder(SCHEDULE_FAILED, here.source())
                .with_thread_id(here.thread.to_string())
                .with_data(failed)
                .build()
                .inspect_err(|error| tracing::error!(%error, "could not build schedule.failed"))
                .ok());
        }
    };
    Ok(StoredTimer {
        key,
        id,
        due_ms: u64::try_from(first.as_millisecond()).unwrap_or(u64::MAX),
        signal: traced(cron.signal, &span),
        cron: Some(CronTimer {
            expr: cron.expr,
            zone: cron.zone,
            misfire: cron.misfire,
        }),
    })
}

/// A timer directive that reached the executors: [`plan`] takes every one out of its step
/// before the commit, so none does; one that did would have no commit to be written in, and
/// is refused rather than kept where a crash loses it.
pub(super) fn unplanned(kind: &'static str) {
    tracing::error!(
        directive = kind,
        "a timer directive reached the executors without its step's commit: not carried out"
    );
}
