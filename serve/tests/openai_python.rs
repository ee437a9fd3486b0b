//! The OpenAI-compatible endpoint through the official `openai` Python package, a client
//! nobody here wrote (serve/tests/clients/openai_client.py, run with `MOTET_PYTHON` from
//! scripts/py-clients.sh): the model list, a completion whole and streamed, a wrong key and an
//! unknown model — against a scripted model, and end to end against the local llama.cpp model
//! with a ReAct agent that must call its tool.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod openai_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use motet_directives::ToolChoice;
use motet_providers::{Dialect, HttpClient};
use motet_runtime::testing::needs_var;
use motet_serve::{Scope, Tokens};
use openai_common::{MODEL, add_then_answer, calc_agent, scripted, serve};
use serde_json::Value;

/// The Python with the `openai` package, or `None` after `missing` said so.
fn python() -> Option<String> {
    needs_var("MOTET_PYTHON", "bash scripts/py-clients.sh install")
}

/// What the client script printed, by `what`; the script failing fails the test.
async fn run_client(
    python: &str,
    base: &str,
    token: &str,
    model: &str,
    prompt: &str,
) -> Vec<Value> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/openai_client.py"
    );
    let run = tokio::process::Command::new(python)
        .args([script, base, token, model, prompt])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the client finishes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The line of `lines` about `what`.
fn line<'a>(lines: &'a [Value], what: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["what"] == what)
        .unwrap_or_else(|| panic!("no `{what}` line in {lines:?}"))
}

/// What every run must show, whatever the model: the shapes, the refusals.
fn check_shapes(lines: &[Value], model: &str) {
    assert_eq!(line(lines, "models")["ids"], serde_json::json!([model]));
    assert_eq!(line(lines, "model")["id"], model);

    let whole = line(lines, "completion");
    assert!(
        whole["id"].as_str().unwrap().starts_with("chatcmpl-"),
        "{whole}"
    );
    assert_eq!(whole["object"], "chat.completion");
    assert_eq!(whole["model"], model);
    assert_eq!(whole["role"], "assistant");
    assert_eq!(whole["finish"], "stop");
    assert!(
        whole["tool_calls"].is_null(),
        "the agent's tool calls stay inside it: {whole}"
    );
    assert!(whole["motet"]["thread"].is_string(), "{whole}");

    let stream = line(lines, "stream");
    assert_eq!(
        stream["ids"].as_array().unwrap().len(),
        1,
        "one id for every chunk: {stream}"
    );
    assert_eq!(stream["roles"], serde_json::json!(["assistant"]));
    assert_eq!(stream["finishes"], serde_json::json!(["stop"]));
    assert_eq!(stream["tool_calls"], 0);

    assert_eq!(
        line(lines, "wrong_key"),
        &serde_json::json!({"what": "wrong_key", "error": "AuthenticationError", "status": 401})
    );
    assert_eq!(
        line(lines, "unknown_model"),
        &serde_json::json!({"what": "unknown_model", "error": "NotFoundError", "status": 404,
            "code": "model_not_found"})
    );
}

#[tokio::test]
async fn the_openai_package_lists_asks_and_streams_against_a_scripted_agent() {
    let Some(python) = python() else { return };
    let runs = Arc::new(AtomicU32::new(0));
    let [a, b] = add_then_answer(2, 3, "2 + 3 = 5");
    let [c, d] = add_then_answer(2, 3, "2 + 3 = 5");
    let server = serve(
        scripted([a, b, c, d]),
        vec![calc_agent("calc", MODEL, runs.clone())],
        Tokens::open().with("secret", Scope::All),
    )
    .await;

    let lines = run_client(&python, &server.base, "secret", "calc", "What is 2 + 3?").await;
    check_shapes(&lines, "calc");
    let whole = line(&lines, "completion");
    assert_eq!(whole["content"], "2 + 3 = 5");
    assert_eq!(whole["usage"]["prompt_tokens"], 30);
    assert_eq!(whole["usage"]["completion_tokens"], 10);
    assert_eq!(whole["usage"]["total_tokens"], 40);
    let stream = line(&lines, "stream");
    assert_eq!(stream["content"], "2 + 3 = 5");
    assert_eq!(stream["usage"]["prompt_tokens"], 30);
    assert_eq!(stream["usage"]["completion_tokens"], 10);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one tool run per ask");
}

#[tokio::test]
async fn the_openai_package_talks_to_a_react_agent_on_the_local_model_that_uses_its_tool() {
    let Some(python) = python() else { return };
    let Some(url) = needs_var("MOTET_LOCAL_LLM_URL", "bash scripts/local-llm.sh start") else {
        return;
    };
    let client = HttpClient::new(
        Dialect::OpenAiChat,
        format!("{}/v1", url.trim_end_matches('/')),
        None,
    )
    .unwrap();
    let runs = Arc::new(AtomicU32::new(0));
    // The first call of each ask must call `add`; the model answers from its result.
    let agent = calc_agent("calc", "openai-compat:smollm2-135m", runs.clone()).tool_choice(
        ToolChoice::Tool {
            name: "add".to_owned(),
        },
    );
    let server = serve(
        client,
        vec![agent],
        Tokens::open().with("secret", Scope::All),
    )
    .await;

    let lines = run_client(&python, &server.base, "secret", "calc", "What is 2 + 3?").await;
    check_shapes(&lines, "calc");
    // Forced in each ask's first call, free after it (a small model may call it again).
    let runs = runs.load(Ordering::SeqCst);
    assert!(runs >= 2, "the tool ran in each ask: {runs} runs");
    let whole = line(&lines, "completion");
    assert!(
        !whole["content"].as_str().unwrap().trim().is_empty(),
        "{whole}"
    );
    assert!(
        whole["usage"]["completion_tokens"].as_u64().unwrap() > 0,
        "{whole}"
    );
    assert!(
        whole["usage"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{whole}"
    );
    let stream = line(&lines, "stream");
    assert!(
        !stream["content"].as_str().unwrap().trim().is_empty(),
        "{stream}"
    );
    assert!(
        stream["usage"]["completion_tokens"].as_u64().unwrap() > 0,
        "{stream}"
    );
    println!(
        "local model, whole: {:?}; streamed in {} chunks: {:?}",
        whole["content"], stream["chunks"], stream["content"]
    );
}
