//! An agent whose model cannot be called as configured is refused when it is spawned, naming
//! what to set — not at its first ask, as a failure reply's whole envelope.

#![allow(clippy::unwrap_used, clippy::panic)] // a failed expectation is a failed test

use motet_providers::{Providers, ProvidersConfig};
use motet_runtime::agent::{ReActAgent, Runtime, RuntimeError};

#[tokio::test]
async fn a_model_without_its_key_is_refused_at_spawn_naming_the_variable() {
    let runtime = Runtime::builder()
        .llm(Providers::new(ProvidersConfig::new()).unwrap())
        .build()
        .unwrap();
    let Err(error) = runtime
        .spawn(ReActAgent::new("calc", "openai:gpt-5.2"))
        .await
    else {
        panic!("spawned without a key");
    };
    let RuntimeError::InvalidSpec { name, message } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(name, "calc");
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    assert!(message.contains("openai:gpt-5.2"), "{message}");
    assert_eq!(runtime.agent_count(), 0);

    // An OpenAI-compatible server needs its base URL.
    let Err(error) = runtime
        .spawn(ReActAgent::new("local", "openai-compat:local"))
        .await
    else {
        panic!("spawned without a base URL");
    };
    assert!(
        error.to_string().contains("MOTET_OPENAI_COMPAT_BASE_URL"),
        "{error}"
    );
}
