//! Signals delivered by a durable bus (`ThreadMsg::Delivered`): each one's consumer is told once
//! the step that handled it committed (then, and only then, the bus acknowledges it), and the
//! signals already committed are remembered in the thread's snapshot, so one the bus delivers
//! again (its acknowledgement lost in a crash) is acknowledged without being handled twice. A
//! timer's firing comes the same way, carrying the write that settles the timer, which the
//! step that handles it commits with its own.

use std::collections::VecDeque;

use motet_signals::Signal;
use tokio::sync::oneshot;

use crate::store::TimerWrite;

/// How many committed deliveries a thread remembers. A signal the bus redelivers after more than
/// this many newer ones were committed on the thread is handled again; a bus redelivers only what
/// was in flight when a consumer died, far fewer than this.
pub(crate) const REMEMBERED: usize = 1024;

/// The answer a delivery's consumer waits for: `Ok` once committed, else why not.
pub(crate) type Committed = oneshot::Sender<Result<Applied, String>>;

/// How a delivery was committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// By the step that handled it, with the timer write it carried ([`Deliveries::open`]).
    WithTimer,
    /// Without a timer write: it carried none, or it was committed before, or it ended with
    /// no step of its own (a copy of a request already running). Its sender settles any timer.
    Alone,
}

/// A delivery waiting for its commit.
#[derive(Debug)]
struct Open {
    key: String,
    committed: Committed,
    /// The write settling the timer whose firing it is, made in the same commit.
    settles: Option<Box<TimerWrite>>,
}

/// A thread's deliveries: those not yet committed, and the keys of the last committed ones.
#[derive(Debug, Default)]
pub(crate) struct Deliveries {
    open: Vec<Open>,
    applied: VecDeque<String>,
}

/// A delivered signal's identity: CloudEvents identify an event by `source` and `id`.
pub(crate) fn key(signal: &Signal) -> String {
    format!("{}@{}", signal.id().as_str(), signal.source())
}

impl Deliveries {
    /// Deliveries remembering `applied` (oldest first), as stored in a snapshot.
    pub(crate) fn remembering(applied: Vec<String>) -> Option<Box<Self>> {
        (!applied.is_empty()).then(|| {
            Box::new(Self {
                open: Vec::new(),
                applied: applied.into(),
            })
        })
    }

    /// Waits for the commit of `signal`; `settles`, if given, is committed with it.
    pub(crate) fn open(
        &mut self,
        signal: &Signal,
        committed: Committed,
        settles: Option<Box<TimerWrite>>,
    ) {
        self.open.push(Open {
            key: key(signal),
            committed,
            settles,
        });
    }

    /// The timer write the open delivery `key` carries, for the commit of its step.
    pub(crate) fn settles(&self, key: &str) -> Option<&TimerWrite> {
        self.open
            .iter()
            .find(|o| o.key == key)
            .and_then(|o| o.settles.as_deref())
    }

    /// Whether `key` was committed already.
    pub(crate) fn applied(&self, key: &str) -> bool {
        self.applied.iter().any(|k| k == key)
    }

    /// Whether a consumer waits for the commit of `key`.
    pub(crate) fn is_open(&self, key: &str) -> bool {
        self.open.iter().any(|o| o.key == key)
    }

    /// The committed keys with `extra` after them, as the snapshot stores them.
    pub(crate) fn applied_with<'a>(&'a self, extra: Option<&'a str>) -> Vec<&'a str> {
        let skip = usize::from(extra.is_some() && self.applied.len() >= REMEMBERED);
        self.applied
            .iter()
            .skip(skip)
            .map(String::as_str)
            .chain(extra)
            .collect()
    }

    /// `key` was committed by the step that handled it, with the timer write it carried:
    /// remembered, and its consumer told.
    pub(crate) fn commit(&mut self, key: &str) {
        if self.applied.len() >= REMEMBERED {
            self.applied.pop_front();
        }
        self.applied.push_back(key.to_owned());
        if let Some(open) = self.take(key) {
            let applied = if open.settles.is_some() {
                Applied::WithTimer
            } else {
                Applied::Alone
            };
            let _ = open.committed.send(Ok(applied));
        }
    }

    /// Tells the consumer of `key` (when one waits) how its delivery ended, when no step
    /// committed it now: `Ok` if it was committed before.
    pub(crate) fn answer(&mut self, key: &str, outcome: Result<(), String>) {
        if let Some(open) = self.take(key) {
            let _ = open.committed.send(outcome.map(|()| Applied::Alone));
        }
    }

    fn take(&mut self, key: &str) -> Option<Open> {
        let at = self.open.iter().position(|o| o.key == key)?;
        Some(self.open.swap_remove(at))
    }

    /// The committed keys, read back with the rest of a reloaded snapshot.
    pub(crate) fn replace_applied(&mut self, applied: Vec<String>) {
        self.applied = applied.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_committed_key_makes_room_for_a_new_one() {
        let mut d = Deliveries::default();
        for n in 0..REMEMBERED {
            d.commit(&format!("k{n}"));
        }
        assert_eq!(d.applied_with(Some("new")).len(), REMEMBERED);
        assert_eq!(d.applied_with(Some("new"))[0], "k1");
        assert_eq!(d.applied_with(None).len(), REMEMBERED);
        d.commit("new");
        assert!(d.applied("new") && !d.applied("k0") && d.applied("k1"));
    }

    #[test]
    fn a_consumer_is_answered_once() {
        let mut d = Deliveries::default();
        let signal = Signal::builder("a.b", "src")
            .with_id("1")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let (tx, mut rx) = oneshot::channel();
        d.open(&signal, tx, None);
        assert!(d.is_open("1@src"));
        d.answer("1@src", Err("no".into()));
        assert_eq!(rx.try_recv(), Ok(Err("no".into())));
        assert!(!d.is_open("1@src"));
        d.commit("1@src");
        assert!(d.applied("1@src"));
    }

    #[test]
    fn a_timer_write_is_reported_settled_only_by_the_commit_that_carried_it() {
        let mut d = Deliveries::default();
        let signal = |id: &str| {
            Signal::builder("a.b", "src")
                .with_id(id)
                .build()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let settles = || {
            Some(Box::new(TimerWrite::Remove {
                key: crate::store::ThreadKey::new("a", "t"),
                id: "tick".into(),
            }))
        };
        let (tx, mut committed) = oneshot::channel();
        d.open(&signal("1"), tx, settles());
        let (tx, mut before) = oneshot::channel();
        d.open(&signal("2"), tx, settles());
        let (tx, mut plain) = oneshot::channel();
        d.open(&signal("3"), tx, None);
        assert!(d.settles("1@src").is_some() && d.settles("3@src").is_none());
        d.commit("1@src");
        d.answer("2@src", Ok(()));
        d.commit("3@src");
        assert_eq!(committed.try_recv(), Ok(Ok(Applied::WithTimer)));
        assert_eq!(before.try_recv(), Ok(Ok(Applied::Alone)));
        assert_eq!(plain.try_recv(), Ok(Ok(Applied::Alone)));
        assert!(d.settles("1@src").is_none());
    }
}
