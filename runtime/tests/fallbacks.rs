//! A ReAct agent's fallback chain over real HTTP: an OpenAI-compatible server that is
//! overloaded (529, retried by the client first) or finds the context too long hands the
//! request to an Anthropic server, which reads the thread in its own dialect; the thread
//! records which model answered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::time::Duration;

use motet_agents::EntryBody;
use motet_providers::testing::{HostileServer, Reply};
use motet_providers::{ApiKey, ProviderKind, Providers, ProvidersConfig, RetryPolicy};
use motet_runtime::agent::{ReActAgent, Runtime};
use motet_runtime::store::{MemoryStore, ThreadStore};

/// An Anthropic Messages stream answering `text`.
fn anthropic_answer(text: &str) -> Reply {
    let text = serde_json::to_string(text).unwrap();
    Reply::events([
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n".to_owned(),
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".to_owned(),
        format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{text}}}}}\n\n"),
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n".to_owned(),
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n".to_owned(),
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_owned(),
    ])
}

/// Providers reaching `compat` as `openai-compat:` and `anthropic` as `anthropic:`, retrying
/// quickly.
fn providers(compat: &HostileServer, anthropic: &HostileServer) -> Providers {
    let config = ProvidersConfig::new()
        .with_base_url(ProviderKind::OpenAiCompat, format!("{}/v1", compat.url()))
        .with_api_key(ProviderKind::Anthropic, ApiKey::new("sk-ant-test"))
        .with_base_url(ProviderKind::Anthropic, anthropic.url())
        .with_retry(RetryPolicy {
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
            ..RetryPolicy::default()
        });
    Providers::new(config).unwrap()
}

/// The models recorded on the thread's assistant entries (`None`: the agent's own).
async fn answered_by(store: &MemoryStore, thread: &str) -> Vec<Option<String>> {
    let thread = store.load(thread).await.unwrap().unwrap();
    thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { basis, .. } => Some(
                basis
                    .as_ref()
                    .and_then(|b| b.model.as_ref())
                    .map(ToString::to_string),
            ),
            _ => None,
        })
        .collect()
}

async fn run_against(first_reply: Reply) -> (HostileServer, HostileServer, Vec<Option<String>>) {
    let compat = HostileServer::start([first_reply]).await.unwrap();
    let anthropic = HostileServer::start([anthropic_answer("Lima.")])
        .await
        .unwrap();
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .llm(providers(&compat, &anthropic))
        .store(store.clone())
        .build()
        .unwrap();
    let agent = runtime
        .spawn(
            ReActAgent::new("geo", "openai-compat:big")
                .fallback("anthropic:claude-sonnet-4-5")
                .system("Answer in one word."),
        )
        .await
        .unwrap();
    let answer = agent.ask("What is the capital of Peru?").await.unwrap();
    assert_eq!(answer.text, "Lima.");
    let models = answered_by(&store, "geo/default").await;
    runtime.shutdown().await;
    (compat, anthropic, models)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_server_hands_the_request_to_the_fallback_after_the_clients_retries() {
    let overloaded = Reply::status(529)
        .body(r#"{"error":{"message":"The server is overloaded","type":"overloaded_error"}}"#);
    let (compat, anthropic, models) = run_against(overloaded).await;
    // The first attempt and the client's two retries, then the next model: once.
    assert_eq!(compat.hits(), 3);
    assert_eq!(anthropic.hits(), 1);
    // The fallback got the conversation in its own dialect: the system prompt apart, the
    // question as a user message.
    let sent: serde_json::Value =
        serde_json::from_str(&anthropic.requests()[0].body_text()).unwrap();
    assert_eq!(sent["model"], "claude-sonnet-4-5");
    assert_eq!(sent["system"][0]["text"], "Answer in one word.");
    assert_eq!(sent["messages"][0]["role"], "user");
    assert_eq!(models, [Some("anthropic:claude-sonnet-4-5".to_owned())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_too_long_for_the_first_model_goes_to_the_fallback_at_once() {
    let too_long = Reply::status(400).body(
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    );
    let (compat, anthropic, models) = run_against(too_long).await;
    // Not retried by the client (a 400), not shrunk first: the model with the larger window.
    assert_eq!(compat.hits(), 1);
    assert_eq!(anthropic.hits(), 1);
    assert_eq!(models, [Some("anthropic:claude-sonnet-4-5".to_owned())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_the_client_cannot_call_fails_the_spawn() {
    let compat = HostileServer::start([Reply::status(500)]).await.unwrap();
    let config = ProvidersConfig::new()
        .with_base_url(ProviderKind::OpenAiCompat, format!("{}/v1", compat.url()));
    let runtime = Runtime::builder()
        .llm(Providers::new(config).unwrap())
        .build()
        .unwrap();
    // No Anthropic key: said when the agent is spawned, naming the fallback.
    let refused = runtime
        .spawn(ReActAgent::new("geo", "openai-compat:big").fallback("anthropic:claude-sonnet-4-5"))
        .await;
    match refused {
        Err(error) => {
            let text = error.to_string();
            assert!(text.contains("anthropic:claude-sonnet-4-5"), "{text}");
        }
        Ok(_) => panic!("a fallback without a key was accepted"),
    }
    runtime.shutdown().await;
}
