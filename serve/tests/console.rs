//! The web console: its files served without a token under a strict Content-Security-Policy,
//! and the page itself driven in headless Chromium (serve/tests/clients/console_client.py, with
//! selenium from `MOTET_PYTHON` and Debian's chromium from `MOTET_CHROMIUM` and
//! `MOTET_CHROMEDRIVER`): a run started from the page, its gated tool calls approved, edited and
//! rejected from the page, its answer streaming in — against a scripted model, and a run streaming against the local
//! llama.cpp model. Each browser test keeps a screenshot in `$MOTET_ARTIFACTS`, or else in the
//! target folder's `tmp/console/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{rm_call, serve_with, text};
use motet_agents::{ReAct, ReActConfig};
use motet_providers::{Dialect, HttpClient};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::testing::needs_var;
use motet_serve::{RunLimits, Scope, Served, Tokens};
use serde_json::Value;

const TOKEN: &str = "console-test-token-0123456789";

/// What the browser tests need: the Python with selenium, chromium and its driver.
struct Browser {
    python: String,
}

impl Browser {
    /// The three, or `None` after saying which is missing (a failure under `CI=true`).
    fn find() -> Option<Self> {
        let python = needs_var("MOTET_PYTHON", "bash scripts/py-clients.sh install")?;
        needs_var(
            "MOTET_CHROMIUM",
            "apt-get install chromium; export MOTET_CHROMIUM=/usr/bin/chromium",
        )?;
        needs_var(
            "MOTET_CHROMEDRIVER",
            "apt-get install chromium-driver; export MOTET_CHROMEDRIVER=/usr/bin/chromedriver",
        )?;
        Some(Self { python })
    }

    /// Runs the console client's `scenario` against `base` as `agent`; its JSON lines. The
    /// screenshot goes to `shot`. The client failing fails the test.
    async fn drive(&self, base: &str, agent: &str, scenario: &str, shot: &PathBuf) -> Vec<Value> {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/console_client.py"
        );
        let run = tokio::process::Command::new(&self.python)
            .args([script, base, TOKEN, agent, scenario])
            .arg(shot)
            // Selenium uses the driver it is given and never fetches one.
            .env("SE_OFFLINE", "true")
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(Duration::from_secs(900), run)
            .await
            .expect("the console client finishes within 15 minutes")
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the console client failed: {}\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Where a screenshot named `name` is kept.
fn artifact(name: &str) -> PathBuf {
    let folder = std::env::var_os("MOTET_ARTIFACTS").map_or_else(
        || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&folder).unwrap();
    folder.join(name)
}

/// The line of `lines` about `what`.
fn line<'a>(lines: &'a [Value], what: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["what"] == what)
        .unwrap_or_else(|| panic!("no `{what}` line in {lines:?}"))
}

/// The page's final state: a screenshot that is a PNG, and nothing the browser refused.
fn check_page(lines: &[Value], shot: &PathBuf) {
    let bytes = std::fs::read(shot).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "a screenshot of the page: {} bytes",
        bytes.len()
    );
    let messages = line(lines, "console")["messages"].as_array().unwrap();
    for message in messages {
        let message = message.as_str().unwrap();
        assert!(
            !message.contains("Content Security Policy") && !message.contains("Refused"),
            "the browser refused something: {message}"
        );
        assert!(
            !message.contains(TOKEN),
            "the token reached the browser's log"
        );
    }
    println!("screenshot: {}", shot.display());
}

/// The texts the live area showed before its last one that hold more than `before` and less
/// than the whole of `answer` after it: the answer seen part-written.
fn partial_answers(seen: &[Value], before: &str, answer: &str) -> usize {
    seen.iter()
        .filter_map(Value::as_str)
        .filter_map(|shown| shown.strip_prefix(before))
        .map(str::trim_start)
        .filter(|tail| !tail.is_empty() && tail.len() < answer.len() && answer.starts_with(tail))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_loads_without_a_token_under_a_strict_policy() {
    let server = serve_with(
        Tokens::open().with(TOKEN, Scope::All),
        RunLimits::default(),
        |served| served,
    )
    .await;
    for (path, kind) in [
        ("/", "text/html; charset=utf-8"),
        ("/console.js", "text/javascript; charset=utf-8"),
        ("/console.css", "text/css; charset=utf-8"),
    ] {
        let response = server.http.get(server.at(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path} loads without a token");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(header("content-type"), kind, "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        let policy = header("content-security-policy");
        assert!(
            policy.starts_with("default-src 'none';") && policy.contains("script-src 'self';"),
            "{path}: {policy}"
        );
        assert!(!policy.contains("unsafe"), "{path}: {policy}");
        let body = response.text().await.unwrap();
        assert!(!body.is_empty(), "{path}");
    }
    let page = server.http.get(server.at("/")).send().await.unwrap();
    let page = page.text().await.unwrap();
    assert!(page.contains(r#"<script src="/console.js" defer></script>"#));
    // The data the page asks for is not let out without the token.
    let agents = server.http.get(server.at("/api/agents")).send().await;
    assert_eq!(agents.unwrap().status(), 401);
    let agents = server
        .http
        .get(server.at("/api/agents"))
        .bearer_auth(TOKEN)
        .send()
        .await;
    assert_eq!(agents.unwrap().status(), 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_works_where_a_program_nests_the_router() {
    let runtime = Runtime::builder()
        .llm(common::Writer::default())
        .build()
        .unwrap();
    let served = Served::new(runtime.clone(), [], Tokens::open());
    let app = axum::Router::new().nest("/agents", served.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::new();
    let page = http.get(format!("{base}/agents")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(
        page.contains(r#"<script src="/agents/console.js" defer>"#),
        "{page}"
    );
    assert!(page.contains(r#"href="/agents/console.css""#), "{page}");
    for path in [
        "/agents/console.js",
        "/agents/console.css",
        "/agents/api/agents",
    ] {
        let response = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_streams_a_run_and_answers_its_gated_calls_in_headless_chromium() {
    let Some(browser) = Browser::find() else {
        return;
    };
    const FIRST: &str = "Let me look at what is there first.";
    const ANSWER: &str =
        "All clean now: /tmp/x is gone, and nothing else in /tmp was touched along the way.";
    let server = serve_with(
        Tokens::open().with(TOKEN, Scope::All),
        RunLimits::default(),
        |served| served,
    )
    .await;
    // Three characters every 60 ms: the answer takes seconds to write, time to see it grow.
    server.model.delay_by(Duration::from_millis(60));
    // Three calls of the gated `rm`: approved, edited, rejected from the page.
    server.model.push(vec![
        text(FIRST),
        rm_call("c1", "/tmp/x"),
        rm_call("c2", "/tmp/y"),
        rm_call("c3", "/tmp/w"),
    ]);
    server.model.push(vec![text(ANSWER)]);

    let shot = artifact("console-approve.png");
    let lines = browser
        .drive(&server.url, "janitor", "approve", &shot)
        .await;

    assert!(
        line(&lines, "locked")["status"]
            .as_str()
            .unwrap()
            .contains("needs a token"),
        "{lines:?}"
    );
    // The run stopped at the gate, its first turn on the page, the calls shown for approval.
    let waiting = line(&lines, "waiting");
    for card in waiting["cards"].as_array().unwrap() {
        assert!(
            card.as_str().unwrap().contains("rm needs approval"),
            "{card}"
        );
    }
    let args: Value = serde_json::from_str(waiting["args"].as_str().unwrap()).unwrap();
    assert_eq!(
        args,
        serde_json::json!({"path": "/tmp/x"}),
        "the call's arguments, to edit"
    );
    assert_eq!(waiting["live"], FIRST);
    assert!(
        waiting["run_status"]
            .as_str()
            .unwrap()
            .ends_with("waiting for a person"),
        "{waiting}"
    );
    // Approved from the page: the answer streamed in, seen part-written, then whole.
    let answer = line(&lines, "answer");
    assert_eq!(answer["answer"], ANSWER);
    let seen = answer["seen"].as_array().unwrap();
    assert_eq!(
        seen.last().unwrap().as_str().unwrap(),
        format!("{FIRST}\n{ANSWER}")
    );
    let partial = partial_answers(seen, FIRST, ANSWER);
    println!("the answer seen part-written {partial} times");
    assert!(
        partial >= 2,
        "the answer was seen growing ({partial} partial texts): {seen:?}"
    );
    let page = line(&lines, "page");
    assert!(
        page["run_status"].as_str().unwrap().ends_with("completed"),
        "{page}"
    );
    assert!(page["deltas"].as_u64().unwrap() >= 20, "{page}");
    let transcript: Vec<&str> = page["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for said in [
        "Please clean up /tmp/x.",
        "removed /tmp/x",
        "removed /tmp/z",
        "rejected the call: keep it",
        ANSWER,
    ] {
        assert!(
            transcript.iter().any(|entry| entry.contains(said)),
            "`{said}` in the transcript: {transcript:?}"
        );
    }
    assert!(
        server.runtime.waiting().await.unwrap().is_empty(),
        "nothing waits any more"
    );
    check_page(&lines, &shot);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_watches_an_answer_of_the_local_model_stream_in() {
    let Some(browser) = Browser::find() else {
        return;
    };
    let Some(url) = needs_var("MOTET_LOCAL_LLM_URL", "bash scripts/local-llm.sh start") else {
        return;
    };
    let url = url.trim_end_matches('/');
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    let runtime = Runtime::builder().llm(client).build().unwrap();
    let mut config = ReActConfig::new("openai-compat:local".parse().unwrap())
        .with_system_prompt("You are a helpful assistant.");
    config.options.max_tokens = Some(96);
    let agent = runtime
        .spawn(AgentSpec::new("local", ReAct::new(config)))
        .await
        .unwrap();
    let served = Served::new(
        runtime.clone(),
        [agent],
        Tokens::open().with(TOKEN, Scope::All),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(served.serve(listener, async move {
        let _ = stopped.await;
    }));

    let shot = artifact("console-local-model.png");
    let lines = browser.drive(&base, "local", "stream", &shot).await;

    let answer = line(&lines, "answer");
    let text = answer["answer"].as_str().unwrap();
    assert!(!text.trim().is_empty(), "{answer}");
    let seen = answer["seen"].as_array().unwrap();
    let whole = seen.last().unwrap().as_str().unwrap();
    assert_eq!(whole.trim(), text.trim(), "the live text is the answer");
    let partial = partial_answers(seen, "", whole);
    assert!(
        partial >= 1,
        "the answer was seen growing ({partial} partial texts): {seen:?}"
    );
    let page = line(&lines, "page");
    assert!(page["deltas"].as_u64().unwrap() >= 2, "{page}");
    assert!(
        page["run_status"].as_str().unwrap().ends_with("completed"),
        "{page}"
    );
    check_page(&lines, &shot);
    println!("local model, seen in {} steps: {text:?}", seen.len());
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    runtime.shutdown().await;
}
