//! A failed LLM call is stored under the kind of its provider error: a 401 is `auth` in the
//! thread's error entry and in the `agent.failed` reply, not `other`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;

use motet_agents::EntryBody;
use motet_providers::ProviderError;
use motet_runtime::agent::{AskError, ReActAgent, Runtime};
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_runtime::testing::ScriptedModel;

/// The kind the request's failure was stored under, read from the reply and from the thread.
async fn stored_kind(error: ProviderError) -> (String, Vec<String>) {
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .llm(ScriptedModel::new([Err(error)]))
        .store(store.clone())
        .build()
        .unwrap();
    let agent = runtime
        .spawn(ReActAgent::new("a", "openai:gpt-5.2"))
        .await
        .unwrap();
    let Err(AskError::Failed { reply }) = agent.ask("hello").await else {
        panic!("the call's failure must fail the request");
    };
    let data: serde_json::Value = reply.data_as().unwrap();
    let replied = data["reason"]["error"]["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("{data}"))
        .to_owned();
    let thread = store.load("a/default").await.unwrap().unwrap();
    let errors = thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    runtime.shutdown().await;
    (replied, errors)
}

#[tokio::test]
async fn a_refused_key_or_an_oversized_response_is_stored_under_its_own_kind() {
    let cases = [
        (
            ProviderError::Authentication {
                status: 401,
                message: "invalid x-api-key".to_owned(),
            },
            "auth",
        ),
        (
            ProviderError::Authentication {
                status: 403,
                message: "the key lacks permission".to_owned(),
            },
            "auth",
        ),
        (
            ProviderError::ResponseTooLarge { limit: 1024 },
            "response_too_large",
        ),
    ];
    for (error, kind) in cases {
        let shown = error.to_string();
        let (replied, errors) = stored_kind(error).await;
        assert_eq!(replied, kind, "{shown}");
        // The call's error entry names the kind, then the provider's words.
        let entry = errors
            .iter()
            .find(|m| m.starts_with("llm call "))
            .unwrap_or_else(|| panic!("no error entry for the call: {errors:?}"));
        assert!(
            entry.ends_with(&format!("failed: {kind}: {shown}")),
            "{entry}"
        );
    }
}
