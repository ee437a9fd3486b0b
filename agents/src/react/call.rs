//! Each LLM call of a request: the thread projected through the context policy in force
//! (a boundary committed first when the stable window overflowed, a summary asked for when the
//! policy wants one), and a past call's context rebuilt from the thread.

use motet_directives::{CallId, Directive, Emit, EmitTarget, LlmRequest, LlmStream};

use super::state::{ReActState, Status};
use super::{
    CONTEXT_WARNING, ContextWarning, ContextWarningReason, FailureReason, ReAct, Step, question_seq,
};
use crate::error::{ProjectionError, StrategyError};
use crate::policy::{ContextPolicy, EstimatorKind, Summarization, WindowMode};
use crate::projector::{
    DefaultProjector, ProjectionIds, ProjectionInput, ProjectionResult, Projector,
};
use crate::thread::{CallBasis, NewEntry, Refs, Thread};

impl ReAct {
    /// Projects the thread and asks for an LLM call (committing a boundary first if the stable
    /// window overflowed).
    pub(super) fn stream(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request) = state.request.as_ref() else {
            return Ok(Vec::new());
        };
        let tool_choice = self.config.tool_choice_after(request.tool_calls);
        let (options, tool_choice) = self.call_options(request, tool_choice);
        let chain_index = request.model as usize;
        let model = self.config.model_at(chain_index).clone();
        let policy = ContextPolicy::resolve(
            request.policy_override.as_deref(),
            state.context_policy.as_deref(),
            self.config.context_policy.as_ref(),
        );
        let call_id = CallId::new(step.env.fresh_id("call"));
        let ids = ProjectionIds {
            request_id: Some(request.request_id.to_string()),
            call_id: Some(call_id.as_str().to_owned()),
        };
        let request_id = request.request_id.clone();
        let refs = Refs::request(request.request_id.clone())
            .with_call_id(call_id.shared())
            .with_iteration(request.iteration);
        let mut directives = Vec::new();
        let (projection, warning) =
            self.project_for_call(state, step, &policy, &ids, &refs, &mut directives);
        let projection = match projection {
            Ok(projection) => projection,
            Err(error) => {
                let reason = FailureReason::Projection {
                    message: error.to_string(),
                };
                return self.fail(state, step, reason);
            }
        };
        let near = policy
            .warn_threshold()
            .is_some_and(|at| projection.meta.estimated_tokens >= at);
        if let Some(reason) = warning.or(near.then_some(ContextWarningReason::NearBudget)) {
            let data = ContextWarning::of(reason, &projection.meta);
            let signal = self.signal(state, step, CONTEXT_WARNING, &request_id, &data)?;
            directives.push(Directive::Emit(Emit {
                signal,
                target: EmitTarget::Bus,
            }));
        }
        // Kept with the call's turn, so its context can be rebuilt from the thread; the
        // policy only when it changed since the thread's last recorded call.
        let basis = CallBasis {
            rev: projection.meta.basis_rev,
            last_seq: projection.meta.basis_last_seq,
            estimated_tokens: projection.meta.estimated_tokens,
            policy: (state.thread.policy_in_force() != Some(&policy)).then(|| Box::new(policy)),
            model: (chain_index > 0).then(|| Box::new(model.clone())),
        };
        let request_body = LlmRequest::new(model, projection.messages)
            .with_tools(projection.tool_spec)
            .with_tool_choice(tool_choice)
            .with_options(options)
            .with_stable_prefix(projection.meta.stable_prefix);
        let mut approved = Vec::new();
        if let Some(request) = state.request.as_mut() {
            request.llm_call = Some(call_id.clone());
            request.call_basis = Some(Box::new(basis));
            approved.clone_from(&request.budget_approved);
        }
        state.status = Status::AwaitingLlm;
        directives.push(Directive::LlmStream(
            LlmStream::new(call_id, request_body).with_budget_approved(approved),
        ));
        Ok(directives)
    }

    /// The call's projection. One that dropped history is a warning to give; in the stable
    /// window mode it commits a boundary and projects again, and the policy may ask for a
    /// summary of what the window leaves behind. One that fits may still ask for a summary of
    /// everything before the request's question (the policy's entries or tokens trigger). A
    /// summary's directive joins `directives`.
    fn project_for_call(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        policy: &ContextPolicy,
        ids: &ProjectionIds,
        refs: &Refs,
        directives: &mut Vec<Directive>,
    ) -> (
        Result<ProjectionResult, ProjectionError>,
        Option<ContextWarningReason>,
    ) {
        match self.project(&state.thread, policy, ids) {
            Ok(first) if first.meta.truncated => {
                let restart = match (policy.window, first.meta.suggested_boundary) {
                    (WindowMode::Stable, Some(seq)) => {
                        let boundary = NewEntry::boundary(seq).with_refs(refs.clone());
                        state.thread.append(step.env, boundary);
                        Some(seq)
                    }
                    _ => first.meta.history_from_seq,
                };
                if policy.summarization == Summarization::RequestNew && state.summaries.is_empty() {
                    directives.extend(self.request_summary(state, step, restart));
                }
                let projection = match policy.window {
                    WindowMode::Stable => self.project(&state.thread, policy, ids),
                    WindowMode::Sliding => Ok(first),
                };
                (projection, Some(ContextWarningReason::Truncated))
            }
            Ok(fits) => {
                if state.summaries.is_empty()
                    && policy.summary_trigger(&state.thread, false).is_some()
                {
                    let question = ids.request_id.as_deref();
                    let restart = question.and_then(|r| question_seq(&state.thread, r));
                    directives.extend(self.request_summary(state, step, restart));
                }
                (Ok(fits), None)
            }
            other => (other, None),
        }
    }

    pub(super) fn project(
        &self,
        thread: &Thread,
        policy: &ContextPolicy,
        ids: &ProjectionIds,
    ) -> Result<ProjectionResult, ProjectionError> {
        // A calibrated policy reads its budget at the ratio of the latest counted call before
        // this one: the thread holds it, so a rebuild of the call finds the same ratio.
        let scaled;
        let policy = match policy.token_estimator {
            EstimatorKind::Calibrated => match thread.calibration() {
                Some(calibration) => {
                    scaled = policy.calibrated(calibration);
                    &scaled
                }
                None => policy,
            },
            EstimatorKind::Heuristic => policy,
        };
        let input = ProjectionInput {
            thread,
            policy,
            pending: &[],
            system: self.config.system_prompt.as_deref(),
            tools: &self.config.tools,
            ids,
        };
        let estimator = policy.token_estimator.estimator();
        match &self.config.projector {
            Some(projector) => projector.get_ref().project(&input, estimator),
            None => DefaultProjector.project(&input, estimator),
        }
    }

    /// The context LLM call `call_id` was sent, rebuilt from `thread` (seed 001's
    /// `entries_before_call`): its entries up to the basis kept with the call's turn,
    /// projected again with the policy in force then and this strategy's system prompt and
    /// tools. The same messages, byte for byte, as long as the configuration is the one the
    /// call ran with. `None` when the thread holds no recorded turn of that call.
    ///
    /// # Errors
    /// The projection's error (only if the configuration changed since the call).
    pub fn projection_of_call(
        &self,
        thread: &Thread,
        call_id: &str,
    ) -> Option<Result<ProjectionResult, ProjectionError>> {
        let (basis, policy) = thread.as_of_call(call_id)?;
        let request_id = thread
            .to_list()
            .iter()
            .rev()
            .find(|e| e.refs.call_id.as_deref() == Some(call_id))
            .and_then(|e| e.refs.request_id.as_deref().map(str::to_owned));
        let ids = ProjectionIds {
            request_id,
            call_id: Some(call_id.to_owned()),
        };
        Some(self.project(&basis, &policy, &ids))
    }
}
