//! When a policy asks for a summary: [`ContextPolicy::summary_trigger`], the one rule of the
//! policy that reads the thread (the thread itself keeps the policy in force, so the policy's
//! own file does not name it).

use super::{ContextPolicy, Summarization, SummaryTrigger};
use crate::thread::Thread;

impl ContextPolicy {
    /// Which of the policy's summary triggers fire for `thread` after a projection that was
    /// `truncated` (seed 001 §8.3). `None` unless summarization is [`Summarization::RequestNew`];
    /// the first ground that holds, in the order truncation, entries, tokens.
    pub fn summary_trigger(&self, thread: &Thread, truncated: bool) -> Option<SummaryTrigger> {
        if self.summarization != Summarization::RequestNew {
            return None;
        }
        if truncated {
            return Some(SummaryTrigger::Truncated);
        }
        let entries = thread.entries_since_summary();
        if self.summary_after_entries > 0 && entries >= u64::from(self.summary_after_entries) {
            return Some(SummaryTrigger::Entries { entries });
        }
        if self.summary_over_tokens == 0 {
            return None;
        }
        // Read only when asked for: it sums the entries no summary covers.
        let tokens = thread.tokens_since_summary();
        (tokens > u64::from(self.summary_over_tokens)).then_some(SummaryTrigger::Tokens { tokens })
    }
}
