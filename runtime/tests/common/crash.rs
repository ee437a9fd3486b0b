//! The crash loop, written once for every store: an agent runs in a child process against the
//! store a URL names and is killed with SIGKILL at a random moment of a request, `runs` times;
//! after each kill a second child resumes the thread. Every committed entry must still be there
//! exactly once, byte for byte (provider meta included), seqs contiguous, no tool result
//! doubled, and the interrupted request completed.
//!
//! crash.rs (a SQLite file) and crash_postgres.rs (a PostgreSQL database) include it with
//! `#[path = "common/crash.rs"]`. Their test binary plays the children itself: its ignored
//! `child_run` entry (run only by the parent, with `--ignored --exact`, so it never counts as a
//! passing test) calls [`child_run`], which needs `MOTET_CRASH_CHILD` to name a store URL and a
//! mode.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use motet_agents::{EntryBody, ReactCompleted};
use motet_directives::{
    AssistantBlock, AssistantMessage, LlmRequest, LlmResponse, Message, ProviderMeta, StopReason,
    ToolArgs, Usage,
};
use motet_providers::{LlmClient, LlmEvents, ProviderError};
use motet_runtime::agent::{ReActAgent, Runtime};
use motet_runtime::store::open_store;
use motet_runtime::tool::{ToolError, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

/// The variable that makes the test binary a child: `<store url>|<mode>`.
const CHILD_VAR: &str = "MOTET_CRASH_CHILD";
const THREAD: &str = "calc/default";
const SIGNATURE: &str = "EqQBCkgIARABGAIiQL3c0mFzdWx0cy1zaWduYXR1cmU=";

/// Thinks (with an Anthropic-style signature), calls `add`, then answers; a little slow, so
/// a kill lands in the middle of things.
struct SlowModel;

#[async_trait::async_trait]
impl LlmClient for SlowModel {
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        tokio::time::sleep(Duration::from_millis(15)).await;
        let asks = matches!(req.messages.last(), Some(Message::User { .. }));
        let blocks = if asks {
            vec![
                AssistantBlock::reasoning(
                    "Adding.",
                    Some(ProviderMeta::Anthropic {
                        signature: SIGNATURE.into(),
                    }),
                ),
                AssistantBlock::tool_use("tc", "add", ToolArgs::from_text(r#"{"a": 2, "b": 3}"#)),
            ]
        } else {
            vec![AssistantBlock::text("5")]
        };
        let stop_reason = if asks {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        let response = LlmResponse::new(
            AssistantMessage {
                blocks,
                stop_reason,
            },
            Usage::default(),
        );
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

async fn agent_runtime(url: &str) -> (Runtime, motet_runtime::agent::AgentHandle) {
    let runtime = Runtime::builder()
        .llm(Arc::new(SlowModel))
        .store_url(url)
        .await
        .unwrap()
        .build()
        .unwrap();
    let add = tool_fn("add", "Adds two integers.", |args: AddArgs| async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok::<_, ToolError>((args.a + args.b).to_string())
    });
    let agent = runtime
        .spawn(
            ReActAgent::new("calc", "anthropic:claude-sonnet-4-5")
                .system("You add.")
                .tool(add),
        )
        .await
        .unwrap();
    (runtime, agent)
}

/// The children. `ask:<n>` asks question n (and is killed meanwhile); `resume` resumes the
/// thread and waits for the reply.
pub(crate) async fn child_run() {
    let spec = std::env::var(CHILD_VAR)
        .unwrap_or_else(|_| panic!("a child of the crash loop, not a test: {CHILD_VAR} is unset"));
    let (url, mode) = spec.rsplit_once('|').unwrap();
    let (runtime, agent) = agent_runtime(url).await;
    if let Some(n) = mode.strip_prefix("ask:") {
        // Tell the parent the agent is up: its kill clock starts now.
        println!("ready");
        std::io::Write::flush(&mut std::io::stdout()).unwrap();
        let _ = agent.ask(format!("question {n}")).await;
    } else {
        if let Some(request) = agent.resume(None, Duration::from_secs(10)).await.unwrap() {
            let reply = request.wait().await.unwrap();
            let done: ReactCompleted = reply.signal.data_as().unwrap();
            println!("resumed: {}", done.answer);
        }
        runtime.shutdown().await;
    }
}

/// This test binary run as a child: only its ignored entry `child_test` (which calls
/// [`child_run`]).
fn child(child_test: &str, url: &str, mode: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            child_test,
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_VAR, format!("{url}|{mode}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

async fn snapshot(url: &str) -> Vec<String> {
    let store = open_store(url).await.unwrap();
    match store.load(THREAD).await.unwrap() {
        Some(thread) => thread
            .to_list()
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect(),
        None => Vec::new(),
    }
}

/// Kills an asking child `runs` times on the store at `url` and resumes after each kill,
/// checking the thread every time; the children are this binary's test `child_test`. At least
/// one kill in five must have landed mid-request (about 2 in 3 do).
pub(crate) async fn kill_and_resume(url: &str, runs: usize, child_test: &str) {
    let mut rng = fastrand::Rng::with_seed(0xc4a5);
    let mut resumed_mid_request = 0;
    for run in 0..runs {
        let mut asker = child(child_test, url, &format!("ask:{run}"));
        let stdout = asker.stdout.take().unwrap();
        tokio::task::spawn_blocking(move || {
            let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
            lines.find(|l| l.as_ref().is_ok_and(|l| l.contains("ready")));
        })
        .await
        .unwrap();
        // A request takes about 50 ms here (two model calls, a tool, four commits).
        tokio::time::sleep(Duration::from_millis(rng.u64(0..70))).await;
        asker.kill().unwrap(); // SIGKILL
        asker.wait().unwrap();
        let before = snapshot(url).await;

        let resumer = child(child_test, url, "resume");
        let out = resumer.wait_with_output().unwrap();
        assert!(out.status.success(), "run {run}: the resuming child failed");
        let after = snapshot(url).await;
        if after.len() > before.len() {
            // The resume had work to finish: the kill landed mid-request.
            resumed_mid_request += 1;
        }

        // Every entry committed before the kill is still there, byte for byte.
        assert!(after.len() >= before.len(), "run {run}: entries lost");
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "run {run}: history changed"
        );
        let store = open_store(url).await.unwrap();
        let Some(thread) = store.load(THREAD).await.unwrap() else {
            continue; // killed before the first entry of the first run
        };
        let entries = thread.to_list();
        for (n, entry) in entries.iter().enumerate() {
            assert_eq!(u64::from(entry.seq), n as u64, "run {run}: seqs contiguous");
            if let EntryBody::Assistant { message, .. } = &entry.body {
                for block in &message.blocks {
                    if let AssistantBlock::Reasoning { meta, .. } = block {
                        assert_eq!(
                            meta.as_deref(),
                            Some(&ProviderMeta::Anthropic {
                                signature: SIGNATURE.into()
                            }),
                            "run {run}: provider meta intact"
                        );
                    }
                }
            }
        }
        // Each tool call has exactly one result, right after its turn.
        for (n, entry) in entries.iter().enumerate() {
            if let EntryBody::Assistant { message, .. } = &entry.body
                && message.has_tool_calls()
            {
                let results = entries[n + 1..]
                    .iter()
                    .take_while(|e| matches!(e.body, EntryBody::ToolResult { .. }))
                    .count();
                assert_eq!(results, 1, "run {run}: one result per call at seq {n}");
            }
        }
        // The interrupted request (if it got as far as the thread) is complete.
        let last_turn = entries
            .iter()
            .rev()
            .find(|e| {
                matches!(
                    e.body,
                    EntryBody::User { .. }
                        | EntryBody::Assistant { .. }
                        | EntryBody::ToolResult { .. }
                )
            })
            .unwrap_or_else(|| panic!("run {run}: no turn in {entries:?}"));
        match &last_turn.body {
            EntryBody::Assistant { message, .. } => {
                assert!(!message.has_tool_calls(), "run {run}: ends with the answer");
                assert_eq!(message.to_string(), "5");
            }
            other => panic!("run {run}: the thread ends with {other:?}"),
        }
    }
    println!("{resumed_mid_request} of {runs} kills landed mid-request");
    // The kills landed in the middle of requests, not only between them.
    assert!(
        resumed_mid_request >= runs / 5,
        "only {resumed_mid_request} of {runs} runs were resumed mid-request"
    );
}
