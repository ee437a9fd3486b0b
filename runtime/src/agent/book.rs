//! Which request a thread is working on, which wait their turn, and what a new one does: the
//! decisions of a thread's request book, pure so they are tested without an actor. The thread
//! actor carries them out (cancelling, stepping the strategy, recording the request).

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
    /// Cancel the running request first, then admit this one again with [`RequestBook::readmit`].
    Interrupt {
        /// The request to cancel.
        running: String,
        /// The request that asked.
        item: T,
    },
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
