//! What the hosted tools tests share: a request offering hosted tools, an MCP server with a
//! token, and each dialect's body for a request.

use std::sync::Arc;

use motet_directives::{
    HostedTool, LlmOptions, LlmRequest, McpServer, Message, PromptCache, Secret, ToolDef,
    UserLocation,
};
use motet_providers::{Dialect, ProviderError};
use serde_json::{Value, json};

/// The MCP server's token in these requests.
pub(crate) const TOKEN: &str = "mcp-live-7d1f0c2b9e84a6";

/// One function tool, `get_weather`.
pub(crate) fn weather() -> Arc<[ToolDef]> {
    Arc::from(vec![ToolDef::new(
        "get_weather",
        "Current weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )])
}

/// A question to `model` offering `get_weather` and the `hosted` tools.
pub(crate) fn request(model: &str, hosted: Vec<HostedTool>) -> LlmRequest {
    LlmRequest::new(
        model.parse().unwrap(),
        vec![Message::user("What changed in the serde docs this week?")],
    )
    .with_tools(weather())
    .with_options(LlmOptions {
        max_tokens: Some(1024),
        hosted_tools: hosted,
        // The recorded requests these are compared with marked nothing for prompt caching.
        prompt_cache: PromptCache::off(),
        ..LlmOptions::default()
    })
}

/// The same question offering only `tool`.
pub(crate) fn only(model: &str, tool: HostedTool) -> LlmRequest {
    request(model, vec![tool]).with_tools(Arc::from(Vec::new()))
}

/// Paris, as a web search's user location.
pub(crate) fn paris() -> UserLocation {
    UserLocation {
        city: Some("Paris".into()),
        country: Some("FR".into()),
        timezone: Some("Europe/Paris".into()),
        ..UserLocation::default()
    }
}

/// DeepWiki's MCP server, one tool allowed, with [`TOKEN`].
pub(crate) fn deepwiki() -> McpServer {
    McpServer::new("deepwiki", "https://mcp.deepwiki.com/mcp")
        .with_allowed_tools(["ask_question"])
        .with_authorization(Secret::new(TOKEN))
}

/// `dialect`'s body for `req`: the rendered `Value`, checked to be what `encode` sends.
pub(crate) fn body(dialect: Dialect, req: &LlmRequest) -> Value {
    let rendered = dialect.render(req).unwrap();
    let sent: Value = serde_json::from_slice(&dialect.encode(req).unwrap()).unwrap();
    assert_eq!(sent, rendered, "encode and render differ");
    rendered
}

/// Whether an error is the refusal of `tool` in `dialect`.
pub(crate) fn unsupported(dialect: Dialect, tool: &'static str) -> impl Fn(&ProviderError) -> bool {
    move |error| {
        matches!(error, ProviderError::UnsupportedHostedTool { dialect: d, tool: t, .. }
            if *d == dialect && *t == tool)
    }
}
