//! The prompt cache key the runtime gives each thread's LLM calls: the same for every call of
//! a thread, another for another thread, never the ids themselves, and a key the strategy set
//! is kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_directives::{AssistantMessage, LlmResponse, Usage};
use motet_runtime::agent::{AskOptions, ReActAgent, Runtime};
use motet_runtime::testing::ScriptedModel;

use common::spawned;

fn on_thread(thread: &str) -> AskOptions {
    AskOptions {
        thread_id: Some(thread.to_owned()),
        timeout: Duration::from_secs(30),
        ..AskOptions::default()
    }
}

fn answers(n: usize) -> Arc<ScriptedModel> {
    let answer = || {
        Ok(LlmResponse::new(
            AssistantMessage::text("ok"),
            Usage::default(),
        ))
    };
    Arc::new(ScriptedModel::new((0..n).map(|_| answer())))
}

#[tokio::test]
async fn each_thread_gets_its_own_stable_key() {
    let model = answers(3);
    let (runtime, agent) = spawned(model.clone(), ReActAgent::new("keyed", "openai:gpt-5.2")).await;
    agent.ask_with("one", on_thread("thread-a")).await.unwrap();
    agent.ask_with("two", on_thread("thread-a")).await.unwrap();
    agent
        .ask_with("three", on_thread("thread-b"))
        .await
        .unwrap();
    let keys: Vec<String> = model
        .requests()
        .into_iter()
        .map(|r| r.options.prompt_cache.key.expect("a key on every call"))
        .collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[0], keys[1], "one thread, one key");
    assert_ne!(keys[0], keys[2], "another thread, another key");
    for key in &keys {
        assert!(!key.contains("thread") && !key.contains("keyed"), "{key}");
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_key_the_strategy_set_is_kept() {
    let model = answers(1);
    let runtime = Runtime::builder().llm(model.clone()).build().unwrap();
    let preset = ReActAgent::new("preset", "openai:gpt-5.2").configure(|mut c| {
        c.options.prompt_cache.key = Some("team-shared".into());
        c
    });
    let agent = runtime.spawn(preset).await.unwrap();
    agent.ask_with("one", on_thread("t1")).await.unwrap();
    let requests = model.requests();
    assert_eq!(
        requests[0].options.prompt_cache.key.as_deref(),
        Some("team-shared")
    );
    runtime.shutdown().await;
}
