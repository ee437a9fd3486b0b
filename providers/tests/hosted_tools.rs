//! Hosted tools as request options: what each dialect sends for web search, code execution and
//! remote MCP servers (goldens in tests/golden/, and the tool JSON of the recorded requests the
//! providers accepted, tests/fixtures), the beta headers Anthropic needs, the typed refusals
//! before anything is sent, and the MCP token kept out of everything but the wire body.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_directives::{
    HostedTool, LlmOptions, LlmRequest, McpApproval, McpServer, Message, ReasoningEffort, Secret,
    ToolDef, UserLocation, WebSearch,
};
use motet_providers::testing::{HostileServer, Reply, wire};
use motet_providers::{ApiKey, Dialect, HttpClient, LlmClient, ProviderError, RetryPolicy, models};
use serde_json::{Value, json};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

/// The MCP server's token in these requests.
const TOKEN: &str = "mcp-live-7d1f0c2b9e84a6";

fn golden(name: &str) -> Value {
    let path = format!("{GOLDEN}/{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn weather() -> Arc<[ToolDef]> {
    Arc::from(vec![ToolDef::new(
        "get_weather",
        "Current weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )])
}

fn request(model: &str, hosted: Vec<HostedTool>) -> LlmRequest {
    LlmRequest::new(
        model.parse().unwrap(),
        vec![Message::user("What changed in the serde docs this week?")],
    )
    .with_tools(weather())
    .with_options(LlmOptions {
        max_tokens: Some(1024),
        hosted_tools: hosted,
        ..LlmOptions::default()
    })
}

fn paris() -> UserLocation {
    UserLocation {
        city: Some("Paris".into()),
        country: Some("FR".into()),
        timezone: Some("Europe/Paris".into()),
        ..UserLocation::default()
    }
}

fn deepwiki() -> McpServer {
    McpServer::new("deepwiki", "https://mcp.deepwiki.com/mcp")
        .with_allowed_tools(["ask_question"])
        .with_authorization(Secret::new(TOKEN))
}

fn web_search() -> HostedTool {
    HostedTool::WebSearch(
        WebSearch::default()
            .with_allowed_domains(["docs.rs"])
            .with_user_location(paris()),
    )
}

/// `dialect`'s body for `req`: the rendered `Value`, checked to be what `encode` sends.
fn body(dialect: Dialect, req: &LlmRequest) -> Value {
    let rendered = dialect.render(req).unwrap();
    let sent: Value = serde_json::from_slice(&dialect.encode(req).unwrap()).unwrap();
    assert_eq!(sent, rendered, "encode and render differ");
    rendered
}

fn check_golden(dialect: Dialect, req: &LlmRequest, name: &str) {
    models::validate(req).unwrap();
    let rendered = body(dialect, req);
    assert_eq!(
        rendered,
        golden(name),
        "{name}: rendered\n{}",
        serde_json::to_string_pretty(&rendered).unwrap()
    );
}

#[test]
fn anthropic_sends_web_search_and_code_execution_as_tools_and_mcp_servers_apart() {
    let search = WebSearch::default()
        .with_max_uses(3)
        .with_allowed_domains(["docs.rs"])
        .with_user_location(paris());
    let req = request(
        "anthropic:claude-sonnet-4-5",
        vec![
            HostedTool::WebSearch(search),
            HostedTool::CodeExecution,
            HostedTool::McpServer(deepwiki()),
        ],
    );
    check_golden(Dialect::Anthropic, &req, "anthropic/hosted_tools.json");
}

#[test]
fn responses_sends_every_hosted_tool_next_to_the_function_tools() {
    let req = request(
        "openai-responses:gpt-5.2",
        vec![
            web_search(),
            HostedTool::CodeExecution,
            HostedTool::McpServer(deepwiki()),
        ],
    );
    check_golden(
        Dialect::OpenAiResponses,
        &req,
        "openai_responses/hosted_tools.json",
    );
    // Approval asked for, one by one.
    let asking = request(
        "openai-responses:gpt-5.2",
        vec![HostedTool::McpServer(
            deepwiki().with_approval(McpApproval::Always),
        )],
    );
    assert_eq!(
        body(Dialect::OpenAiResponses, &asking)["tools"][1]["require_approval"],
        "always"
    );
}

#[test]
fn gemini_sends_built_in_tools_and_circulates_their_context_next_to_functions() {
    let req = request(
        "gemini:gemini-3-pro-preview",
        vec![
            HostedTool::WebSearch(WebSearch::default()),
            HostedTool::CodeExecution,
        ],
    );
    check_golden(Dialect::Gemini, &req, "gemini/hosted_tools.json");
    // Without function tools there is no function calling config, so nothing to circulate.
    let alone = request(
        "gemini:gemini-2.5-pro",
        vec![HostedTool::WebSearch(WebSearch::default())],
    )
    .with_tools(Arc::from(Vec::new()));
    models::validate(&alone).unwrap();
    let sent = body(Dialect::Gemini, &alone);
    assert_eq!(sent["tools"], json!([{"googleSearch": {}}]));
    assert!(sent.get("toolConfig").is_none(), "{sent}");
}

/// A request body a provider accepted, from tests/fixtures (its `body` or `parsed_body`).
fn recorded_body(path: &str) -> Value {
    let recorded: Value = serde_json::from_slice(&common::fixture(path)).unwrap();
    recorded
        .get("parsed_body")
        .or_else(|| recorded.get("body"))
        .cloned()
        .unwrap_or_else(|| panic!("{path} holds no body"))
}

/// The entry of `tools` whose `key` is `value`.
fn tool_where<'a>(tools: &'a Value, key: &str, value: &str) -> &'a Value {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool[key] == value)
        .unwrap_or_else(|| panic!("no tool with {key} {value} in {tools}"))
}

/// `value` without its `null` fields (pydantic-ai sends unset options as `null`; motet leaves
/// them out, which the API reads the same).
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn only(model: &str, tool: HostedTool) -> LlmRequest {
    request(model, vec![tool]).with_tools(Arc::from(Vec::new()))
}

#[test]
fn anthropic_renders_the_tool_json_of_the_recorded_requests() {
    let recorded = recorded_body("anthropic/web-search-citations-sonnet-4.request.json");
    let sent = body(
        Dialect::Anthropic,
        &only(
            "anthropic:claude-sonnet-4-0",
            HostedTool::WebSearch(WebSearch::default()),
        ),
    );
    assert_eq!(sent["tools"], json!([without_nulls(&recorded["tools"][0])]));
    // With no function tools, the recorded request still says `auto`, as motet does.
    assert_eq!(sent["tool_choice"], recorded["tool_choice"]);

    let recorded = recorded_body("anthropic/mcp-tool-use-sonnet-4.5.request.json");
    let server = McpServer::new("deepwiki", "https://mcp.deepwiki.com/mcp")
        .with_allowed_tools(["ask_question"]);
    let sent = body(
        Dialect::Anthropic,
        &only("anthropic:claude-sonnet-4-5", HostedTool::McpServer(server)),
    );
    assert_eq!(sent["mcp_servers"], recorded["mcp_servers"]);
    assert!(sent.get("tools").is_none(), "{sent}");

    // The recorded code execution request used the newer `code_execution_20260120`, which
    // only the latest models take; motet sends `code_execution_20250825` (with its beta),
    // which every model with code execution takes. Only the version differs.
    let recorded = recorded_body("anthropic/code-execution-bash-sonnet-4.6.request.json");
    let sent = body(
        Dialect::Anthropic,
        &only("anthropic:claude-sonnet-4-6", HostedTool::CodeExecution),
    );
    let (sent, recorded) = (&sent["tools"][0], &recorded["tools"][0]);
    assert_eq!(sent["name"], recorded["name"]);
    assert_eq!(recorded["type"], "code_execution_20260120");
    assert_eq!(sent["type"], "code_execution_20250825");
}

#[test]
fn responses_renders_the_tool_json_of_the_recorded_requests() {
    let recorded = recorded_body("openai-responses/code-interpreter-calls-gpt-5.request.json");
    let sent = body(
        Dialect::OpenAiResponses,
        &only("openai-responses:gpt-5", HostedTool::CodeExecution),
    );
    assert_eq!(sent["tools"], recorded["tools"]);
    assert_eq!(sent["tool_choice"], recorded["tool_choice"]);

    let recorded = recorded_body("openai-responses/mcp-list-tools-mcp-call-o4-mini.request.json");
    let server = McpServer::new("deepwiki", "https://mcp.deepwiki.com/mcp")
        .with_allowed_tools(["ask_question", "read_wiki_structure"]);
    let sent = body(
        Dialect::OpenAiResponses,
        &only("openai-responses:o4-mini", HostedTool::McpServer(server)),
    );
    assert_eq!(sent["tools"], recorded["tools"]);

    // The recorded web search also names `search_context_size: medium`, the API's default,
    // which motet leaves to the API.
    let recorded = recorded_body("openai-responses/web-search-call-gpt-5.request.json");
    let sent = body(
        Dialect::OpenAiResponses,
        &only(
            "openai-responses:gpt-5",
            HostedTool::WebSearch(WebSearch::default()),
        ),
    );
    let mut expected = tool_where(&recorded["tools"], "type", "web_search").clone();
    assert_eq!(expected["search_context_size"], "medium");
    expected
        .as_object_mut()
        .unwrap()
        .remove("search_context_size");
    assert_eq!(sent["tools"], json!([expected]));
}

#[test]
fn gemini_renders_the_tool_json_of_the_recorded_requests() {
    for (path, tool, model) in [
        (
            "gemini/code-execution-thought-parts-gemini-2.5-pro.request.json",
            HostedTool::CodeExecution,
            "gemini:gemini-2.5-pro",
        ),
        (
            "gemini/code-execution-thought-signature-gemini-3-flash.request.json",
            HostedTool::CodeExecution,
            "gemini:gemini-3-flash-preview",
        ),
        (
            "gemini/google-search-gemini-2.5-pro.request.json",
            HostedTool::WebSearch(WebSearch::default()),
            "gemini:gemini-2.5-pro",
        ),
    ] {
        let recorded = recorded_body(path);
        let sent = body(Dialect::Gemini, &only(model, tool));
        assert_eq!(sent["tools"], recorded["tools"], "{path}");
    }

    // Function tools next to a built-in tool, on Gemini 3: the recorded request turns on
    // server-side tool invocations, as motet does.
    let recorded = recorded_body("gemini/function-and-google-search-gemini-3-flash.request.json");
    let sent = body(
        Dialect::Gemini,
        &request(
            "gemini:gemini-3-flash-preview",
            vec![HostedTool::WebSearch(WebSearch::default())],
        ),
    );
    assert_eq!(
        sent["toolConfig"]["includeServerSideToolInvocations"],
        recorded["toolConfig"]["includeServerSideToolInvocations"]
    );
    assert_eq!(
        tool_where_key(&sent["tools"], "googleSearch"),
        tool_where_key(&recorded["tools"], "googleSearch")
    );
}

/// The entry of `tools` that has `key`.
fn tool_where_key<'a>(tools: &'a Value, key: &str) -> &'a Value {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool.get(key).is_some())
        .unwrap_or_else(|| panic!("no {key} in {tools}"))
}

#[test]
fn the_recorded_google_search_stream_assembles_whole_and_byte_by_byte() {
    let raw = common::fixture("gemini/google-search-gemini-2.5-pro.sse");
    let whole = motet_providers::transcript::assemble(Dialect::Gemini, &raw).unwrap();
    let bytewise =
        motet_providers::transcript::assemble_chunked(Dialect::Gemini, raw.chunks(1)).unwrap();
    assert_eq!(bytewise, whole);
    let text: String = whole.message.text_blocks().collect();
    assert!(text.starts_with("### Weather in San Francisco"), "{text}");
    assert!(text.ends_with("throughout the day."), "{text}");
}

fn unsupported(dialect: Dialect, tool: &'static str) -> impl Fn(&ProviderError) -> bool {
    move |error| {
        matches!(error, ProviderError::UnsupportedHostedTool { dialect: d, tool: t, .. }
            if *d == dialect && *t == tool)
    }
}

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

#[test]
fn the_token_never_prints_nor_serializes_but_reaches_the_wire() {
    for model in ["anthropic:claude-sonnet-4-5", "openai-responses:gpt-5.2"] {
        let req = request(model, vec![HostedTool::McpServer(deepwiki())]);
        assert!(!format!("{req:?}").contains(TOKEN));
        assert!(!format!("{req:#?}").contains(TOKEN));
        let stored = serde_json::to_string(&req).unwrap();
        assert!(!stored.contains(TOKEN), "{stored}");
        let dialect = models::dialect_for(&req.model).unwrap();
        let sent = String::from_utf8(dialect.encode(&req).unwrap()).unwrap();
        assert!(
            sent.contains(TOKEN),
            "{model}: the token is not in the body"
        );

        // A stored request reads back without the token, and is not sent until it is set
        // again.
        let back: LlmRequest = serde_json::from_str(&stored).unwrap();
        for error in [
            models::validate(&back).unwrap_err(),
            dialect.encode(&back).unwrap_err(),
        ] {
            let ProviderError::InvalidRequest { status: 0, message } = &error else {
                panic!("{model}: {error:?}");
            };
            assert!(message.contains("withheld"), "{message}");
        }
        let mut again = back.clone();
        let HostedTool::McpServer(server) = &mut again.options.hosted_tools[0] else {
            panic!("not an MCP server");
        };
        server.authorization = Some(Secret::new(TOKEN));
        assert_eq!(again, req);
    }
}

#[test]
fn anthropic_asks_for_every_beta_in_one_header() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dialect = Dialect::Anthropic;
        let server = HostileServer::start([Reply::events(wire::answer(dialect, "ok"))])
            .await
            .unwrap();
        let client = client_for(dialect, &server);
        let mut req = request(
            wire::model(dialect),
            vec![HostedTool::CodeExecution, HostedTool::McpServer(deepwiki())],
        );
        req.options.thinking_budget = Some(2048);
        client.complete(req).await.unwrap();
        let sent = &server.requests()[0];
        assert_eq!(
            sent.header("anthropic-beta"),
            Some("interleaved-thinking-2025-05-14,code-execution-2025-08-25,mcp-client-2025-04-04")
        );
        assert!(sent.body_text().contains(TOKEN));

        // Web search alone needs no beta.
        let server = HostileServer::start([Reply::events(wire::answer(dialect, "ok"))])
            .await
            .unwrap();
        let req = request(
            wire::model(dialect),
            vec![HostedTool::WebSearch(WebSearch::default())],
        );
        client_for(dialect, &server).complete(req).await.unwrap();
        assert_eq!(server.requests()[0].header("anthropic-beta"), None);
    });
}

fn client_for(dialect: Dialect, server: &HostileServer) -> HttpClient {
    HttpClient::new(
        dialect,
        wire::base_url(dialect, server.url()),
        Some(ApiKey::new("sk-test-key")),
    )
    .unwrap()
    .with_retry(RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    })
}

#[test]
fn a_provider_error_quoting_the_token_is_scrubbed_and_chat_completions_sends_nothing() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for dialect in [Dialect::Anthropic, Dialect::OpenAiResponses] {
            let echo = format!("MCP server deepwiki rejected token {TOKEN} (401)");
            let server = HostileServer::start([Reply::json(400, wire::error_body(dialect, &echo))])
                .await
                .unwrap();
            let req = request(
                wire::model(dialect),
                vec![HostedTool::McpServer(deepwiki())],
            );
            let error = client_for(dialect, &server)
                .complete(req)
                .await
                .unwrap_err();
            let message = error.to_string();
            assert!(
                matches!(error, ProviderError::InvalidRequest { status: 400, .. }),
                "{error:?}"
            );
            assert!(!message.contains(&TOKEN[4..]), "{dialect}: {message}");
            assert!(
                message.contains("rejected token [redacted]"),
                "{dialect}: {message}"
            );

            // And in an error event after content, once the stream is flowing.
            let mut events = wire::opening(dialect);
            events.push(wire::text(dialect, "Asking the server…"));
            events.push(wire::error_event(dialect, &echo));
            let server = HostileServer::start([Reply::events(events)]).await.unwrap();
            let req = request(
                wire::model(dialect),
                vec![HostedTool::McpServer(deepwiki())],
            );
            let error = client_for(dialect, &server)
                .complete(req)
                .await
                .unwrap_err();
            let message = error.to_string();
            assert!(!message.contains(&TOKEN[4..]), "{dialect}: {message}");
            assert!(
                message.contains("rejected token [redacted]"),
                "{dialect}: {message}"
            );
        }

        let server = HostileServer::start([Reply::events(wire::answer(Dialect::OpenAiChat, "ok"))])
            .await
            .unwrap();
        let req = only("openai:gpt-4.1", HostedTool::CodeExecution);
        let error = client_for(Dialect::OpenAiChat, &server)
            .complete(req)
            .await
            .unwrap_err();
        assert!(unsupported(Dialect::OpenAiChat, "code_execution")(&error));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(server.hits(), 0, "a refused request reached the server");
    });
}
