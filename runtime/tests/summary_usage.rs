//! A summary's LLM call counted: an ask whose request's call asked for a summary reports the
//! summary's tokens in `Answer::usage`, and the stored thread's totals hold them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{ContextPolicy, ReAct, ReActConfig, Summarization};
use motet_directives::{AssistantBlock, LlmRequest, Message, Usage};
use motet_providers::{LlmClient, LlmEvents, ProviderError};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::store::{MemoryStore, ThreadStore as _};

use common::*;

const SUMMARY_INSTRUCTIONS: &str = "Summarize the conversation.";

/// Answers a summary call at once (100 tokens in, 20 out) and any other call after a pause
/// (10 in, 5 out, `turn`'s), so a summary asked for beside a call is back before it.
struct SummaryFirst;

#[async_trait::async_trait]
impl LlmClient for SummaryFirst {
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        let summary = matches!(
            req.messages.first(),
            Some(Message::System { content }) if content == SUMMARY_INSTRUCTIONS
        );
        let mut response = turn(vec![AssistantBlock::text(if summary {
            "They asked 2+2: 4."
        } else {
            "Noted."
        })])?;
        if summary {
            response.usage = Usage {
                input_tokens: 100,
                output_tokens: 20,
                ..Usage::default()
            };
        } else {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[tokio::test]
async fn an_ask_whose_call_asked_for_a_summary_reports_the_summary_tokens() {
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .llm(Arc::new(SummaryFirst))
        .store(store.clone())
        .build()
        .unwrap();
    let mut config = ReActConfig::new("openai:gpt-5.2".parse().unwrap()).with_context_policy(
        ContextPolicy::new()
            .with_summarization(Summarization::RequestNew)
            .with_summary_after_entries(2),
    );
    config.summary_instructions = Some(SUMMARY_INSTRUCTIONS.to_owned());
    let agent = runtime
        .spawn(AgentSpec::new("notes", ReAct::new(config)))
        .await
        .unwrap();

    let first = agent.ask_with("What is 2+2?", on("t")).await.unwrap();
    assert_eq!(first.usage.input_tokens, 10);
    // Two entries before this question: its call asks for a summary of them beside it.
    let second = agent.ask_with("And 3+3?", on("t")).await.unwrap();
    assert_eq!(
        (second.usage.input_tokens, second.usage.output_tokens),
        (110, 25),
        "the call's tokens and the summary's"
    );

    let thread = agent.get_thread(Some("t")).await.unwrap().unwrap();
    assert_eq!(
        (thread.usage().input_tokens, thread.usage().output_tokens),
        (120, 30)
    );
    let stored = store.summary("notes/t").await.unwrap().unwrap();
    assert_eq!(stored.usage, thread.usage());
    runtime.shutdown().await;
}
