//! What comes back from the work a step asked for: the model's turn (answered, or tool calls to
//! run), its failure (retry, shrink, fall back, or fail), and each tool's result.

use motet_directives::results::LlmErrorKind;
use motet_directives::results::ToolResultSignal;
use motet_directives::{AssistantBlock, CallId, Directive, StopReason, ToolExec, ToolResult};

use super::fallback::{self, AfterFailure};
use super::resume::paused_text;
use super::state::{HandedOff, PendingTool, ReActState, Status};
use super::{
    FailureReason, LLM_FAILED, LLM_RESULT, LlmFailed, LlmResult, ReAct, Step, TOOL_RESULT, ignore,
    person,
};
use crate::delegate::HANDED_OFF_NOTE;
use crate::error::StrategyError;
use crate::policy::ContextPolicy;
use crate::thread::{EntryBody, NewEntry, Refs};

impl ReAct {
    pub(super) fn on_llm_result(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        result: LlmResult,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request) = state
            .request
            .as_mut()
            .filter(|r| r.llm_call.as_ref() == Some(&result.call_id))
            .filter(|_| state.status == Status::AwaitingLlm)
        else {
            return Ok(ignore(state, step, LLM_RESULT, &result.call_id));
        };
        // The id this strategy made for the call (equal to the result's, as checked above):
        // a boundary the call's projection committed holds it already, so the turn's refs and
        // its tool results share it rather than the copy the result signal was decoded into.
        let llm_call = request.llm_call.take().unwrap_or(result.call_id);
        request.usage += result.response.usage;
        let refs = Refs::request(request.request_id.clone())
            .with_call_id(llm_call.shared())
            .with_iteration(request.iteration);
        let mut message = result.response.message;
        // Gemini makes ids up per response (`call_1` each turn), as do OpenAI-compatible
        // servers that send none; replayed to Anthropic, a thread holding one id twice is
        // refused.
        state
            .call_ids
            .make_unique(&state.thread, &mut message, step.env);
        if !message.has_tool_calls() {
            // The last turn's calls are all answered (the model was asked only then): nothing
            // to keep of them for the rest of the request, nor after it.
            request.tools = Vec::new();
            let paused = message.stop_reason == StopReason::PauseTurn;
            let answer =
                paused_text(state.thread.to_list(), &request.request_id) + &message.to_string();
            let mut entry = NewEntry::assistant(message, result.response.usage).with_refs(refs);
            if let Some(basis) = request.call_basis.take() {
                entry = entry.with_basis(*basis);
            }
            state.thread.append(step.env, entry);
            if paused {
                // The provider paused the turn (its server tools are still at work): the
                // next call sends the turn back as it is, and the model continues it. The
                // continuation is one more call of the request, under `max_iterations`.
                return self.next_iteration(state, step);
            }
            if state.request.as_ref().is_some_and(|r| !r.steers.is_empty()) {
                // A person steered while the model answered: the answer stands in the
                // thread, and the model is asked again with what they added.
                return self.next_iteration(state, step);
            }
            return self.answer(state, step, answer);
        }
        let mut directives = Vec::new();
        // The turn's calls, at their number: the request keeps them until its next turn.
        request.tools = Vec::with_capacity(message.tool_calls().count());
        for block in &message.blocks {
            let AssistantBlock::ToolUse { id, name, args, .. } = block else {
                continue;
            };
            request.tool_calls = request.tool_calls.saturating_add(1);
            let call_id = CallId::new(step.env.fresh_id("tool"));
            // The turn's id, shared: the pending call, its result and their refs hold it.
            request
                .tools
                .push(PendingTool::new(call_id.clone(), id.clone(), name.as_str()));
            directives.push(Directive::ToolExec(ToolExec::new(
                call_id,
                id.as_str(),
                name.as_str(),
                args.clone(),
            )));
        }
        request.turn_call = Some(llm_call);
        let mut entry = NewEntry::assistant(message, result.response.usage).with_refs(refs);
        if let Some(basis) = request.call_basis.take() {
            entry = entry.with_basis(*basis);
        }
        state.thread.append(step.env, entry);
        state.status = Status::AwaitingTools;
        Ok(directives)
    }

    pub(super) fn on_llm_failed(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        failed: LlmFailed,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request) = state
            .request
            .as_mut()
            .filter(|r| r.llm_call.as_ref() == Some(&failed.call_id))
            .filter(|_| state.status == Status::AwaitingLlm)
        else {
            return Ok(ignore(state, step, LLM_FAILED, &failed.call_id));
        };
        if failed.error.kind == LlmErrorKind::BudgetApproval
            && let Some(soft_limit) = failed.error.soft_limit
        {
            // Held at a soft budget limit, not failed: a person decides.
            return self.on_soft_limit(
                state,
                step,
                &failed.call_id,
                soft_limit,
                &failed.error.message,
            );
        }
        request.llm_call = None;
        let mut note = format!("llm call {} failed: {}", failed.call_id, failed.error);
        let refs = Refs::request(request.request_id.clone()).with_call_id(failed.call_id.shared());
        let decision = fallback::after_failure(
            &failed.error,
            request.llm_retries,
            self.config.max_llm_retries,
            request.model as usize,
            self.config.chain_len(),
        );
        let retry = decision != AfterFailure::Fail;
        match decision {
            AfterFailure::Retry | AfterFailure::Shrink => request.llm_retries += 1,
            AfterFailure::Switch(next) => {
                // The next model of the chain, from the next call on, with retries of its own.
                request.model = u32::try_from(next).unwrap_or(u32::MAX);
                request.llm_retries = 0;
                let model = self.config.model_at(next);
                note.push_str(&format!("; falling back to {model}"));
            }
            AfterFailure::Fail => {}
        }
        // Our token estimate undershot the model's count: halve this request's input budget and
        // project again (the window moves, committing a boundary in stable mode).
        if decision == AfterFailure::Shrink {
            let policy = ContextPolicy::resolve(
                request.policy_override.as_deref(),
                state.context_policy.as_deref(),
                self.config.context_policy.as_ref(),
            );
            let over = request.policy_override.get_or_insert_with(Default::default);
            let halved = policy.reserve_output_tokens
                + policy
                    .max_input_tokens
                    .saturating_sub(policy.reserve_output_tokens)
                    / 2;
            over.max_input_tokens = Some(halved);
        }
        state.thread.append(
            step.env,
            NewEntry::new(EntryBody::Error { message: note }).with_refs(refs),
        );
        if retry {
            return self.stream(state, step);
        }
        self.fail(
            state,
            step,
            FailureReason::Llm {
                error: failed.error,
            },
        )
    }

    pub(super) fn on_tool_result(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        signal: ToolResultSignal,
    ) -> Result<Vec<Directive>, StrategyError> {
        let ToolResultSignal {
            call_id,
            result,
            usage,
            handoff,
        } = signal;
        let call_id = &call_id;
        let awaiting = state.status.awaits_tools();
        let Some(request) = state.request.as_mut().filter(|_| awaiting) else {
            return Ok(ignore(state, step, TOOL_RESULT, call_id));
        };
        // A call waiting for a person has no result to take until it runs again.
        let Some(tool) = request
            .tools
            .iter_mut()
            .find(|t| &t.call_id == call_id && !t.done && t.waiting.is_none())
        else {
            return Ok(ignore(state, step, TOOL_RESULT, call_id));
        };
        tool.done = true;
        // An agent asked as a tool spent on this request's behalf.
        request.usage += usage;
        // The model's call id comes from our record, not from the tool's echo; the model reads
        // that a person changed the arguments it asked for.
        let mut result = ToolResult {
            tool_use_id: tool.tool_call_id.clone(),
            ..result
        };
        if let (true, Some(args)) = (tool.edited, &tool.approved_args) {
            result.content = format!(
                "(run with arguments a person edited: {args})\n{}",
                result.content
            );
        }
        let refs = person::tool_refs(
            &request.request_id,
            request.iteration,
            request.turn_call.as_ref(),
            tool,
        );
        let handed = handoff.filter(|_| !result.is_error).map(|agent| {
            let note = NewEntry::new(EntryBody::Note {
                text: format!("{HANDED_OFF_NOTE}{agent}"),
            })
            .with_refs(refs.clone());
            (agent, result.content.clone(), note)
        });
        let entry = NewEntry::tool_result(tool.name.clone(), result).with_refs(refs);
        let all_done = request.tools.iter().all(|t| t.done);
        if let Some((agent, answer, _)) = &handed {
            request.handoff = Some(Box::new(HandedOff {
                agent: agent.clone(),
                answer: answer.clone(),
            }));
        }
        state.thread.append(step.env, entry);
        if let Some((_, _, note)) = handed {
            state.thread.append(step.env, note);
        }
        if all_done && let Some(handed) = request.handoff.take() {
            // The conversation is another agent's now: its answer is this request's.
            return self.complete(state, step, handed.answer);
        }
        if all_done {
            state.status = Status::AwaitingTools;
            return self.next_iteration(state, step);
        }
        state.settle();
        Ok(Vec::new())
    }
}
