//! Faults: a server killed mid-call, a call that hangs, garbage on the wire, a server that
//! will not start, and a tool list that changes. Each ends in a typed error or an error
//! result — no panic, no hang — and the next call works.
//!
//! The fake server (tests/fixtures/fake_server.py) needs python3; the kill test needs
//! server-everything (`MOTET_MCP_EVERYTHING`); each test prints a `skipped:` line without them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{call, everything, fake_config, python, stdio_config, tool_set};
use motet_mcp::{McpClient, McpError, McpServerConfig};
use serde_json::json;

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn a_server_killed_mid_call_is_a_typed_error_and_the_next_call_restarts_it() {
    let Some(dir) = everything() else { return };
    let client = McpClient::connect(stdio_config(&dir)).await.unwrap();
    let tools = tool_set(&client, Duration::from_secs(60)).await;
    let first_pid = client.server_pid().await.unwrap();

    let long = {
        let tools = tools.clone();
        tokio::spawn(async move {
            call(
                &tools,
                "everything_trigger-long-running-operation",
                json!({"duration": 20, "steps": 4}),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!long.is_finished(), "the long operation ended early");
    let killed_at = Instant::now();
    kill(first_pid);
    let result = long.await.unwrap();
    let noticed = killed_at.elapsed();
    assert!(result.is_error, "{result:?}");
    assert!(
        result.content.contains("connection closed"),
        "{}",
        result.content
    );
    println!(
        "killed mid-call: {noticed:?} to the error result: {}",
        result.content
    );
    assert!(noticed < Duration::from_secs(5), "{noticed:?}");

    // The next call starts a new server and works.
    let restarted_at = Instant::now();
    let echoed = call(&tools, "everything_echo", json!({"message": "again"})).await;
    assert!(!echoed.is_error, "{echoed:?}");
    assert!(echoed.content.contains("again"));
    println!("restart and call: {:?}", restarted_at.elapsed());
    let second_pid = client.server_pid().await.unwrap();
    assert_ne!(first_pid, second_pid);
    client.disconnect().await;
}

#[tokio::test]
async fn a_hung_call_is_cut_by_the_tool_set_and_later_calls_still_work() {
    if !python() {
        return;
    }
    let client = McpClient::connect(fake_config("tools")).await.unwrap();
    let tools = tool_set(&client, Duration::from_millis(500)).await;
    let pid = client.server_pid().await.unwrap();

    let hung = call(&tools, "fake_hang", json!({})).await;
    assert!(hung.is_error, "{hung:?}");
    assert!(hung.content.contains("timed out"), "{}", hung.content);

    // Same connection, same process: the abandoned request wedged nothing.
    for _ in 0..3 {
        let ok = call(&tools, "fake_ok", json!({})).await;
        assert_eq!((ok.is_error, ok.content.as_str()), (false, "ok"));
    }
    assert_eq!(client.server_pid().await, Some(pid));
    client.disconnect().await;
}

#[tokio::test]
async fn garbage_on_the_wire_never_hangs_or_panics() {
    if !python() {
        return;
    }
    let client = McpClient::connect(fake_config("tools")).await.unwrap();
    let tools = tool_set(&client, Duration::from_secs(10)).await;

    // A garbage line between messages is skipped.
    let survived = call(&tools, "fake_garbage_then_ok", json!({})).await;
    assert_eq!(survived.content, "survived", "{survived:?}");

    // A result that is not a CallToolResult is an error result.
    let bad = call(&tools, "fake_bad_result", json!({})).await;
    assert!(bad.is_error, "{bad:?}");
    println!("bad result: {}", bad.content);

    // Garbage, then the server exits: a typed error, and the next call restarts it.
    let pid = client.server_pid().await.unwrap();
    let exited = call(&tools, "fake_garbage_then_exit", json!({})).await;
    assert!(exited.is_error, "{exited:?}");
    assert!(
        exited.content.contains("connection closed"),
        "{}",
        exited.content
    );
    let ok = call(&tools, "fake_ok", json!({})).await;
    assert_eq!(ok.content, "ok", "{ok:?}");
    assert_ne!(client.server_pid().await, Some(pid));
    client.disconnect().await;
}

#[tokio::test]
async fn a_server_that_only_writes_garbage_fails_to_connect_in_time() {
    if !python() {
        return;
    }
    let limit = Duration::from_millis(1500);
    let started = Instant::now();
    let error = McpClient::connect(fake_config("silent-garbage").with_connect_timeout(limit))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(error, McpError::ConnectTimeout { after, .. } if after == limit),
        "{error}"
    );
    assert!(took < limit + Duration::from_secs(2), "{took:?}");
    println!("garbage-only server: {took:?}: {error}");

    let error = McpClient::connect(fake_config("garbage-exit"))
        .await
        .unwrap_err();
    let McpError::Initialize { stderr, .. } = &error else {
        panic!("expected an initialization error, got {error:?}");
    };
    assert!(stderr.contains("fake server: giving up"), "{error}");
    println!("garbage then exit: {error}");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_a_typed_error() {
    let config = McpServerConfig::stdio("nothing", "/nonexistent/motet-mcp-server");
    let error = McpClient::connect(config).await.unwrap_err();
    assert!(
        matches!(&error, McpError::Spawn { server, command, .. }
            if server == "nothing" && command == "/nonexistent/motet-mcp-server"),
        "{error:?}"
    );
}

#[tokio::test]
async fn failed_restarts_back_off_then_recover() {
    if !python() {
        return;
    }
    // The fake server runs from a copy the test can take away and put back.
    let dir = std::env::temp_dir().join(format!("motet-mcp-backoff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_server.py");
    let copy = dir.join("server.py");
    std::fs::copy(&original, &copy).unwrap();
    let config = McpServerConfig::stdio("flaky", "python3")
        .arg(copy.display().to_string())
        .arg("tools")
        .with_backoff(Duration::from_millis(400), Duration::from_secs(5));
    let client = McpClient::connect(config).await.unwrap();
    let tools = tool_set(&client, Duration::from_secs(10)).await;

    std::fs::remove_file(&copy).unwrap();
    kill(client.server_pid().await.unwrap());
    tokio::time::sleep(Duration::from_millis(100)).await;

    // The restart fails (python cannot open the script): a typed error naming why.
    let failed = call(&tools, "flaky_ok", json!({})).await;
    assert!(failed.is_error, "{failed:?}");
    assert!(
        failed.content.contains("initialization failed"),
        "{}",
        failed.content
    );
    // At once again: no new process, the backoff answers.
    let waiting = call(&tools, "flaky_ok", json!({})).await;
    assert!(
        waiting.content.contains("retrying in"),
        "{}",
        waiting.content
    );

    std::fs::copy(&original, &copy).unwrap();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let ok = call(&tools, "flaky_ok", json!({})).await;
    assert_eq!(ok.content, "ok", "{ok:?}");
    client.disconnect().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    if !python() {
        return;
    }
    let client = McpClient::connect(fake_config("tools")).await.unwrap();
    let mut changes = client.tool_list_changes();
    changes.borrow_and_update();
    let before: Vec<String> = client
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| motet_runtime::tool::Tool::name(t).to_owned())
        .collect();
    assert!(!before.contains(&"fake_extra".to_owned()), "{before:?}");

    let tools = tool_set(&client, Duration::from_secs(10)).await;
    let added = call(&tools, "fake_add_tool", json!({})).await;
    assert_eq!(added.content, "added");
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("a tool list change is announced")
        .unwrap();

    let after = tool_set(&client, Duration::from_secs(10)).await;
    assert!(after.get("fake_extra").is_some(), "{:?}", after.names());
    let extra = call(&after, "fake_extra", json!({})).await;
    assert_eq!(extra.content, "extra");
    client.disconnect().await;
}

#[tokio::test]
async fn an_http_server_that_goes_away_is_a_typed_error_and_is_reconnected() {
    let Some(_dir) = everything() else { return };
    let server = common::HttpEverything::start();
    let port = server.port();
    let config = McpServerConfig::http("everything", server.url.clone())
        .with_backoff(Duration::from_millis(100), Duration::from_millis(200));
    let client = McpClient::connect(config).await.unwrap();
    let tools = tool_set(&client, Duration::from_secs(5)).await;
    let echoed = call(&tools, "everything_echo", json!({"message": "one"})).await;
    assert!(echoed.content.contains("one"), "{echoed:?}");

    drop(server);
    let gone = call(&tools, "everything_echo", json!({"message": "two"})).await;
    assert!(gone.is_error, "{gone:?}");
    println!("server gone: {}", gone.content);

    // The server comes back (a new process: the old session is unknown to it).
    let server = common::HttpEverything::start_on(port);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(works_within_three_calls(&tools, "three").await);

    // Restarted between two calls, without a failed call to notice it: the old session is
    // unknown to the new process, and at worst one call fails before the next reconnects.
    drop(server);
    let _server = common::HttpEverything::start_on(port);
    assert!(works_within_three_calls(&tools, "four").await);
}

/// Calls echo up to three times; true once an answer echoes `message`.
async fn works_within_three_calls(tools: &motet_runtime::tool::ToolSet, message: &str) -> bool {
    for attempt in 1..=3 {
        let again = call(tools, "everything_echo", json!({ "message": message })).await;
        if !again.is_error {
            assert!(again.content.contains(message), "{again:?}");
            println!("{message}: answered on attempt {attempt}");
            return true;
        }
        println!("{message}: attempt {attempt}: {}", again.content);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    false
}
