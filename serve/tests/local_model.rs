//! One run end to end against the real local llama.cpp server (MOTET_LOCAL_LLM_URL): started
//! over HTTP, its answer streamed as SSE deltas, the stream's end the answer the run reads as.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use common::{Sse, json_of};
use motet_agents::{ReAct, ReActConfig};
use motet_providers::{Dialect, HttpClient};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_serve::{Served, Tokens};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_the_local_model_streams_its_answer() {
    let Some(url) =
        motet_runtime::testing::needs_var("MOTET_LOCAL_LLM_URL", "bash scripts/local-llm.sh start")
    else {
        return;
    };
    let url = url.trim_end_matches('/');
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    let runtime = Runtime::builder().llm(client).build().unwrap();
    let mut config = ReActConfig::new("openai-compat:local".parse().unwrap())
        .with_system_prompt("Answer in one short sentence.");
    config.options.max_tokens = Some(48);
    let agent = runtime
        .spawn(AgentSpec::new("local", ReAct::new(config)))
        .await
        .unwrap();
    let served = Served::new(
        runtime.clone(),
        [agent],
        Tokens::open().with("t", motet_serve::Scope::All),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(served.serve(listener, async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();

    let run = json_of(
        http.post(format!("{base}/api/agents/local/threads/new/runs"))
            .bearer_auth("t")
            .json(&serde_json::json!({"query": "What colour is the sky on a clear day?"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let id = run["id"].as_str().unwrap();
    let events_url = format!("{base}/api/agents/local/runs/{id}/events");
    let mut events = Vec::new();
    let mut stream = Sse::open(&http, &events_url, Some("t"), None).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while let Some(event) = stream.next().await {
        events.push(event);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run ends within 120 s"
        );
    }
    let end = events.last().unwrap();
    assert_eq!(end.event, "answer", "{events:?}");
    let answer = end.json()["answer"].as_str().unwrap().to_owned();
    assert!(!answer.trim().is_empty());
    let written: String = events
        .iter()
        .filter(|e| e.event == "delta" && e.json()["kind"] == "text")
        .map(|e| e.json()["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(written.trim(), answer.trim(), "the deltas spell the answer");
    let read = json_of(
        http.get(format!("{base}/api/agents/local/runs/{id}"))
            .bearer_auth("t")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["status"], "completed");
    assert_eq!(read["answer"], answer.as_str());
    println!("the local model answered: {answer}");
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    runtime.shutdown().await;
}
