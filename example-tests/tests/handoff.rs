//! examples/handoff.rs: the triage agent hands the conversation to a specialist, whose answer
//! is the triage agent's, and a follow-up goes to the specialist — with a scripted model, and
//! against the local llama.cpp server (`MOTET_LOCAL_LLM_URL`; skipped without it, a failure
//! under `CI=true`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

#[path = "../../examples/handoff.rs"]
#[allow(dead_code, reason = "the example's `main`")]
mod example;

use motet::agents::delegate::holder;
use motet::directives::{AssistantBlock, AssistantMessage, LlmResponse, ToolArgs, Usage};
use motet::providers::ProviderError;
use motet::runtime::agent::Runtime;
use motet::runtime::testing::{ScriptedModel, stop_for};

fn turn(blocks: Vec<AssistantBlock>) -> Result<LlmResponse, ProviderError> {
    let stop_reason = stop_for(&blocks);
    Ok(LlmResponse::new(
        AssistantMessage {
            blocks,
            stop_reason,
        },
        Usage::default(),
    ))
}

#[tokio::test]
async fn triage_hands_billing_over_and_the_follow_up_goes_to_billing() {
    // The agents call the model one after another: triage, billing, then billing again.
    let model = ScriptedModel::new([
        turn(vec![AssistantBlock::tool_use(
            "h1",
            "transfer_to_billing",
            ToolArgs::from_text(r#"{"reason": "double charge"}"#),
        )]),
        turn(vec![AssistantBlock::text("A refund is on its way.")]),
        turn(vec![AssistantBlock::text("Three to five days.")]),
    ]);
    let runtime = Runtime::builder().llm(model.clone()).build().unwrap();
    let (first, follow_up) = example::converse(&runtime, "openai:scripted", "charged twice")
        .await
        .unwrap();
    assert_eq!(first.text, "A refund is on its way.");
    assert_eq!(follow_up.text, "Three to five days.");
    let triage = runtime.agent("triage").unwrap();
    let thread = triage.get_thread(None).await.unwrap().unwrap();
    assert_eq!(holder(&thread), Some("billing"));
    // Billing saw the user's words, not the handoff call.
    let briefing = format!("{:?}", model.requests()[1].messages);
    assert!(briefing.contains("charged twice"), "{briefing}");
    assert!(!briefing.contains("transfer_to_billing"), "{briefing}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn triage_hands_over_against_the_local_model() {
    let Some(url) = motet::runtime::testing::needs_var(
        "MOTET_LOCAL_LLM_URL",
        "bash scripts/local-llm.sh start",
    ) else {
        return;
    };
    let url = url.trim_end_matches('/');
    let client = motet::providers::HttpClient::new(
        motet::providers::Dialect::OpenAiChat,
        format!("{url}/v1"),
        None,
    )
    .unwrap();
    let runtime = Runtime::builder().llm(client).build().unwrap();
    let (first, follow_up) = example::converse(
        &runtime,
        "openai-compat:local",
        "I was charged twice for my plan this month.",
    )
    .await
    .unwrap();
    // Which specialist a small model picks is its business; that one of them took over and
    // answered both questions is the runtime's.
    let triage = runtime.agent("triage").unwrap();
    let thread = triage.get_thread(None).await.unwrap().unwrap();
    let held = holder(&thread).expect("the triage agent handed over");
    assert!(["billing", "support"].contains(&held), "{held}");
    let specialist = runtime.agent(held).unwrap();
    // A small model may hand over more than once in its one turn; the follow-up comes after.
    let asked = specialist.requests();
    assert!(
        asked.len() >= 2,
        "both questions reached `{held}`: {asked:?}"
    );
    assert!(!first.text.is_empty() && !follow_up.text.is_empty());
    println!("{held}: {} / {}", first.text, follow_up.text);
    runtime.shutdown().await;
}
