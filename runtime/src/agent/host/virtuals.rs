//! Virtual agents, the parts that decide: an agent's name from its kind and key (and back),
//! the bookkeeping of how many are active and which was used last, and the pure choice of
//! which idle ones to deactivate when the cap needs room ([`victims`]).
//!
//! A virtual agent always exists logically. Its kind is registered once
//! (`RuntimeBuilder::virtual_kind`); the first message addressed to `<kind>:<key>` activates it
//! (the kind's factory builds its spec from the key, its threads load from the store as they
//! are needed), and it is deactivated — nothing of it left in memory — once its threads have
//! stopped. The core does the activating and deactivating (core/activate.rs); this file holds
//! no IO.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use tokio::sync::Notify;

use crate::agent::errors::RuntimeError;

/// Between a virtual agent's kind and its key in its name: `support:customer-42`.
pub const KIND_SEPARATOR: char = ':';

/// The longest key a virtual agent may have, in bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// The default cap on active virtual agents ([`RuntimeBuilder::max_active_agents`]).
///
/// [`RuntimeBuilder::max_active_agents`]: crate::agent::RuntimeBuilder::max_active_agents
pub const DEFAULT_MAX_ACTIVE: usize = 10_000;

/// Why a kind or a key cannot name a virtual agent, or `None` when it can. A kind is
/// non-empty and holds neither `:` nor `/`; a key is non-empty, at most [`MAX_KEY_BYTES`], and
/// holds no `/` (a thread's store id is `<agent>/<thread>`) and no control character.
fn refusal(kind: &str, key: &str) -> Option<&'static str> {
    if kind.is_empty() || kind.contains([KIND_SEPARATOR, '/']) || kind.contains(char::is_control) {
        return Some("a kind is non-empty, without `:`, `/` or control characters");
    }
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Some("a key is 1 to 256 bytes");
    }
    if key.contains('/') || key.contains(char::is_control) {
        return Some("a key holds no `/` and no control characters");
    }
    None
}

/// The name of the virtual agent of `kind` keyed `key`: `<kind>:<key>`.
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] when the kind or the key cannot name an agent.
pub(crate) fn name_of(kind: &str, key: &str) -> Result<String, RuntimeError> {
    match refusal(kind, key) {
        None => Ok(format!("{kind}{KIND_SEPARATOR}{key}")),
        Some(message) => Err(RuntimeError::InvalidSpec {
            name: format!("{kind}{KIND_SEPARATOR}{key}"),
            message: message.to_owned(),
        }),
    }
}

/// The kind and key a name is made of, when it is a valid virtual agent's name.
pub(crate) fn split(name: &str) -> Option<(&str, &str)> {
    let (kind, key) = name.split_once(KIND_SEPARATOR)?;
    refusal(kind, key).is_none().then_some((kind, key))
}

/// What a registered virtual agent carries beside its entry: when it was last used, and
/// whether it was taken out of the registry (an ask holding the old entry then looks again).
#[derive(Debug, Default)]
pub(crate) struct Activation {
    last_used: AtomicU64,
    retired: AtomicBool,
}

impl Activation {
    /// A mark used at tick `now`.
    pub(crate) fn new(now: u64) -> Self {
        Self {
            last_used: AtomicU64::new(now),
            retired: AtomicBool::new(false),
        }
    }

    /// Notes a use at tick `now`.
    pub(crate) fn touch(&self, now: u64) {
        self.last_used.store(now, Ordering::Relaxed);
    }

    /// The tick of the last use.
    pub(crate) fn last_used(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    /// Marks the agent as out of the registry.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Whether the agent was taken out of the registry.
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }
}

/// The runtime's count of active virtual agents, its cap and its use clock.
#[derive(Debug)]
pub(crate) struct Activations {
    /// Active virtual agents at most; past [`high_water`](Self::high_water) idle ones are
    /// deactivated, and at the cap an activation waits for room.
    pub(crate) cap: usize,
    active: AtomicUsize,
    most: AtomicUsize,
    clock: AtomicU64,
    evicting: AtomicBool,
    /// Told when a deactivation made room.
    pub(crate) room: Notify,
}

impl Default for Activations {
    fn default() -> Self {
        Self::with_cap(DEFAULT_MAX_ACTIVE)
    }
}

impl Activations {
    /// No agent active yet, at most `cap` (at least 1) at once.
    pub(crate) fn with_cap(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            active: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            evicting: AtomicBool::new(false),
            room: Notify::new(),
        }
    }

    /// The next tick of the use clock.
    pub(crate) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Takes a place for one more active agent when one is free (fewer than the cap are
    /// active): decided at once, so racing activations never pass the cap. Returns whether
    /// it did; the place is given back with [`deactivated`](Self::deactivated).
    pub(crate) fn reserve(&self) -> bool {
        let taken = self
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            });
        match taken {
            Ok(before) => {
                self.most.fetch_max(before + 1, Ordering::Relaxed);
                true
            }
            Err(_) => false,
        }
    }

    /// One more agent is active, whatever the cap; returns how many are.
    pub(crate) fn activated(&self) -> usize {
        let now = self.active.fetch_add(1, Ordering::AcqRel) + 1;
        self.most.fetch_max(now, Ordering::Relaxed);
        now
    }

    /// One agent fewer is active.
    pub(crate) fn deactivated(&self) {
        let _ = self
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        self.room.notify_waiters();
    }

    /// How many virtual agents are active.
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// The most that were active at once.
    pub(crate) fn most(&self) -> usize {
        self.most.load(Ordering::Relaxed)
    }

    /// Past this many active, idle agents are deactivated: nine tenths of the cap, so that
    /// activations rarely find the cap reached and wait.
    pub(crate) fn high_water(&self) -> usize {
        self.cap - self.cap / 10
    }

    /// How many to keep after a round of deactivations: four fifths of the cap, and below the
    /// cap however small it is (a round at a cap of 4 makes room for one).
    pub(crate) fn low_water(&self) -> usize {
        (self.cap - self.cap / 5).min(self.cap - 1)
    }

    /// Takes the right to run a round of deactivations; `false` when one runs.
    pub(crate) fn begin_round(&self) -> bool {
        !self.evicting.swap(true, Ordering::AcqRel)
    }

    /// The round ended.
    pub(crate) fn end_round(&self) {
        self.evicting.store(false, Ordering::Release);
        self.room.notify_waiters();
    }
}

/// An active virtual agent as a round of deactivations sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The tick of its last use.
    pub(crate) last_used: u64,
    /// Whether something holds it here: an ask starting it now (its use is newer than the
    /// round). Held ones are never chosen.
    pub(crate) held: bool,
}

/// Which of `active` to deactivate so that at most `keep` stay: the least recently used ones
/// not held, oldest first, as indexes into `active`. Fewer (or none) when too many are held.
/// A chosen agent whose threads are busy (a request running) is not stopped: it stays, and
/// the next round looks again.
pub(crate) fn victims(active: &[Candidate], keep: usize) -> Vec<usize> {
    let excess = active.len().saturating_sub(keep);
    if excess == 0 {
        return Vec::new();
    }
    let mut free: Vec<usize> = (0..active.len()).filter(|&i| !active[i].held).collect();
    free.sort_by_key(|&i| active[i].last_used);
    free.truncate(excess);
    free
}

#[cfg(test)]
mod tests {
    use super::{Activations, Candidate, name_of, split, victims};

    fn at(last_used: u64) -> Candidate {
        Candidate {
            last_used,
            held: false,
        }
    }

    #[test]
    fn a_name_is_kind_colon_key_and_splits_back() {
        let name = name_of("support", "customer-42").unwrap();
        assert_eq!(name, "support:customer-42");
        assert_eq!(split(&name), Some(("support", "customer-42")));
        // A key may hold the separator itself: the kind ends at the first one.
        assert_eq!(split("mail:a:b"), Some(("mail", "a:b")));
    }

    #[test]
    fn kinds_and_keys_that_cannot_name_an_agent_are_refused() {
        for (kind, key) in [
            ("", "k"),
            ("a/b", "k"),
            ("kind", ""),
            ("kind", "a/b"),
            ("kind", "line\nbreak"),
        ] {
            assert!(name_of(kind, key).is_err(), "{kind:?} {key:?}");
        }
        assert!(name_of("kind", &"x".repeat(257)).is_err());
        assert!(name_of("kind", &"x".repeat(256)).is_ok());
        assert_eq!(split("plain-name"), None);
        assert_eq!(split("parent/child:x"), None);
        assert_eq!(split(":key"), None);
    }

    #[test]
    fn nothing_is_chosen_within_the_cap() {
        assert!(victims(&[at(1), at(2)], 2).is_empty());
        assert!(victims(&[], 0).is_empty());
    }

    #[test]
    fn the_least_recently_used_go_first() {
        let active = [at(50), at(10), at(40), at(20), at(30)];
        assert_eq!(victims(&active, 3), vec![1, 3]);
        assert_eq!(victims(&active, 0), vec![1, 3, 4, 2, 0]);
    }

    #[test]
    fn a_held_agent_is_never_chosen_even_when_oldest() {
        let mut active = [at(1), at(2), at(3)];
        active[0].held = true;
        assert_eq!(victims(&active, 1), vec![1, 2]);
        // All held: none can go, whatever the excess.
        let held = [Candidate {
            last_used: 1,
            held: true,
        }; 3];
        assert!(victims(&held, 0).is_empty());
    }

    #[test]
    fn the_waters_sit_below_the_cap() {
        let a = Activations::with_cap(10_000);
        assert_eq!(a.high_water(), 9_000);
        assert_eq!(a.low_water(), 8_000);
        let one = Activations::with_cap(0);
        assert_eq!(one.cap, 1);
        assert!(one.low_water() <= one.high_water() && one.high_water() <= one.cap);
        // However small the cap, a round makes room.
        for cap in 1..=12 {
            let a = Activations::with_cap(cap);
            assert!(a.low_water() < a.cap, "cap {cap}");
        }
        assert_eq!(Activations::with_cap(4).low_water(), 3);
    }

    #[test]
    fn places_are_taken_up_to_the_cap_and_given_back() {
        let a = Activations::with_cap(2);
        assert!(a.reserve());
        assert!(a.reserve());
        assert!(!a.reserve(), "past the cap");
        assert_eq!(a.active(), 2);
        a.deactivated();
        assert!(a.reserve(), "a place given back is taken again");
        // Over the cap only when told to (an activation out of patience).
        assert_eq!(a.activated(), 3);
        assert_eq!(a.most(), 3);
        assert!(!a.reserve());
    }

    #[test]
    fn counts_and_rounds() {
        let a = Activations::with_cap(4);
        assert_eq!(a.activated(), 1);
        assert_eq!(a.activated(), 2);
        a.deactivated();
        a.deactivated();
        a.deactivated();
        assert_eq!(a.active(), 0, "never below zero");
        assert_eq!(a.most(), 2);
        assert!(a.begin_round());
        assert!(!a.begin_round());
        a.end_round();
        assert!(a.begin_round());
        assert!(a.tick() < a.tick());
    }
}
