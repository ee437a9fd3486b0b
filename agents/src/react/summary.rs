//! Summaries: asked for by the context policy or by `agent.summarize`, built here (the
//! instructions and the transcript are the strategy's), and committed when they come back.

use motet_directives::{CallId, Directive, ModelRef, Summarize, Usage};

use super::state::{PendingSummary, ReActState};
use super::{FailureReason, ReAct, ReactCompleted, ReactFailed, Step, ignore};
use crate::error::{StrategyError, SummaryError};
use crate::protocol::{AGENT_COMPLETED, AGENT_FAILED, AgentSummarize};
use crate::summary::summary_request;
use crate::thread::{EntryBody, NewEntry, Refs};

impl ReAct {
    /// A `Summarize` directive for everything before `restart` (from the start of the latest
    /// summary's range, so the new summary replaces it), with the model the request is at in
    /// its chain unless summaries have a model of their own. None when there is nothing new to
    /// summarize.
    pub(super) fn request_summary(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        restart: Option<u64>,
    ) -> Option<Directive> {
        let to_seq = restart?.checked_sub(1)?;
        let from_seq = match state.thread.latest_summary().map(|e| &e.body) {
            // Nothing new to summarize: the latest summary already reaches that far.
            Some(EntryBody::Summary {
                to_seq: covered, ..
            }) if *covered >= to_seq => return None,
            Some(EntryBody::Summary { from_seq, .. }) => *from_seq,
            _ => 0,
        };
        let chain_index = state.request.as_ref().map_or(0, |r| r.model as usize);
        let model = self.config.model_at(chain_index).clone();
        // A range of notes and boundaries only is not worth a call.
        self.summarize(state, step, from_seq, to_seq, model, None)
            .ok()
    }

    /// The `Summarize` directive for `from_seq..=to_seq` (built with `summary_request`, with
    /// `ReActConfig::summary_model` over `model` and the configured instructions), its result
    /// awaited for `request_id` when a request asked for it.
    fn summarize(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        from_seq: u64,
        to_seq: u64,
        model: ModelRef,
        request_id: Option<String>,
    ) -> Result<Directive, SummaryError> {
        let model = self.config.summary_model.clone().unwrap_or(model);
        let instructions = self.config.summary_instructions.as_deref();
        let request = summary_request(&state.thread, from_seq, to_seq, model, instructions)?;
        let call_id = CallId::new(step.env.fresh_id("summary"));
        // Asked for by the strategy during a request: that request pays for it.
        let during = match &request_id {
            Some(_) => None,
            None => state.request.as_ref().map(|r| r.request_id.to_string()),
        };
        state.summaries.push(PendingSummary {
            call_id: call_id.clone(),
            from_seq,
            to_seq,
            request_id,
            during,
        });
        Ok(Directive::Summarize(Summarize {
            call_id,
            thread_id: state.thread.id().to_owned(),
            from_seq,
            to_seq,
            request,
        }))
    }

    /// A summary's result (`Ok`, with what its call consumed) or failure: committed to the
    /// thread (the summary entry keeps its usage, so the thread's totals count it), its usage
    /// counted with the request's that asked for it while that request runs, and an
    /// `agent.summarize` request answered.
    pub(super) fn on_summary(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        signal_type: &str,
        call_id: &CallId,
        content: Result<(String, Usage), String>,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(position) = state.summaries.iter().position(|s| &s.call_id == call_id) else {
            return Ok(ignore(state, step, signal_type, call_id));
        };
        let pending = state.summaries.remove(position);
        let refs = match &pending.request_id {
            Some(request_id) => Refs::request(request_id.as_str()),
            None => Refs::default(),
        }
        .with_call_id(call_id.shared());
        let entry = match &content {
            Ok((content, usage)) => {
                NewEntry::summary(pending.from_seq, pending.to_seq, content.clone())
                    .with_usage(*usage)
            }
            Err(message) => NewEntry::new(EntryBody::Error {
                message: format!("summary {call_id} failed: {message}"),
            }),
        };
        state.thread.append(step.env, entry.with_refs(refs));
        if let (Ok((_, usage)), Some(during)) = (&content, &pending.during)
            && state.status.is_active()
            && let Some(request) = state.request.as_mut()
            && &*request.request_id == during.as_str()
        {
            // Ended before the summary came back, the request keeps what it reported; the
            // thread's totals count the summary either way.
            request.usage += *usage;
        }
        let Some(request_id) = pending.request_id else {
            return Ok(Vec::new());
        };
        match content {
            Ok((answer, usage)) => {
                let completed = ReactCompleted {
                    request_id: request_id.clone(),
                    answer,
                    usage,
                    thread_usage: state.thread.usage(),
                    iterations: 1,
                };
                self.reply(state, step, AGENT_COMPLETED, &request_id, completed)
            }
            Err(message) => self.summary_refused(state, step, &request_id, message),
        }
    }

    /// `agent.summarize`: a summary of `from_seq..=to_seq` on request. The range must lie in
    /// the thread and hold something to summarize; the answer is the summary's text.
    pub(super) fn on_summarize(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        range: AgentSummarize,
    ) -> Result<Vec<Directive>, StrategyError> {
        let request_id = step.request_id();
        let model = self.config.model.clone();
        let asked = Some(request_id.clone());
        match self.summarize(state, step, range.from_seq, range.to_seq, model, asked) {
            Ok(directive) => Ok(vec![directive]),
            Err(refused) => self.summary_refused(state, step, &request_id, refused.to_string()),
        }
    }

    /// Answers a `agent.summarize` request with `agent.failed`.
    pub(super) fn summary_refused(
        &self,
        state: &ReActState,
        step: &Step<'_>,
        request_id: &str,
        message: String,
    ) -> Result<Vec<Directive>, StrategyError> {
        let failed = ReactFailed {
            request_id: request_id.to_owned(),
            reason: FailureReason::Summary { message },
            usage: Usage::default(),
        };
        self.reply(state, step, AGENT_FAILED, request_id, failed)
    }
}
