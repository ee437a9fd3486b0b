//! Errors of the agent core. Comparable, so tests can `assert_eq!` them.

/// A thread operation that could not be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadError {
    /// No entry has this sequence number.
    #[error("no entry with seq {seq} (the thread has {len} entries)")]
    NoSuchSeq {
        /// The sequence number asked for.
        seq: u64,
        /// How many entries the thread has.
        len: u64,
    },
}

/// Why a projection could not produce a valid history within the budget.
///
/// The projector never silently emits a broken history (a tool call without its results, or an
/// empty window that drops what the model must see): it reports these instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// The tools' schemas, system prompt, summary and pending input alone do not fit.
    #[error(
        "tools, system, summary and pending input need {needed} tokens but the budget is {budget}"
    )]
    FixedSegmentsOverBudget {
        /// Estimated tokens of the fixed segments.
        needed: u64,
        /// The input budget (`max_input_tokens - reserve_output_tokens`).
        budget: u64,
    },
    /// The newest history group (for example an assistant turn and its tool results) does not fit
    /// in what the fixed segments leave.
    #[error(
        "the newest history group (seq {from_seq}..={to_seq}) needs {needed} tokens, {available} available"
    )]
    NewestGroupOverBudget {
        /// First entry of the group.
        from_seq: u64,
        /// Last entry of the group.
        to_seq: u64,
        /// Estimated tokens of the group.
        needed: u64,
        /// Tokens left for history.
        available: u64,
    },
}

/// A strategy could not handle a signal. State is unchanged when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategyError {
    /// The signal's data did not match its type's payload.
    #[error("invalid data for `{signal_type}`: {message}")]
    InvalidData {
        /// The signal's type.
        signal_type: String,
        /// The parser's description of the problem.
        message: String,
    },
    /// The strategy does not handle this signal type.
    #[error("unhandled signal type `{signal_type}`")]
    Unhandled {
        /// The signal's type.
        signal_type: String,
    },
    /// A signal the strategy emits could not be built.
    #[error("could not build the `{signal_type}` signal: {message}")]
    Emit {
        /// The type of the signal being built.
        signal_type: String,
        /// The builder's error.
        message: String,
    },
}

/// A summary call that cannot be built (`summary_request`): decided by the strategy before it
/// asks the runtime for anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SummaryError {
    /// The range is empty or reaches past the thread's end.
    #[error("entries {from_seq}..={to_seq} are not in the thread (it has {count})")]
    OutOfRange {
        /// First entry asked for.
        from_seq: u64,
        /// Last entry asked for (inclusive).
        to_seq: u64,
        /// How many entries the thread has.
        count: u64,
    },
    /// The range holds no message, tool result or summary: nothing a summary could say.
    #[error("there is nothing in entries {from_seq}..={to_seq} to summarize")]
    Empty {
        /// First entry of the range.
        from_seq: u64,
        /// Last entry of the range (inclusive).
        to_seq: u64,
    },
}
