//! What an LLM call asks for: model, messages, tools and options.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::DirectiveError;
use crate::hosted::{HostedTool, Secret};
use crate::message::Message;
use crate::response_format::ResponseFormat;
use crate::tool::{ToolChoice, ToolDef};

/// A model reference, `provider:model` — `anthropic:claude-sonnet-4-5`, `openai:gpt-5.2`,
/// `openai-responses:gpt-5.2`, `gemini:gemini-3-pro-preview`, `openai-compat:<name>`.
///
/// The provider part selects the dialect; the providers crate decides which names it knows.
/// Everything after the first `:` is the model (model names may themselves contain `:`, as
/// Ollama's `qwen3:8b` does).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ModelRef {
    provider: String,
    model: String,
}

impl ModelRef {
    /// Builds a reference from its two parts.
    ///
    /// # Errors
    /// [`DirectiveError::InvalidModelRef`] when either part is empty or the provider contains a
    /// `:` or whitespace.
    pub fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<Self, DirectiveError> {
        let provider = provider.into();
        let model = model.into();
        let provider_ok = !provider.is_empty()
            && provider
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
        if !provider_ok || model.trim().is_empty() || model.chars().any(char::is_whitespace) {
            return Err(DirectiveError::InvalidModelRef {
                input: format!("{provider}:{model}"),
            });
        }
        Ok(Self { provider, model })
    }

    /// The provider part (`anthropic`, `openai`, ...).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The model part (`claude-sonnet-4-5`, ...).
    pub fn model(&self) -> &str {
        &self.model
    }
}

impl FromStr for ModelRef {
    type Err = DirectiveError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (provider, model) =
            s.split_once(':')
                .ok_or_else(|| DirectiveError::InvalidModelRef {
                    input: s.to_owned(),
                })?;
        Self::new(provider, model).map_err(|_| DirectiveError::InvalidModelRef {
            input: s.to_owned(),
        })
    }
}

impl TryFrom<String> for ModelRef {
    type Error = DirectiveError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<ModelRef> for String {
    fn from(value: ModelRef) -> Self {
        value.to_string()
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

/// How hard a reasoning model should think.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Minimal reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

/// Sampling and reasoning options of one call. `None` leaves the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmOptions {
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Reasoning effort (OpenAI reasoning models, Gemini thinking level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Thinking token budget (Anthropic extended thinking, Gemini thinking budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// Whether the model may call several tools in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Tools the provider runs itself (web search, code execution, remote MCP servers), offered
    /// next to [`LlmRequest::tools`]. A dialect or model that cannot run one refuses the request
    /// before anything is sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosted_tools: Vec<HostedTool>,
    /// The shape the answer's text must have (structured output): rendered in each dialect's
    /// own form; a dialect or model that cannot give it refuses the request before anything
    /// is sent. Tool calls stay free; only the text is constrained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
}

impl LlmOptions {
    /// Offers this hosted tool too.
    pub fn with_hosted_tool(mut self, tool: HostedTool) -> Self {
        self.hosted_tools.push(tool);
        self
    }

    /// Asks for answers of this format.
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }

    /// The MCP servers' authorization tokens that are set (not withheld), for scrubbing them
    /// out of anything a provider echoes back.
    pub fn mcp_tokens(&self) -> impl Iterator<Item = &str> {
        self.hosted_tools.iter().filter_map(|tool| match tool {
            HostedTool::McpServer(server) => server.authorization.as_ref().and_then(Secret::expose),
            _ => None,
        })
    }
}

/// One LLM call, provider-agnostic: the providers crate renders it into a dialect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmRequest {
    /// Which model, on which provider.
    pub model: ModelRef,
    /// The projected conversation, system message first if any.
    pub messages: Vec<Message>,
    /// Tools offered to the model (shared, cheap to clone).
    #[serde(default = "no_tools", skip_serializing_if = "<[ToolDef]>::is_empty")]
    pub tools: Arc<[ToolDef]>,
    /// Whether and how tools may be called.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Sampling and reasoning options.
    #[serde(default)]
    pub options: LlmOptions,
}

fn no_tools() -> Arc<[ToolDef]> {
    Arc::from(Vec::new())
}

impl LlmRequest {
    /// A request with no tools and default options.
    pub fn new(model: ModelRef, messages: Vec<Message>) -> Self {
        Self {
            model,
            messages,
            tools: no_tools(),
            tool_choice: ToolChoice::Auto,
            options: LlmOptions::default(),
        }
    }

    /// Offers these tools.
    pub fn with_tools(mut self, tools: Arc<[ToolDef]>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Sets the options.
    pub fn with_options(mut self, options: LlmOptions) -> Self {
        self.options = options;
        self
    }
}
