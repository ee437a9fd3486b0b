//! A supervisor with two specialists: the supervisor's model routes each question to the
//! member best placed to answer it (a forced `route` tool listing the members), the member — a
//! ReAct agent of its own — answers, and the supervisor replies with what came back.
//!
//! ```text
//! bash scripts/local-llm.sh start        # a local model, no key needed
//! MOTET_LOCAL_LLM_URL=http://127.0.0.1:8089 cargo run --example team -- "What is 17 * 23?"
//! ```
//!
//! The model: `MOTET_MODEL` (`openai:gpt-4.1-mini` with `OPENAI_API_KEY`, ...), else the local
//! OpenAI-compatible server at `MOTET_LOCAL_LLM_URL`.

use std::time::Duration;

use motet::agents::team::{Member, Supervisor, TeamCompleted};
use motet::prelude::*;
use motet::providers::{ProviderKind, ProvidersConfig};

/// Two integers to multiply.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Factors {
    a: i64,
    b: i64,
}

/// Output tokens per call: a tool call or a sentence.
const MAX_TOKENS: u32 = 48;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = motet::telemetry::init()?;
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is 17 * 23?".into());
    let (model, config) = choose_model()?;
    let runtime = Runtime::builder().llm(Providers::new(config)?).build()?;

    // The specialists: a calculator that must call its tool first, and a writer.
    let multiply = tool_fn(
        "multiply",
        "Multiplies two integers.",
        |f: Factors| async move {
            f.a.checked_mul(f.b)
                .map(|p| p.to_string())
                .ok_or_else(|| ToolError::failed("overflow"))
        },
    );
    runtime
        .spawn(
            ReActAgent::new("calculator", model.to_string())
                .system("Answer with the tool's result in one short sentence.")
                .tool(multiply)
                .tool_choice(ToolChoice::Required)
                .configure(|c| short(c, 3)),
        )
        .await?;
    runtime
        .spawn(
            ReActAgent::new("writer", model.to_string())
                .system("Answer in one short sentence.")
                .configure(|c| short(c, 1)),
        )
        .await?;

    // The supervisor hears its members' answers as the replies of its asks.
    let supervisor = Supervisor::new([
        Member::new("calculator", "multiplies numbers"),
        Member::new("writer", "writes sentences about anything else"),
    ])
    .route_by_model(model, 96)
    .with_timeout(Duration::from_secs(120));
    let team = runtime
        .spawn(AgentSpec::new("supervisor", supervisor))
        .await?;

    let options = AskOptions {
        timeout: Duration::from_secs(180),
        ..AskOptions::default()
    };
    let answer = team.ask_with(question, options).await?;
    let done: TeamCompleted = answer.signal.data_as()?;
    for member in &done.answers {
        println!("routed to: {}", member.agent);
    }
    println!("answer: {}", done.answer.trim());
    eprintln!(
        "tokens: {} in, {} out (the router's call and the members')",
        done.usage.input_tokens, done.usage.output_tokens
    );
    runtime.shutdown().await;
    Ok(())
}

/// At most `calls` LLM calls of [`MAX_TOKENS`] each: quick on a small local model.
fn short(mut config: ReActConfig, calls: u32) -> ReActConfig {
    config.options.max_tokens = Some(MAX_TOKENS);
    config.with_max_iterations(calls)
}

/// `MOTET_MODEL` with the providers' settings from the environment, else the local server at
/// `MOTET_LOCAL_LLM_URL`.
fn choose_model() -> Result<(ModelRef, ProvidersConfig), Box<dyn std::error::Error>> {
    let config = ProvidersConfig::from_env()?;
    let set = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    if let Some(model) = set("MOTET_MODEL") {
        return Ok((model.parse()?, config));
    }
    let url = set("MOTET_LOCAL_LLM_URL").ok_or(
        "set MOTET_MODEL (e.g. openai:gpt-4.1-mini) or MOTET_LOCAL_LLM_URL \
         (bash scripts/local-llm.sh start prints one)",
    )?;
    let url = url.trim().trim_end_matches('/');
    let base = url.strip_suffix("/v1").unwrap_or(url);
    let config = config.with_base_url(ProviderKind::OpenAiCompat, format!("{base}/v1"));
    Ok(("openai-compat:local".parse()?, config))
}
