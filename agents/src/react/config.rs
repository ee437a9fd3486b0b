//! How a ReAct agent is configured: model, prompt, tools, limits, policy, replies.

use motet_directives::{EmitTarget, LlmOptions, ModelRef, ToolChoice, ToolDefs};

use crate::policy::ContextPolicy;

/// How a ReAct agent runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ReActConfig {
    /// The model every call uses.
    pub model: ModelRef,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// Tools offered to the model.
    pub tools: ToolDefs,
    /// Whether and how tools may be called.
    pub tool_choice: ToolChoice,
    /// Sampling and reasoning options.
    pub options: LlmOptions,
    /// LLM calls per request before it fails (default 10).
    pub max_iterations: u32,
    /// Retries of a retryable LLM failure per iteration (default 2).
    pub max_llm_retries: u32,
    /// The strategy's context policy (below the agent's and the request's).
    pub context_policy: Option<ContextPolicy>,
    /// Source of emitted signals.
    pub source: String,
    /// Where `react.completed` / `react.failed` go (default: the bus).
    pub reply_to: EmitTarget,
    /// The model for summaries (the agent's model when `None`).
    pub summary_model: Option<ModelRef>,
    /// Instructions for summaries.
    pub summary_instructions: Option<String>,
}

impl ReActConfig {
    /// A configuration with no tools and the defaults above.
    pub fn new(model: ModelRef) -> Self {
        Self {
            model,
            system_prompt: None,
            tools: ToolDefs::from(Vec::new()),
            tool_choice: ToolChoice::Auto,
            options: LlmOptions::default(),
            max_iterations: 10,
            max_llm_retries: 2,
            context_policy: None,
            source: "motet.react".to_owned(),
            reply_to: EmitTarget::Bus,
            summary_model: None,
            summary_instructions: None,
        }
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

    /// Sets the strategy's context policy.
    pub fn with_context_policy(mut self, policy: ContextPolicy) -> Self {
        self.context_policy = Some(policy);
        self
    }
}
