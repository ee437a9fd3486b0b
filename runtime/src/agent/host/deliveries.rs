//! Signals delivered by a durable bus (`ThreadMsg::Delivered`): each one's consumer is told once
//! the step that handled it committed (then, and only then, the bus acknowledges it), and the
//! signals already committed are remembered in the thread's snapshot, so one the bus delivers
//! again (its acknowledgement lost in a crash) is acknowledged without being handled twice.

use std::collections::VecDeque;

use motet_signals::Signal;
use tokio::sync::oneshot;

/// How many committed deliveries a thread remembers. A signal the bus redelivers after more than
/// this many newer ones were committed on the thread is handled again; a bus redelivers only what
/// was in flight when a consumer died, far fewer than this.
pub(crate) const REMEMBERED: usize = 1024;

/// The answer a delivery's consumer waits for: `Ok` once committed, else why not.
pub(crate) type Committed = oneshot::Sender<Result<(), String>>;

/// A thread's deliveries: those not yet committed, and the keys of the last committed ones.
#[derive(Debug, Default)]
pub(crate) struct Deliveries {
    open: Vec<(String, Committed)>,
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

    /// Waits for the commit of `signal`.
    pub(crate) fn open(&mut self, signal: &Signal, committed: Committed) {
        self.open.push((key(signal), committed));
    }

    /// Whether `key` was committed already.
    pub(crate) fn applied(&self, key: &str) -> bool {
        self.applied.iter().any(|k| k == key)
    }

    /// Whether a consumer waits for the commit of `key`.
    pub(crate) fn is_open(&self, key: &str) -> bool {
        self.open.iter().any(|(k, _)| k == key)
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

    /// `key` was committed: remembered, and its consumer told.
    pub(crate) fn commit(&mut self, key: &str) {
        if self.applied.len() >= REMEMBERED {
            self.applied.pop_front();
        }
        self.applied.push_back(key.to_owned());
        self.answer(key, Ok(()));
    }

    /// Tells the consumer of `key` (when one waits) how its delivery ended.
    pub(crate) fn answer(&mut self, key: &str, outcome: Result<(), String>) {
        if let Some(at) = self.open.iter().position(|(k, _)| k == key) {
            let (_, committed) = self.open.swap_remove(at);
            let _ = committed.send(outcome);
        }
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
        d.open(&signal, tx);
        assert!(d.is_open("1@src"));
        d.answer("1@src", Err("no".into()));
        assert_eq!(rx.try_recv(), Ok(Err("no".into())));
        assert!(!d.is_open("1@src"));
        d.commit("1@src");
        assert!(d.applied("1@src"));
    }
}
