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

fn with_keys() -> Providers {
    use motet_providers::{ApiKey, ProviderKind};
    Providers::new(
        ProvidersConfig::new()
            .with_api_key(ProviderKind::OpenAi, ApiKey::new("sk-test"))
            .with_api_key(ProviderKind::Anthropic, ApiKey::new("sk-test"))
            .with_base_url(ProviderKind::OpenAiCompat, "http://127.0.0.1:9/v1"),
    )
    .unwrap()
}

fn reasoning(agent: ReActAgent) -> ReActAgent {
    agent.configure(|mut c| {
        c.options.reasoning_effort = Some(motet_directives::ReasoningEffort::High);
        c
    })
}

#[tokio::test]
async fn a_model_that_cannot_do_what_the_agent_asks_is_refused_at_spawn_with_the_reason() {
    let runtime = Runtime::builder().llm(with_keys()).build().unwrap();
    // Chat Completions cannot carry reasoning back across turns.
    let Err(error) = runtime
        .spawn(reasoning(ReActAgent::new("thinker", "openai:gpt-5.2")))
        .await
    else {
        panic!("spawned a reasoning agent on Chat Completions");
    };
    let RuntimeError::UnsupportedModel {
        name,
        model,
        reason,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(
        (name.as_str(), model.as_str()),
        ("thinker", "openai:gpt-5.2")
    );
    assert!(reason.contains("openai-responses:gpt-5.2"), "{reason}");
    // A model the table knows cannot replay reasoning.
    let error = runtime
        .spawn(reasoning(ReActAgent::new(
            "old",
            "anthropic:claude-3-5-sonnet-20241022",
        )))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, RuntimeError::UnsupportedModel { reason, .. } if reason.contains("replay")),
        "{error:?}"
    );
    // Plain chat stays open to any model, known or not.
    runtime
        .spawn(ReActAgent::new("chat", "openai-compat:any-local-model"))
        .await
        .unwrap();
    runtime
        .spawn(reasoning(ReActAgent::new("ok", "openai-responses:gpt-5.2")))
        .await
        .unwrap();
    assert_eq!(runtime.agent_count(), 2);
}

#[tokio::test]
async fn an_allowlist_refuses_every_other_model() {
    let runtime = Runtime::builder()
        .llm(with_keys().with_model_allowlist(["anthropic:claude-sonnet-4-5"]))
        .build()
        .unwrap();
    let error = runtime
        .spawn(ReActAgent::new("chat", "openai-compat:any-local-model"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, RuntimeError::UnsupportedModel { reason, .. } if reason.contains("allowlist")),
        "{error:?}"
    );
    runtime
        .spawn(ReActAgent::new("allowed", "anthropic:claude-sonnet-4-5"))
        .await
        .unwrap();
    assert_eq!(runtime.agent_count(), 1);
}
