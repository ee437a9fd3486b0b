//! The ReAct strategy: reason, call tools, repeat — as a pure state machine over a Thread.
//!
//! `agent.request` commits the user message (the commit point) and asks for an LLM call with a
//! fresh projection of the thread. `llm.result` commits the assistant turn and asks for one tool
//! run per tool call (run concurrently), or completes the request. Each `tool.result` is
//! committed; when the turn's last one is in, the thread is projected again for the next call.
//! Failures arrive as data (`llm.failed`, error results in `tool.result`): a retryable LLM failure is retried
//! within the retry budget, a tool failure becomes an error result the model sees. Results
//! whose call id is unknown, stale or already answered are ignored and noted in the thread, so
//! nothing is applied twice.
//!
//! In the stable window mode, when a projection overflows, the strategy commits a boundary entry
//! (and, with `Summarization::RequestNew`, asks for a summary of what it leaves behind) before
//! projecting again, so the next calls share their prefix.

mod config;
mod fallback;
mod person;
mod signals;
mod state;
mod structured;

use motet_directives::{
    ArcStr, AssistantBlock, CallId, Directive, Emit, EmitTarget, LlmRequest, LlmStream, Reply,
    StopReason, Summarize, ToolExec, ToolResult, Usage,
};
use motet_signals::Signal;
use serde::Serialize;

pub use config::{ProjectorRef, ReActConfig};
pub use signals::{
    CONTEXT_WARNING, ContextWarning, ContextWarningReason, FailureReason, LLM_FAILED, LLM_RESULT,
    LlmError, LlmErrorKind, LlmFailed, LlmResult, ReactCompleted, ReactFailed, SUMMARY_FAILED,
    SUMMARY_RESULT, SummaryFailed, SummaryResult, TOOL_PAUSED, TOOL_RESULT, ToolPaused,
    ToolResultSignal,
};
pub use state::{PendingSummary, PendingTool, ReActState, RequestState, Status};
pub use structured::StructuredCalls;

use motet_directives::results::Outcome;

use crate::protocol::{
    AGENT_CANCEL, AGENT_COMPLETED, AGENT_FAILED, AGENT_STEER, AgentCancel, AgentPolicy,
    AgentRequest, AgentResume, AgentSteer, AgentSummarize, Input,
};

use crate::env::Env;
use crate::error::StrategyError;
use crate::policy::{ContextPolicy, EstimatorKind, Summarization, WindowMode};
use crate::projector::{
    DefaultProjector, ProjectionIds, ProjectionInput, ProjectionResult, Projector,
};
use crate::strategy::Strategy;
use crate::thread::{CallBasis, EntryBody, EntryKind, NewEntry, Refs, Thread};
use fallback::AfterFailure;

/// The ReAct strategy. Cloning it is cheap (the configuration is shared), so one strategy can
/// be handed to any number of agents.
#[derive(Debug, Clone, PartialEq)]
pub struct ReAct {
    config: std::sync::Arc<ReActConfig>,
}

/// The signal being handled and the environment: what every step needs.
struct Step<'a> {
    cause: &'a Signal,
    env: &'a dyn Env,
}

impl Step<'_> {
    /// The request the signal belongs to, or a fresh id when it names none.
    fn request_id(&self) -> String {
        self.cause
            .request_id()
            .map_or_else(|| self.env.fresh_id("req"), str::to_owned)
    }
}

impl ReAct {
    /// A strategy with this configuration.
    pub fn new(config: ReActConfig) -> Self {
        Self {
            config: std::sync::Arc::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ReActConfig {
        &self.config
    }

    /// The source of the signals it sends (an empty one would make every signal fail to build
    /// after the thread was already changed).
    fn source(&self) -> &str {
        match self.config.source.as_str() {
            "" => "motet.react",
            source => source,
        }
    }

    /// A signal of `signal_type` about `request_id`, on the thread, caused by the step's signal.
    fn signal<T: serde::Serialize>(
        &self,
        state: &ReActState,
        step: &Step<'_>,
        signal_type: &str,
        request_id: &str,
        data: &T,
    ) -> Result<Signal, StrategyError> {
        let thread_id = step.cause.thread_id().unwrap_or(state.thread.id());
        Signal::builder(signal_type, self.source())
            .with_id(step.env.fresh_id("sig"))
            .with_time(step.env.now())
            .caused_by(step.cause)
            .with_thread_id(thread_id)
            .with_request_id(request_id)
            .with_data(data)
            .build()
            .map_err(|e| StrategyError::Emit {
                signal_type: signal_type.to_owned(),
                message: e.to_string(),
            })
    }

    fn on_input(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        input: AgentRequest,
    ) -> Result<Vec<Directive>, StrategyError> {
        let request_id = step.request_id();
        let elsewhere = state.elsewhere.take();
        // Rejected before the commit point: the thread is unchanged.
        let refused = if input.query.trim().is_empty() {
            Some(FailureReason::EmptyQuery)
        } else {
            let active = state.active_request().map(|a| a.request_id.to_string());
            // A request that stopped while a call waited for a person, not resumed yet, still
            // holds the thread: a new question would leave that call without its result.
            let paused = state
                .request
                .as_ref()
                .filter(|r| r.tools.iter().any(|t| !t.done && t.waiting.is_some()))
                .map(|r| r.request_id.to_string());
            active
                .or(paused)
                .or(elsewhere.map(String::from))
                .map(|active_request_id| FailureReason::Busy { active_request_id })
        };
        if let Some(reason) = refused {
            let failed = ReactFailed {
                request_id: request_id.clone(),
                reason,
                usage: Default::default(),
            };
            return self.reply(state, step, AGENT_FAILED, &request_id, failed);
        }
        let request_id: ArcStr = request_id.into();
        let refs = Refs::request(request_id.clone());
        let asked = if input.attachments.is_empty() {
            NewEntry::user(input.query)
        } else {
            let parts = std::iter::once(motet_directives::Part::text(input.query))
                .chain(input.attachments.iter().cloned())
                .collect::<Vec<_>>();
            NewEntry::user_content(parts)
        };
        state.thread.append(step.env, asked.with_refs(refs));
        let mut request = RequestState::new(request_id, input.context_policy);
        request.response_format = input.response_format.map(Box::new);
        state.request = Some(Box::new(request));
        self.next_iteration(state, step)
    }

    /// Starts the next LLM call of the request, or fails it at `max_iterations`.
    fn next_iteration(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request) = state.request.as_mut() else {
            return Ok(Vec::new());
        };
        // The turn boundary: what a person added since the last call goes in now, after the
        // tool results, before the model is asked again.
        if !request.steers.is_empty() {
            let refs = Refs::request(request.request_id.clone()).with_iteration(request.iteration);
            let steers = std::mem::take(&mut request.steers)
                .into_iter()
                .map(|text| NewEntry::user(text).with_refs(refs.clone()));
            state.thread.append_all(step.env, steers);
        }
        let Some(request) = state.request.as_mut() else {
            return Ok(Vec::new());
        };
        if request.iteration >= self.config.max_iterations {
            let reason = FailureReason::MaxIterations {
                max_iterations: self.config.max_iterations,
            };
            return self.fail(state, step, reason);
        }
        request.iteration += 1;
        request.llm_retries = 0;
        self.stream(state, step)
    }

    /// Projects the thread and asks for an LLM call (committing a boundary first if the stable
    /// window overflowed).
    fn stream(
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
        let mut warning = None;
        let projection = match self.project(&state.thread, &policy, &ids) {
            Ok(first) if first.meta.truncated => {
                warning = Some(ContextWarningReason::Truncated);
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
                match policy.window {
                    WindowMode::Stable => self.project(&state.thread, &policy, &ids),
                    WindowMode::Sliding => Ok(first),
                }
            }
            Ok(fits) => {
                // Nothing dropped, but the policy may still want the older part summarized
                // (entries or tokens since the last summary): everything before the request's
                // question, which stays raw.
                if state.summaries.is_empty()
                    && policy.summary_trigger(&state.thread, false).is_some()
                {
                    let restart = question_seq(&state.thread, &request_id);
                    directives.extend(self.request_summary(state, step, restart));
                }
                Ok(fits)
            }
            other => other,
        };
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
        if let Some(request) = state.request.as_mut() {
            request.llm_call = Some(call_id.clone());
            request.call_basis = Some(Box::new(basis));
        }
        state.status = Status::AwaitingLlm;
        directives.push(Directive::LlmStream(LlmStream {
            call_id,
            request: request_body,
        }));
        Ok(directives)
    }

    fn project(
        &self,
        thread: &Thread,
        policy: &ContextPolicy,
        ids: &ProjectionIds,
    ) -> Result<ProjectionResult, crate::error::ProjectionError> {
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
    ) -> Option<Result<ProjectionResult, crate::error::ProjectionError>> {
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

    /// A `Summarize` directive for everything before `restart` (from the start of the latest
    /// summary's range, so the new summary replaces it).
    fn request_summary(
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
        let call_id = CallId::new(step.env.fresh_id("summary"));
        state.summaries.push(PendingSummary {
            call_id: call_id.clone(),
            from_seq,
            to_seq,
            request_id: None,
        });
        Some(Directive::Summarize(Summarize {
            call_id,
            thread_id: state.thread.id().to_owned(),
            from_seq,
            to_seq,
            model: self.config.summary_model.clone(),
            instructions: self.config.summary_instructions.clone(),
        }))
    }

    fn on_llm_result(
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

    fn on_llm_failed(
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

    fn on_tool_result(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        call_id: &CallId,
        result: ToolResult,
    ) -> Result<Vec<Directive>, StrategyError> {
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
        let entry = NewEntry::tool_result(tool.name.clone(), result).with_refs(refs);
        let all_done = request.tools.iter().all(|t| t.done);
        state.thread.append(step.env, entry);
        if all_done {
            state.status = Status::AwaitingTools;
            return self.next_iteration(state, step);
        }
        state.settle();
        Ok(Vec::new())
    }

    /// Carries on after a restart from storage: from the last committed turn, what is owed —
    /// an LLM call (the thread ends with the user's message or a complete set of tool results),
    /// the tool calls whose results are missing (run again when idempotent, otherwise answered
    /// with an error result so nothing runs twice), or, for an answered request, the reply.
    fn on_resume(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        resume: AgentResume,
    ) -> Result<Vec<Directive>, StrategyError> {
        // The runtime resumes a request only when it does not run it: one the state shows
        // running stopped with the process, and is rebuilt from the thread.
        let saved = state.request.take();
        let format = structured::Carried::from(saved.as_deref());
        state.status = Status::Idle;
        let entries = state.thread.to_list();
        let Some(at) = entries.iter().rposition(|e| {
            matches!(
                e.body,
                EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
            )
        }) else {
            return Ok(Vec::new());
        };
        let request_id = entries[at]
            .refs
            .request_id
            .clone()
            .unwrap_or_else(|| step.request_id().into());
        let Some(turn) = entries[..=at]
            .iter()
            .rposition(|e| matches!(e.body, EntryBody::Assistant { .. } | EntryBody::User { .. }))
        else {
            return Ok(Vec::new());
        };
        // What a person added to this request before the stop still waits for its turn, and
        // its calls that waited for a person (or were approved by one) still do (or were).
        let (steers, saved_tools) = saved
            .filter(|r| r.request_id == request_id)
            .map(|r| (r.steers, r.tools))
            .unwrap_or_default();
        let (message, iteration, turn_call) = match &entries[turn].body {
            EntryBody::User { .. } => {
                let mut request = RequestState::new(request_id, None);
                request.model = self.chain_index_in(entries, &request.request_id);
                request.steers = steers;
                format.restore(&mut request);
                state.request = Some(Box::new(request));
                return self.next_iteration(state, step);
            }
            EntryBody::Assistant { message, .. } => (
                message.clone(),
                entries[turn].refs.iteration.unwrap_or(1),
                entries[turn].refs.call_id.clone(),
            ),
            _ => return Ok(Vec::new()),
        };
        let mut request = RequestState::new(request_id, None);
        request.model = self.chain_index_in(entries, &request.request_id);
        request.steers = steers;
        format.restore(&mut request);
        request.tool_calls = tool_calls_in(&entries[..=turn], &request.request_id);
        request.iteration = iteration;
        request.turn_call = turn_call.map(CallId::new);
        if message.stop_reason == StopReason::PauseTurn && !message.has_tool_calls() {
            // A paused turn the stop interrupted: the model continues it.
            state.request = Some(Box::new(request));
            return self.next_iteration(state, step);
        }
        if !message.has_tool_calls() && !request.steers.is_empty() {
            // Answered before the stop, and steered since: the model is asked again.
            state.request = Some(Box::new(request));
            return self.next_iteration(state, step);
        }
        if !message.has_tool_calls() {
            // Answered before the stop: say so again for whoever resumed.
            let answer = paused_text(&entries[..turn], &request.request_id) + &message.to_string();
            state.request = Some(Box::new(request));
            return self.answer(state, step, answer);
        }
        let answered: std::collections::HashSet<&str> = entries[turn + 1..]
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::ToolResult { result, .. } => Some(result.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<(String, String, motet_directives::ToolArgs)> = message
            .tool_calls()
            .filter(|call| !answered.contains(call.id))
            .map(|call| (call.id.to_owned(), call.name.to_owned(), call.args.clone()))
            .collect();
        let mut directives = Vec::new();
        let mut owed = Vec::new();
        let mut announced = Vec::new();
        for (tool_call_id, name, args) in missing {
            let call_id = CallId::new(step.env.fresh_id("tool"));
            let saved_tool = saved_tools.iter().find(|t| t.tool_call_id == tool_call_id);
            if let Some(waiting) = saved_tool.and_then(|t| t.waiting.clone()) {
                // Nothing ran (an approval), or its question stands: it waits on.
                let mut tool = PendingTool::new(call_id, tool_call_id, name);
                tool.waiting = Some(waiting.clone());
                request.tools.push(tool);
                announced.push(waiting);
                continue;
            }
            // Approved before the stop: whatever runs again runs as the person approved it.
            let approved = saved_tool.and_then(|t| Some((t.approved_args.clone()?, t.edited)));
            let args = approved.as_ref().map_or(args, |(args, _)| args.clone());
            let reruns = reruns_of(&entries[turn + 1..], &tool_call_id);
            let mut refs = Refs::request(request.request_id.clone())
                .with_call_id(call_id.shared())
                .with_tool_call_id(tool_call_id.as_str())
                .with_iteration(request.iteration);
            refs.parent_call_id = request.turn_call.as_ref().map(CallId::shared);
            let idempotent = resume.idempotent_tools.contains(&name);
            if idempotent && reruns < self.config.max_tool_reruns {
                // Committed before the call runs: if the agent stops again while it runs,
                // the next resume counts this attempt.
                let note = format!(
                    "{RERUN_NOTE} `{name}` after a stop (re-run {} of at most {})",
                    reruns + 1,
                    self.config.max_tool_reruns
                );
                owed.push(NewEntry::note(note).with_refs(refs));
                let mut tool = PendingTool::new(call_id.clone(), tool_call_id.as_str(), &*name);
                let mut exec = ToolExec::new(call_id, tool_call_id, name, args);
                if let Some((args, edited)) = approved {
                    tool.approved_args = Some(args);
                    tool.edited = edited;
                    exec = exec.approved();
                }
                request.tools.push(tool);
                directives.push(Directive::ToolExec(exec));
            } else {
                let message = if idempotent {
                    format!(
                        "the agent stopped each of the {} times `{name}` ran with these arguments, so it was not run again",
                        reruns + 1
                    )
                } else {
                    format!(
                        "the agent stopped while `{name}` was running: it may or may not have run, and it was not run again"
                    )
                };
                let result = ToolResult::error(tool_call_id.clone(), message);
                owed.push(NewEntry::tool_result(name, result).with_refs(refs));
            }
        }
        for entry in owed {
            state.thread.append(step.env, entry);
        }
        let all_done = request.tools.is_empty();
        state.request = Some(Box::new(request));
        if all_done {
            return self.next_iteration(state, step);
        }
        state.status = Status::AwaitingTools;
        state.settle();
        for waiting in &announced {
            directives.extend(self.announce(state, step, waiting)?);
        }
        Ok(directives)
    }

    /// Keeps what a person added for the request's next turn boundary; a steer naming a
    /// request that is not running (ended, queued, unknown) or saying nothing is noted and
    /// left out.
    fn on_steer(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        steer: AgentSteer,
    ) -> Vec<Directive> {
        let named = step.cause.request_id();
        let active = state
            .request
            .as_mut()
            .filter(|_| state.status.is_active())
            .filter(|r| named.is_none_or(|id| *id == *r.request_id));
        match active {
            Some(request) if !steer.text.trim().is_empty() => {
                request.steers.push(steer.text);
                Vec::new()
            }
            _ => ignore(state, step, AGENT_STEER, &CallId::new("-")),
        }
    }

    fn on_cancel(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        cancel: AgentCancel,
    ) -> Result<Vec<Directive>, StrategyError> {
        // A cancel names its request; one naming another (queued, ended, unknown) is not the
        // active request's to obey.
        let named = step.cause.request_id();
        let active = state.active_request().map(|r| r.request_id.clone());
        if active.is_none() || named.is_some_and(|id| Some(id) != active.as_deref()) {
            let call_id = CallId::new("-");
            return Ok(ignore(state, step, AGENT_CANCEL, &call_id));
        }
        self.fail(
            state,
            step,
            FailureReason::Cancelled {
                reason: cancel.reason,
            },
        )
    }

    fn on_summary(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        signal_type: &str,
        call_id: &CallId,
        content: Result<String, String>,
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
            Ok(content) => NewEntry::summary(pending.from_seq, pending.to_seq, content.clone()),
            Err(message) => NewEntry::new(EntryBody::Error {
                message: format!("summary {call_id} failed: {message}"),
            }),
        };
        state.thread.append(step.env, entry.with_refs(refs));
        let Some(request_id) = pending.request_id else {
            return Ok(Vec::new());
        };
        match content {
            Ok(answer) => {
                let completed = ReactCompleted {
                    request_id: request_id.clone(),
                    answer,
                    usage: Usage::default(),
                    thread_usage: state.thread.usage(),
                    iterations: 1,
                };
                self.reply(state, step, AGENT_COMPLETED, &request_id, completed)
            }
            Err(message) => self.summary_refused(state, step, &request_id, message),
        }
    }

    /// Where in the model chain the request `request_id` was when it stopped: at the model
    /// that answered its last turn (its call basis names a fallback), else at the start.
    fn chain_index_in(
        &self,
        entries: &[std::sync::Arc<crate::thread::Entry>],
        request_id: &str,
    ) -> u32 {
        let answered_by = entries.iter().rev().find_map(|entry| match &entry.body {
            EntryBody::Assistant { basis, .. }
                if entry.refs.request_id.as_deref() == Some(request_id) =>
            {
                Some(basis.as_ref().and_then(|b| b.model.as_ref()))
            }
            _ => None,
        });
        answered_by
            .flatten()
            .and_then(|model| self.config.chain_index(model))
            .and_then(|index| u32::try_from(index).ok())
            .unwrap_or(0)
    }

    /// `agent.summarize`: a summary of `from_seq..=to_seq` on request. The range must lie in
    /// the thread; the answer is the summary's text.
    fn on_summarize(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        range: AgentSummarize,
    ) -> Result<Vec<Directive>, StrategyError> {
        let request_id = step.request_id();
        let count = state.thread.entry_count() as u64;
        if range.from_seq > range.to_seq || range.to_seq >= count {
            let message = format!(
                "entries {}..={} are not in the thread (it has {count})",
                range.from_seq, range.to_seq
            );
            return self.summary_refused(state, step, &request_id, message);
        }
        let call_id = CallId::new(step.env.fresh_id("summary"));
        state.summaries.push(PendingSummary {
            call_id: call_id.clone(),
            from_seq: range.from_seq,
            to_seq: range.to_seq,
            request_id: Some(request_id),
        });
        Ok(vec![Directive::Summarize(Summarize {
            call_id,
            thread_id: state.thread.id().to_owned(),
            from_seq: range.from_seq,
            to_seq: range.to_seq,
            model: self
                .config
                .summary_model
                .clone()
                .or_else(|| Some(self.config.model.clone())),
            instructions: self.config.summary_instructions.clone(),
        })])
    }

    /// `agent.policy`: the agent's layer of the context policy, from the next call on.
    fn on_policy(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        set: AgentPolicy,
    ) -> Result<Vec<Directive>, StrategyError> {
        let request_id = step.request_id();
        let answer = match &set.context_policy {
            Some(_) => "context policy set",
            None => "context policy cleared",
        };
        state.context_policy = set.context_policy.map(Box::new);
        let completed = ReactCompleted {
            request_id: request_id.clone(),
            answer: answer.to_owned(),
            usage: Usage::default(),
            thread_usage: state.thread.usage(),
            iterations: 0,
        };
        self.reply(state, step, AGENT_COMPLETED, &request_id, completed)
    }

    /// Answers a `agent.summarize` request with `agent.failed`.
    fn summary_refused(
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

    fn complete(
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
    fn fail(
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
                    timers.push(Directive::CancelSchedule(
                        motet_directives::CancelSchedule {
                            schedule_id: person::deadline_id(&waiting.tool_call_id),
                        },
                    ));
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
    fn reply<T: Serialize>(
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

/// The seq of request `request_id`'s latest question (user entry).
fn question_seq(thread: &Thread, request_id: &str) -> Option<u64> {
    thread
        .to_list()
        .iter()
        .rev()
        .find(|e| e.kind() == EntryKind::User && e.refs.request_id.as_deref() == Some(request_id))
        .map(|e| u64::from(e.seq))
}

/// The request `entries` show begun and not ended: its last turn (a question, tool calls, or
/// their results) awaits the model, and no failure of that request follows it.
fn unfinished_request(entries: &[std::sync::Arc<crate::thread::Entry>]) -> Option<String> {
    let last = entries.iter().rposition(|e| {
        matches!(
            e.body,
            EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
        )
    })?;
    let request = entries[last].refs.request_id.as_deref()?;
    if let EntryBody::Assistant { message, .. } = &entries[last].body
        && !message.has_tool_calls()
        && message.stop_reason != StopReason::PauseTurn
    {
        return None;
    }
    // A failed or cancelled request ends with its error, which names no call.
    let failed = entries[last + 1..].iter().any(|e| {
        matches!(e.body, EntryBody::Error { .. })
            && e.refs.request_id.as_deref() == Some(request)
            && e.refs.call_id.is_none()
    });
    (!failed).then(|| request.to_owned())
}

/// The text of the paused turns of `request` that `entries` end with (a turn the provider
/// paused, `StopReason::PauseTurn`, then continued): the beginning of the answer its
/// continuation ends.
fn paused_text(entries: &[std::sync::Arc<crate::thread::Entry>], request: &str) -> String {
    let paused: Vec<&crate::thread::Entry> = entries
        .iter()
        .rev()
        .filter(|e| {
            matches!(
                e.body,
                EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
            )
        })
        .map(|e| &**e)
        .take_while(|e| {
            e.refs.request_id.as_deref() == Some(request)
                && matches!(&e.body, EntryBody::Assistant { message, .. }
                    if message.stop_reason == StopReason::PauseTurn && !message.has_tool_calls())
        })
        .collect();
    paused
        .iter()
        .rev()
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { message, .. } => Some(message.to_string()),
            _ => None,
        })
        .collect()
}

/// How the note that a resume re-runs a tool call begins.
const RERUN_NOTE: &str = "re-running";

/// How many times a resume has already re-run the tool call `tool_call_id` (the notes it
/// committed before each re-run, among `entries`).
fn reruns_of(entries: &[std::sync::Arc<crate::thread::Entry>], tool_call_id: &str) -> u32 {
    let reruns = entries
        .iter()
        .filter(|e| e.refs.tool_call_id.as_deref() == Some(tool_call_id))
        .filter(|e| matches!(&e.body, EntryBody::Note { text } if text.starts_with(RERUN_NOTE)))
        .count();
    u32::try_from(reruns).unwrap_or(u32::MAX)
}

/// The tool calls the model made in `request_id`'s turns among `entries`.
fn tool_calls_in(entries: &[std::sync::Arc<crate::thread::Entry>], request_id: &str) -> u32 {
    let calls = entries
        .iter()
        .filter(|e| e.refs.request_id.as_deref() == Some(request_id))
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { message, .. } => Some(message.tool_calls().count()),
            _ => None,
        })
        .sum::<usize>();
    u32::try_from(calls).unwrap_or(u32::MAX)
}

/// Notes an ignored signal in the thread and counts it; no directives.
fn ignore(
    state: &mut ReActState,
    step: &Step<'_>,
    signal_type: &str,
    call_id: &CallId,
) -> Vec<Directive> {
    state.ignored += 1;
    let text = format!("ignored {signal_type} for call {call_id}: unknown, stale or duplicate");
    let refs = Refs::default().with_call_id(call_id.shared());
    state
        .thread
        .append(step.env, NewEntry::note(text).with_refs(refs));
    Vec::new()
}

impl Strategy for ReAct {
    type State = ReActState;

    fn model(&self) -> Option<&motet_directives::ModelRef> {
        Some(&self.config.model)
    }

    fn fallback_models(&self) -> &[motet_directives::ModelRef] {
        &self.config.fallbacks
    }

    fn request_shape(&self) -> Option<LlmRequest> {
        Some(
            LlmRequest::new(self.config.model.clone(), Vec::new())
                .with_tools(self.config.tools.clone())
                .with_tool_choice(self.config.tool_choice.clone())
                .with_options(self.config.options.clone()),
        )
    }

    fn init(&self, env: &dyn Env) -> ReActState {
        ReActState::new(Thread::create(env))
    }

    fn init_for_thread(&self, env: &dyn Env, thread_id: &str) -> ReActState {
        ReActState::new(Thread::new(thread_id, env.now_ms()))
    }

    fn restore(&self, _env: &dyn Env, saved: ReActState) -> ReActState {
        // The thread is the request's state: a request that was running when the thread
        // stopped is rebuilt from it by `agent.resume`; until then the thread takes requests.
        let mut state = ReActState::new(saved.thread);
        state.context_policy = saved.context_policy;
        state.ignored = saved.ignored;
        // Except what a person did to that request that the thread does not hold — messages
        // not taken in yet, calls waiting for them or approved by them — kept for
        // `agent.resume` to carry over.
        state.request = saved
            .request
            .map(|r| {
                let mut kept = RequestState::new(r.request_id, None);
                kept.steers = r.steers;
                kept.tools = r
                    .tools
                    .into_iter()
                    .filter(PendingTool::outlives_a_restart)
                    .collect();
                Box::new(kept)
            })
            .filter(|r| r.outlives_a_restart());
        state
    }

    fn restore_thread(&self, _env: &dyn Env, thread: Thread) -> ReActState {
        ReActState::new(thread)
    }

    fn reload(&self, env: &dyn Env, saved: ReActState) -> ReActState {
        let elsewhere = unfinished_request(saved.thread.to_list());
        let mut state = self.restore(env, saved);
        state.elsewhere = elsewhere.map(String::into_boxed_str);
        state
    }

    fn thread<'a>(&self, state: &'a ReActState) -> Option<&'a Thread> {
        Some(&state.thread)
    }

    fn context_policy(&self, state: &ReActState) -> Option<ContextPolicy> {
        Some(ContextPolicy::resolve(
            None,
            state.context_policy.as_deref(),
            self.config.context_policy.as_ref(),
        ))
    }

    fn waiting(&self, state: &ReActState) -> Vec<crate::protocol::Waiting> {
        person::waiting_of(state)
    }

    fn thread_mut<'a>(&self, state: &'a mut ReActState) -> Option<&'a mut Thread> {
        Some(&mut state.thread)
    }

    fn handle(
        &self,
        state: &mut ReActState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let step = Step { cause: signal, env };
        match Input::of(signal)? {
            Input::Request(request) => self.on_input(state, &step, request),
            Input::Resume(resume) => self.on_resume(state, &step, resume),
            Input::Cancel(cancel) => self.on_cancel(state, &step, cancel),
            Input::Steer(steer) => Ok(self.on_steer(state, &step, steer)),
            Input::Respond(respond) => self.on_respond(state, &step, respond),
            Input::Summarize(range) => self.on_summarize(state, &step, range),
            Input::Policy(set) => self.on_policy(state, &step, set),
            Input::Outcome(Outcome::Llm(result)) => self.on_llm_result(state, &step, result),
            Input::Outcome(Outcome::LlmFailed(failed)) => self.on_llm_failed(state, &step, failed),
            Input::Outcome(Outcome::Tool(tool)) => {
                self.on_tool_result(state, &step, &tool.call_id, tool.result)
            }
            Input::Outcome(Outcome::ToolPaused(paused)) => {
                self.on_tool_paused(state, &step, paused)
            }
            Input::Outcome(Outcome::Summary(summary)) => self.on_summary(
                state,
                &step,
                SUMMARY_RESULT,
                &summary.call_id,
                Ok(summary.content),
            ),
            Input::Outcome(Outcome::SummaryFailed(failed)) => self.on_summary(
                state,
                &step,
                SUMMARY_FAILED,
                &failed.call_id,
                Err(failed.message),
            ),
            Input::Other(other) => Err(StrategyError::Unhandled {
                signal_type: other.signal_type().as_str().to_owned(),
            }),
        }
    }
}
