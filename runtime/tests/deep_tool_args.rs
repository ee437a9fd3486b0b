//! Tool arguments nested deeper than JSON can be carried through motet (serde_json's parser
//! stops at 128 levels, and signals, stored entries and request bodies wrap the arguments in
//! more): the model is answered with an error result it can read, the request goes on, and the
//! thread holding the call reloads from SQLite.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{first_call_args, first_tool_result, scripted};
use motet_agents::{AGENT_COMPLETED, ContextPolicy, ReactCompleted};
use motet_directives::{AssistantBlock, ToolArgs};
use motet_runtime::agent::{AskOptions, ReActAgent, Runtime};
use motet_runtime::store::{SqliteStore, ThreadStore};
use motet_runtime::tool::{Tool, ToolError, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    a: serde_json::Value,
}

fn echo() -> impl Tool {
    tool_fn("echo", "Echoes `a`.", |args: EchoArgs| async move {
        Ok::<_, ToolError>(args.a.to_string())
    })
}

/// `{"a":[[[…1…]]]}` with the `1` `depth` levels down.
fn nested_args(depth: usize) -> String {
    format!(
        r#"{{"a":{}1{}}}"#,
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    )
}

/// Runs one ask whose model calls `echo` with `args`, then answers; returns the tool result
/// the model read, and the call's arguments as the thread reloaded from the file holds them.
async fn ask_with_args(args: &str) -> (motet_directives::ToolResult, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.db");
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "call_1",
            "echo",
            ToolArgs::from_text(args),
        )],
        vec![AssistantBlock::text("Done.")],
    ]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .store(store)
        .build()
        .unwrap();
    let agent = runtime
        .spawn(
            ReActAgent::new("deep", "openai:gpt-5.2")
                .tool(echo())
                .configure(|c| c.with_context_policy(ContextPolicy::new().with_keep_last_turns(0))),
        )
        .await
        .unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(10),
        ..AskOptions::default()
    };
    let reply = agent.ask_with("Nest deeply.", options).await.unwrap();
    assert_eq!(reply.signal.signal_type().as_str(), AGENT_COMPLETED);
    let done: ReactCompleted = reply.signal.data_as().unwrap();
    assert_eq!(done.answer, "Done.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let result = first_tool_result(&requests[1]);
    runtime.shutdown().await;

    let store = SqliteStore::open(&path).await.unwrap();
    let thread = store
        .load("deep/default")
        .await
        .unwrap()
        .expect("the thread is stored");
    let stored = first_call_args(&thread);
    (result, stored)
}

#[tokio::test]
async fn arguments_nested_200_deep_are_an_error_result_and_the_thread_reloads() {
    // Before: "invalid data for `llm.result`: signal has no data" failed the request.
    let args = nested_args(200);
    let (result, stored) = ask_with_args(&args).await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result
            .content
            .contains("tool arguments nest deeper than 100 levels"),
        "{}",
        result.content
    );
    assert_eq!(stored, args, "kept as the model wrote them");
}

#[tokio::test]
async fn arguments_nested_to_the_limit_reach_the_tool_and_the_thread_reloads() {
    let args = nested_args(ToolArgs::MAX_DEPTH);
    let (result, stored) = ask_with_args(&args).await;
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.content.starts_with("[[[") && result.content.contains('1'),
        "{}",
        result.content
    );
    assert_eq!(stored, args);
}
