//! What a user reads when the model server misbehaves: `motet run` against a hostile provider
//! (a scripted loopback server), each failure named for what happened — never "cannot reach
//! the model server" for a server that answered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use common::CLEARED_VARS;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use motet::providers::Dialect;
use motet::providers::testing::{End, HostileServer, Reply, wire};
use tempfile::TempDir;

/// A runtime whose worker threads serve the scripted server while the test waits for `motet`.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// `motet run hi` on an `openai-compat` model served by `server`, in a fresh folder.
fn ask(dir: &TempDir, server: &HostileServer, vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_motet"));
    for var in CLEARED_VARS {
        command.env_remove(var);
    }
    // Set, and empty: no local server is looked for on this machine's usual ports.
    command.env("MOTET_LOCAL_LLM_URL", "");
    command
        .env("HOME", dir.path())
        .env(
            "MOTET_OPENAI_COMPAT_BASE_URL",
            wire::base_url(Dialect::OpenAiChat, server.url()),
        )
        .envs(vars.iter().copied())
        .current_dir(dir.path())
        .arg("--db")
        .arg(dir.path().join("motet.db"))
        .args(["run", "hi", "--model", "openai-compat:m", "--timeout", "20"])
        .stdin(Stdio::null());
    command.output().unwrap()
}

/// Asserts `motet` failed with exit code 1, saying every one of `needles` and none of `not`.
fn assert_says(output: &Output, needles: &[&str], not: &[&str]) {
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
    for needle in not {
        assert!(!err.contains(needle), "{needle:?} in {err:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_stream_cut_after_the_server_answered_is_not_an_unreachable_server() {
    let rt = runtime();
    let server = rt
        .block_on(HostileServer::start([Reply::events(wire::partial(
            Dialect::OpenAiChat,
            "Hel",
        ))
        .end(End::Cut)]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = ask(&dir, &server, &[]);
    assert_says(
        &output,
        &["stream truncated", "broke off after the server answered"],
        &["cannot reach"],
    );
}

#[test]
fn oversized_response_headers_are_not_an_unreachable_server() {
    let rt = runtime();
    let server = rt
        .block_on(HostileServer::start([Reply::events(wire::answer(
            Dialect::OpenAiChat,
            "Hello",
        ))
        .pad_headers(1 << 20)]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = ask(&dir, &server, &[]);
    assert_says(
        &output,
        &["protocol error", "message head is too large"],
        &["cannot reach"],
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_web_page_where_the_api_should_be_is_named_for_what_it_is() {
    let rt = runtime();
    let page = "<!DOCTYPE html>\n<html>\n  <head><title>Sign in to the hotel Wi-Fi</title></head>\n</html>";
    let server = rt
        .block_on(HostileServer::start([Reply::status(200)
            .header("content-type", "text/html")
            .body(page)]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = ask(&dir, &server, &[]);
    assert_says(
        &output,
        &[
            "the server answered with text/html, not an event stream",
            "Sign in to the hotel Wi-Fi",
        ],
        &["finish_reason", "cannot reach"],
    );
}

#[test]
fn limits_come_from_the_environment_over_the_file() {
    let rt = runtime();
    let mut endless = wire::opening(Dialect::OpenAiChat);
    endless.push(wire::text(Dialect::OpenAiChat, &"x".repeat(500)));
    let server = rt
        .block_on(HostileServer::start([
            Reply::events(endless).end(End::RepeatLast)
        ]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("motet.toml"),
        "[limits]\nmax_response_bytes = 1000\n",
    )
    .unwrap();
    let output = ask(&dir, &server, &[]);
    assert_says(&output, &["the response passed 1000 bytes"], &[]);
    let output = ask(&dir, &server, &[("MOTET_MAX_RESPONSE_BYTES", "2000")]);
    assert_says(&output, &["the response passed 2000 bytes"], &[]);
    // Calls only: the CLI's look at the server's `/props` is not one.
    let calls = server
        .requests()
        .iter()
        .filter(|r| r.request_line().starts_with("POST"))
        .count();
    assert_eq!(calls, 2, "not retried");
}

#[test]
fn the_idle_timeout_is_set_in_the_file_or_the_environment() {
    let rt = runtime();
    let held = Reply::events(wire::partial(Dialect::OpenAiChat, "Hel"))
        .end(End::Hold(Duration::from_secs(30)));
    let server = rt.block_on(HostileServer::start([held])).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Without the limit, the 60 s default outlasts the request's own 20 s.
    std::fs::write(
        dir.path().join("motet.toml"),
        "[limits]\nidle_timeout = 0.3\n",
    )
    .unwrap();
    let started = Instant::now();
    let output = ask(&dir, &server, &[]);
    assert_says(&output, &["timed out waiting for next event"], &[]);
    assert!(started.elapsed() < Duration::from_secs(10));
    std::fs::remove_file(dir.path().join("motet.toml")).unwrap();
    let started = Instant::now();
    let output = ask(&dir, &server, &[("MOTET_IDLE_TIMEOUT", "0.3")]);
    assert_says(&output, &["timed out waiting for next event"], &[]);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_limit_variable_that_cannot_be_used_is_a_configuration_error() {
    let rt = runtime();
    let server = rt
        .block_on(HostileServer::start([Reply::events(wire::answer(
            Dialect::OpenAiChat,
            "Hello",
        ))]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = ask(&dir, &server, &[("MOTET_IDLE_TIMEOUT", "forever")]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(
        err.contains("MOTET_IDLE_TIMEOUT=`forever`: not a number of seconds"),
        "{err}"
    );
    assert_eq!(server.hits(), 0, "refused before any call");
}
