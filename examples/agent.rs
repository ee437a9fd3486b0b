//! One ReAct agent with one tool: `cargo run --example agent -- "What is 17 * 23?"`.
//!
//! The model comes from `MOTET_MODEL`: `openai:gpt-5.2` with `OPENAI_API_KEY`, or the local
//! llama.cpp server as `openai-compat:local` with
//! `MOTET_OPENAI_COMPAT_BASE_URL=http://127.0.0.1:8089/v1` (`bash scripts/local-llm.sh start`).

use std::sync::Arc;

use motet::agents::ReactCompleted;
use motet::prelude::*;

/// Two integers to multiply.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Factors {
    a: i64,
    b: i64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = motet::telemetry::init()?;
    let model: ModelRef = std::env::var("MOTET_MODEL")
        .map_err(|_| "set MOTET_MODEL, e.g. openai:gpt-5.2 or openai-compat:local")?
        .parse()?;
    let multiply = tool_fn(
        "multiply",
        "Multiplies two integers.",
        |f: Factors| async move {
            let product =
                f.a.checked_mul(f.b)
                    .ok_or_else(|| ToolError::failed("overflow"))?;
            Ok(product.to_string())
        },
    );
    let tools = Arc::new(ToolSet::builder().tool(multiply).build()?);
    let react = ReAct::new(ReActConfig::new(model).with_tools(tools.tools()));
    let runtime = Runtime::builder()
        .llm(Arc::new(Providers::from_env()?))
        .build()?;
    let agent = runtime
        .spawn(AgentSpec::new("calc", react).with_tools(tools))
        .await?;
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is 17 * 23?".into());
    let reply = agent.ask(question, AskOptions::default()).await?;
    println!("{}", reply.data_as::<ReactCompleted>()?.answer);
    runtime.shutdown().await;
    Ok(())
}
