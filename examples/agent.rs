//! One ReAct agent with one tool: `cargo run --release --example agent -- "What is 17 * 23?"`.
//!
//! The model comes from `MOTET_MODEL`: `openai:gpt-5.2` with `OPENAI_API_KEY`, or the local
//! llama.cpp server as `openai-compat:local` with
//! `MOTET_OPENAI_COMPAT_BASE_URL=http://127.0.0.1:8089/v1` (`bash scripts/local-llm.sh start`).

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
    let model = std::env::var("MOTET_MODEL")
        .map_err(|_| "set MOTET_MODEL, e.g. openai:gpt-5.2 or openai-compat:local")?;
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is 17 * 23?".into());

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
    let runtime = Runtime::builder().build()?;
    // `Required`: the first LLM call must call a tool (the next is free to answer), so even
    // a small local model multiplies with the tool rather than from memory.
    let agent = runtime
        .spawn(
            ReActAgent::new("calc", model)
                .tool(multiply)
                .tool_choice(ToolChoice::Required),
        )
        .await?;
    let answer = agent.ask(question).await?;
    println!("{answer}");

    // What the agent did, entry by entry: the question, the model's tool call, the tool's
    // result, the answer — each with the tokens its LLM call took.
    if let Some(thread) = agent.get_thread(Some(&answer.thread)).await? {
        for entry in thread.to_list() {
            eprintln!("{entry}");
        }
    }

    runtime.shutdown().await;
    Ok(())
}
