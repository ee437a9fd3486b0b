//! What the runtime's agents have done so far, counted as they do it: LLM calls, tool calls and
//! tokens, across every agent and thread. Cheap to keep (a few relaxed atomic additions per
//! call) and cheap to read, so a progress display can poll it while a batch runs.

use std::sync::atomic::{AtomicU64, Ordering};

use motet_directives::Usage;

/// The runtime's running counts, shared by every thread actor.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    llm_calls: AtomicU64,
    llm_failures: AtomicU64,
    tool_calls: AtomicU64,
    tool_errors: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
}

impl Activity {
    /// One LLM call answered, with its usage.
    pub(crate) fn llm_answered(&self, usage: &Usage) {
        self.llm_calls.fetch_add(1, Ordering::Relaxed);
        self.input_tokens
            .fetch_add(usage.input_tokens, Ordering::Relaxed);
        self.output_tokens
            .fetch_add(usage.output_tokens, Ordering::Relaxed);
    }

    /// One LLM call failed (after the client's own retries).
    pub(crate) fn llm_failed(&self) {
        self.llm_calls.fetch_add(1, Ordering::Relaxed);
        self.llm_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// One tool call ran to a result; `is_error` when the result is an error.
    pub(crate) fn tool_ran(&self, is_error: bool) {
        self.tool_calls.fetch_add(1, Ordering::Relaxed);
        if is_error {
            self.tool_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts now. Each count is read on its own, so a snapshot taken while calls finish
    /// may pair one call's tokens with the count before it.
    pub(crate) fn snapshot(&self) -> ActivitySnapshot {
        ActivitySnapshot {
            llm_calls: self.llm_calls.load(Ordering::Relaxed),
            llm_failures: self.llm_failures.load(Ordering::Relaxed),
            tool_calls: self.tool_calls.load(Ordering::Relaxed),
            tool_errors: self.tool_errors.load(Ordering::Relaxed),
            input_tokens: self.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
        }
    }
}

/// What a runtime's agents have done since it was built ([`super::Runtime::activity`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ActivitySnapshot {
    /// LLM calls finished, answered or failed (summary calls included).
    pub llm_calls: u64,
    /// Of those, the ones that failed.
    pub llm_failures: u64,
    /// Tool calls that ran to a result (a call paused for a person counts once it runs).
    pub tool_calls: u64,
    /// Of those, the ones whose result is an error.
    pub tool_errors: u64,
    /// Input (prompt) tokens the providers reported, cached ones included.
    pub input_tokens: u64,
    /// Output tokens the providers reported.
    pub output_tokens: u64,
}

impl ActivitySnapshot {
    /// Input and output tokens together.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_kind() {
        let activity = Activity::default();
        let usage = Usage {
            input_tokens: 120,
            output_tokens: 30,
            ..Usage::default()
        };
        activity.llm_answered(&usage);
        activity.llm_answered(&usage);
        activity.llm_failed();
        activity.tool_ran(false);
        activity.tool_ran(true);
        let now = activity.snapshot();
        assert_eq!(now.llm_calls, 3);
        assert_eq!(now.llm_failures, 1);
        assert_eq!(now.tool_calls, 2);
        assert_eq!(now.tool_errors, 1);
        assert_eq!((now.input_tokens, now.output_tokens), (240, 60));
        assert_eq!(now.tokens(), 300);
    }
}
