//! Who may subscribe to a run's stream: pure, no IO.

use std::time::Duration;

/// The bounds on SSE subscribers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// At most this many subscribers of one run.
    pub per_run: usize,
    /// At most this many subscribers in all.
    pub total: usize,
    /// A subscriber that takes nothing for this long while events wait for it is dropped (it
    /// may reconnect with `Last-Event-ID`); the run never waits for it.
    pub stall: Duration,
    /// A subscriber is sent a keep-alive comment after this long without an event.
    pub keep_alive: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            per_run: 64,
            total: 4_096,
            stall: Duration::from_secs(30),
            keep_alive: Duration::from_secs(15),
        }
    }
}

/// Why a subscriber was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The run has [`StreamLimits::per_run`] subscribers.
    RunFull,
    /// The server has [`StreamLimits::total`] subscribers.
    ServerFull,
}

/// Whether one more subscriber is let in, with `of_run` subscribers of its run and `total` in
/// all already streaming.
pub(crate) fn admit(of_run: usize, total: usize, limits: &StreamLimits) -> Result<(), Refusal> {
    if total >= limits.total {
        Err(Refusal::ServerFull)
    } else if of_run >= limits.per_run {
        Err(Refusal::RunFull)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribers_are_bounded_per_run_and_in_all() {
        let limits = StreamLimits {
            per_run: 2,
            total: 3,
            ..StreamLimits::default()
        };
        assert_eq!(admit(0, 0, &limits), Ok(()));
        assert_eq!(admit(1, 2, &limits), Ok(()));
        assert_eq!(admit(2, 2, &limits), Err(Refusal::RunFull));
        assert_eq!(admit(0, 3, &limits), Err(Refusal::ServerFull));
    }
}
