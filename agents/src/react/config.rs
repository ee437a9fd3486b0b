//! How a ReAct agent is configured: model, prompt, tools, limits, policy, replies.

use motet_directives::{EmitTarget, LlmOptions, ModelRef, ToolChoice, ToolDefs};

use crate::policy::ContextPolicy;
use crate::projector::Projector;
use crate::react::structured::StructuredCalls;

/// How a ReAct agent runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ReActConfig {
    /// The model every call uses, unless it fails in a way another model may not (then the
    /// fallbacks, in order).
    pub model: ModelRef,
    /// The models a request falls back to, in order, when a call fails from overload, an
    /// outage, the account's limits or a context too long (after the retries that may mend
    /// it). A request moves down the chain only between calls and stays on the model it moved
    /// to; the next request starts on [`model`](Self::model) again. Default none.
    pub fallbacks: Vec<ModelRef>,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// Tools offered to the model.
    pub tools: ToolDefs,
    /// Whether and how tools may be called (default `Auto`).
    pub tool_choice: ToolChoice,
    /// Whether a forcing `tool_choice` (`Required` or a named tool) goes back to `Auto` once
    /// the model has called a tool in the request (default true): a forced first step, not a
    /// forced every step, which would loop until `max_iterations` because the model could never
    /// answer. The OpenAI Agents SDK calls this `reset_tool_choice`.
    pub reset_tool_choice: bool,
    /// Sampling and reasoning options.
    pub options: LlmOptions,
    /// LLM calls per request before it fails (default 10).
    pub max_iterations: u32,
    /// Retries of a retryable LLM failure per iteration (default 2).
    pub max_llm_retries: u32,
    /// Times an idempotent tool call whose result never came is run again when the agent
    /// resumes (default 2). A call that was running at each of that many stops is a poison
    /// call — its input may be what brings the process down — and gets an error result instead.
    pub max_tool_reruns: u32,
    /// The strategy's context policy (below the agent's and the request's).
    pub context_policy: Option<ContextPolicy>,
    /// Source of emitted signals.
    pub source: String,
    /// Where `agent.completed` / `agent.failed` go (default: the bus).
    pub reply_to: EmitTarget,
    /// The model for summaries (the agent's model when `None`).
    pub summary_model: Option<ModelRef>,
    /// Instructions for summaries.
    pub summary_instructions: Option<String>,
    /// Times an answer that does not match the request's response format is sent back to the
    /// model with what is wrong, before the request fails (default 2).
    pub max_format_retries: u32,
    /// Which calls of a structured request carry the response format (default: every call).
    pub structured_calls: StructuredCalls,
    /// The projector (the seeds' [`DefaultProjector`](crate::DefaultProjector) when `None`).
    pub projector: Option<ProjectorRef>,
}

/// A shared [`Projector`]; two are equal when they are the same one.
#[derive(Clone)]
pub struct ProjectorRef(std::sync::Arc<dyn Projector>);

impl ProjectorRef {
    /// Shares `projector`.
    pub fn new(projector: impl Projector + 'static) -> Self {
        Self(std::sync::Arc::new(projector))
    }

    /// The projector.
    pub fn get_ref(&self) -> &dyn Projector {
        &*self.0
    }
}

impl std::fmt::Debug for ProjectorRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for ProjectorRef {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ReActConfig {
    /// A configuration with no tools and the defaults above.
    pub fn new(model: ModelRef) -> Self {
        Self {
            model,
            fallbacks: Vec::new(),
            system_prompt: None,
            tools: ToolDefs::from(Vec::new()),
            tool_choice: ToolChoice::Auto,
            reset_tool_choice: true,
            options: LlmOptions::default(),
            max_iterations: 10,
            max_llm_retries: 2,
            max_tool_reruns: 2,
            context_policy: None,
            source: "motet.react".to_owned(),
            reply_to: EmitTarget::Bus,
            summary_model: None,
            summary_instructions: None,
            max_format_retries: 2,
            structured_calls: StructuredCalls::Every,
            projector: None,
        }
    }

    /// Projects with `projector` instead of the seeds' (it must stay a pure function of its
    /// input).
    pub fn with_projector(mut self, projector: impl Projector + 'static) -> Self {
        self.projector = Some(ProjectorRef::new(projector));
        self
    }

    /// Falls back to these models, in order ([`fallbacks`](Self::fallbacks)).
    pub fn with_fallbacks(mut self, models: impl IntoIterator<Item = ModelRef>) -> Self {
        self.fallbacks = models.into_iter().collect();
        self
    }

    /// The model at `index` of the chain (0: [`model`](Self::model)); the last one past it.
    pub fn model_at(&self, index: usize) -> &ModelRef {
        match index.checked_sub(1) {
            None => &self.model,
            Some(i) => self
                .fallbacks
                .get(i)
                .or(self.fallbacks.last())
                .unwrap_or(&self.model),
        }
    }

    /// How many models the chain has: the agent's and its fallbacks.
    pub fn chain_len(&self) -> usize {
        1 + self.fallbacks.len()
    }

    /// Where `model` is in the chain, if it is in it.
    pub fn chain_index(&self, model: &ModelRef) -> Option<usize> {
        std::iter::once(&self.model)
            .chain(&self.fallbacks)
            .position(|m| m == model)
    }

    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Offers these tools.
    pub fn with_tools(mut self, tools: ToolDefs) -> Self {
        self.tools = tools;
        self
    }

    /// Sets `tool_choice`: `Required` or `ToolChoice::Tool { name }` makes the model call a
    /// tool (that one) before it may answer.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Sets `reset_tool_choice`: `false` keeps a forcing choice for every call of a request.
    pub fn with_reset_tool_choice(mut self, reset: bool) -> Self {
        self.reset_tool_choice = reset;
        self
    }

    /// The tool choice of a request's next LLM call, after the model has made `tool_calls`
    /// tool calls in that request.
    pub fn tool_choice_after(&self, tool_calls: u32) -> ToolChoice {
        let forcing = matches!(
            self.tool_choice,
            ToolChoice::Required | ToolChoice::Tool { .. }
        );
        if forcing && self.reset_tool_choice && tool_calls > 0 {
            ToolChoice::Auto
        } else {
            self.tool_choice.clone()
        }
    }

    /// Sets `max_iterations`.
    pub fn with_max_iterations(mut self, max: u32) -> Self {
        self.max_iterations = max;
        self
    }

    /// Sets `max_llm_retries`.
    pub fn with_max_llm_retries(mut self, max: u32) -> Self {
        self.max_llm_retries = max;
        self
    }

    /// Sets `max_tool_reruns`.
    pub fn with_max_tool_reruns(mut self, max: u32) -> Self {
        self.max_tool_reruns = max;
        self
    }

    /// Sets `max_format_retries`.
    pub fn with_max_format_retries(mut self, max: u32) -> Self {
        self.max_format_retries = max;
        self
    }

    /// Sets which calls of a structured request carry the response format.
    pub fn with_structured_calls(mut self, calls: StructuredCalls) -> Self {
        self.structured_calls = calls;
        self
    }

    /// Sets the strategy's context policy.
    pub fn with_context_policy(mut self, policy: ContextPolicy) -> Self {
        self.context_policy = Some(policy);
        self
    }
}
