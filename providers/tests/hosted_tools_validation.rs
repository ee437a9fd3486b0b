//! Hosted tools a dialect or a model cannot run, or not as asked, are refused with a typed
//! error before anything is sent — by `models::validate`, and by `Dialect::render` and `encode`
//! for what the wire cannot express — never dropped in silence. Models the rules do not name
//! are left to the provider.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use common::hosted::{TOKEN, deepwiki, only, request, unsupported};
use motet_directives::{
    HostedTool, LlmOptions, LlmRequest, McpApproval, McpServer, ReasoningEffort, WebSearch,
};
use motet_providers::{Dialect, ProviderError, models};

/// Each refusal: the request, then the dialect and tool its error must name.
#[test]
fn what_a_dialect_or_model_cannot_run_is_refused_by_validate_naming_the_tool() {
    let search = |search: WebSearch| HostedTool::WebSearch(search);
    let cases: Vec<(LlmRequest, Dialect, &str)> = vec![
        // Chat Completions has no hosted tools at all, for OpenAI or compatible servers.
        (
            only("openai:gpt-5.2", HostedTool::CodeExecution),
            Dialect::OpenAiChat,
            "code_execution",
        ),
        (
            only("openai-compat:qwen3:8b", search(WebSearch::default())),
            Dialect::OpenAiChat,
            "web_search",
        ),
        // Gemini has no MCP servers and no search options.
        (
            only(
                "gemini:gemini-3-pro-preview",
                HostedTool::McpServer(deepwiki()),
            ),
            Dialect::Gemini,
            "mcp_server",
        ),
        (
            only(
                "gemini:gemini-3-pro-preview",
                search(WebSearch::default().with_max_uses(2)),
            ),
            Dialect::Gemini,
            "web_search",
        ),
        // OpenAI's web search has no max_uses and no blocked domains.
        (
            only(
                "openai-responses:gpt-5.2",
                search(WebSearch::default().with_blocked_domains(["example.com"])),
            ),
            Dialect::OpenAiResponses,
            "web_search",
        ),
        // Anthropic: one domain list, and no approval step.
        (
            only(
                "anthropic:claude-sonnet-4-5",
                search(
                    WebSearch::default()
                        .with_allowed_domains(["a.com"])
                        .with_blocked_domains(["b.com"]),
                ),
            ),
            Dialect::Anthropic,
            "web_search",
        ),
        (
            only(
                "anthropic:claude-sonnet-4-5",
                HostedTool::McpServer(deepwiki().with_approval(McpApproval::Always)),
            ),
            Dialect::Anthropic,
            "mcp_server",
        ),
        // Models the providers document as lacking the tool.
        (
            only(
                "anthropic:claude-3-haiku-20240307",
                HostedTool::CodeExecution,
            ),
            Dialect::Anthropic,
            "code_execution",
        ),
        (
            only(
                "anthropic:claude-3-opus-latest",
                search(WebSearch::default()),
            ),
            Dialect::Anthropic,
            "web_search",
        ),
        (
            only(
                "anthropic:claude-3-5-sonnet-20241022",
                HostedTool::CodeExecution,
            ),
            Dialect::Anthropic,
            "code_execution",
        ),
        (
            only(
                "openai-responses:gpt-4.1-nano",
                search(WebSearch::default()),
            ),
            Dialect::OpenAiResponses,
            "web_search",
        ),
        (
            only("openai-responses:gpt-5", search(WebSearch::default())).with_options(LlmOptions {
                reasoning_effort: Some(ReasoningEffort::Minimal),
                hosted_tools: vec![search(WebSearch::default())],
                ..LlmOptions::default()
            }),
            Dialect::OpenAiResponses,
            "web_search",
        ),
        (
            only("gemini:gemini-1.5-pro", search(WebSearch::default())),
            Dialect::Gemini,
            "web_search",
        ),
        // Built-in tools next to function tools need Gemini 3.
        (
            request("gemini:gemini-2.5-flash", vec![HostedTool::CodeExecution]),
            Dialect::Gemini,
            "code_execution",
        ),
    ];
    for (req, dialect, tool) in cases {
        let error = models::validate(&req).unwrap_err();
        assert!(
            unsupported(dialect, tool)(&error),
            "{}: {error:?}",
            req.model
        );
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{dialect} cannot run the hosted tool `{tool}`: ")),
            "{message}"
        );
        assert!(!message.contains(TOKEN), "{message}");
    }
}

#[test]
fn what_the_dialect_cannot_express_is_refused_by_render_and_encode_too() {
    let req = only("openai:gpt-5.2", HostedTool::CodeExecution);
    let error = Dialect::OpenAiChat.render(&req).unwrap_err();
    assert!(unsupported(Dialect::OpenAiChat, "code_execution")(&error));
    assert_eq!(
        error.to_string(),
        "openai-chat cannot run the hosted tool `code_execution`: Chat Completions has no \
         hosted tools; use `openai-responses:gpt-5.2`"
    );
    assert_eq!(Dialect::OpenAiChat.encode(&req).unwrap_err(), error);
    let req = only(
        "gemini:gemini-3-pro-preview",
        HostedTool::McpServer(deepwiki()),
    );
    assert!(unsupported(Dialect::Gemini, "mcp_server")(
        &Dialect::Gemini.encode(&req).unwrap_err()
    ));
}

#[test]
fn models_and_tools_the_docs_allow_pass_and_unknown_models_are_left_to_the_provider() {
    let everything = || {
        vec![
            HostedTool::WebSearch(WebSearch::default()),
            HostedTool::CodeExecution,
            HostedTool::McpServer(deepwiki()),
        ]
    };
    for model in [
        "anthropic:claude-3-5-haiku-20241022",
        "anthropic:claude-3-7-sonnet-20250219",
        "anthropic:claude-opus-4-1",
        "anthropic:claude-haiku-4-5",
        "anthropic:claude-some-future-model",
        "openai-responses:gpt-4.1",
        "openai-responses:o4-mini",
        "openai-responses:some-future-model",
    ] {
        models::validate(&request(model, everything())).unwrap_or_else(|e| panic!("{model}: {e}"));
    }
    for model in ["gemini:gemini-3-pro-preview", "gemini:gemini-some-future"] {
        let req = request(
            model,
            vec![
                HostedTool::WebSearch(WebSearch::default()),
                HostedTool::CodeExecution,
            ],
        );
        models::validate(&req).unwrap_or_else(|e| panic!("{model}: {e}"));
    }
    // Without function tools, Gemini 2.x runs its built-in tools.
    let alone = only("gemini:gemini-2.5-flash", HostedTool::CodeExecution);
    models::validate(&alone).unwrap();
}

#[test]
fn a_tool_asked_for_twice_or_an_unnamed_server_is_an_invalid_request() {
    let invalid = |req: &LlmRequest| {
        matches!(
            models::validate(req),
            Err(ProviderError::InvalidRequest { status: 0, .. })
        )
    };
    let model = "anthropic:claude-sonnet-4-5";
    assert!(invalid(&request(
        model,
        vec![HostedTool::CodeExecution, HostedTool::CodeExecution]
    )));
    assert!(invalid(&request(
        model,
        vec![
            HostedTool::McpServer(deepwiki()),
            HostedTool::McpServer(deepwiki())
        ]
    )));
    assert!(invalid(&request(
        model,
        vec![HostedTool::McpServer(McpServer::new(" ", "https://x"))]
    )));
    // Two servers with different names are two tools.
    let other = McpServer::new("other", "https://mcp.example.com/mcp");
    models::validate(&request(
        model,
        vec![
            HostedTool::McpServer(deepwiki()),
            HostedTool::McpServer(other),
        ],
    ))
    .unwrap();
}
