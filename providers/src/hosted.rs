//! Which hosted tools (web search, code execution, remote MCP servers) each dialect and model
//! can run: the checks made before a request with [`LlmOptions::hosted_tools`] is rendered or
//! sent. What each dialect sends for them is in its `request` module.
//!
//! Two levels, both pure:
//! - [`check_dialect`] — what the wire can express (Chat Completions has no hosted tools,
//!   Gemini no MCP servers and no web search options, OpenAI no `max_uses`, …), and what any
//!   request must get right (no tool asked for twice, MCP servers named, no withheld token).
//!   [`Dialect::render`] and [`Dialect::encode`] run it, so nothing is dropped even when a
//!   request is rendered without [`crate::models::validate`].
//! - [`check_model`] — what the provider documents per model family, for known models only
//!   (an unknown model is let through: the provider decides). `validate` runs it.
//!
//! [`LlmOptions::hosted_tools`]: motet_directives::LlmOptions::hosted_tools

use std::collections::HashSet;

use motet_directives::{HostedTool, LlmRequest, McpApproval, ReasoningEffort, WebSearch};

use crate::dialect::Dialect;
use crate::error::ProviderError;

/// Checks that `dialect` can express every hosted tool of `req` as asked.
///
/// # Errors
/// [`ProviderError::UnsupportedHostedTool`] for a tool or option the dialect does not have;
/// [`ProviderError::InvalidRequest`] for a tool asked for twice, an MCP server without a name
/// or URL, or one whose token was withheld by serialization.
pub(crate) fn check_dialect(dialect: Dialect, req: &LlmRequest) -> Result<(), ProviderError> {
    let tools = &req.options.hosted_tools;
    let mut seen = HashSet::new();
    for tool in tools {
        let key = match tool {
            HostedTool::McpServer(server) => format!("mcp_server `{}`", server.name),
            other => other.kind().to_owned(),
        };
        if !seen.insert(key.clone()) {
            return Err(invalid(format!("the hosted tool {key} is asked for twice")));
        }
        if let HostedTool::McpServer(server) = tool {
            if server.name.trim().is_empty() || server.url.trim().is_empty() {
                return Err(invalid("an MCP server needs a name and a URL".to_owned()));
            }
            if server
                .authorization
                .as_ref()
                .is_some_and(|t| t.is_withheld())
            {
                return Err(invalid(format!(
                    "the authorization token of MCP server `{}` was withheld when the request \
                     was serialized; set it again (McpServer::with_authorization) to send it",
                    server.name
                )));
            }
        }
        if let Some(reason) = dialect_lacks(dialect, req, tool) {
            return Err(unsupported(dialect, tool, reason));
        }
    }
    Ok(())
}

/// Checks the hosted tools of `req` against what the provider documents for its model.
///
/// # Errors
/// [`ProviderError::UnsupportedHostedTool`] naming the model and what it lacks.
pub(crate) fn check_model(dialect: Dialect, req: &LlmRequest) -> Result<(), ProviderError> {
    for tool in &req.options.hosted_tools {
        if let Some(reason) = model_lacks(dialect, req, tool) {
            return Err(unsupported(dialect, tool, reason));
        }
    }
    Ok(())
}

/// Why `dialect` cannot send `tool` as asked, if it cannot.
fn dialect_lacks(dialect: Dialect, req: &LlmRequest, tool: &HostedTool) -> Option<String> {
    match (dialect, tool) {
        (Dialect::OpenAiChat, _) => Some(match req.model.provider() {
            "openai" => format!(
                "Chat Completions has no hosted tools; use `openai-responses:{}`",
                req.model.model()
            ),
            _ => "Chat Completions has no hosted tools".to_owned(),
        }),
        (Dialect::Gemini, HostedTool::McpServer(_)) => {
            Some("Gemini has no remote MCP servers".to_owned())
        }
        (Dialect::Gemini, HostedTool::WebSearch(search)) => {
            let set = set_options(search);
            (!set.is_empty()).then(|| {
                format!(
                    "Gemini's googleSearch takes no options ({} asked for)",
                    set.join(", ")
                )
            })
        }
        (Dialect::OpenAiResponses, HostedTool::WebSearch(search)) => {
            let set: Vec<&str> = set_options(search)
                .into_iter()
                .filter(|option| matches!(*option, "max_uses" | "blocked_domains"))
                .collect();
            (!set.is_empty()).then(|| {
                format!(
                    "OpenAI's web_search has no {} (it takes allowed_domains and user_location)",
                    set.join(" or ")
                )
            })
        }
        (Dialect::Anthropic, HostedTool::WebSearch(search))
            if !search.allowed_domains.is_empty() && !search.blocked_domains.is_empty() =>
        {
            Some(
                "Anthropic's web_search takes allowed_domains or blocked_domains, not both"
                    .to_owned(),
            )
        }
        (Dialect::Anthropic, HostedTool::McpServer(server))
            if server.approval == McpApproval::Always =>
        {
            Some("Anthropic's MCP connector has no approval step".to_owned())
        }
        _ => None,
    }
}

/// The options of a web search that are set.
fn set_options(search: &WebSearch) -> Vec<&'static str> {
    [
        ("max_uses", search.max_uses.is_some()),
        ("allowed_domains", !search.allowed_domains.is_empty()),
        ("blocked_domains", !search.blocked_domains.is_empty()),
        ("user_location", search.user_location.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect()
}

/// Why the request's model cannot run `tool`, if the provider's documentation says so.
fn model_lacks(dialect: Dialect, req: &LlmRequest, tool: &HostedTool) -> Option<String> {
    let model = req.model.model();
    let is = |prefixes: &[&str]| prefixes.iter().any(|p| model.starts_with(p));
    match (dialect, tool) {
        // Web search and code execution came with Claude 3.5 Haiku and 3.7 Sonnet (web search
        // also on the upgraded 3.5 Sonnet); the Claude 3 models before them have neither.
        (Dialect::Anthropic, HostedTool::WebSearch(_) | HostedTool::CodeExecution)
            if is(&["claude-3-haiku", "claude-3-sonnet", "claude-3-opus"]) =>
        {
            Some(format!(
                "`{model}` has no {}; it needs Claude 3.5 Haiku, 3.7 Sonnet or a Claude 4 model",
                tool.kind()
            ))
        }
        (Dialect::Anthropic, HostedTool::CodeExecution) if is(&["claude-3-5-sonnet"]) => {
            Some(format!(
                "`{model}` has no code_execution; it needs Claude 3.5 Haiku, 3.7 Sonnet or a Claude 4 model"
            ))
        }
        (Dialect::OpenAiResponses, HostedTool::WebSearch(_)) if is(&["gpt-4.1-nano"]) => {
            Some(format!("OpenAI does not offer web search on `{model}`"))
        }
        (Dialect::OpenAiResponses, HostedTool::WebSearch(_))
            if is(&["gpt-5"]) && req.options.reasoning_effort == Some(ReasoningEffort::Minimal) =>
        {
            Some(format!(
                "OpenAI does not offer web search on `{model}` with minimal reasoning effort"
            ))
        }
        (Dialect::Gemini, HostedTool::WebSearch(_)) if is(&["gemini-1."]) => Some(format!(
            "`{model}` has no googleSearch tool (Gemini 1.5 searched through googleSearchRetrieval)"
        )),
        // Built-in tools next to function declarations need Gemini 3's tool context
        // circulation; earlier models reject the combination.
        (Dialect::Gemini, _) if !req.tools.is_empty() && is(&["gemini-1.", "gemini-2."]) => Some(
            format!("`{model}` cannot combine built-in tools with function tools (Gemini 3 can)"),
        ),
        _ => None,
    }
}

fn unsupported(dialect: Dialect, tool: &HostedTool, reason: String) -> ProviderError {
    ProviderError::UnsupportedHostedTool {
        dialect,
        tool: tool.kind(),
        reason,
    }
}

fn invalid(message: String) -> ProviderError {
    ProviderError::InvalidRequest { status: 0, message }
}
