//! What a ReAct request does after an LLM call failed: try the same model again, shrink its
//! context, fall back to the next model of the agent's chain, or fail. A pure decision; the
//! strategy carries it out.
//!
//! A model chain is the agent's model followed by its fallbacks
//! ([`ReActConfig::fallbacks`](super::ReActConfig::fallbacks)). A request starts on the first
//! and moves down the chain, never back up, only between calls (a failed call kept nothing of
//! its turn): the next model reads the thread as its own dialect renders it, with the
//! continuity data it cannot read (another provider's reasoning, opaque blocks) dropped.

use motet_directives::results::{LlmError, LlmErrorKind};

/// What to do after a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterFailure {
    /// Call the same model again.
    Retry,
    /// Call the same model again with half the input budget (the model counted more tokens
    /// than the estimate).
    Shrink,
    /// Call the model at this index of the chain from now on.
    Switch(usize),
    /// Fail the request.
    Fail,
}

/// Whether a failure of this kind is one a different model may not have: the provider is
/// overloaded, down or unreachable, out of capacity for the account, or the model's window is
/// too small for the context.
pub(crate) fn switches(kind: &LlmErrorKind) -> bool {
    matches!(
        kind,
        LlmErrorKind::Overloaded
            | LlmErrorKind::Server
            | LlmErrorKind::Connect
            | LlmErrorKind::Timeout
            | LlmErrorKind::RateLimited
            | LlmErrorKind::ContextLength
    )
}

/// The decision after `error` ended a call to the model at `current` of a chain of `chain`
/// models, with `retries` of `max_retries` already spent on this call.
///
/// - A failure a retry may mend (the client did not retry it already) is retried on the same
///   model while retries remain; the chain is for failures that outlast them.
/// - A failure another model may not have moves to the next model, when there is one. A
///   context too long for the model moves down the chain before it shrinks the context: the
///   next model is usually there for its larger window.
/// - A context too long for the last model shrinks while retries remain.
/// - Anything else fails the request.
pub(crate) fn after_failure(
    error: &LlmError,
    retries: u32,
    max_retries: u32,
    current: usize,
    chain: usize,
) -> AfterFailure {
    let retries_left = retries < max_retries;
    let context = error.kind == LlmErrorKind::ContextLength;
    if error.retryable && !context && retries_left {
        return AfterFailure::Retry;
    }
    let next = current.saturating_add(1);
    if switches(&error.kind) && next < chain {
        return AfterFailure::Switch(next);
    }
    if context && retries_left {
        return AfterFailure::Shrink;
    }
    AfterFailure::Fail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: LlmErrorKind, retryable: bool) -> LlmError {
        LlmError {
            kind,
            message: "it failed".to_owned(),
            retryable,
            soft_limit: None,
        }
    }

    #[test]
    fn a_retryable_failure_is_retried_on_the_same_model_while_retries_remain() {
        let overloaded = error(LlmErrorKind::Overloaded, true);
        assert_eq!(after_failure(&overloaded, 0, 2, 0, 2), AfterFailure::Retry);
        assert_eq!(after_failure(&overloaded, 1, 2, 0, 2), AfterFailure::Retry);
        // Retries spent: the next model.
        assert_eq!(
            after_failure(&overloaded, 2, 2, 0, 2),
            AfterFailure::Switch(1)
        );
        // Retries spent and no next model: the request fails.
        assert_eq!(after_failure(&overloaded, 2, 2, 1, 2), AfterFailure::Fail);
    }

    #[test]
    fn an_outage_the_client_already_retried_moves_down_the_chain_at_once() {
        for kind in [
            LlmErrorKind::Overloaded,
            LlmErrorKind::Server,
            LlmErrorKind::Connect,
            LlmErrorKind::Timeout,
            LlmErrorKind::RateLimited,
        ] {
            let failed = error(kind.clone(), false);
            assert_eq!(
                after_failure(&failed, 0, 2, 0, 3),
                AfterFailure::Switch(1),
                "{kind:?}"
            );
            assert_eq!(
                after_failure(&failed, 0, 2, 1, 3),
                AfterFailure::Switch(2),
                "{kind:?}"
            );
            assert_eq!(
                after_failure(&failed, 0, 2, 2, 3),
                AfterFailure::Fail,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_context_too_long_moves_down_the_chain_before_it_shrinks() {
        let long = error(LlmErrorKind::ContextLength, false);
        assert_eq!(after_failure(&long, 0, 2, 0, 2), AfterFailure::Switch(1));
        assert_eq!(after_failure(&long, 0, 2, 1, 2), AfterFailure::Shrink);
        assert_eq!(after_failure(&long, 2, 2, 1, 2), AfterFailure::Fail);
        // Without a chain, what it always did: shrink while retries remain.
        assert_eq!(after_failure(&long, 0, 2, 0, 1), AfterFailure::Shrink);
    }

    #[test]
    fn failures_another_model_would_repeat_never_switch() {
        for kind in [
            LlmErrorKind::Auth,
            LlmErrorKind::InvalidRequest,
            LlmErrorKind::ContentFiltered,
            LlmErrorKind::Unsupported,
            LlmErrorKind::Config,
            LlmErrorKind::MaxTokens,
        ] {
            let failed = error(kind.clone(), false);
            assert_eq!(
                after_failure(&failed, 0, 2, 0, 3),
                AfterFailure::Fail,
                "{kind:?}"
            );
        }
        // A mid-stream break the strategy may retry is retried, then fails: the same request
        // to another provider would break the same way only by chance, but it is not an outage.
        let truncated = error(LlmErrorKind::StreamTruncated, true);
        assert_eq!(after_failure(&truncated, 0, 2, 0, 3), AfterFailure::Retry);
        assert_eq!(after_failure(&truncated, 2, 2, 0, 3), AfterFailure::Fail);
    }
}
