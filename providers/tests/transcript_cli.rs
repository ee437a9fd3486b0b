//! The `motet-transcript` tool: JSON out for a good stream, the typed error and exit 1 for a
//! bad one, exit 2 for bad usage.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::process::Command;

use common::{FIXTURES, transcript_json};

const BIN: &str = env!("CARGO_BIN_EXE_motet-transcript");

#[test]
fn prints_the_assembled_response_as_json() {
    let json = transcript_json(
        "anthropic",
        "anthropic/thinking-signature-tool-use-sonnet-4.sse",
    );
    let blocks = json["message"]["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["block_type"], "reasoning");
    assert_eq!(blocks[0]["meta"]["provider"], "anthropic");
    assert_eq!(blocks[1]["block_type"], "tool_use");
    assert_eq!(blocks[1]["name"], "weather");
    assert_eq!(json["message"]["stop_reason"], "tool_use");
    assert_eq!(json["usage"]["output_tokens"], 119);
}

#[test]
fn a_bad_stream_prints_the_typed_error_and_exits_1() {
    let out = Command::new(BIN)
        .args([
            "--dialect=openai-responses",
            &format!(
                "{FIXTURES}/openai-responses/error-insufficient-quota-gpt-5-nano.RECONSTRUCTED.sse"
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Authentication"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_usage_exits_2_and_help_exits_0() {
    for args in [
        vec!["--dialect", "klingon", "x.sse"],
        vec!["x.sse"],
        vec!["--dialect", "gemini"],
        vec!["--dialect", "gemini", "/nonexistent/file.sse"],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--dialect"));
}

#[test]
fn an_endless_input_is_refused_at_its_cap_not_read_to_the_end() {
    // /dev/zero never ends: read without a cap it took 6 GB before this was bounded.
    for file in ["/dev/zero", "-"] {
        let mut command = Command::new(BIN);
        command.args(["--dialect", "openai-chat", file]);
        if file == "-" {
            command.stdin(std::fs::File::open("/dev/zero").unwrap());
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("more than 256 MiB"), "{file}: {err}");
    }
}
