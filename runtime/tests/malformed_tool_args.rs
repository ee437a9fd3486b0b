//! A model's tool call whose arguments are not JSON (issue 18): the tool is not run, the model
//! reads an error result quoting what it sent, and the ask goes on to its answer. Before, the
//! block assembler failed the whole response with a protocol error no retry could fix.
//!
//! The scripted model streams the call as a provider's events would carry it; the broken texts
//! are written by hand (no public recording of a malformed call is known to us).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{AddArgs, first_call_args, first_tool_result, scripted};
use motet_agents::{AGENT_COMPLETED, ReactCompleted};
use motet_directives::{AssistantBlock, ToolArgs, ToolResult};
use motet_runtime::agent::{AskOptions, ReActAgent, Runtime};
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_runtime::tool::{Tool, ToolError, tool_fn};

/// `add`, counting how often it runs.
fn counted_add(runs: Arc<AtomicUsize>) -> impl Tool {
    tool_fn("add", "Adds two integers.", move |args: AddArgs| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>((args.a + args.b).to_string()) }
    })
}

/// One ask whose model calls `add` with `raw`, then answers: the tool result the model read in
/// its second request, and the call's arguments as the stored thread holds them.
async fn ask_with_broken_args(raw: &str) -> (ToolResult, String) {
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "call_1",
            "add",
            ToolArgs::from_text(raw),
        )],
        vec![AssistantBlock::text("I will fix the call.")],
    ]);
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .store(store.clone())
        .build()
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = runtime
        .spawn(
            ReActAgent::new("calc", "openai:gpt-4.1")
                .system("You are a calculator.")
                .tool(counted_add(Arc::clone(&runs))),
        )
        .await
        .unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(10),
        ..AskOptions::default()
    };

    let reply = agent.ask_with("Add 1 and 2.", options).await.unwrap();

    assert_eq!(reply.signal.signal_type().as_str(), AGENT_COMPLETED);
    let done: ReactCompleted = reply.signal.data_as().unwrap();
    assert_eq!(done.answer, "I will fix the call.");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool never ran");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let result = first_tool_result(&requests[1]);
    let stored = first_call_args(
        &store
            .load("calc/default")
            .await
            .unwrap()
            .expect("the thread is stored"),
    );
    runtime.shutdown().await;
    (result, stored)
}

#[tokio::test]
async fn arguments_cut_off_are_an_error_result_quoting_them() {
    let raw = r#"{"a": 1, "b": "#;
    let (result, stored) = ask_with_broken_args(raw).await;
    assert_eq!(result.tool_use_id, "call_1");
    assert!(result.is_error, "{result:?}");
    assert!(
        result.content.starts_with(
            "tool `add` failed: invalid arguments: not valid JSON: EOF while parsing a value"
        ),
        "{}",
        result.content
    );
    assert_quotes(&result.content, raw);
    assert_eq!(
        stored, raw,
        "the thread keeps the model's text byte for byte"
    );
}

#[tokio::test]
async fn python_quoted_arguments_are_an_error_result_quoting_them() {
    let raw = "{'a': 1, 'b': 2}";
    let (result, stored) = ask_with_broken_args(raw).await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result
            .content
            .contains("invalid arguments: not valid JSON: key must be a string"),
        "{}",
        result.content
    );
    assert_quotes(&result.content, raw);
    assert_eq!(stored, raw);
}

/// The error result ends by quoting what the model sent.
fn assert_quotes(content: &str, raw: &str) {
    assert!(
        content.ends_with(&format!("; received: {raw}")),
        "{content}"
    );
}
