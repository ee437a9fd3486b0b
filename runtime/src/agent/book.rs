//! Which request a thread is working on, which wait their turn, and what a new one does: the
//! decisions of a thread, pure so they are tested without an actor. The thread actor carries
//! them out (cancelling, stepping the strategy, recording the request):
//! - [`screen`]: a signal that reaches the thread is dropped (the stale result of
//!   a request's work), answers a queued request it cancels, or goes on;
//! - [`arrival`]: a request sent again after its process stopped is carried on;
//! - [`RequestBook::admit`]: a request runs, waits, joins the running one, passes to the
//!   strategy, or interrupts the running one ([`INTERRUPTED`]);
//! - [`RequestBook::expire`]: an asker that stopped waiting cancels its request, if still open;
//! - [`decide_again`]: a new request whose commit lost a race is decided again, once;
//! - [`retires`]: a thread idle long enough stops.

use std::collections::VecDeque;

/// What happens to a request that arrives while another runs on the same thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestPolicy {
    /// Wait for the running one to finish, then run (requests on a thread run in order).
    #[default]
    Queue,
    /// Hand it to the strategy at once (ReAct answers `agent.failed` with reason `busy`).
    Reject,
    /// Cancel the running one, then run this one.
    Interrupt,
}

/// What to do with a request that arrives.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission<T> {
    /// Hand it to the strategy now; it is the running request.
    Run(T),
    /// Hand it to the strategy now while another runs (the `Reject` policy: the strategy
    /// refuses it as busy).
    Pass(T),
    /// It waits behind the running request.
    Queued,
    /// It is the running request already (a resume of it): whoever asked waits for its reply.
    Joined,
    /// Cancel the running request first (saying [`INTERRUPTED`]), then admit this one again
    /// with [`RequestBook::readmit`].
    Interrupt {
        /// The request to cancel.
        running: String,
        /// The request that asked.
        item: T,
    },
}

/// Why a running request is cancelled for a newer one ([`RequestPolicy::Interrupt`]).
pub(crate) const INTERRUPTED: &str = "interrupted by a newer request";

/// What a thread does with a signal that reaches it, before anything else.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Screen<T> {
    /// On to the strategy (through admission, for a request).
    Pass,
    /// Dropped: the result of work for a request that ended ([`reports_work`]).
    Stale,
    /// A cancel of request `id`, which waited its turn and was taken out of the queue: the
    /// strategy never saw it, so the thread answers it (cancelled before it ran).
    CancelledQueued {
        /// The request.
        id: String,
        /// What it was admitted with.
        item: T,
    },
}

/// Whether a new request of type `ty`, whose commit found the thread moved on or taken over by
/// another writer (`lost_race`), is decided again on the stored thread: once (`tried` says
/// whether it was already), and only a question (`agent.request`), of which nothing has run yet.
pub(crate) fn decide_again(ty: &str, lost_race: bool, tried: bool) -> bool {
    lost_race && !tried && ty == motet_agents::AGENT_REQUEST
}

/// Whether a thread stops for being idle: nothing open or pending (`quiet`), and no message
/// for `idle_for`, at least its `timeout` (never without one).
pub(crate) fn retires(
    quiet: bool,
    idle_for: std::time::Duration,
    timeout: Option<std::time::Duration>,
) -> bool {
    quiet && timeout.is_some_and(|timeout| idle_for >= timeout)
}

/// What a request signal that arrives does, given the request the stored thread was left in
/// the middle of by a process that stopped (`interrupted`, until something carries it on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// As it is: a new request (or a resume of another).
    AsSent,
    /// The interrupted request sent again under its own id (a batch that names its requests,
    /// restarted): carried on as a resume of it, its question not committed a second time.
    CarryOn,
    /// A resume of the interrupted request, or the request itself: it is no longer owed.
    Settles,
}

/// Decides [`Arrival`] for a signal of type `ty` with request id `id`.
pub(crate) fn arrival(ty: &str, id: &str, interrupted: Option<&str>) -> Arrival {
    if interrupted != Some(id) {
        return Arrival::AsSent;
    }
    if ty == motet_agents::AGENT_REQUEST {
        Arrival::CarryOn
    } else {
        Arrival::Settles
    }
}

/// Whether a signal of type `ty` reports on work a request set going (an LLM call, a tool
/// run). When that request has ended, its work was aborted with it, and such a signal raced the
/// abort: the thread drops it rather than hand the strategy a result it could only note as
/// stale — a note that would be in the thread or not depending on who won the race. (Summary
/// results are not among them: a summary is kept whatever became of the request that asked.)
pub(crate) fn reports_work(ty: &str) -> bool {
    use motet_directives::results::{LLM_FAILED, LLM_RESULT, TOOL_PAUSED, TOOL_RESULT};
    matches!(ty, LLM_RESULT | LLM_FAILED | TOOL_RESULT | TOOL_PAUSED)
}

/// The first decision on a signal of type `ty` for request `request` (if any) that reaches a
/// thread with `book` (none while no request is open); `ended` says whether a request has
/// ended (the runtime's records know requests the book forgot).
pub(crate) fn screen<T>(
    book: Option<&mut RequestBook<T>>,
    ty: &str,
    request: Option<&str>,
    ended: impl FnOnce(&str) -> bool,
) -> Screen<T> {
    let Some(id) = request else {
        return Screen::Pass;
    };
    if reports_work(ty) && ended(id) {
        return Screen::Stale;
    }
    if ty == motet_agents::AGENT_CANCEL
        && let Some(item) = book.and_then(|book| book.withdraw(id))
    {
        return Screen::CancelledQueued {
            id: id.to_owned(),
            item,
        };
    }
    Screen::Pass
}

/// One thread's requests: the running one and those queued behind it, in arrival order.
#[derive(Debug)]
pub(crate) struct RequestBook<T> {
    running: Option<String>,
    /// The waiting requests by id, in arrival order.
    queue: VecDeque<(String, T)>,
}

impl<T> Default for RequestBook<T> {
    fn default() -> Self {
        Self {
            running: None,
            queue: VecDeque::new(),
        }
    }
}

impl<T> RequestBook<T> {
    /// The asker of request `id` stopped waiting: whether the request is cancelled (it is
    /// still open, running or queued) — else it ended and was answered, and nothing changes.
    pub(crate) fn expire(&self, id: &str) -> bool {
        self.holds(id)
    }

    /// Request `id` arrives with `item` (what the actor will hand the strategy).
    pub(crate) fn admit(&mut self, id: &str, item: T, policy: RequestPolicy) -> Admission<T> {
        let Some(running) = &self.running else {
            self.running = Some(id.to_owned());
            return Admission::Run(item);
        };
        if running == id {
            return Admission::Joined;
        }
        match policy {
            RequestPolicy::Queue => {
                self.queue.push_back((id.to_owned(), item));
                Admission::Queued
            }
            RequestPolicy::Reject => Admission::Pass(item),
            RequestPolicy::Interrupt => Admission::Interrupt {
                running: running.clone(),
                item,
            },
        }
    }

    /// Request `id` again after the running one was told to stop: it runs if that one ended,
    /// else it waits (a request is interrupted once, not again and again).
    pub(crate) fn readmit(&mut self, id: &str, item: T) -> Admission<T> {
        self.admit(id, item, RequestPolicy::Queue)
    }

    /// Request `id` ended; true when it was the running one (the next may start).
    pub(crate) fn finished(&mut self, id: &str) -> bool {
        if self.running.as_deref() == Some(id) {
            self.running = None;
            return true;
        }
        false
    }

    /// The next queued request, when none runs; it becomes the running one once admitted.
    pub(crate) fn next(&mut self) -> Option<T> {
        if self.running.is_some() {
            return None;
        }
        self.queue.pop_front().map(|(_, item)| item)
    }

    /// Takes request `id` out of the queue (it was cancelled before its turn); `None` when it
    /// is not waiting (running, ended or unknown).
    pub(crate) fn withdraw(&mut self, id: &str) -> Option<T> {
        let at = self.queue.iter().position(|(queued, _)| queued == id)?;
        self.queue.remove(at).map(|(_, item)| item)
    }

    /// The running request.
    pub(crate) fn running(&self) -> Option<&str> {
        self.running.as_deref()
    }

    /// Whether request `id` runs or waits its turn here (it has not ended).
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.running.as_deref() == Some(id) || self.queue.iter().any(|(queued, _)| queued == id)
    }

    /// Nothing runs and nothing waits.
    pub(crate) fn is_quiet(&self) -> bool {
        self.running.is_none() && self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> RequestBook<&'static str> {
        RequestBook::default()
    }

    #[test]
    fn the_interrupted_request_sent_again_is_carried_on_and_others_pass() {
        use motet_agents::{AGENT_REQUEST, AGENT_RESUME};
        assert_eq!(arrival(AGENT_REQUEST, "r1", Some("r1")), Arrival::CarryOn);
        assert_eq!(arrival(AGENT_RESUME, "r1", Some("r1")), Arrival::Settles);
        assert_eq!(arrival(AGENT_REQUEST, "r2", Some("r1")), Arrival::AsSent);
        assert_eq!(arrival(AGENT_REQUEST, "r1", None), Arrival::AsSent);
        assert_eq!(arrival(AGENT_RESUME, "r2", None), Arrival::AsSent);
    }

    #[test]
    fn the_stale_result_of_an_ended_requests_work_is_dropped_and_others_pass() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Queue);
        let ended = |id: &str| id == "old";
        assert_eq!(
            screen(Some(&mut book), "llm.result", Some("old"), ended),
            Screen::Stale
        );
        assert_eq!(
            screen(Some(&mut book), "tool.result", Some("old"), ended),
            Screen::Stale
        );
        assert_eq!(
            screen(Some(&mut book), "llm.result", Some("r1"), ended),
            Screen::Pass
        );
        assert_eq!(
            screen(Some(&mut book), "summary.result", Some("old"), ended),
            Screen::Pass
        );
        assert_eq!(
            screen(Some(&mut book), "user.defined", None, ended),
            Screen::Pass
        );
        let none: Option<&mut RequestBook<&str>> = None;
        assert_eq!(
            screen(none, "llm.result", Some("old"), ended),
            Screen::Stale,
            "no book"
        );
    }

    #[test]
    fn a_cancel_of_a_queued_request_takes_it_out_for_the_thread_to_answer() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Queue);
        book.admit("r2", "two", RequestPolicy::Queue);
        let never = |_: &str| false;
        assert_eq!(
            screen(Some(&mut book), "agent.cancel", Some("r2"), never),
            Screen::CancelledQueued {
                id: "r2".into(),
                item: "two"
            }
        );
        assert!(!book.holds("r2"));
        // The running request's cancel goes to the strategy, which stops its work.
        assert_eq!(
            screen(Some(&mut book), "agent.cancel", Some("r1"), never),
            Screen::Pass
        );
        assert_eq!(
            screen(Some(&mut book), "agent.cancel", Some("r9"), never),
            Screen::Pass
        );
    }

    #[test]
    fn an_expired_wait_cancels_an_open_request_and_not_an_ended_one() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Queue);
        book.admit("r2", "two", RequestPolicy::Queue);
        assert!(book.expire("r1"), "running");
        assert!(book.expire("r2"), "queued");
        assert!(book.finished("r1"));
        assert!(!book.expire("r1"), "answered already");
    }

    #[test]
    fn only_a_new_question_that_lost_a_race_is_decided_again_and_once() {
        assert!(decide_again("agent.request", true, false));
        assert!(!decide_again("agent.request", true, true), "once");
        assert!(!decide_again("agent.request", false, false), "no race lost");
        assert!(
            !decide_again("llm.result", true, false),
            "work of a running request"
        );
        assert!(!decide_again("agent.resume", true, false));
    }

    #[test]
    fn a_thread_retires_when_quiet_past_its_idle_timeout() {
        use std::time::Duration;
        let minute = Some(Duration::from_secs(60));
        assert!(retires(true, Duration::from_secs(60), minute));
        assert!(!retires(true, Duration::from_secs(59), minute));
        assert!(!retires(false, Duration::from_secs(600), minute), "busy");
        assert!(!retires(true, Duration::from_secs(600), None), "no timeout");
    }

    #[test]
    fn a_withdrawn_request_leaves_the_queue_and_the_others_keep_their_order() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Queue);
        book.admit("r2", "two", RequestPolicy::Queue);
        book.admit("r3", "three", RequestPolicy::Queue);
        assert_eq!(book.withdraw("r2"), Some("two"));
        assert_eq!(book.withdraw("r2"), None, "once");
        assert_eq!(book.withdraw("r1"), None, "the running one is not waiting");
        assert_eq!(book.withdraw("r9"), None);
        assert!(book.finished("r1"));
        assert_eq!(book.next(), Some("three"));
        assert_eq!(book.next(), None, "nothing else waits");
    }

    #[test]
    fn the_results_of_a_requests_work_are_recognised_and_summaries_are_not() {
        for ty in ["llm.result", "llm.failed", "tool.result", "tool.paused"] {
            assert!(reports_work(ty), "{ty}");
        }
        for ty in [
            "summary.result",
            "summary.failed",
            "agent.request",
            "agent.cancel",
            "agent.steer",
            "user.defined",
        ] {
            assert!(!reports_work(ty), "{ty}");
        }
    }

    #[test]
    fn a_request_is_held_from_its_arrival_until_it_ends() {
        let mut book = book();
        assert!(!book.holds("r1"));
        book.admit("r1", "one", RequestPolicy::Queue);
        book.admit("r2", "two", RequestPolicy::Queue);
        assert!(book.holds("r1"), "running");
        assert!(book.holds("r2"), "queued");
        assert!(!book.holds("r3"), "never arrived");
        assert!(book.finished("r1"));
        assert!(!book.holds("r1"), "ended");
        assert_eq!(book.withdraw("r2"), Some("two"));
        assert!(!book.holds("r2"), "withdrawn");
    }

    #[test]
    fn the_first_request_runs() {
        let mut book = book();
        assert!(book.is_quiet());
        assert_eq!(
            book.admit("r1", "one", RequestPolicy::Queue),
            Admission::Run("one")
        );
        assert_eq!(book.running(), Some("r1"));
        assert!(!book.is_quiet());
    }

    #[test]
    fn queued_requests_run_in_arrival_order_once_the_running_one_ends() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Queue);
        assert_eq!(
            book.admit("r2", "two", RequestPolicy::Queue),
            Admission::Queued
        );
        assert_eq!(
            book.admit("r3", "three", RequestPolicy::Queue),
            Admission::Queued
        );
        assert_eq!(book.next(), None, "r1 still runs");
        assert!(book.finished("r1"));
        assert_eq!(book.next(), Some("two"));
        assert_eq!(
            book.admit("r2", "two", RequestPolicy::Queue),
            Admission::Run("two")
        );
        assert_eq!(book.next(), None);
        assert!(book.finished("r2"));
        assert_eq!(book.next(), Some("three"));
        assert_eq!(
            book.admit("r3", "three", RequestPolicy::Queue),
            Admission::Run("three")
        );
        assert!(book.finished("r3"));
        assert!(book.is_quiet());
    }

    #[test]
    fn a_rejecting_thread_passes_the_newcomer_to_the_strategy_and_keeps_the_running_one() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Reject);
        assert_eq!(
            book.admit("r2", "two", RequestPolicy::Reject),
            Admission::Pass("two")
        );
        assert_eq!(book.running(), Some("r1"));
        // The refused request's end is not the running one's.
        assert!(!book.finished("r2"));
        assert_eq!(book.running(), Some("r1"));
    }

    #[test]
    fn an_interrupting_request_cancels_the_running_one_then_runs_or_waits() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Interrupt);
        let admission = book.admit("r2", "two", RequestPolicy::Interrupt);
        assert_eq!(
            admission,
            Admission::Interrupt {
                running: "r1".into(),
                item: "two"
            }
        );
        // The cancel ended r1: r2 runs.
        assert!(book.finished("r1"));
        assert_eq!(book.readmit("r2", "two"), Admission::Run("two"));
        // r3 interrupts r2, whose cancel does not end it at once: r3 waits, not interrupting
        // again.
        let Admission::Interrupt { item, .. } = book.admit("r3", "three", RequestPolicy::Interrupt)
        else {
            panic!("r2 runs: r3 interrupts it");
        };
        assert_eq!(book.readmit("r3", item), Admission::Queued);
        assert!(book.finished("r2"));
        assert_eq!(book.next(), Some("three"));
    }

    #[test]
    fn an_unknown_request_ending_changes_nothing() {
        let mut book = book();
        book.admit("r1", "one", RequestPolicy::Queue);
        assert!(!book.finished("nobody"));
        assert_eq!(book.running(), Some("r1"));
    }

    #[test]
    fn a_request_that_arrives_again_while_it_runs_joins_it() {
        for policy in [
            RequestPolicy::Queue,
            RequestPolicy::Reject,
            RequestPolicy::Interrupt,
        ] {
            let mut book = book();
            assert_eq!(book.admit("r1", "first", policy), Admission::Run("first"));
            assert_eq!(book.admit("r1", "resume", policy), Admission::Joined);
            assert_eq!(book.running(), Some("r1"));
            assert!(book.finished("r1"));
            assert_eq!(book.next(), None, "{policy:?}: nothing was queued");
        }
    }
}
