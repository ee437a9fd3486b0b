//! A run's event log, and what a subscriber is sent from it: pure, no IO.
//!
//! Every event gets the next id (1, 2, 3, ...). Durable events — a committed entry of the run's
//! thread, a wait for a person, the answer or the failure — are kept for the run's life: they
//! are what the thread and the request record hold anyway. Deltas (text and reasoning
//! fragments) are kept in a bounded buffer, the oldest dropped first; an assistant entry
//! committed after them carries the whole text again. A subscriber that resumes after an id
//! whose following deltas were dropped is told so ([`Replay::gap`]) and then gets every event
//! still held after that id, in id order: every durable one, nothing twice.

use std::collections::VecDeque;
use std::sync::Arc;

/// One event of a run, written once as it is sent (its SSE `event:` name and `data:` JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Logged {
    /// Its id: one more than the event before it in the same run.
    pub id: u64,
    /// The SSE event name (`delta`, `entry`, `waiting`, `answer`, `failed`).
    pub name: &'static str,
    /// The event's data, as JSON text.
    pub data: Arc<str>,
}

/// How much of a run's deltas is kept for subscribers that resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferLimits {
    /// At most this many deltas.
    pub deltas: usize,
    /// At most this many bytes of delta data.
    pub bytes: usize,
}

impl Default for BufferLimits {
    fn default() -> Self {
        Self {
            deltas: 4_096,
            bytes: 1 << 20,
        }
    }
}

/// What a subscriber that last saw event `after` is sent now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replay {
    /// Set when deltas after `after` are no longer held: the last id among them.
    pub gap: Option<Gap>,
    /// Every event held after `after`, in id order.
    pub events: Vec<Logged>,
    /// Whether the run has ended and `events` reach its last event: nothing more will come.
    pub finished: bool,
}

/// Deltas a subscriber missed and cannot get any more: those with ids in `after + 1..=through`
/// (durable events in that range are still sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gap {
    /// The subscriber's position.
    pub after: u64,
    /// The last id whose delta was dropped.
    pub through: u64,
}

/// A run's events.
#[derive(Debug, Clone)]
pub(crate) struct RunLog {
    limits: BufferLimits,
    last_id: u64,
    durable: Vec<Logged>,
    deltas: VecDeque<Logged>,
    delta_bytes: usize,
    /// The id of the newest delta dropped from the buffer (0: none).
    dropped_through: u64,
    finished: bool,
}

impl RunLog {
    /// An empty log keeping deltas within `limits`.
    pub(crate) fn new(limits: BufferLimits) -> Self {
        Self {
            limits,
            last_id: 0,
            durable: Vec::new(),
            deltas: VecDeque::new(),
            delta_bytes: 0,
            dropped_through: 0,
            finished: false,
        }
    }

    /// The id of the latest event (0: none yet).
    pub(crate) fn last_id(&self) -> u64 {
        self.last_id
    }

    /// Appends a delta, dropping the oldest deltas beyond the limits; returns its id. Nothing
    /// is appended after the run ended (returns `None`).
    pub(crate) fn push_delta(&mut self, name: &'static str, data: Arc<str>) -> Option<u64> {
        let logged = self.next(name, data)?;
        let id = logged.id;
        self.delta_bytes += logged.data.len();
        self.deltas.push_back(logged);
        while self.deltas.len() > self.limits.deltas || self.delta_bytes > self.limits.bytes {
            let Some(dropped) = self.deltas.pop_front() else {
                break;
            };
            self.delta_bytes -= dropped.data.len();
            self.dropped_through = dropped.id;
        }
        Some(id)
    }

    /// Appends a durable event; returns its id (`None` after the run ended).
    pub(crate) fn push_durable(&mut self, name: &'static str, data: Arc<str>) -> Option<u64> {
        let logged = self.next(name, data)?;
        let id = logged.id;
        self.durable.push(logged);
        Some(id)
    }

    /// Appends the run's last, durable event (its answer or its failure); returns its id.
    pub(crate) fn finish(&mut self, name: &'static str, data: Arc<str>) -> Option<u64> {
        let id = self.push_durable(name, data)?;
        self.finished = true;
        Some(id)
    }

    fn next(&mut self, name: &'static str, data: Arc<str>) -> Option<Logged> {
        if self.finished {
            return None;
        }
        self.last_id += 1;
        Some(Logged {
            id: self.last_id,
            name,
            data,
        })
    }

    /// What a subscriber that last saw event `after` (0: none) is sent: the gap, when deltas
    /// after it were dropped, then every event held after it, at most `max` of them (the rest
    /// come at the next call, after the last one sent).
    pub(crate) fn since(&self, after: u64, max: usize) -> Replay {
        let gap = (self.dropped_through > after).then_some(Gap {
            after,
            through: self.dropped_through,
        });
        let durable_from = self.durable.partition_point(|e| e.id <= after);
        let deltas_from = self.deltas.partition_point(|e| e.id <= after);
        let mut durable = self.durable[durable_from..].iter().peekable();
        let mut deltas = self.deltas.range(deltas_from..).peekable();
        let mut events = Vec::new();
        while events.len() < max {
            let next = match (durable.peek(), deltas.peek()) {
                (Some(d), Some(x)) if d.id < x.id => durable.next(),
                (Some(_), Some(_)) | (None, Some(_)) => deltas.next(),
                (Some(_), None) => durable.next(),
                (None, None) => None,
            };
            match next {
                Some(event) => events.push(event.clone()),
                None => break,
            }
        }
        let reached = events.last().map_or(after, |e| e.id);
        Replay {
            gap,
            finished: self.finished && reached >= self.last_id,
            events,
        }
    }
}

/// One subscriber's position in a run's log, and what it is sent next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Cursor {
    /// The last event id sent (0: none).
    pub after: u64,
    /// The last id a gap sent reached (0: none): a gap is said once.
    gap_through: u64,
}

/// What a subscriber is sent, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Send {
    /// Deltas it can no longer get.
    Gap(Gap),
    /// The next event.
    Event(Logged),
}

impl Cursor {
    /// A subscriber that has seen every event up to `after`.
    pub(crate) fn after(after: u64) -> Self {
        Self {
            after,
            gap_through: after,
        }
    }

    /// What to send of `replay` (read from the log after [`Cursor::after`]): a gap not said
    /// yet, then its events; the cursor moves past them.
    pub(crate) fn take(&mut self, replay: Replay) -> Vec<Send> {
        let mut out = Vec::with_capacity(replay.events.len() + 1);
        if let Some(gap) = replay.gap.filter(|g| g.through > self.gap_through) {
            self.gap_through = gap.through;
            out.push(Send::Gap(gap));
        }
        for event in replay.events {
            self.after = event.id;
            out.push(Send::Event(event));
        }
        out
    }
}

/// Where a subscriber starts: after the `Last-Event-ID` it sent (an id it cannot have seen, past
/// the log's last, is an error: `None`), else from the run's first event.
pub(crate) fn resume_point(last_event_id: Option<&str>, last_id: u64) -> Result<u64, BadEventId> {
    match last_event_id.map(str::trim) {
        None | Some("") => Ok(0),
        Some(text) => match text.parse::<u64>() {
            Ok(id) if id <= last_id => Ok(id),
            _ => Err(BadEventId),
        },
    }
}

/// A `Last-Event-ID` that names no event of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadEventId;

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(limits: BufferLimits, events: &[&'static str]) -> RunLog {
        let mut log = RunLog::new(limits);
        for (i, name) in events.iter().enumerate() {
            let data: Arc<str> = format!("{i}").into();
            match *name {
                "delta" => log.push_delta("delta", data),
                "answer" => log.finish("answer", data),
                other => log.push_durable(other, data),
            };
        }
        log
    }

    fn ids(replay: &Replay) -> Vec<u64> {
        replay.events.iter().map(|e| e.id).collect()
    }

    #[test]
    fn ids_increase_by_one_and_a_replay_keeps_their_order() {
        let log = log_of(
            BufferLimits::default(),
            &["delta", "entry", "delta", "delta", "waiting", "answer"],
        );
        let all = log.since(0, usize::MAX);
        assert_eq!(ids(&all), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(all.gap, None);
        assert!(all.finished);
        let rest = log.since(3, usize::MAX);
        assert_eq!(ids(&rest), vec![4, 5, 6]);
        let names: Vec<_> = rest.events.iter().map(|e| e.name).collect();
        assert_eq!(names, vec!["delta", "waiting", "answer"]);
    }

    #[test]
    fn dropped_deltas_make_a_gap_and_durable_events_are_still_sent() {
        let limits = BufferLimits {
            deltas: 2,
            bytes: usize::MAX,
        };
        // ids:       1        2        3        4        5        6
        let log = log_of(
            limits,
            &["delta", "entry", "delta", "delta", "delta", "entry"],
        );
        // Deltas 1 and 3 were dropped (the buffer holds 4 and 5).
        let replay = log.since(0, usize::MAX);
        assert_eq!(
            replay.gap,
            Some(Gap {
                after: 0,
                through: 3
            })
        );
        assert_eq!(ids(&replay), vec![2, 4, 5, 6]);
        // A subscriber past the dropped deltas sees no gap.
        let replay = log.since(3, usize::MAX);
        assert_eq!(replay.gap, None);
        assert_eq!(ids(&replay), vec![4, 5, 6]);
    }

    #[test]
    fn the_buffer_is_bounded_in_bytes_too() {
        let mut log = RunLog::new(BufferLimits {
            deltas: usize::MAX,
            bytes: 10,
        });
        log.push_delta("delta", "aaaaaa".into());
        log.push_delta("delta", "bbbbbb".into());
        let replay = log.since(0, usize::MAX);
        assert_eq!(ids(&replay), vec![2]);
        assert_eq!(replay.gap.map(|g| g.through), Some(1));
    }

    #[test]
    fn a_replay_comes_in_pages_and_ends_only_at_the_last_event() {
        let log = log_of(BufferLimits::default(), &["delta", "delta", "answer"]);
        let first = log.since(0, 2);
        assert_eq!(ids(&first), vec![1, 2]);
        assert!(!first.finished);
        let second = log.since(2, 2);
        assert_eq!(ids(&second), vec![3]);
        assert!(second.finished);
    }

    #[test]
    fn nothing_is_appended_after_the_end() {
        let mut log = log_of(BufferLimits::default(), &["answer"]);
        assert_eq!(log.push_delta("delta", "late".into()), None);
        assert_eq!(log.push_durable("entry", "late".into()), None);
        assert_eq!(log.last_id(), 1);
    }

    #[test]
    fn a_cursor_says_each_gap_once_and_moves_past_what_it_sent() {
        let limits = BufferLimits {
            deltas: 1,
            bytes: usize::MAX,
        };
        // ids:                   1        2        3
        let mut log = log_of(limits, &["delta", "entry", "delta"]);
        let mut cursor = Cursor::after(0);
        let sent = cursor.take(log.since(cursor.after, 1));
        assert_eq!(
            sent.first(),
            Some(&Send::Gap(Gap {
                after: 0,
                through: 1
            }))
        );
        assert_eq!(cursor.after, 2);
        // The gap is not said again; delta 3 follows.
        let sent = cursor.take(log.since(cursor.after, 10));
        assert!(matches!(sent.as_slice(), [Send::Event(e)] if e.id == 3));
        // Deltas dropped later, after the cursor, are a new gap.
        log.push_delta("delta", "4".into());
        log.push_delta("delta", "5".into());
        let sent = cursor.take(log.since(cursor.after, 10));
        assert_eq!(
            sent.first(),
            Some(&Send::Gap(Gap {
                after: 3,
                through: 4
            }))
        );
        assert_eq!(cursor.after, 5);
    }

    #[test]
    fn a_resume_point_is_a_known_id_or_the_start() {
        assert_eq!(resume_point(None, 5), Ok(0));
        assert_eq!(resume_point(Some(""), 5), Ok(0));
        assert_eq!(resume_point(Some("3"), 5), Ok(3));
        assert_eq!(resume_point(Some(" 5 "), 5), Ok(5));
        assert_eq!(resume_point(Some("6"), 5), Err(BadEventId));
        assert_eq!(resume_point(Some("x"), 5), Err(BadEventId));
    }
}
