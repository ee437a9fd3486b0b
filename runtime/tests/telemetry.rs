//! Every directive traced, one trace per request across agents, exported over OTLP/gRPC to a
//! real receiver: a coordinator agent whose tool asks a worker agent, both calling a model
//! over real HTTP (a local server speaking Chat Completions SSE, which first answers 429 with
//! the API key in its error body). The exported span tree, its GenAI attributes, the retry
//! event, content capture off then on, the metrics, and no key anywhere are checked.
//!
//! One test per file: the tracing subscriber is global to the process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use motet_agents::ReactCompleted;
use motet_providers::{ApiKey, Dialect, HttpClient};
use motet_runtime::agent::{AgentHandle, ReActAgent, Runtime};
use motet_runtime::telemetry::{self, Protocol, Telemetry};
use motet_runtime::testing::otlp::{OtlpReceiver, ReceivedSpan};
use motet_runtime::tool::{ToolError, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;

const KEY: &str = "sk-test-SECRET-9f8e7d6c5b4a39281706";

/// A Chat Completions server: the first request gets a 429 that echoes the key; then a
/// request offering the `delegate` tool whose last message is the user's gets a call to it,
/// and every other request gets the answer `42`.
async fn model_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end().to_ascii_lowercase();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(value) = line.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                stream.read_exact(&mut body).await.unwrap();
                let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let response = if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                    let error = format!(
                        r#"{{"error":{{"message":"Rate limited for key {KEY}","type":"rate_limit"}}}}"#
                    );
                    format!(
                        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
                         retry-after-ms: 5\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}",
                        error.len()
                    )
                } else {
                    let sse = answer(&body);
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                         connection: close\r\n\r\n{sse}"
                    )
                };
                let _ = stream.get_mut().write_all(response.as_bytes()).await;
                let _ = stream.get_mut().shutdown().await;
            });
        }
    });
    url
}

fn answer(request: &serde_json::Value) -> String {
    let offers_delegate = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == "delegate"));
    let last_is_user = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "user");
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        serde_json::json!({
            "id": "chatcmpl-77", "object": "chat.completion.chunk", "model": "fake-model-2026-01",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let events = if offers_delegate && last_is_user {
        vec![
            chunk(
                serde_json::json!({"role": "assistant", "tool_calls": [{
                    "index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "delegate", "arguments": "{\"question\":\"six times seven?\"}"}
                }]}),
                None,
            ),
            chunk(serde_json::json!({}), Some("tool_calls")),
        ]
    } else {
        vec![
            chunk(
                serde_json::json!({"role": "assistant", "content": "42"}),
                None,
            ),
            chunk(serde_json::json!({}), Some("stop")),
        ]
    };
    let usage = serde_json::json!({
        "id": "chatcmpl-77", "object": "chat.completion.chunk", "model": "fake-model-2026-01",
        "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    });
    let mut sse = String::new();
    for event in events.iter().chain([&usage]) {
        sse.push_str(&format!("data: {event}\n\n"));
    }
    sse.push_str("data: [DONE]\n\n");
    sse
}

#[derive(Deserialize, JsonSchema)]
struct Delegate {
    /// The question for the worker.
    question: String,
}

async fn agents(model_url: &str) -> (Runtime, AgentHandle) {
    let client = HttpClient::new(Dialect::OpenAiChat, model_url, Some(ApiKey::new(KEY))).unwrap();
    // The fake model has a price, so its calls are costed (`motet.llm.cost`).
    let price = motet_providers::Price {
        input: motet_providers::Rate::per_million_micro(1_000_000),
        output: motet_providers::Rate::per_million_micro(2_000_000),
        ..motet_providers::Price::default()
    };
    let runtime = Runtime::builder()
        .llm(Arc::new(client))
        .prices(motet_providers::PriceTable::empty().with_price("openai:fake-model", price))
        .build()
        .unwrap();
    let worker = runtime
        .spawn(ReActAgent::new("worker", "openai:fake-model"))
        .await
        .unwrap();
    // The coordinator's tool asks the worker: the ask is a signal, and it carries the trace.
    let delegate = tool_fn(
        "delegate",
        "Asks the worker agent a question.",
        move |args: Delegate| {
            let worker = worker.clone();
            async move {
                let reply = worker
                    .ask(args.question)
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                let done: ReactCompleted = reply
                    .signal
                    .data_as()
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                Ok::<_, ToolError>(done.answer)
            }
        },
    );
    let boss = runtime
        .spawn(ReActAgent::new("boss", "openai:fake-model").tool(delegate))
        .await
        .unwrap();
    (runtime, boss)
}

fn named<'a>(spans: &'a [ReceivedSpan], name: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_across_two_agents_is_one_trace_exported_over_grpc() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let guard = Telemetry::from_vars(|_| None)
        .unwrap()
        .with_endpoint(receiver.grpc_endpoint())
        .with_protocol(Protocol::Grpc)
        .with_service_name("motet-test")
        .without_log()
        .install()
        .unwrap();
    let model_url = model_server().await;
    let (runtime, boss) = agents(&model_url).await;

    let question = "Ask the worker: what is six times seven?";
    let reply = boss.ask(question).await.unwrap();
    let done: ReactCompleted = reply.signal.data_as().unwrap();
    assert_eq!(done.answer, "42");
    guard.flush().unwrap();
    let spans = receiver
        .wait_for(Duration::from_secs(10), |s| {
            s.iter()
                .filter(|s| s.name.starts_with("invoke_agent"))
                .count()
                >= 2
        })
        .await;

    // The tree: boss's invoke_agent is the root; its LLM calls and its tool hang off it; the
    // worker's invoke_agent is a child of the tool's span; all in one trace.
    let boss_span = named(&spans, "invoke_agent boss");
    assert_eq!(boss_span.len(), 1, "{spans:#?}");
    let boss_span = boss_span[0];
    assert_eq!(boss_span.parent_span_id, "");
    assert_eq!(boss_span.service_name, "motet-test");
    assert_eq!(
        boss_span.attr("gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(boss_span.attr("gen_ai.agent.name"), Some("boss"));
    assert_eq!(boss_span.attr("motet.agent.id"), Some("boss"));
    assert_eq!(boss_span.attr("motet.thread.id"), Some("default"));
    assert!(boss_span.attr("motet.request.id").is_some());
    let trace = &boss_span.trace_id;
    assert!(
        spans.iter().all(|s| &s.trace_id == trace),
        "one trace: {spans:#?}"
    );

    let tool = named(&spans, "execute_tool delegate");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    let tool = tool[0];
    assert_eq!(tool.parent_span_id, boss_span.span_id);
    assert_eq!(tool.attr("gen_ai.tool.name"), Some("delegate"));
    assert_eq!(tool.attr("gen_ai.tool.call.id"), Some("call_1"));
    assert_eq!(tool.attr("gen_ai.operation.name"), Some("execute_tool"));

    let worker_span = named(&spans, "invoke_agent worker");
    assert_eq!(worker_span.len(), 1, "{spans:#?}");
    assert_eq!(
        worker_span[0].parent_span_id, tool.span_id,
        "cross-agent parent"
    );

    let chats = named(&spans, "chat fake-model");
    assert_eq!(
        chats.len(),
        3,
        "two for the boss, one for the worker: {spans:#?}"
    );
    let boss_chats: Vec<_> = chats
        .iter()
        .filter(|c| c.parent_span_id == boss_span.span_id)
        .collect();
    assert_eq!(boss_chats.len(), 2);
    let worker_chat = chats
        .iter()
        .find(|c| c.parent_span_id == worker_span[0].span_id)
        .expect("the worker's call hangs off the worker's request");
    for chat in &chats {
        assert_eq!(chat.kind, 3, "CLIENT");
        assert_eq!(chat.attr("gen_ai.operation.name"), Some("chat"));
        assert_eq!(chat.attr("gen_ai.provider.name"), Some("openai"));
        assert_eq!(chat.attr("gen_ai.request.model"), Some("fake-model"));
        assert_eq!(
            chat.attr("gen_ai.response.model"),
            Some("fake-model-2026-01")
        );
        assert_eq!(chat.attr("gen_ai.response.id"), Some("chatcmpl-77"));
        assert_eq!(chat.attr("gen_ai.usage.input_tokens"), Some("12"));
        assert_eq!(chat.attr("gen_ai.usage.output_tokens"), Some("3"));
        assert!(chat.attr("gen_ai.response.finish_reasons").is_some());
        assert!(chat.attr("motet.llm.cost_usd").is_some(), "{chat:#?}");
        assert!(chat.attr("motet.llm.cached_share").is_some(), "{chat:#?}");
        assert!(chat.attr("motet.iteration").is_some());
    }
    assert_eq!(worker_chat.attr("motet.iteration"), Some("1"));
    // The first call was answered 429 and retried: an event on its span.
    let retried: Vec<_> = chats
        .iter()
        .filter(|c| c.events.iter().any(|e| e == "retry"))
        .collect();
    assert_eq!(retried.len(), 1, "{chats:#?}");
    // Signals handled are spans too.
    assert!(
        spans.iter().any(|s| s.name == "handle llm.result"),
        "{spans:#?}"
    );
    // Content is not recorded by default.
    assert!(
        spans
            .iter()
            .all(|s| s.attr("gen_ai.input.messages").is_none()
                && s.attr("gen_ai.output.messages").is_none()
                && s.attr("gen_ai.tool.call.arguments").is_none()),
        "{spans:#?}"
    );
    assert!(
        receiver
            .bodies()
            .iter()
            .all(|b| !contains(b, "six times seven")),
        "content off means no prompt text exported"
    );

    // Content on: prompts, completions and tool arguments are recorded.
    receiver.clear();
    telemetry::set_capture_content(true);
    boss.ask("Ask again: six times seven?").await.unwrap();
    guard.flush().unwrap();
    let spans = receiver
        .wait_for(Duration::from_secs(10), |s| {
            s.iter()
                .filter(|s| s.name.starts_with("invoke_agent"))
                .count()
                >= 2
        })
        .await;
    let chat = spans
        .iter()
        .find(|s| s.name == "chat fake-model" && s.attr("gen_ai.input.messages").is_some())
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert!(
        chat.attr("gen_ai.input.messages")
            .unwrap()
            .contains("six times seven")
    );
    assert!(chat.attr("gen_ai.output.messages").is_some());
    let tool = named(&spans, "execute_tool delegate");
    assert_eq!(
        tool[0].attr("gen_ai.tool.call.arguments"),
        Some("{\"question\":\"six times seven?\"}")
    );
    assert_eq!(tool[0].attr("gen_ai.tool.call.result"), Some("42"));
    telemetry::set_capture_content(false);

    // Metrics went out too.
    guard.flush().unwrap();
    let names = receiver.metric_names();
    for metric in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "motet.requests",
        "motet.llm.cost",
    ] {
        assert!(names.iter().any(|n| n == metric), "{metric} in {names:?}");
    }

    // The key never leaves the process, whatever was switched on (the 429 echoed it).
    runtime.shutdown().await;
    guard.shutdown().unwrap();
    let bodies = receiver.bodies();
    assert!(!bodies.is_empty());
    for body in &bodies {
        assert!(!contains(body, KEY), "the API key was exported");
        assert!(
            !contains(body, "SECRET"),
            "part of the API key was exported"
        );
    }
}
