//! Hostile servers, table-driven: the project's fake MCP server (tests/fixtures/fake_server.py,
//! a real process over stdio or a real HTTP server) leaks configured secrets into its errors,
//! answers with lines too long or too deep to read, and pages its tool list forever. Each case
//! ends at once in a typed error or an error result that carries no secret, and the client
//! keeps working. A new case is a new row.
//!
//! Needs python3 (prints a `skipped:` line without it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::{Duration, Instant};

use common::{FakeHttp, call, fake_config, python, tool_set};
use motet_mcp::{McpClient, McpError, McpServerConfig, ToolListProblem};
use serde_json::json;

/// The secret the stdio server is given in its environment (and prints on stderr).
const STDIO_SECRET: &str = "tok-4f9a2c7e5b1d";

/// A literal secret header value for the HTTP server (which echoes it back).
const HTTP_SECRET: &str = "key-7d3e9b1a0c66";

/// Each call case's time limit; a case must end well before it.
const CALL_LIMIT: Duration = Duration::from_secs(8);

/// How soon a hostile answer must become an error.
const AT_ONCE: Duration = Duration::from_secs(4);

/// Every secret a case's configuration holds: none may reach an error text.
fn secrets() -> Vec<String> {
    vec![
        STDIO_SECRET.to_owned(),
        HTTP_SECRET.to_owned(),
        // The HTTP config's `${CARGO_MANIFEST_DIR}` (cargo sets it for the tests it runs).
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    ]
}

#[derive(Clone, Copy, Debug)]
enum Over {
    Stdio,
    Http,
}

fn stdio_config(mode: &str) -> McpServerConfig {
    fake_config(mode)
        .env("MOTET_FAKE_SECRET", STDIO_SECRET)
        // Short values are not secrets worth redacting: every `1` of a text would go.
        .env("MOTET_FAKE_FLAG", "1")
}

fn http_config(server: &FakeHttp) -> McpServerConfig {
    McpServerConfig::http("fake", server.url.clone())
        .header("Authorization", "Bearer ${CARGO_MANIFEST_DIR}")
        .header("X-Api-Key", HTTP_SECRET)
}

/// What is wrong with `text`: a secret it quotes, each of `expect` it lacks.
fn check_text(case: &str, text: &str, expect: &[&str]) -> Vec<String> {
    let mut wrong = Vec::new();
    if secrets().iter().any(|secret| text.contains(secret)) {
        wrong.push(format!(
            "{case}: a secret reached the text: {}",
            excerpt(text)
        ));
    }
    for wanted in expect {
        if !text.contains(wanted) {
            wrong.push(format!("{case}: no `{wanted}` in: {}", excerpt(text)));
        }
    }
    wrong
}

/// One hostile tool call.
struct CallCase {
    over: Over,
    tool: &'static str,
    /// What the model must read (besides no secret).
    expect: &'static [&'static str],
}

const CALLS: &[CallCase] = &[
    CallCase {
        over: Over::Stdio,
        tool: "leak_stderr",
        expect: &["connection closed", "MOTET_FAKE_SECRET=[redacted]"],
    },
    CallCase {
        over: Over::Http,
        tool: "echo_headers",
        expect: &["authorization: [redacted]", "x-api-key: [redacted]"],
    },
    CallCase {
        over: Over::Stdio,
        tool: "huge_line",
        expect: &["answer larger than 16777216 bytes"],
    },
    CallCase {
        over: Over::Stdio,
        tool: "huge_error",
        expect: &["answer larger than 16777216 bytes"],
    },
    CallCase {
        over: Over::Stdio,
        tool: "deep_result",
        expect: &["answer nested deeper than"],
    },
    CallCase {
        over: Over::Http,
        tool: "huge_line",
        expect: &["answer larger than 16777216 bytes"],
    },
    CallCase {
        over: Over::Http,
        tool: "huge_error",
        expect: &["answer larger than 16777216 bytes"],
    },
    CallCase {
        over: Over::Http,
        tool: "deep_result",
        // The SDK reads an HTTP body whole and fails the request on it at once.
        expect: &["transport error", "recursion limit"],
    },
];

#[tokio::test]
async fn hostile_answers_to_a_call_are_immediate_error_results_without_secrets() {
    if !python() {
        return;
    }
    let http = FakeHttp::start("tools");
    // Every case runs, so that one failure does not hide another.
    let mut wrong = Vec::new();
    for case in CALLS {
        let name = format!("{:?} {}", case.over, case.tool);
        let config = match case.over {
            Over::Stdio => stdio_config("tools"),
            Over::Http => http_config(&http),
        };
        let client = McpClient::connect(config).await.unwrap();
        let tools = tool_set(&client, CALL_LIMIT).await;
        let started = Instant::now();
        let result = call(&tools, &format!("fake_{}", case.tool), json!({})).await;
        let took = started.elapsed();
        println!("{name}: {took:?}: {}", excerpt(&result.content));
        if !result.is_error {
            wrong.push(format!("{name}: not an error result"));
        }
        if took >= AT_ONCE {
            wrong.push(format!("{name}: took {took:?}"));
        }
        wrong.extend(check_text(&name, &result.content, case.expect));

        // The client keeps working (a new connection when the old one was dropped).
        let ok = call(&tools, "fake_ok", json!({})).await;
        if ok.content != "ok" {
            wrong.push(format!("{name}: then {}", excerpt(&ok.content)));
        }
        client.disconnect().await;
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The HTTP servers the connect cases use.
struct HttpServers {
    echo_at_init: FakeHttp,
}

/// One server that cannot be connected to.
struct ConnectCase {
    name: &'static str,
    config: fn(&HttpServers) -> McpServerConfig,
    /// What the error says (besides no secret).
    expect: &'static [&'static str],
    /// Its type.
    typed: fn(&McpError) -> bool,
}

const CONNECTS: &[ConnectCase] = &[
    ConnectCase {
        name: "a stdio server that prints a secret on stderr and exits",
        config: |_| stdio_config("leak-exit"),
        expect: &["initialization failed", "token [redacted] rejected"],
        typed: |e| matches!(e, McpError::Initialize { .. }),
    },
    ConnectCase {
        name: "an http server that echoes the headers at initialize",
        config: |http| http_config(&http.echo_at_init),
        expect: &["initialization failed", "authorization: [redacted]"],
        typed: |e| matches!(e, McpError::Initialize { .. }),
    },
    ConnectCase {
        name: "a tool schema nested 5,000 deep",
        config: |_| stdio_config("deep-schema"),
        expect: &["answer nested deeper than"],
        typed: |e| matches!(e, McpError::AnswerTooDeep { limit: 127, .. }),
    },
    ConnectCase {
        name: "a tools/list cursor that never ends",
        // Pages of 20 tools: the page limit comes first when tools are not limited.
        config: |_| stdio_config("endless-cursor").with_max_tools(usize::MAX),
        expect: &["tools/list", "pages"],
        typed: |e| {
            matches!(
                e,
                McpError::ToolList {
                    problem: ToolListProblem::TooManyPages { limit: 100 },
                    ..
                }
            )
        },
    },
    ConnectCase {
        name: "a tools/list cursor that repeats",
        config: |_| stdio_config("repeat-cursor"),
        expect: &["tools/list", "cursor", "repeats"],
        typed: |e| {
            matches!(
                e,
                McpError::ToolList {
                    problem: ToolListProblem::RepeatedCursor { page: 2 },
                    ..
                }
            )
        },
    },
    ConnectCase {
        name: "more tools than allowed",
        config: |_| stdio_config("tools").with_max_tools(3),
        expect: &["tools/list", "more than 3 tools"],
        typed: |e| {
            matches!(
                e,
                McpError::ToolList {
                    problem: ToolListProblem::TooManyTools { limit: 3 },
                    ..
                }
            )
        },
    },
];

#[tokio::test]
async fn hostile_servers_fail_to_connect_at_once_without_secrets() {
    if !python() {
        return;
    }
    let http = HttpServers {
        echo_at_init: FakeHttp::start("echo-headers-at-init"),
    };
    let mut wrong = Vec::new();
    for case in CONNECTS {
        let config = (case.config)(&http).with_connect_timeout(CALL_LIMIT);
        let started = Instant::now();
        let Err(error) = McpClient::connect(config).await else {
            wrong.push(format!("{}: connected", case.name));
            continue;
        };
        let took = started.elapsed();
        let text = error.to_string();
        println!("{}: {took:?}: {}", case.name, excerpt(&text));
        if took >= AT_ONCE {
            wrong.push(format!("{}: took {took:?}", case.name));
        }
        wrong.extend(check_text(case.name, &text, case.expect));
        if !(case.typed)(&error) {
            wrong.push(format!("{}: not the expected type: {error:?}", case.name));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The start of a long text, for the test's output.
fn excerpt(text: &str) -> String {
    text.chars().take(300).collect()
}
