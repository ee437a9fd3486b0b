//! Hosted tools as request options, rendered: what each dialect sends for web search, code
//! execution and remote MCP servers — goldens in tests/golden/, and the tool JSON of the recorded
//! requests the providers accepted (tests/fixtures). The refusals are in
//! `hosted_tools_validation.rs`, the MCP token's path and the beta headers on the wire in
//! `hosted_tools_on_the_wire.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;

use common::hosted::{body, deepwiki, only, paris, request};
use motet_directives::{HostedTool, LlmRequest, McpApproval, McpServer, WebSearch};
use motet_providers::{Dialect, models};
use serde_json::{Value, json};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

fn golden(name: &str) -> Value {
    let path = format!("{GOLDEN}/{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn web_search() -> HostedTool {
    HostedTool::WebSearch(
        WebSearch::default()
            .with_allowed_domains(["docs.rs"])
            .with_user_location(paris()),
    )
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
