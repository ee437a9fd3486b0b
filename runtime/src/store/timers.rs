//! Timers kept in the store: a `Schedule` or `Cron` directive's timer lives in the store from the
//! moment the directive runs until its last firing is committed, so a crash, a restart or an
//! idle thread loses none (docs/runtime.md "Timers and cron").
//!
//! A timer is keyed by its thread's store id and its schedule id; one set again under the same
//! key replaces it. Its row says when it is next due (`due_ms`), what it delivers (the signal;
//! for a cron timer, the template each occurrence is made from), and for a cron timer the
//! expression, time zone and misfire policy the next occurrence is computed with.

use motet_directives::cron::{CronExpr, Misfire};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::{StoreError, ThreadKey};

/// One stored timer.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTimer {
    /// The thread it fires on.
    pub key: ThreadKey,
    /// Its schedule id, unique within the thread.
    pub id: String,
    /// When it is next due, in milliseconds since the Unix epoch.
    pub due_ms: u64,
    /// What it delivers; a cron timer delivers a copy per occurrence, with an id of its own.
    pub signal: Signal,
    /// For a cron timer, how its occurrences follow one another.
    pub cron: Option<CronTimer>,
}

/// The repeating part of a cron timer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronTimer {
    /// The expression.
    pub expr: CronExpr,
    /// The IANA time zone its local times are in (`UTC`, `Europe/Berlin`).
    pub zone: String,
    /// What it does with occurrences missed while nothing ran.
    pub misfire: Misfire,
}

/// A change a step makes to its thread's timers (a `Schedule` or `Cron` directive's timer set,
/// a `CancelSchedule`'s removed), written in the same store write as the step's entries and
/// state ([`StepCommit`](super::StepCommit)): a crash keeps both or neither.
#[derive(Debug, Clone, PartialEq)]
pub enum TimerWrite {
    /// Keep this timer, replacing one with the same thread and id.
    Put(StoredTimer),
    /// Remove timer `id` of the thread `key`, if there is one.
    Remove {
        /// The thread.
        key: ThreadKey,
        /// The schedule id.
        id: String,
    },
    /// Settle a firing of timer `id` of the thread `key`, written in the commit of the step
    /// that handled what it delivered: the timer is removed (`next_ms` `None`: a one-shot
    /// timer) or moved on to its next occurrence — if it is still the one that fired (due at
    /// `fired_ms`, delivering `signal_id`). One set again or cancelled since is left alone, as
    /// [`ThreadStore::timer_fired`](super::ThreadStore::timer_fired) leaves it.
    Fired {
        /// The thread.
        key: ThreadKey,
        /// The schedule id.
        id: String,
        /// When the firing was due.
        fired_ms: u64,
        /// The id of the signal it delivers.
        signal_id: String,
        /// A cron timer's next occurrence.
        next_ms: Option<u64>,
    },
}

impl TimerWrite {
    /// The thread and schedule id the change is to.
    pub fn target(&self) -> (&ThreadKey, &str) {
        match self {
            Self::Put(timer) => (&timer.key, &timer.id),
            Self::Remove { key, id } | Self::Fired { key, id, .. } => (key, id),
        }
    }
}

/// A [`TimerWrite`] as the databases write it.
pub(crate) enum TimerRowWrite {
    /// Insert or replace this row.
    Put(TimerRow),
    /// Delete the row of this thread store id and schedule id.
    Remove { thread_id: String, id: String },
    /// Settle the row's firing, if it is still the one that fired ([`TimerWrite::Fired`]).
    Fired(FiredRow),
}

/// A firing settled in a step's commit, as the databases write it.
pub(crate) struct FiredRow {
    pub(crate) thread_id: String,
    pub(crate) id: String,
    pub(crate) fired_ms: i64,
    pub(crate) signal_id: String,
    pub(crate) next_ms: Option<i64>,
}

/// What a step's timer writes come to, each timer once ([`TimerRowWrite::settled`]).
#[derive(Default)]
pub(crate) struct SettledRows {
    /// The rows to insert or replace.
    pub(crate) keep: Vec<TimerRow>,
    /// The timers to remove, as thread store id and schedule id.
    pub(crate) remove: Vec<(String, String)>,
    /// The firings to settle.
    pub(crate) fired: Vec<FiredRow>,
}

impl TimerRowWrite {
    /// The rows of `writes`, in order.
    pub(crate) fn of(writes: &[TimerWrite]) -> Result<Vec<Self>, StoreError> {
        writes
            .iter()
            .map(|write| match write {
                TimerWrite::Put(timer) => TimerRow::of(timer).map(Self::Put),
                TimerWrite::Remove { key, id } => Ok(Self::Remove {
                    thread_id: key.store_id(),
                    id: id.clone(),
                }),
                TimerWrite::Fired {
                    key,
                    id,
                    fired_ms,
                    signal_id,
                    next_ms,
                } => Ok(Self::Fired(FiredRow {
                    thread_id: key.store_id(),
                    id: id.clone(),
                    fired_ms: millis_to_db(*fired_ms),
                    signal_id: signal_id.clone(),
                    next_ms: next_ms.map(millis_to_db),
                })),
            })
            .collect()
    }

    /// `writes` as what each timer ends up as: the rows to keep, the timers to remove and the
    /// firings to settle, one entry per timer (its last write wins, as it would written one
    /// after another: a firing settled before the step set the same timer again is moot), so
    /// each kind can go to the database in one statement whatever the order of its rows.
    pub(crate) fn settled(writes: Vec<Self>) -> SettledRows {
        let mut seen = std::collections::HashSet::with_capacity(writes.len());
        let mut rows = SettledRows::default();
        // From the last write back: the first seen of each timer is its last.
        for write in writes.into_iter().rev() {
            let target = match &write {
                Self::Put(TimerRow { thread_id, id, .. })
                | Self::Remove { thread_id, id }
                | Self::Fired(FiredRow { thread_id, id, .. }) => (thread_id.clone(), id.clone()),
            };
            if !seen.insert(target) {
                continue;
            }
            match write {
                Self::Put(row) => rows.keep.push(row),
                Self::Remove { thread_id, id } => rows.remove.push((thread_id, id)),
                Self::Fired(fired) => rows.fired.push(fired),
            }
        }
        rows.keep.reverse();
        rows.remove.reverse();
        rows.fired.reverse();
        rows
    }
}

/// A stored timer's row, as text for the databases.
pub(crate) struct TimerRow {
    pub(crate) thread_id: String,
    pub(crate) agent: String,
    pub(crate) thread: String,
    pub(crate) id: String,
    pub(crate) due_ms: i64,
    pub(crate) signal_id: String,
    pub(crate) signal: String,
    pub(crate) cron: Option<String>,
}

impl TimerRow {
    /// The row of `timer`.
    pub(crate) fn of(timer: &StoredTimer) -> Result<Self, StoreError> {
        let thread_id = timer.key.store_id();
        let encode = |reason: serde_json::Error| StoreError::Encode {
            thread_id: thread_id.clone(),
            reason: format!("timer {}: {reason}", timer.id),
        };
        Ok(Self {
            signal: serde_json::to_string(&timer.signal).map_err(encode)?,
            cron: timer
                .cron
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(encode)?,
            agent: timer.key.agent().to_owned(),
            thread: timer.key.thread().to_owned(),
            due_ms: millis_to_db(timer.due_ms),
            signal_id: timer.signal.id().as_str().to_owned(),
            id: timer.id.clone(),
            thread_id,
        })
    }

    /// The timer this row holds.
    pub(crate) fn decode(self) -> Result<StoredTimer, StoreError> {
        let corrupt = |reason: String| StoreError::Timer {
            thread_id: self.thread_id.clone(),
            id: self.id.clone(),
            reason,
        };
        let signal = serde_json::from_str(&self.signal)
            .map_err(|e| corrupt(format!("its signal does not decode: {e}")))?;
        let cron = self
            .cron
            .as_deref()
            .map(serde_json::from_str::<CronTimer>)
            .transpose()
            .map_err(|e| corrupt(format!("its cron settings do not decode: {e}")))?;
        let due_ms =
            u64::try_from(self.due_ms).map_err(|_| corrupt(format!("due at {}", self.due_ms)))?;
        Ok(StoredTimer {
            key: ThreadKey::new(self.agent, self.thread),
            id: self.id,
            due_ms,
            signal,
            cron,
        })
    }
}

/// A time in milliseconds as the databases' signed 64-bit integer (times past the year 292
/// million are kept as the last one).
pub(crate) fn millis_to_db(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// Whose timers a read of the store brings in: the agents named, and every virtual agent
/// (`<kind>:<key>`) of the kinds named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimerOwners {
    /// Agents by name.
    pub agents: Vec<String>,
    /// Virtual agent kinds.
    pub kinds: Vec<String>,
}

impl TimerOwners {
    /// Whether nobody is named.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.kinds.is_empty()
    }

    /// Whether the timers of `agent` are among those wanted.
    pub fn owns(&self, agent: &str) -> bool {
        self.agents.iter().any(|a| a == agent)
            || agent
                .split_once(':')
                .is_some_and(|(kind, _)| self.kinds.iter().any(|k| k == kind))
    }
}

/// The columns every query reads, in [`TimerRow`]'s order.
pub(crate) const COLUMNS: &str = "thread_id, agent, thread, id, due_ms, signal_id, signal, cron";

#[cfg(test)]
mod tests {
    use super::{FiredRow, TimerRow, TimerRowWrite};

    fn put(thread: &str, id: &str, due_ms: i64) -> TimerRowWrite {
        TimerRowWrite::Put(TimerRow {
            thread_id: thread.to_owned(),
            agent: "a".to_owned(),
            thread: thread.to_owned(),
            id: id.to_owned(),
            due_ms,
            signal_id: format!("s{due_ms}"),
            signal: "{}".to_owned(),
            cron: None,
        })
    }

    fn remove(thread: &str, id: &str) -> TimerRowWrite {
        TimerRowWrite::Remove {
            thread_id: thread.to_owned(),
            id: id.to_owned(),
        }
    }

    fn fired(thread: &str, id: &str, fired_ms: i64) -> TimerRowWrite {
        TimerRowWrite::Fired(FiredRow {
            thread_id: thread.to_owned(),
            id: id.to_owned(),
            fired_ms,
            signal_id: format!("s{fired_ms}"),
            next_ms: None,
        })
    }

    #[test]
    fn each_timer_ends_as_its_last_write_says() {
        let rows = TimerRowWrite::settled(vec![
            fired("t", "b", 1),
            fired("t", "d", 1),
            put("t", "a", 1),
            put("t", "b", 2),
            remove("t", "a"),
            put("t", "b", 3),
            remove("t", "c"),
            put("t", "c", 4),
            put("u", "a", 5),
        ]);
        let kept: Vec<_> = rows
            .keep
            .iter()
            .map(|r| (r.thread_id.as_str(), r.id.as_str(), r.due_ms))
            .collect();
        assert_eq!(kept, [("t", "b", 3), ("t", "c", 4), ("u", "a", 5)]);
        assert_eq!(rows.remove, [("t".to_owned(), "a".to_owned())]);
        // The firing of b is moot (b set again after it); d's stands.
        let settled: Vec<_> = rows.fired.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(settled, ["d"]);
    }
}
