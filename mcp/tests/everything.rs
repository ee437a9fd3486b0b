//! motet's MCP client against the reference server, @modelcontextprotocol/server-everything,
//! over stdio and over Streamable HTTP: listing, calling, result mapping, error results.
//!
//! Needs `MOTET_MCP_EVERYTHING` (`eval "$(bash scripts/mcp-everything.sh env)"`); without it
//! each test prints a `skipped:` line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use common::{HttpEverything, call, everything, stdio_config, tool_set};
use motet_mcp::{McpClient, McpError, McpServerConfig};
use serde_json::json;

/// The checks every transport must pass.
async fn exercise(client: &McpClient) {
    let tools = tool_set(client, Duration::from_secs(30)).await;
    let names = tools.names();
    for expected in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-tiny-image",
        "everything_trigger-long-running-operation",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let echo = tools.get("everything_echo").unwrap();
    assert!(!echo.description().is_empty());
    assert_eq!(echo.parameters()["type"], "object");
    assert!(echo.parameters()["properties"]["message"].is_object());

    let echoed = call(
        &tools,
        "everything_echo",
        json!({"message": "motet says hi"}),
    )
    .await;
    assert!(!echoed.is_error, "{echoed:?}");
    assert!(echoed.content.contains("motet says hi"), "{echoed:?}");

    let sum = call(&tools, "everything_get-sum", json!({"a": 19, "b": 23})).await;
    assert!(!sum.is_error, "{sum:?}");
    assert!(sum.content.contains("42"), "{sum:?}");

    // An image is described (type and size), never pasted as base64.
    let image = call(&tools, "everything_get-tiny-image", json!({})).await;
    assert!(!image.is_error, "{image:?}");
    assert!(image.content.contains("[image: image/png, "), "{image:?}");
    let longest_word = image
        .content
        .split_whitespace()
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(longest_word < 200, "base64 leaked into {:?}", image.content);
    // And the image itself reaches the model as the result's attachment, decoded.
    match image.attachments.first() {
        Some(motet_directives::Part::Image {
            source: motet_directives::MediaSource::Bytes { media_type, data },
        }) => {
            assert_eq!(media_type, "image/png");
            assert!(data.as_bytes().starts_with(b"\x89PNG"), "{data:?}");
        }
        other => panic!("the image was not attached: {other:?}"),
    }

    // An embedded text resource is inlined under a line naming it.
    let reference = call(
        &tools,
        "everything_get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await;
    assert!(!reference.is_error, "{reference:?}");
    assert!(reference.content.contains("[resource "), "{reference:?}");

    // A tool that throws: the server answers isError, the model reads an error result.
    let failed = call(
        &tools,
        "everything_get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 0}),
    )
    .await;
    assert!(failed.is_error, "{failed:?}");
    assert!(
        failed.content.contains("Invalid resourceId: 0"),
        "{failed:?}"
    );
    println!("error result: {}", failed.content);

    // Arguments of the wrong shape are the server's to reject; the answer is an error result.
    let wrong = call(&tools, "everything_get-sum", json!({"a": "nineteen"})).await;
    assert!(wrong.is_error, "{wrong:?}");
    println!("wrong arguments: {}", wrong.content);
}

#[tokio::test]
async fn stdio_lists_calls_and_maps_results() {
    let Some(dir) = everything() else { return };
    let started = std::time::Instant::now();
    let client = McpClient::connect(stdio_config(&dir)).await.unwrap();
    println!(
        "stdio connect (node start, initialize, tools/list): {:?}",
        started.elapsed()
    );
    assert!(client.server_pid().await.is_some());
    exercise(&client).await;
    client.disconnect().await;
}

#[tokio::test]
async fn streamable_http_lists_calls_and_maps_results() {
    let Some(_dir) = everything() else { return };
    let server = HttpEverything::start();
    // A header read from the environment (cargo sets CARGO_PKG_NAME for the test run)
    // travels with every request; the server ignores it.
    let config = McpServerConfig::http("everything", server.url.clone())
        .header("X-Motet-Test", "motet-${CARGO_PKG_NAME}");
    let started = std::time::Instant::now();
    let client = McpClient::connect(config).await.unwrap();
    println!(
        "http connect (initialize, tools/list): {:?}",
        started.elapsed()
    );
    assert_eq!(client.server_pid().await, None);
    exercise(&client).await;
}

#[tokio::test]
async fn headers_read_their_variables_and_reach_the_server() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // Any variable of this process whose value a header can carry.
    let Some((var, value)) = std::env::vars().find(|(key, value)| {
        !value.is_empty()
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && value.bytes().all(|b| b.is_ascii_graphic())
    }) else {
        motet_runtime::testing::missing("no environment variable a header can carry");
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let _ = socket
            .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n")
            .await;
        String::from_utf8_lossy(&head).to_lowercase()
    });
    let config = McpServerConfig::http("probe", url)
        .header("X-Motet-Test", format!("v=${{{var}}};"))
        .with_connect_timeout(Duration::from_secs(5));
    let error = McpClient::connect(config).await.unwrap_err();
    let head = tokio::time::timeout(Duration::from_secs(5), seen)
        .await
        .unwrap()
        .unwrap();
    let expected = format!("x-motet-test: v={};", value.to_lowercase());
    assert!(head.contains(&expected), "{expected} not in {head}");
    // A server answering 503 is a typed error saying so, not a panic or a hang.
    assert!(
        matches!(&error, McpError::Initialize { message, .. } if message.contains("503")),
        "{error:?}"
    );
    println!("503 at initialize: {error}");
}

#[tokio::test]
async fn a_header_from_a_missing_variable_is_a_typed_error() {
    let config = McpServerConfig::http("remote", "http://127.0.0.1:9/mcp")
        .header("Authorization", "Bearer ${MOTET_MCP_TEST_UNSET_TOKEN}");
    let error = McpClient::connect(config).await.unwrap_err();
    assert_eq!(
        error,
        McpError::MissingEnv {
            server: "remote".into(),
            header: "Authorization".into(),
            var: "MOTET_MCP_TEST_UNSET_TOKEN".into(),
        }
    );
}

#[tokio::test]
async fn the_prefix_can_be_changed_or_dropped() {
    let Some(dir) = everything() else { return };
    let bare = McpClient::connect(stdio_config(&dir).without_tool_prefix())
        .await
        .unwrap();
    let tools = tool_set(&bare, Duration::from_secs(30)).await;
    assert!(tools.get("echo").is_some(), "{:?}", tools.names());
    let echoed = call(&tools, "echo", json!({"message": "bare"})).await;
    assert!(echoed.content.contains("bare"), "{echoed:?}");
    bare.disconnect().await;
}
