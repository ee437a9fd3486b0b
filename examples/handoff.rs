//! A triage agent hands the conversation to a specialist (the OpenAI Agents SDK's handoff):
//! `cargo run --release --example handoff -- "I was charged twice for my plan"`.
//!
//! The triage agent's only tools are its handoffs (`transfer_to_billing`, `transfer_to_support`);
//! the specialist it picks carries on in its own thread of the same id, shown the conversation
//! without tool calls, and its answer is the triage agent's. A follow-up asked of the triage
//! agent on that thread goes to the specialist that holds it now.
//!
//! The model comes from `MOTET_MODEL`: `openai:gpt-5.2` with `OPENAI_API_KEY`, or the local
//! llama.cpp server as `openai-compat:local` with
//! `MOTET_OPENAI_COMPAT_BASE_URL=http://127.0.0.1:8089/v1` (`bash scripts/local-llm.sh start`).

use motet::prelude::*;

/// The most tokens one model call writes: a small local model's context (2,048 tokens) holds
/// the whole conversation, and the example stays quick.
const MAX_TOKENS: u32 = 128;

/// A specialist's calls kept short (the triage agent's one call is its handoff, which a cap
/// could cut in the middle).
fn short(mut config: ReActConfig) -> ReActConfig {
    config.options.max_tokens = Some(MAX_TOKENS);
    config
}

/// The agent every question goes to first: it only routes.
pub(crate) fn triage(model: &str) -> ReActAgent {
    ReActAgent::new("triage", model)
        .system("You route customer questions. Hand billing questions to billing, everything else to support.")
        .tool(Handoff::to("billing").describe("Charges, invoices, refunds, payment methods.").history(HistoryFilter::NoToolCalls))
        .tool(Handoff::to("support").describe("Anything that is not about money.").history(HistoryFilter::NoToolCalls))
        // It must hand over: a small model would otherwise answer itself.
        .tool_choice(ToolChoice::Required)
}

/// The specialists, each with its own instructions.
pub(crate) fn specialists(model: &str) -> [ReActAgent; 2] {
    [
        ReActAgent::new("billing", model)
            .system(
                "You are the billing specialist. Answer in two sentences; offer a refund for a double charge.",
            )
            .configure(short),
        ReActAgent::new("support", model)
            .system("You are the support specialist. Answer in two sentences.")
            .configure(short),
    ]
}

/// Spawns the three agents on `runtime`, asks `question`, then a follow-up on the same thread;
/// returns both answers and the agent that holds the thread.
pub(crate) async fn converse(
    runtime: &Runtime,
    model: &str,
    question: &str,
) -> Result<(Answer, Answer), Box<dyn std::error::Error>> {
    for specialist in specialists(model) {
        runtime.spawn(specialist).await?;
    }
    let triage = runtime.spawn(triage(model)).await?;
    let options = || AskOptions {
        timeout: std::time::Duration::from_secs(120),
        ..AskOptions::default()
    };
    let first = triage.ask_with(question, options()).await?;
    let follow_up = triage
        .ask_with("Thanks. How long will that take?", options())
        .await?;
    Ok((first, follow_up))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = motet::telemetry::init()?;
    let model = std::env::var("MOTET_MODEL")
        .map_err(|_| "set MOTET_MODEL, e.g. openai:gpt-5.2 or openai-compat:local")?;
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "I was charged twice for my plan this month.".into());
    let runtime = Runtime::builder().build()?;
    let (first, follow_up) = converse(&runtime, &model, &question).await?;
    println!("{first}");
    println!("{follow_up}");
    // Who holds the conversation now: the triage thread records the handoff.
    if let Some(agent) = runtime.agent("triage")
        && let Some(thread) = agent.get_thread(None).await?
    {
        let holder = motet::agents::delegate::holder(&thread).unwrap_or("triage");
        eprintln!("the conversation is held by `{holder}`");
    }
    runtime.shutdown().await;
    Ok(())
}
