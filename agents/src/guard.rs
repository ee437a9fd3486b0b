//! Hooks and guardrails as a strategy layer: [`Guarded`] runs checks around another strategy
//! (ReAct, a team, one's own) — on a request's input, before and after each LLM call and tool
//! call, and on the final answer — each of which passes, rewrites, blocks with a typed failure,
//! or (a tool call) sends the call to a person for approval through the existing
//! human-in-the-loop path.
//!
//! Checks are pure functions. A check that needs IO — a moderation model — is a
//! [`ParallelCheck`]: its LLM call is a directive like any other, started beside the model's
//! first call (so it adds no latency when it passes), and the inner strategy sees nothing the
//! model said until every such check has passed; one that trips ends the request with a typed
//! failure, and the runtime aborts the model call still running.
//!
//! A blocked request ends for the inner strategy too: it is sent `agent.cancel` (so ReAct
//! records the end in its thread and takes the next request), and its own reply is replaced by
//! an `agent.failed` carrying [`GuardFailed`].
//!
//! [`Guarded`] is not a [`Wrap`](crate::Wrap): a wrap has only the inner strategy's state, and
//! the guardrails keep a small book of their own (the parallel checks out, the results held
//! for them). It forwards every hook of [`Strategy`] to the inner strategy as
//! [`Wrapped`](crate::Wrapped) does.

mod step;

use std::fmt;
use std::sync::Arc;

use motet_directives::{
    Approval, Directive, LlmRequest, LlmResponse, ModelRef, ToolArgs, ToolExec, ToolResult,
};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::StrategyError;
use crate::policy::ContextPolicy;
use crate::protocol::{AgentRequest, Waiting};
use crate::strategy::Strategy;
use crate::thread::Thread;

/// What a check decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<T> {
    /// Let it through as it is.
    Pass,
    /// Let this through in its place.
    Rewrite(T),
    /// Stop: the request fails with this reason.
    Block(String),
}

/// What a check of a tool call decides.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolVerdict {
    /// Run it as it is.
    Pass,
    /// Run it with these arguments.
    Rewrite(ToolArgs),
    /// Stop: the request fails with this reason.
    Block(String),
    /// Run it only once a person approves (the call waits as a tool gated for approval does:
    /// listed, announced, answered with `agent.respond`). A call a person approved is not
    /// sent back for approval.
    Approval(Approval),
}

/// Where a check stopped a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardPoint {
    /// The request's input.
    Input,
    /// A check run in parallel with the model's first call.
    ParallelInput,
    /// An LLM call, before it was made.
    LlmCall,
    /// An LLM call's response.
    LlmResponse,
    /// A tool call, before it ran.
    ToolCall,
    /// A tool's result.
    ToolResult,
    /// The final answer.
    Output,
}

/// The reason in a guarded request's `agent.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename = "guardrail")]
pub struct Tripped {
    /// Where.
    pub point: GuardPoint,
    /// Why, as the check said.
    pub why: String,
}

/// Data of the `agent.failed` a guardrail ends a request with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardFailed {
    /// The request.
    pub request_id: String,
    /// The reason, as text.
    pub message: String,
    /// The reason.
    pub reason: Tripped,
}

type Check<T, R> = Arc<dyn Fn(&T) -> Verdict<R> + Send + Sync>;
type ToolCheck = Arc<dyn Fn(&ToolExec) -> ToolVerdict + Send + Sync>;
type ResultCheck = Arc<dyn Fn(&str, &ToolResult) -> Verdict<String> + Send + Sync>;

/// A check that needs an LLM call (a moderation model): the call made from the request, started
/// beside the inner strategy's first directives, and the decision made from its response.
#[derive(Clone)]
pub struct ParallelCheck {
    call: CallOf,
    decide: Decide,
}

type CallOf = Arc<dyn Fn(&AgentRequest) -> LlmRequest + Send + Sync>;
type Decide = Arc<dyn Fn(&LlmResponse) -> Verdict<()> + Send + Sync>;

impl fmt::Debug for ParallelCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ParallelCheck")
    }
}

impl ParallelCheck {
    /// The call `call` makes of the request; `decide` reads its response (a rewrite passes).
    pub fn new(
        call: impl Fn(&AgentRequest) -> LlmRequest + Send + Sync + 'static,
        decide: impl Fn(&LlmResponse) -> Verdict<()> + Send + Sync + 'static,
    ) -> Self {
        Self {
            call: Arc::new(call),
            decide: Arc::new(decide),
        }
    }

    /// A check by `model`: asked `instructions` as its system prompt and the query, it trips
    /// when its answer contains `flag` (case-insensitive), with its answer as the reason.
    pub fn flagged_by(
        model: ModelRef,
        instructions: impl Into<String>,
        flag: impl Into<String>,
        max_tokens: u32,
    ) -> Self {
        let instructions = instructions.into();
        let flag = flag.into().to_lowercase();
        Self::new(
            move |request| {
                let options = motet_directives::LlmOptions {
                    max_tokens: Some(max_tokens),
                    ..Default::default()
                };
                LlmRequest::new(
                    model.clone(),
                    vec![
                        motet_directives::Message::system(instructions.as_str()),
                        motet_directives::Message::user(request.query.as_str()),
                    ],
                )
                .with_options(options)
            },
            move |response| {
                let text: String = response.message.text_blocks().collect();
                if text.to_lowercase().contains(&flag) {
                    Verdict::Block(text.trim().to_owned())
                } else {
                    Verdict::Pass
                }
            },
        )
    }
}

/// A strategy with guardrails around it: `Guarded::new(react).input(check).output(check)`.
/// Every hook of [`Strategy`] is the inner strategy's (its state sits in
/// [`GuardedState::inner`], the guardrails' own book beside it).
///
/// # Example
/// ```
/// use motet_agents::guard::{Guarded, ToolVerdict, Verdict};
/// use motet_agents::{ReAct, ReActConfig};
/// use motet_directives::Approval;
///
/// let react = ReAct::new(ReActConfig::new("openai:gpt-5.2".parse()?));
/// let guarded = Guarded::new(react)
///     .input(|request| {
///         if request.query.contains("password") {
///             Verdict::Block("no secrets".to_owned())
///         } else {
///             Verdict::Pass
///         }
///     })
///     .tool(|call| match call.name.as_str() {
///         "delete" => ToolVerdict::Approval(Approval::required().because("it deletes")),
///         _ => ToolVerdict::Pass,
///     })
///     .output(|answer: &String| Verdict::Rewrite(answer.replace("damn", "d*mn")));
/// # let _ = guarded;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Guarded<S> {
    inner: S,
    input: Vec<Check<AgentRequest, String>>,
    parallel: Vec<ParallelCheck>,
    before_llm: Vec<Check<LlmRequest, LlmRequest>>,
    after_llm: Vec<Check<LlmResponse, LlmResponse>>,
    tool: Vec<ToolCheck>,
    tool_result: Vec<ResultCheck>,
    output: Vec<Check<String, String>>,
}

impl<S: fmt::Debug> fmt::Debug for Guarded<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guarded")
            .field("inner", &self.inner)
            .field("input", &self.input.len())
            .field("parallel", &self.parallel.len())
            .field("before_llm", &self.before_llm.len())
            .field("after_llm", &self.after_llm.len())
            .field("tool", &self.tool.len())
            .field("tool_result", &self.tool_result.len())
            .field("output", &self.output.len())
            .finish()
    }
}

impl<S> Guarded<S> {
    /// `inner` with no checks yet.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            input: Vec::new(),
            parallel: Vec::new(),
            before_llm: Vec::new(),
            after_llm: Vec::new(),
            tool: Vec::new(),
            tool_result: Vec::new(),
            output: Vec::new(),
        }
    }

    /// Checks each request's input before the inner strategy sees it; a rewrite replaces the
    /// query.
    pub fn input(
        mut self,
        check: impl Fn(&AgentRequest) -> Verdict<String> + Send + Sync + 'static,
    ) -> Self {
        self.input.push(Arc::new(check));
        self
    }

    /// Checks each request's input with an LLM call made in parallel with the model's.
    pub fn input_in_parallel(mut self, check: ParallelCheck) -> Self {
        self.parallel.push(check);
        self
    }

    /// Checks each LLM call before it is made.
    pub fn before_llm(
        mut self,
        check: impl Fn(&LlmRequest) -> Verdict<LlmRequest> + Send + Sync + 'static,
    ) -> Self {
        self.before_llm.push(Arc::new(check));
        self
    }

    /// Checks each LLM response before the inner strategy sees it.
    pub fn after_llm(
        mut self,
        check: impl Fn(&LlmResponse) -> Verdict<LlmResponse> + Send + Sync + 'static,
    ) -> Self {
        self.after_llm.push(Arc::new(check));
        self
    }

    /// Checks each tool call before it runs.
    pub fn tool(
        mut self,
        check: impl Fn(&ToolExec) -> ToolVerdict + Send + Sync + 'static,
    ) -> Self {
        self.tool.push(Arc::new(check));
        self
    }

    /// Checks each tool's result (the tool's name, the result) before the inner strategy sees
    /// it; a rewrite replaces its content.
    pub fn tool_result(
        mut self,
        check: impl Fn(&str, &ToolResult) -> Verdict<String> + Send + Sync + 'static,
    ) -> Self {
        self.tool_result.push(Arc::new(check));
        self
    }

    /// Checks each final answer (an `agent.completed`'s `answer`); a rewrite changes what the
    /// caller gets, not what the inner strategy recorded.
    pub fn output(
        mut self,
        check: impl Fn(&String) -> Verdict<String> + Send + Sync + 'static,
    ) -> Self {
        self.output.push(Arc::new(check));
        self
    }

    /// The inner strategy.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// A [`Guarded`] strategy's state: the inner strategy's, and the parallel checks still out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardedState<T> {
    /// The inner strategy's state.
    pub inner: T,
    #[serde(default)]
    book: step::Book,
}

impl<T> GuardedState<T> {
    /// Whether a parallel check is still out (what the model says is held until it passes).
    pub fn checking(&self) -> bool {
        !self.book.pending.is_empty()
    }
}

impl<S: Strategy> Strategy for Guarded<S> {
    type State = GuardedState<S::State>;

    fn init(&self, env: &dyn Env) -> Self::State {
        self.wrap(self.inner.init(env))
    }

    fn init_for_thread(&self, env: &dyn Env, thread_id: &str) -> Self::State {
        self.wrap(self.inner.init_for_thread(env, thread_id))
    }

    fn restore(&self, env: &dyn Env, saved: Self::State) -> Self::State {
        // Checks in flight at the stop are gone with their calls: they are asked again when
        // the request is resumed, and what the model says is held until they pass.
        GuardedState {
            inner: self.inner.restore(env, saved.inner),
            book: saved.book.restored(),
        }
    }

    fn restore_thread(&self, env: &dyn Env, thread: Thread) -> Self::State {
        self.wrap(self.inner.restore_thread(env, thread))
    }

    fn reload(&self, env: &dyn Env, saved: Self::State) -> Self::State {
        GuardedState {
            inner: self.inner.reload(env, saved.inner),
            book: saved.book,
        }
    }

    fn thread<'a>(&self, state: &'a Self::State) -> Option<&'a Thread> {
        self.inner.thread(&state.inner)
    }

    fn thread_mut<'a>(&self, state: &'a mut Self::State) -> Option<&'a mut Thread> {
        self.inner.thread_mut(&mut state.inner)
    }

    fn waiting(&self, state: &Self::State) -> Vec<Waiting> {
        self.inner.waiting(&state.inner)
    }

    fn model(&self) -> Option<&ModelRef> {
        self.inner.model()
    }

    fn context_policy(&self, state: &Self::State) -> Option<ContextPolicy> {
        self.inner.context_policy(&state.inner)
    }

    fn request_shape(&self) -> Option<LlmRequest> {
        self.inner.request_shape()
    }

    fn fallback_models(&self) -> &[ModelRef] {
        self.inner.fallback_models()
    }

    fn handle(
        &self,
        state: &mut Self::State,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let mut next = state.clone();
        let out = self.step(&mut next, signal, env)?;
        *state = next;
        Ok(out)
    }
}

impl<S: Strategy> Guarded<S> {
    fn wrap(&self, inner: S::State) -> GuardedState<S::State> {
        GuardedState {
            inner,
            book: step::Book::default(),
        }
    }
}
