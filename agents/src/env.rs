//! The environment a pure strategy reads time and fresh ids from.
//!
//! Strategies never read a clock or a random source: the runtime passes an [`Env`] into every
//! call, and tests pass a [`FixedEnv`] so a transcript replays to the same ids and timestamps.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a strategy gets "now" and fresh ids.
pub trait Env {
    /// The current time, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;

    /// A fresh id starting with `prefix` (`entry`, `call`, `sig`, `thread`), unique within this
    /// environment.
    fn fresh_id(&self, prefix: &str) -> String;

    /// The current time as a timestamp, for signal envelopes (`None` if out of range).
    fn now(&self) -> Option<jiff::Timestamp> {
        let millis = i64::try_from(self.now_ms()).ok()?;
        jiff::Timestamp::from_millisecond(millis).ok()
    }
}

/// A deterministic [`Env`]: a settable clock and counter ids per prefix (`call_1`, `call_2`,
/// `entry_1`, ...). Public so the runtime's tests and replays can use it too.
#[derive(Debug, Default)]
pub struct FixedEnv {
    now_ms: AtomicU64,
    counters: Mutex<BTreeMap<String, u64>>,
}

impl FixedEnv {
    /// An environment whose clock reads `now_ms` until moved.
    pub fn new(now_ms: u64) -> Self {
        Self {
            now_ms: AtomicU64::new(now_ms),
            counters: Mutex::new(BTreeMap::new()),
        }
    }

    /// Sets the clock.
    pub fn set_now_ms(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::Relaxed);
    }

    /// Moves the clock forward.
    pub fn advance_ms(&self, delta_ms: u64) {
        self.now_ms.fetch_add(delta_ms, Ordering::Relaxed);
    }
}

impl Env for FixedEnv {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::Relaxed)
    }

    fn fresh_id(&self, prefix: &str) -> String {
        // A poisoned lock only means another thread panicked mid-increment; the map is intact.
        let mut counters = self
            .counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let counter = counters.entry(prefix.to_owned()).or_insert(0);
        *counter += 1;
        format!("{prefix}_{counter}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_per_prefix_and_clock_is_settable() {
        let env = FixedEnv::new(1_000);
        assert_eq!(env.fresh_id("call"), "call_1");
        assert_eq!(env.fresh_id("entry"), "entry_1");
        assert_eq!(env.fresh_id("call"), "call_2");
        env.advance_ms(5);
        assert_eq!(env.now_ms(), 1_005);
        env.set_now_ms(7);
        assert_eq!(env.now().map(|t| t.as_millisecond()), Some(7));
    }
}
