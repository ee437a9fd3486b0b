//! `Summarize`: an LLM call over a range of the thread's entries, answered `summary.result` or
//! `summary.failed`.

use motet_directives::results::{SUMMARY_FAILED, SUMMARY_RESULT, SummaryFailed, SummaryResult};
use motet_directives::{LlmRequest, Message, Summarize};
use motet_providers::CallKind;
use motet_signals::Signal;

use crate::agent::host::call::{SUMMARY_INSTRUCTIONS, stream_call};
use crate::agent::host::tracked::{Here, Run, Tracked};
use crate::agent::signals::result_signal;
use crate::agent::trace;

/// Starts the summary `summarize` asks for, of `transcript`, for `cause`.
pub(super) fn summarize(
    here: &Here<'_>,
    tracked: &mut Tracked,
    cause: &Signal,
    summarize: Summarize,
    transcript: String,
    parent: Option<tracing::Id>,
    run: Run,
) {
    let model = summarize
        .model
        .clone()
        .or_else(|| tracked.last_model.clone());
    let core = here.core.clone();
    let task_cause = cause.clone();
    let source = here.source();
    let call_id = summarize.call_id;
    let instructions = summarize
        .instructions
        .unwrap_or_else(|| SUMMARY_INSTRUCTIONS.to_owned());
    let span = trace::directive_span("summarize", here.thread, parent);
    let scope = here.scope(cause, CallKind::Summary);
    let work = Box::pin(async move {
        let outcome = match model {
            _ if transcript.is_empty() => {
                Err("there is nothing in that range to summarize".to_owned())
            }
            None => Err("no model to summarize with: set one on the directive".to_owned()),
            Some(model) => {
                let request = LlmRequest::new(
                    model,
                    vec![Message::system(instructions), Message::user(transcript)],
                );
                let chat = trace::chat_span(&request, span.id(), 0);
                stream_call(&core, request, &scope, &source, &task_cause, &call_id, chat)
                    .await
                    .map(|response| response.message.to_string())
                    .map_err(|failure| failure.error.to_string())
            }
        };
        match outcome {
            Ok(content) => result_signal(
                SUMMARY_RESULT,
                &source,
                &task_cause,
                SummaryResult { call_id, content },
            ),
            Err(message) => result_signal(
                SUMMARY_FAILED,
                &source,
                &task_cause,
                SummaryFailed { call_id, message },
            ),
        }
    });
    tracked.start(here, cause, work, run);
}
