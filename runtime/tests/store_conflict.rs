//! Two processes on one thread: when another writer moved the stored thread on, a new request
//! is decided again on the stored thread instead of failing with a conflict — and keeps
//! failing on every later question, as a chat session did.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;

use motet_agents::{EntryBody, ReAct, ReActConfig, ReactCompleted};
use motet_directives::{AssistantMessage, LlmResponse, Message, Usage};
use motet_runtime::agent::{AgentSpec, AskOptions, Runtime};
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_runtime::testing::ScriptedModel;

fn says(text: &str) -> Result<LlmResponse, motet_providers::ProviderError> {
    Ok(LlmResponse::new(
        AssistantMessage::text(text),
        Usage::default(),
    ))
}

async fn process(
    store: Arc<MemoryStore>,
    model: Arc<ScriptedModel>,
) -> (Runtime, motet_runtime::agent::AgentHandle) {
    let runtime = Runtime::builder().llm(model).store(store).build().unwrap();
    let react = ReAct::new(ReActConfig::new("openai:gpt-5.2".parse().unwrap()));
    let agent = runtime.spawn(AgentSpec::new("a", react)).await.unwrap();
    (runtime, agent)
}

#[tokio::test]
async fn a_question_after_another_writer_is_decided_on_the_stored_thread() {
    let store = Arc::new(MemoryStore::new());
    let model_a = Arc::new(ScriptedModel::new([says("a1"), says("a3")]));
    let model_b = Arc::new(ScriptedModel::new([says("a2")]));
    let (runtime_a, a) = process(store.clone(), model_a.clone()).await;
    let (runtime_b, b) = process(store.clone(), model_b).await;

    let answer = |reply: motet_signals::Signal| reply.data_as::<ReactCompleted>().unwrap().answer;
    assert_eq!(
        answer(a.ask("q1", AskOptions::default()).await.unwrap()),
        "a1"
    );
    assert_eq!(
        answer(b.ask("q2", AskOptions::default()).await.unwrap()),
        "a2"
    );
    // A still holds the thread as it was after q1: its commit is stale.
    assert_eq!(
        answer(a.ask("q3", AskOptions::default()).await.unwrap()),
        "a3"
    );

    let stored = store.load("a/default").await.unwrap().unwrap();
    let questions: Vec<&str> = stored
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(questions, ["q1", "q2", "q3"]);
    // The model saw B's turn too: A decided on the stored thread.
    let last = model_a.requests().pop().unwrap();
    let shown: Vec<String> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, ["q1", "q2", "q3"]);
    runtime_a.shutdown().await;
    runtime_b.shutdown().await;
}
