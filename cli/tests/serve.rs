//! `motet serve`: the CLI's agent over HTTP. Started on a free port against a scripted model
//! server, asked over HTTP with a bearer token (the run's answer streamed as SSE), refused
//! without one; stopped by SIGTERM; and refused outright on a non-loopback address with no token.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::CLEARED_VARS;
use futures::StreamExt;
use motet::providers::Dialect;
use motet::providers::testing::{HostileServer, Reply, wire};

const TOKEN: &str = "a-test-token-of-some-length";

fn motet_serve(dir: &std::path::Path, model_url: &str, addr: &str, token: Option<&str>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_motet"));
    for var in CLEARED_VARS {
        command.env_remove(var);
    }
    command.env_remove("MOTET_SERVE_TOKEN");
    if let Some(token) = token {
        command.env("MOTET_SERVE_TOKEN", token);
    }
    command
        .env("MOTET_LOCAL_LLM_URL", "")
        .env("HOME", dir)
        .env("MOTET_OPENAI_COMPAT_BASE_URL", model_url)
        .current_dir(dir)
        .arg("--db")
        .arg(dir.join("motet.db"))
        .args(["serve", "--addr", addr, "--model", "openai-compat:m"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn motet_serve_answers_over_http_with_a_token_and_stops_on_sigterm() {
    let model = HostileServer::start([Reply::events(wire::answer(Dialect::OpenAiChat, "Four."))])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model_url = wire::base_url(Dialect::OpenAiChat, model.url());
    let mut child = motet_serve(dir.path(), &model_url, "127.0.0.1:0", Some(TOKEN))
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    });
    let line = tokio::time::timeout(Duration::from_secs(60), line)
        .await
        .unwrap()
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let http = reqwest::Client::new();

    let refused = http.get(format!("{base}/api/agents")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let agents: serde_json::Value = http
        .get(format!("{base}/api/agents"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(agents["agents"], serde_json::json!([{"name": "cli"}]));

    let run: serde_json::Value = http
        .post(format!("{base}/api/agents/cli/threads/new/runs"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"query": "What is 2 + 2?"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap_or_else(|| panic!("{run}"));
    let events = http
        .get(format!("{base}/api/agents/cli/runs/{id}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    let mut body = String::new();
    let mut stream = events.bytes_stream();
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(30), stream.next()).await {
        body.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    assert!(body.contains("event: answer"), "{body}");
    assert!(body.contains(r#""answer":"Four.""#), "{body}");
    assert!(!body.contains(TOKEN));
    // The thread it ran on is stored, listed under the agent.
    let threads: serde_json::Value = http
        .get(format!("{base}/api/agents/cli/threads"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(threads["threads"][0]["id"], run["thread"]);

    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(TOKEN), "{stderr}");
}

#[test]
fn motet_serve_refuses_an_outside_address_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let output = motet_serve(dir.path(), "http://127.0.0.1:9/v1", "0.0.0.0:0", None)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("MOTET_SERVE_TOKEN"), "{stderr}");
    let short = motet_serve(
        dir.path(),
        "http://127.0.0.1:9/v1",
        "127.0.0.1:0",
        Some("short"),
    )
    .output()
    .unwrap();
    assert_eq!(
        short.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&short.stderr)
    );
}
