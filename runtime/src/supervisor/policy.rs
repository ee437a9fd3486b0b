//! The restart decision, as a pure function: given the strategy, the children in start order,
//! which one exited and how, and the recent restarts, say which children to stop, which to
//! start again, which to forget — or that the supervisor must give up and escalate.
//!
//! These are Erlang/OTP's rules:
//! - a `Permanent` child is always restarted, a `Transient` one only after a failure, a
//!   `Temporary` one never (it is forgotten);
//! - `OneForOne` restarts the child that exited; `OneForAll` stops every other child (last
//!   started first) and starts them all again in start order; `RestForOne` does that for the
//!   children started after the one that exited;
//! - children stopped only because a sibling failed are started again even when `Transient`;
//!   `Temporary` ones among them are forgotten;
//! - more than `max_restarts` restarts within `within` and the supervisor stops its children
//!   and exits, so its own supervisor decides (restart intensity).

use std::collections::VecDeque;
use std::time::Duration;

/// How a supervisor restarts its children when one exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartStrategy {
    /// Restart only the child that exited.
    #[default]
    OneForOne,
    /// Restart every child.
    OneForAll,
    /// Restart the child that exited and those started after it.
    RestForOne,
}

/// When a child is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Restart {
    /// Always.
    #[default]
    Permanent,
    /// Only after a failure (a normal exit is final).
    Transient,
    /// Never.
    Temporary,
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitReason {
    /// It finished its work.
    Normal,
    /// It was asked to stop.
    Shutdown,
    /// It failed (an error or a panic), with what happened.
    Failed(String),
}

impl ExitReason {
    /// Whether this exit is a failure.
    pub fn is_failure(&self) -> bool {
        matches!(self, ExitReason::Failed(_))
    }
}

/// At most `max_restarts` restarts within `within`; one more and the supervisor gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intensity {
    /// Restarts allowed in the window.
    pub max_restarts: u32,
    /// The window.
    pub within: Duration,
}

impl Default for Intensity {
    /// OTP's default: 3 restarts in 5 seconds.
    fn default() -> Self {
        Self {
            max_restarts: 3,
            within: Duration::from_secs(5),
        }
    }
}

/// How long a restart waits: the first restart in the intensity window after `first`, each
/// further one twice as long as the one before, never longer than `max` (Akka's and Orleans'
/// backoff, on OTP's rules). The default waits not at all (OTP: at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backoff {
    /// The wait before the first restart in the window.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Backoff {
    /// Waits `first`, then twice as long at each restart, up to `max`.
    pub fn exponential(first: Duration, max: Duration) -> Self {
        Self { first, max }
    }

    /// The wait before the `restarts`-th restart in the window (1 for the first).
    pub fn delay(&self, restarts: usize) -> Duration {
        let doublings = u32::try_from(restarts.saturating_sub(1))
            .unwrap_or(u32::MAX)
            .min(31);
        self.first
            .saturating_mul(1u32 << doublings)
            .min(self.max.max(self.first))
    }
}

/// The times of recent restarts, in milliseconds on a monotonic clock the caller keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestartHistory {
    times: VecDeque<u64>,
}

impl RestartHistory {
    /// Restarts counted in the window ending at `now_ms`.
    pub fn recent(&self, now_ms: u64, within: Duration) -> usize {
        let window = duration_ms(within);
        self.times
            .iter()
            .filter(|&&t| now_ms.saturating_sub(t) < window)
            .count()
    }

    fn record(&mut self, now_ms: u64, within: Duration) {
        let window = duration_ms(within);
        while self
            .times
            .front()
            .is_some_and(|&t| now_ms.saturating_sub(t) >= window)
        {
            self.times.pop_front();
        }
        self.times.push_back(now_ms);
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What the supervisor does next. Children are named by their index in start order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Stop these children (in this order: last started first), then start these (in start
    /// order), and forget these (they are not started again). `restarts` counts the restarts
    /// in the window, this one included (0 when nothing is started again).
    Restart {
        /// Restarts counted in the window, this one included.
        restarts: usize,
        /// Running siblings to stop first.
        stop: Vec<usize>,
        /// Children to start again, in start order.
        start: Vec<usize>,
        /// Children to remove from the supervisor.
        forget: Vec<usize>,
    },
    /// Too many restarts: stop every child and exit, for the parent to decide.
    Escalate {
        /// Restarts counted in the window, this one included.
        restarts: usize,
    },
}

/// The decision for child `exited` (an index into `children`, the restart types in start
/// order) ending with `reason` at `now_ms`. Records the restart in `history` when there is one.
pub fn decide(
    strategy: RestartStrategy,
    children: &[Restart],
    exited: usize,
    reason: &ExitReason,
    intensity: Intensity,
    history: &mut RestartHistory,
    now_ms: u64,
) -> Decision {
    let restart_exited = match children.get(exited) {
        Some(Restart::Permanent) => true,
        Some(Restart::Transient) => reason.is_failure(),
        Some(Restart::Temporary) | None => false,
    };
    if !restart_exited {
        return Decision::Restart {
            restarts: 0,
            stop: Vec::new(),
            start: Vec::new(),
            forget: vec![exited],
        };
    }
    let restarts = history.recent(now_ms, intensity.within) + 1;
    if restarts > intensity.max_restarts as usize {
        return Decision::Escalate { restarts };
    }
    history.record(now_ms, intensity.within);
    let affected: Vec<usize> = match strategy {
        RestartStrategy::OneForOne => vec![exited],
        RestartStrategy::OneForAll => (0..children.len()).collect(),
        RestartStrategy::RestForOne => (exited..children.len()).collect(),
    };
    let mut stop: Vec<usize> = affected.iter().copied().filter(|&i| i != exited).collect();
    stop.reverse();
    let (start, forget) = affected
        .into_iter()
        .partition(|&i| i == exited || children.get(i).is_some_and(|r| *r != Restart::Temporary));
    Decision::Restart {
        restarts,
        stop,
        start,
        forget,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Restart = Restart::Permanent;
    const T: Restart = Restart::Transient;
    const X: Restart = Restart::Temporary;

    fn failed() -> ExitReason {
        ExitReason::Failed("boom".into())
    }

    fn run(
        strategy: RestartStrategy,
        children: &[Restart],
        exited: usize,
        reason: &ExitReason,
    ) -> Decision {
        decide(
            strategy,
            children,
            exited,
            reason,
            Intensity::default(),
            &mut RestartHistory::default(),
            1_000,
        )
    }

    /// One permanent child failing again and again under `intensity`: the decision at each
    /// time asked.
    fn clock(intensity: Intensity) -> impl FnMut(u64) -> Decision {
        let mut history = RestartHistory::default();
        move |ms| {
            decide(
                RestartStrategy::OneForOne,
                &[P],
                0,
                &failed(),
                intensity,
                &mut history,
                ms,
            )
        }
    }

    /// A restart decision; the first restart in its window when it starts anything.
    fn restart(stop: &[usize], start: &[usize], forget: &[usize]) -> Decision {
        nth_restart(usize::from(!start.is_empty()), stop, start, forget)
    }

    fn nth_restart(restarts: usize, stop: &[usize], start: &[usize], forget: &[usize]) -> Decision {
        Decision::Restart {
            restarts,
            stop: stop.to_vec(),
            start: start.to_vec(),
            forget: forget.to_vec(),
        }
    }

    #[test]
    fn restart_types() {
        use RestartStrategy::OneForOne;
        assert_eq!(run(OneForOne, &[P], 0, &failed()), restart(&[], &[0], &[]));
        assert_eq!(
            run(OneForOne, &[P], 0, &ExitReason::Normal),
            restart(&[], &[0], &[])
        );
        assert_eq!(run(OneForOne, &[T], 0, &failed()), restart(&[], &[0], &[]));
        assert_eq!(
            run(OneForOne, &[T], 0, &ExitReason::Normal),
            restart(&[], &[], &[0])
        );
        assert_eq!(
            run(OneForOne, &[T], 0, &ExitReason::Shutdown),
            restart(&[], &[], &[0])
        );
        assert_eq!(run(OneForOne, &[X], 0, &failed()), restart(&[], &[], &[0]));
    }

    #[test]
    fn one_for_all_stops_the_others_last_first_and_starts_all_in_order() {
        assert_eq!(
            run(RestartStrategy::OneForAll, &[P, T, X, P], 1, &failed()),
            restart(&[3, 2, 0], &[0, 1, 3], &[2])
        );
    }

    #[test]
    fn rest_for_one_restarts_the_later_siblings_in_order() {
        assert_eq!(
            run(RestartStrategy::RestForOne, &[P, P, X, T], 1, &failed()),
            restart(&[3, 2], &[1, 3], &[2])
        );
        assert_eq!(
            run(RestartStrategy::RestForOne, &[P, P, P], 2, &failed()),
            restart(&[], &[2], &[])
        );
    }

    #[test]
    fn a_temporary_or_finished_child_does_not_disturb_its_siblings() {
        assert_eq!(
            run(RestartStrategy::OneForAll, &[P, X, P], 1, &failed()),
            restart(&[], &[], &[1])
        );
        assert_eq!(
            run(RestartStrategy::RestForOne, &[T, P], 0, &ExitReason::Normal),
            restart(&[], &[], &[0])
        );
    }

    #[test]
    fn intensity_escalates_on_one_restart_too_many_and_forgets_old_ones() {
        let intensity = Intensity {
            max_restarts: 2,
            within: Duration::from_secs(1),
        };
        let mut at = clock(intensity);
        assert_eq!(at(100), nth_restart(1, &[], &[0], &[]));
        assert_eq!(at(200), nth_restart(2, &[], &[0], &[]));
        assert_eq!(at(300), Decision::Escalate { restarts: 3 });
        // A second later the window holds nothing: restarts are allowed again.
        assert_eq!(at(1_250), nth_restart(1, &[], &[0], &[]));
        assert_eq!(at(1_300), nth_restart(2, &[], &[0], &[]));
        assert_eq!(at(1_350), Decision::Escalate { restarts: 3 });
    }

    #[test]
    fn restarts_at_the_start_of_the_clock_count() {
        let intensity = Intensity {
            max_restarts: 1,
            within: Duration::from_secs(60),
        };
        let mut at = clock(intensity);
        assert_eq!(at(0), restart(&[], &[0], &[]));
        assert_eq!(at(3), Decision::Escalate { restarts: 2 });
    }

    #[test]
    fn a_backoff_doubles_with_each_restart_in_the_window_up_to_its_longest() {
        let ms = Duration::from_millis;
        let backoff = Backoff::exponential(ms(100), ms(1_000));
        assert_eq!(backoff.delay(1), ms(100));
        assert_eq!(backoff.delay(2), ms(200));
        assert_eq!(backoff.delay(4), ms(800));
        assert_eq!(backoff.delay(5), ms(1_000), "capped");
        assert_eq!(backoff.delay(usize::MAX), ms(1_000), "no overflow");
        assert_eq!(
            backoff.delay(0),
            ms(100),
            "a restart waits at least the first"
        );
        assert_eq!(Backoff::default().delay(3), Duration::ZERO, "OTP: at once");
        // A longest wait below the first is the first.
        assert_eq!(Backoff::exponential(ms(500), ms(10)).delay(3), ms(500));
    }

    #[test]
    fn zero_intensity_escalates_at_once() {
        let decision = decide(
            RestartStrategy::OneForOne,
            &[P],
            0,
            &failed(),
            Intensity {
                max_restarts: 0,
                within: Duration::from_secs(5),
            },
            &mut RestartHistory::default(),
            0,
        );
        assert_eq!(decision, Decision::Escalate { restarts: 1 });
    }
}
