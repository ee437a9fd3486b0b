//! How a request ends: completed, failed (its unanswered tool calls answered with an error
//! first), and the reply that carries either to whoever asked.

use motet_directives::{CancelSchedule, Directive, Emit, EmitTarget, Reply, ToolResult};
use serde::Serialize;

use super::state::{ReActState, Status};
use super::{FailureReason, ReAct, ReactCompleted, ReactFailed, Step, person};
use crate::error::StrategyError;
use crate::protocol::{AGENT_COMPLETED, AGENT_FAILED};
use crate::thread::{EntryBody, NewEntry, Refs};

impl ReAct {
    pub(super) fn complete(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        answer: String,
    ) -> Result<Vec<Directive>, StrategyError> {
        state.status = Status::Completed;
        let Some(request) = state.request.as_ref() else {
            return Ok(Vec::new());
        };
        let completed = ReactCompleted {
            request_id: request.request_id.to_string(),
            answer,
            usage: request.usage,
            thread_usage: state.thread.usage(),
            iterations: request.iteration,
        };
        let request_id = request.request_id.clone();
        state.end_request();
        self.reply(state, step, AGENT_COMPLETED, &request_id, completed)
    }

    /// Ends the request: tool calls still unanswered get an error result (so the thread never
    /// holds a call without its result), the failure is committed and reported.
    pub(super) fn fail(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        reason: FailureReason,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request) = state.request.as_mut() else {
            return Ok(Vec::new());
        };
        request.llm_call = None;
        let why = match &reason {
            FailureReason::Cancelled { .. } => format!("request {reason}"),
            other => format!("request failed: {other}"),
        };
        let mut entries = Vec::new();
        let mut timers = Vec::new();
        if state.status.awaits_tools() {
            for at in 0..request.tools.len() {
                if request.tools[at].done {
                    continue;
                }
                let tool = &mut request.tools[at];
                let refs = person::tool_refs(
                    &request.request_id,
                    request.iteration,
                    request.turn_call.as_ref(),
                    tool,
                );
                tool.done = true;
                if let Some(waiting) = tool.waiting.take()
                    && waiting.deadline_ms.is_some()
                {
                    timers.push(Directive::CancelSchedule(CancelSchedule {
                        schedule_id: person::deadline_id(&waiting.tool_call_id),
                    }));
                }
                let result =
                    ToolResult::error(tool.tool_call_id.clone(), format!("not run: {why}"));
                entries.push(NewEntry::tool_result(tool.name.clone(), result).with_refs(refs));
            }
        }
        // What a person added and the request never reached stays on record.
        for text in std::mem::take(&mut request.steers) {
            entries.push(
                NewEntry::note(format!("steer not taken in ({why}): {text}"))
                    .with_refs(Refs::request(request.request_id.clone())),
            );
        }
        entries.push(
            NewEntry::new(EntryBody::Error {
                message: why.clone(),
            })
            .with_refs(Refs::request(request.request_id.clone())),
        );
        let failed = ReactFailed {
            request_id: request.request_id.to_string(),
            reason: reason.clone(),
            usage: request.usage,
        };
        let request_id = request.request_id.clone();
        state.thread.append_all(step.env, entries);
        state.status = match reason {
            FailureReason::Cancelled { .. } => Status::Cancelled,
            _ => Status::Failed,
        };
        state.end_request();
        let mut out = self.reply(state, step, AGENT_FAILED, &request_id, failed)?;
        // The timers first: a deadline must not fire into the next request.
        timers.append(&mut out);
        Ok(timers)
    }

    /// Answers the request: a `Reply` (failed for `agent.failed`), and a copy to
    /// `ReActConfig::reply_to` when that is somewhere other than the bus (where the reply goes
    /// anyway).
    pub(super) fn reply<T: Serialize>(
        &self,
        state: &ReActState,
        step: &Step<'_>,
        signal_type: &str,
        request_id: &str,
        data: T,
    ) -> Result<Vec<Directive>, StrategyError> {
        let signal = self.signal(state, step, signal_type, request_id, &data)?;
        let mut out = Vec::with_capacity(2);
        if self.config.reply_to != EmitTarget::Bus {
            out.push(Directive::Emit(Emit {
                signal: signal.clone(),
                target: self.config.reply_to.clone(),
            }));
        }
        out.push(Directive::Reply(if signal_type == AGENT_FAILED {
            Reply::failed(signal)
        } else {
            Reply::completed(signal)
        }));
        Ok(out)
    }
}
