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
//!
//! Each part of the loop has a file of its own under `react/`: `call.rs` (each LLM call's
//! projection), `turn.rs` (the model's turn, its failure, the tools' results), `finish.rs`
//! (how a request ends and the reply), `resume.rs` (the state after a stop and
//! `agent.resume`), `summary.rs` (summaries asked for and committed), `person.rs` (calls
//! waiting for a person), `structured.rs` (response formats), `fallback.rs` (after a failed
//! call); `state.rs`, `signals.rs` and `config.rs` hold the types.

mod budget;
mod call;
mod config;
mod fallback;
mod finish;
mod person;
mod resume;
mod signals;
mod state;
mod structured;
mod summary;
mod turn;

use motet_directives::results::Outcome;
use motet_directives::{ArcStr, CallId, Directive, LlmRequest, Usage};
use motet_signals::Signal;

pub use budget::BUDGET_WAIT_TOOL;
pub use config::{ProjectorRef, ReActConfig};
pub use signals::{
    CONTEXT_WARNING, ContextWarning, ContextWarningReason, FailureReason, LLM_FAILED, LLM_RESULT,
    LlmError, LlmErrorKind, LlmFailed, LlmResult, ReactCompleted, ReactFailed, ReactReply,
    SUMMARY_FAILED, SUMMARY_RESULT, SummaryFailed, SummaryResult, TOOL_PAUSED, TOOL_RESULT,
    ToolPaused, ToolResultSignal,
};
pub use state::{
    BudgetWait, HandedOff, PendingSummary, PendingTool, ReActState, RequestState, Status,
};
pub use structured::StructuredCalls;

use crate::env::Env;
use crate::error::StrategyError;
use crate::policy::ContextPolicy;
use crate::protocol::{
    AGENT_CANCEL, AGENT_COMPLETED, AGENT_FAILED, AGENT_STEER, AgentCancel, AgentPolicy,
    AgentRequest, AgentSteer, Input,
};
use crate::strategy::Strategy;
use crate::thread::{EntryKind, NewEntry, Refs, Thread};

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
        take_in_steers(state, step);
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
        if let Some(wait) = request.budget_wait.as_deref() {
            // Resumed while its call waited for a person's approval of its budget: it waits on.
            let waiting = wait.waiting.clone();
            state.status = Status::AwaitingApproval;
            return self.announce(state, step, &waiting);
        }
        self.stream(state, step)
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
        resume::restored(saved)
    }

    fn restore_thread(&self, _env: &dyn Env, thread: Thread) -> ReActState {
        ReActState::new(thread)
    }

    fn reload(&self, _env: &dyn Env, saved: ReActState) -> ReActState {
        resume::reloaded(saved)
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
            Input::Outcome(Outcome::Tool(tool)) => self.on_tool_result(state, &step, tool),
            Input::Outcome(Outcome::ToolPaused(paused)) => {
                self.on_tool_paused(state, &step, paused)
            }
            Input::Outcome(Outcome::Summary(summary)) => self.on_summary(
                state,
                &step,
                SUMMARY_RESULT,
                &summary.call_id,
                Ok((summary.content, summary.usage)),
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

/// The turn boundary: what a person added since the last call goes in now, after the tool
/// results, before the model is asked again.
fn take_in_steers(state: &mut ReActState, step: &Step<'_>) {
    let Some(request) = state.request.as_mut() else {
        return;
    };
    if request.steers.is_empty() {
        return;
    }
    let refs = Refs::request(request.request_id.clone()).with_iteration(request.iteration);
    let steers = std::mem::take(&mut request.steers)
        .into_iter()
        .map(|text| NewEntry::user(text).with_refs(refs.clone()));
    state.thread.append_all(step.env, steers);
}
