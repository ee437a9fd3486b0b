//! A2A through the official `a2a-sdk` Python client, a client nobody here wrote
//! (serve/tests/clients/a2a_client.py, run with `MOTET_PYTHON` from scripts/py-clients.sh):
//! cards, send, stream, input-required → answer → completed, cancel, subscribe, errors —
//! against a scripted model, and one streamed ask against the local llama.cpp model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
mod openai_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::{rm_call, serve, text, which_call};
use motet_directives::ToolChoice;
use motet_providers::{Dialect, HttpClient};
use motet_runtime::testing::needs_var;
use motet_serve::{RunLimits, Scope, Tokens};
use serde_json::{Value, json};

const TOKEN: &str = "a2a-secret-token-0123456789";

/// What the client script printed, line by line; the script failing fails the test.
async fn run_client(python: &str, base: &str, agent: &str, scenario: &str) -> Vec<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/a2a_client.py");
    let run = tokio::process::Command::new(python)
        .args([script, base, TOKEN, agent, scenario])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(900), run)
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
        .unwrap_or_else(|| panic!("no `{what}` line in {lines:#?}"))
}

#[tokio::test]
async fn the_a2a_sdk_sends_streams_answers_waits_cancels_and_subscribes() {
    let Some(python) = needs_var("MOTET_PYTHON", "bash scripts/py-clients.sh install") else {
        return;
    };
    let server = serve(Tokens::open().with(TOKEN, Scope::All), RunLimits::default()).await;
    // The model's turns, in the order the script asks.
    let turns = [
        vec![text("Hello there.")],
        vec![text("Streamed answer.")],
        vec![rm_call("call_a", "/tmp/a")],
        vec![text("Removed /tmp/a.")],
        vec![which_call("call_q")],
        vec![text("Removing /tmp/b.")],
        vec![rm_call("call_c", "/tmp/c")],
        vec![rm_call("call_d", "/tmp/d")],
        vec![text("Removed /tmp/d.")],
    ];
    for turn in turns {
        server.model.push(turn);
    }
    let lines = run_client(&python, &server.url, "janitor", "scripted").await;

    let endpoint = format!("{}/a2a/janitor", server.url);
    for what in ["root_card", "card"] {
        assert_eq!(
            line(&lines, what),
            &json!({"what": what, "name": "janitor", "url": endpoint, "binding": "JSONRPC",
                    "version": "1.0", "streaming": true, "schemes": ["bearer"], "bearer": "Bearer"})
        );
    }

    let send = line(&lines, "send");
    assert_eq!(send["kinds"], json!(["task"]), "{send}");
    assert_eq!(send["states"], json!(["TASK_STATE_COMPLETED"]));

    let stream = line(&lines, "stream");
    let kinds: Vec<&str> = stream["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"task"), "{stream}");
    assert_eq!(kinds.last(), Some(&"status_update"), "{stream}");
    assert_eq!(
        stream["states"],
        json!([
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ])
    );
    assert_eq!(stream["artifact"], "Streamed answer.");
    assert!(
        stream["chunks"].as_u64().unwrap() > 2,
        "the answer came in chunks: {stream}"
    );
    assert_eq!(stream["last_chunk"], true);

    let wait = line(&lines, "approval_wait");
    assert_eq!(
        wait["states"],
        json!([
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_INPUT_REQUIRED"
        ]),
        "the stream ends where the task waits: {wait}"
    );
    assert!(
        wait["waiting_text"].as_str().unwrap().contains("`call_a`"),
        "{wait}"
    );
    assert_eq!(
        wait["waiting_data"]["motet"]["waiting"][0]["tool_call_id"],
        "call_a"
    );
    let answered = line(&lines, "approval_answered");
    assert_eq!(
        answered["states"],
        json!(["TASK_STATE_COMPLETED"]),
        "{answered}"
    );
    assert_eq!(answered["task"], wait["task"]);
    let task = line(&lines, "approval_task");
    assert_eq!(task["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifact"], "Removed /tmp/a.");
    assert_eq!(task["context"], wait["context"]);
    assert_eq!(
        task["history"][0],
        json!(["ROLE_USER", "Remove /tmp/a."]),
        "{task}"
    );
    assert_eq!(
        line(&lines, "approval_task_short")["history"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let asked = line(&lines, "question_wait");
    assert_eq!(asked["states"], json!(["TASK_STATE_INPUT_REQUIRED"]));
    assert!(
        asked["waiting_text"]
            .as_str()
            .unwrap()
            .contains("which path may I remove?"),
        "{asked}"
    );
    let answered = line(&lines, "question_answered");
    assert_eq!(answered["states"], json!(["TASK_STATE_COMPLETED"]));

    assert_eq!(
        line(&lines, "cancel_wait")["states"],
        json!(["TASK_STATE_INPUT_REQUIRED"])
    );
    let cancelled = line(&lines, "cancelled");
    assert_eq!(cancelled["state"], "TASK_STATE_CANCELED", "{cancelled}");
    assert_eq!(
        line(&lines, "cancel_again")["error"],
        "TaskNotCancelableError"
    );
    assert_eq!(
        line(&lines, "send_to_ended")["error"],
        "UnsupportedOperationError"
    );

    let approved = line(&lines, "subscribe_approved");
    assert_eq!(
        approved["states"],
        json!(["TASK_STATE_COMPLETED"]),
        "{approved}"
    );
    let watched = line(&lines, "subscribed");
    let states = watched["states"].as_array().unwrap();
    assert_eq!(
        states.first().unwrap(),
        "TASK_STATE_INPUT_REQUIRED",
        "{watched}"
    );
    assert_eq!(states.last().unwrap(), "TASK_STATE_COMPLETED", "{watched}");
    assert_eq!(watched["artifact"], "Removed /tmp/d.");

    assert_eq!(line(&lines, "unknown_task")["error"], "TaskNotFoundError");
    assert_eq!(
        line(&lines, "subscribe_ended")["error"],
        "UnsupportedOperationError"
    );
    assert_eq!(line(&lines, "wrong_token_card")["status"], 401);
    assert_eq!(line(&lines, "wrong_token_call")["error"], "A2AClientError");

    // The answers reached the calls: approved ones ran, the question got its answer.
    let results = [
        (
            &line(&lines, "approval_wait")["context"],
            "call_a",
            "removed /tmp/a",
        ),
        (
            &line(&lines, "question_wait")["context"],
            "call_q",
            "/tmp/b",
        ),
        (&watched["context"], "call_d", "removed /tmp/d"),
    ];
    for (thread, call, content) in results {
        let entries = server
            .http
            .get(server.at(&format!(
                "/api/agents/janitor/threads/{}/entries",
                thread.as_str().unwrap()
            )))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let entries = common::json_of(entries, 200).await;
        let result = entries["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "tool_result" && e["payload"]["result"]["tool_use_id"] == call)
            .unwrap_or_else(|| panic!("no result of {call}: {entries}"));
        assert_eq!(result["payload"]["result"]["content"], content, "{result}");
        assert!(
            result["payload"]["result"].get("is_error").is_none(),
            "{result}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn the_a2a_sdk_streams_an_answer_from_the_local_model() {
    let Some(python) = needs_var("MOTET_PYTHON", "bash scripts/py-clients.sh install") else {
        return;
    };
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
    // The first call must call `add`; the model answers from its result.
    let agent = openai_common::calc_agent("calc", "openai-compat:smollm2-135m", runs.clone())
        .tool_choice(ToolChoice::Tool {
            name: "add".to_owned(),
        });
    let server =
        openai_common::serve(client, vec![agent], Tokens::open().with(TOKEN, Scope::All)).await;
    let lines = run_client(&python, &server.base, "calc", "model").await;
    assert_eq!(line(&lines, "card")["name"], "calc");
    let stream = line(&lines, "stream");
    assert_eq!(
        stream["states"].as_array().unwrap().last().unwrap(),
        "TASK_STATE_COMPLETED",
        "{stream}"
    );
    assert!(
        !stream["artifact"].as_str().unwrap().trim().is_empty(),
        "{stream}"
    );
    assert!(runs.load(Ordering::SeqCst) >= 1, "the tool ran");
    println!("local model over A2A: {:?}", stream["artifact"]);
}
