//! An agent with an MCP server's tools: `cargo run --release --example mcp -- "What is 17 plus 25?"`.
//!
//! The server is the MCP reference server, server-everything (its tools become
//! `everything_echo`, `everything_get-sum`, ...), started over stdio from the folder in
//! `MOTET_MCP_EVERYTHING` (`eval "$(bash scripts/mcp-everything.sh env)"`), or reached over
//! Streamable HTTP at `MOTET_MCP_URL` (`bash scripts/mcp-everything.sh serve-http 3001`, then
//! `MOTET_MCP_URL=http://127.0.0.1:3001/mcp`).
//!
//! The model comes from `MOTET_MODEL`: `openai:gpt-5.2` with `OPENAI_API_KEY`, or the local
//! llama.cpp server as `openai-compat:local` with
//! `MOTET_OPENAI_COMPAT_BASE_URL=http://127.0.0.1:8089/v1` (`bash scripts/local-llm.sh start`).

use motet::mcp::{McpClient, McpServerConfig};
use motet::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = motet::telemetry::init()?;
    let model = std::env::var("MOTET_MODEL")
        .map_err(|_| "set MOTET_MODEL, e.g. openai:gpt-5.2 or openai-compat:local")?;
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is 17 plus 25?".into());

    let config = match (
        std::env::var("MOTET_MCP_URL"),
        std::env::var("MOTET_MCP_EVERYTHING"),
    ) {
        (Ok(url), _) => McpServerConfig::http("everything", url),
        (_, Ok(dir)) => McpServerConfig::stdio("everything", "node")
            .arg(format!("{dir}/dist/index.js"))
            .arg("stdio"),
        _ => {
            return Err(
                "set MOTET_MCP_EVERYTHING (eval \"$(bash scripts/mcp-everything.sh env)\") \
                        or MOTET_MCP_URL (a Streamable HTTP MCP endpoint)"
                    .into(),
            );
        }
    };
    let server = McpClient::connect(config).await?;

    // Offer the model a few of the server's tools; every MCP tool is an ordinary motet tool.
    let offered = ["echo", "get-sum", "get-tiny-image"];
    // `Required`: the first LLM call must call one of them (the next is free to answer), so a
    // small local model adds with `get-sum` rather than from memory.
    let mut agent = ReActAgent::new("mcp", model)
        .system("Use the tools when they help, then answer in one short sentence.")
        .tool_choice(ToolChoice::Required);
    for tool in server.tools().await? {
        if offered.contains(&tool.remote_name()) {
            println!("tool: {}", tool.name());
            agent = agent.tool(tool);
        }
    }

    let runtime = Runtime::builder().build()?;
    let agent = runtime.spawn(agent).await?;
    let answer = agent.ask(question).await?;
    println!("{answer}");

    runtime.shutdown().await;
    server.disconnect().await;
    Ok(())
}
