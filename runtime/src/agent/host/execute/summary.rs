//! `Summarize`: the summary call the strategy built (instructions, transcript, model), streamed
//! as it is and answered `summary.result` (with the call's usage) or `summary.failed`.

use motet_directives::Summarize;
use motet_directives::results::{SUMMARY_FAILED, SUMMARY_RESULT, SummaryFailed, SummaryResult};
use motet_providers::CallKind;

use crate::agent::host::call::stream_call;
use crate::agent::host::tracked::{Job, Tracked};
use crate::agent::signals::result_signal;
use crate::agent::trace;

/// Starts the summary call `summarize` carries, for `cause`.
pub(super) fn summarize(job: &Job<'_>, tracked: &mut Tracked, summarize: Summarize) {
    let (here, cause) = (job.here, job.cause);
    let core = here.core.clone();
    let task_cause = cause.clone();
    let source = here.source();
    let call_id = summarize.call_id;
    let request = summarize.request;
    let span = trace::directive_span("summarize", here.thread, job.parent.clone());
    let scope = tracked.scope(here, cause, CallKind::Summary);
    let work = Box::pin(async move {
        let chat = trace::chat_span(&request, span.id(), 0);
        // No person is asked about a summary: only the hard budgets check it.
        let outcome = stream_call(
            &core,
            request,
            None,
            &scope,
            &source,
            &task_cause,
            &call_id,
            chat,
        )
        .await
        .map(|response| (response.message.to_string(), response.usage))
        .map_err(|failure| failure.error.to_string());
        match outcome {
            // With its usage: the strategy counts it with its request's and its thread's.
            Ok((content, usage)) => result_signal(
                SUMMARY_RESULT,
                &source,
                &task_cause,
                SummaryResult::new(call_id, content).with_usage(usage),
            ),
            Err(message) => result_signal(
                SUMMARY_FAILED,
                &source,
                &task_cause,
                SummaryFailed { call_id, message },
            ),
        }
    });
    tracked.start(job, work);
}
