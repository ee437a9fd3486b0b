//! What an LLM call asks for: model, messages, tools and options.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::hosted::{HostedTool, Secret};
use crate::message::Message;
use crate::response_format::ResponseFormat;
use crate::tool::{ToolChoice, ToolDef};
use crate::{ArcStr, DirectiveError};

/// A model reference, `provider:model` — `anthropic:claude-sonnet-4-5`, `openai:gpt-5.2`,
/// `openai-responses:gpt-5.2`, `gemini:gemini-3-pro-preview`, `openai-compat:<name>`.
///
/// The provider part selects the dialect; the providers crate decides which names it knows.
/// Everything after the first `:` is the model (model names may themselves contain `:`, as
/// Ollama's `qwen3:8b` does).
///
/// Held as its text, shared: every LLM call carries its model and every thread remembers its
/// last, so a clone is a count, not two strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ModelRef {
    /// `provider:model`.
    text: ArcStr,
    /// Where the `:` is (the provider has none).
    colon: usize,
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
        Ok(Self {
            text: ArcStr::from(format!("{provider}:{model}")),
            colon: provider.len(),
        })
    }

    /// The provider part (`anthropic`, `openai`, ...).
    pub fn provider(&self) -> &str {
        self.text.get(..self.colon).unwrap_or_default()
    }

    /// The model part (`claude-sonnet-4-5`, ...).
    pub fn model(&self) -> &str {
        self.text.get(self.colon + 1..).unwrap_or_default()
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
        value.text.to_string()
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
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
    /// How the provider's prompt cache is asked to keep this call's prefix.
    #[serde(default, skip_serializing_if = "PromptCache::is_default")]
    pub prompt_cache: PromptCache,
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

/// How long Anthropic keeps a cached prefix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheTtl {
    /// Five minutes, refreshed by every read (the API's default; a write costs 1.25x input).
    #[default]
    FiveMinutes,
    /// One hour (a write costs 2x input): for prefixes read less often than every 5 minutes.
    OneHour,
}

/// Prompt caching options of one call.
///
/// Anthropic caches only what the request marks: with `breakpoints` on (the default), the
/// Anthropic dialect puts `cache_control` on the last tool, the system prompt and the end of
/// the request's stable prefix ([`LlmRequest::stable_prefix`]). OpenAI caches prefixes on its
/// own and routes by `key`; Gemini caches implicitly. Every dialect reports the cached tokens in
/// [`crate::Usage`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptCache {
    /// Mark the stable prefix for caching (Anthropic `cache_control`). On by default: an agent
    /// loop repeats its prefix within seconds, a cache read costs a tenth of an input token
    /// and a write a quarter more, so one read pays for the write; a prefix shorter than the
    /// model's minimum (1,024 to 4,096 tokens) is not cached and costs nothing extra.
    pub breakpoints: bool,
    /// How long Anthropic keeps the marked prefix.
    pub ttl: CacheTtl,
    /// OpenAI's `prompt_cache_key`: requests sharing a key and a prefix are routed to the same
    /// cache. The runtime sets one per thread ([`PromptCache::key_for`]) when it is `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Default for PromptCache {
    fn default() -> Self {
        Self {
            breakpoints: true,
            ttl: CacheTtl::FiveMinutes,
            key: None,
        }
    }
}

impl PromptCache {
    /// Nothing set but the defaults.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Caching options that mark nothing (Anthropic requests go without `cache_control`).
    pub fn off() -> Self {
        Self {
            breakpoints: false,
            ..Self::default()
        }
    }

    /// A cache key for a conversation named by `parts` (an agent and a thread id): `motet-`
    /// and 32 hex digits of a hash of them, so the provider sees a stable key per thread but
    /// not the ids themselves. The hash (two FNV-1a 64 lanes) is fixed here, not the standard
    /// library's, so the key stays the same across builds and restarts.
    pub fn key_for(parts: &[&str]) -> String {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut lanes = [0xcbf2_9ce4_8422_2325_u64, 0x6c62_272e_07bb_0142_u64];
        for part in parts {
            // The length first, so ("ab", "c") and ("a", "bc") differ.
            let len = (part.len() as u64).to_le_bytes();
            for byte in len.iter().chain(part.as_bytes()) {
                for lane in &mut lanes {
                    *lane = (*lane ^ u64::from(*byte)).wrapping_mul(PRIME);
                }
            }
        }
        format!("motet-{:016x}{:016x}", lanes[0], lanes[1])
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
    /// How many of `messages`, from the start, the next call of this conversation will send
    /// again unchanged: the prefix worth caching. A projection sets it (all the messages in the
    /// stable window mode, only the system and summary when the window slides); `None` when
    /// nobody knows, and then only tools and system are marked for caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable_prefix: Option<usize>,
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
            stable_prefix: None,
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

    /// Says how many leading messages the next call will repeat (see
    /// [`LlmRequest::stable_prefix`]).
    pub fn with_stable_prefix(mut self, messages: usize) -> Self {
        self.stable_prefix = Some(messages);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_stored_before_hosted_tools_still_read() {
        let old =
            r#"{"model":"anthropic:claude-sonnet-4-5","messages":[],"options":{"max_tokens":5}}"#;
        let request: LlmRequest = serde_json::from_str(old).unwrap();
        assert!(request.options.hosted_tools.is_empty());
        assert_eq!(request.options.max_tokens, Some(5));
        // And a request without hosted tools is written as before.
        let json = serde_json::to_string(&request.options).unwrap();
        assert_eq!(json, r#"{"max_tokens":5}"#);
    }
}
