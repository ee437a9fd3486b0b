//! A panic inside an LLM call (a provider's bug, a client's) answers the request with a typed
//! failure at once: the runtime turns the panicked task into `llm.failed`, so the ask does not
//! wait out its timeout.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::{Duration, Instant};

use async_trait::async_trait;
use motet_agents::{FailureReason, ReactFailed};
use motet_directives::LlmRequest;
use motet_providers::{LlmClient, LlmEvents, ProviderError};
use motet_runtime::agent::{AskError, AskOptions, ReActAgent};

use common::spawned;

/// A client whose every call panics, as `Duration::from_secs_f64(1e30)` did in the retry code.
struct Panicking;

#[async_trait]
impl LlmClient for Panicking {
    async fn stream(&self, _req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        panic!("cannot convert float seconds to Duration: value is either too big or NaN");
    }
}

#[tokio::test]
async fn a_panicking_llm_call_fails_the_request_at_once() {
    let (runtime, agent) = spawned(Panicking, ReActAgent::new("a", "openai:gpt-5.2")).await;
    let options = AskOptions {
        timeout: Duration::from_secs(60),
        ..AskOptions::default()
    };
    let started = Instant::now();
    let Err(AskError::Failed { reply }) = agent.ask_with("hello", options).await else {
        panic!("a panicking call must fail the request");
    };
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let failed: ReactFailed = reply.data_as().unwrap();
    let FailureReason::Llm { error } = &failed.reason else {
        panic!("{:?}", failed.reason);
    };
    assert!(error.message.contains("panicked"), "{error:?}");
    assert!(error.message.contains("float seconds"), "{error:?}");
    // The agent is still there for the next request.
    let again = agent
        .ask_with(
            "again",
            AskOptions {
                timeout: Duration::from_secs(60),
                ..AskOptions::default()
            },
        )
        .await;
    assert!(matches!(again, Err(AskError::Failed { .. })), "{again:?}");
    runtime.shutdown().await;
}
