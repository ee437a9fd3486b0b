//! End to end: a ReAct agent on the real local llama.cpp model calls a server-everything tool
//! over MCP — over stdio and over Streamable HTTP — through the runtime's tool dispatch.
//!
//! Needs `MOTET_LOCAL_LLM_URL` (`bash scripts/local-llm.sh start`) and `MOTET_MCP_EVERYTHING`
//! (`eval "$(bash scripts/mcp-everything.sh env)"`); without either it prints a `skipped:` line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use motet_agents::{ReAct, ReActConfig, ReactCompleted};
use motet_directives::{ToolArgs, ToolChoice};
use motet_mcp::{McpClient, McpServerConfig};
use motet_providers::{Dialect, HttpClient, LlmClient};
use motet_runtime::agent::{AgentSpec, AskOptions, Runtime};
use motet_runtime::tool::{Tool, ToolContext, ToolError, ToolSet};

/// Every call the model made through the tool: its arguments and what it got back.
type Calls = Arc<Mutex<Vec<(serde_json::Value, Result<String, ToolError>)>>>;

/// An MCP tool that records its calls.
struct Recorded {
    inner: motet_mcp::McpTool,
    calls: Calls,
}

#[async_trait]
impl Tool for Recorded {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn parameters(&self) -> serde_json::Value {
        self.inner.parameters()
    }
    async fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let result = self.inner.call(args, ctx).await;
        let args = serde_json::from_str(args.get()).unwrap_or(serde_json::Value::Null);
        self.calls.lock().unwrap().push((args, result.clone()));
        result
    }
}

fn local_server() -> Option<String> {
    match std::env::var("MOTET_LOCAL_LLM_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim_end_matches('/').to_owned()),
        _ => {
            motet_runtime::testing::missing(
                "MOTET_LOCAL_LLM_URL is not set (bash scripts/local-llm.sh start)",
            );
            None
        }
    }
}

#[tokio::test]
async fn a_react_agent_on_the_local_model_calls_an_mcp_tool_over_stdio() {
    let Some(url) = local_server() else { return };
    let Some(dir) = common::everything() else {
        return;
    };
    agent_calls_get_sum(&url, common::stdio_config(&dir)).await;
}

#[tokio::test]
async fn a_react_agent_on_the_local_model_calls_an_mcp_tool_over_http() {
    let Some(url) = local_server() else { return };
    if common::everything().is_none() {
        return;
    }
    let http = common::HttpEverything::start();
    agent_calls_get_sum(&url, McpServerConfig::http("everything", &http.url)).await;
}

/// A ReAct agent on the local model at `url`, forced to call server-everything's `get-sum`
/// reached through `config`: the server's answer holds the sum of the model's arguments.
async fn agent_calls_get_sum(url: &str, config: McpServerConfig) {
    let server = McpClient::connect(config).await.unwrap();
    let sum = server
        .tools()
        .await
        .unwrap()
        .into_iter()
        .find(|tool| tool.remote_name() == "get-sum")
        .expect("server-everything offers get-sum");
    let calls = Calls::default();
    let tools = Arc::new(
        ToolSet::builder()
            .tool(Recorded {
                inner: sum,
                calls: calls.clone(),
            })
            .with_timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    );

    let llm: Arc<dyn LlmClient> =
        Arc::new(HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap());
    let runtime = Runtime::builder().llm(llm).build().unwrap();
    let mut config = ReActConfig::new("openai-compat:smollm2-135m".parse().unwrap())
        .with_system_prompt("Use the tool to add numbers, then answer in one short sentence.")
        .with_tools(tools.definitions())
        .with_tool_choice(ToolChoice::Tool {
            name: "everything_get-sum".into(),
        })
        .with_max_iterations(3);
    config.options.max_tokens = Some(48);
    config.options.temperature = Some(0.0);
    let agent = runtime
        .spawn(AgentSpec::new("mcp", ReAct::new(config)).with_tools(tools))
        .await
        .unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(180),
        ..AskOptions::default()
    };
    let reply = agent
        .ask_with("What is 17 plus 25?", options)
        .await
        .unwrap();
    let done: ReactCompleted = reply.signal.data_as().unwrap();

    let calls = calls.lock().unwrap().clone();
    assert!(!calls.is_empty(), "the model never called the MCP tool");
    // The server computed what the model asked: its answer holds the sum of the arguments
    // the model sent (whatever numbers the small model chose).
    let (args, result) = &calls[0];
    let output = result.as_ref().expect("the MCP tool answered");
    let (a, b) = (args["a"].as_f64().unwrap(), args["b"].as_f64().unwrap());
    let expected = a + b;
    let shown = if expected.fract() == 0.0 {
        format!("{}", expected as i64)
    } else {
        expected.to_string()
    };
    assert!(output.contains(&shown), "{args} -> {output}");
    println!(
        "{} MCP call(s); first {args} -> {output:?}; {} LLM calls; answer {:?}",
        calls.len(),
        done.iterations,
        done.answer
    );
    runtime.shutdown().await;
    server.disconnect().await;
}
