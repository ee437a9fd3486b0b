//! `LlmStream`: one LLM call, streamed on its own task (or polled once inline), answered
//! `llm.result` or `llm.failed`.

use std::panic::AssertUnwindSafe;

use futures::FutureExt as _;
use motet_directives::results::{LLM_FAILED, LLM_RESULT, LlmFailed, LlmResult};
use motet_directives::{LlmStream, PromptCache};
use motet_providers::{CallKind, ProviderError};

use crate::agent::host::call::{CallFailure, llm_error, stream_call};
use crate::agent::host::tracked::{Job, Tracked};
use crate::agent::signals::result_signal;
use crate::agent::trace;
use crate::tool::output::panic_message;

/// Starts the call `call` for `cause`.
pub(super) fn stream(job: &Job<'_>, tracked: &mut Tracked, mut call: LlmStream) {
    let (here, cause) = (job.here, job.cause);
    // One prompt cache key per thread: its calls share their prefixes.
    let cache = &mut call.request.options.prompt_cache;
    if cache.key.is_none() {
        cache.key = Some(PromptCache::key_for(&[here.agent, here.thread]));
    }
    let iteration = match cause
        .request_id()
        .and_then(|r| tracked.open.as_mut()?.spans.get_mut(r))
    {
        Some(open) => {
            open.llm_calls += 1;
            open.llm_calls
        }
        None => 0,
    };
    let span = trace::chat_span(&call.request, job.parent.clone(), iteration);
    let core = here.core.clone();
    let task_cause = cause.clone();
    let source = here.source();
    let scope = tracked.scope(here, cause, CallKind::Turn);
    let work = Box::pin(async move {
        let call_id = call.call_id;
        let streamed = stream_call(
            &core,
            call.request,
            Some(&call.budget_approved),
            &scope,
            &source,
            &task_cause,
            &call_id,
            span,
        );
        // A panic in the call (a provider's bug, a client's) must still answer the strategy,
        // or the request waits for a result that never comes.
        let outcome = AssertUnwindSafe(streamed)
            .catch_unwind()
            .await
            .unwrap_or_else(|payload| {
                let message = panic_message(payload.as_ref());
                tracing::error!(%message, "LLM call panicked");
                Err(CallFailure {
                    error: ProviderError::Protocol {
                        message: format!("the LLM call panicked: {message}"),
                    },
                    retried: false,
                })
            });
        match outcome {
            Ok(response) => result_signal(
                LLM_RESULT,
                &source,
                &task_cause,
                LlmResult { call_id, response },
            ),
            Err(error) => result_signal(
                LLM_FAILED,
                &source,
                &task_cause,
                LlmFailed {
                    call_id,
                    error: llm_error(&error.error, error.retried),
                },
            ),
        }
    });
    tracked.start(job, work);
}
