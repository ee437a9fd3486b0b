//! The OpenAI-compatible endpoint over real HTTP, against scripted models: the model list and
//! its scopes, a completion whole and streamed (its chunks in order, its usage), the agent's
//! tool calls kept inside it, threads fresh and continued, a wait for a person, a client that
//! goes away mid-stream, and every refusal in OpenAI's error shape with its status.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod openai_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use motet_directives::{Approval, AssistantBlock, Response, ToolArgs};
use motet_runtime::agent::{AgentSpec, ReActAgent, RequestStatus, Runtime};
use motet_runtime::tool::{ToolError, ToolSet, tool_fn};
use motet_serve::{Scope, Tokens};
use openai_common::{
    EchoModel, MODEL, add_then_answer, ask_body, calc_agent, data_of, scripted, serve,
    serve_handles, turn,
};
use serde_json::{Value, json};

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

async fn post(base: &str, token: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http()
        .post(format!("{base}/v1/chat/completions"))
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

async fn get(base: &str, path: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = http().get(format!("{base}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// The status and the JSON body of `response`.
async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    (status, body)
}

fn tokens() -> Tokens {
    Tokens::open()
        .with("all", Scope::All)
        .with("calc-only", Scope::Agents(["calc".to_owned()].into()))
}

#[tokio::test]
async fn the_models_are_the_agents_the_token_reaches() {
    let runs = Arc::new(AtomicU32::new(0));
    let agents = vec![
        calc_agent("calc", MODEL, runs.clone()),
        calc_agent("writer", MODEL, runs),
    ];
    let server = serve(scripted([]), agents, tokens()).await;
    let base = &server.base;

    let (status, all) = json_of(get(base, "/v1/models", Some("all")).await).await;
    assert_eq!(status, 200);
    assert_eq!(all["object"], "list");
    let ids: Vec<&Value> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["id"])
        .collect();
    assert_eq!(ids, [&json!("calc"), &json!("writer")]);
    let calc = &all["data"][0];
    assert_eq!(
        (&calc["object"], &calc["owned_by"]),
        (&json!("model"), &json!("motet"))
    );
    assert!(calc["created"].as_u64().unwrap() > 1_700_000_000);

    let (_, scoped) = json_of(get(base, "/v1/models", Some("calc-only")).await).await;
    assert_eq!(scoped["data"].as_array().unwrap().len(), 1);
    assert_eq!(scoped["data"][0]["id"], "calc");

    let (status, one) = json_of(get(base, "/v1/models/calc", Some("calc-only")).await).await;
    assert_eq!(
        (status, &one["id"], &one["object"]),
        (200, &json!("calc"), &json!("model"))
    );
    // Another scope's agent is as unknown as one that does not exist.
    for path in ["/v1/models/writer", "/v1/models/nobody"] {
        let (status, error) = json_of(get(base, path, Some("calc-only")).await).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(error["error"]["code"], "model_not_found");
        assert_eq!(error["error"]["type"], "invalid_request_error");
    }
    // No token or a wrong one: a bare 401, nothing else said.
    for token in [None, Some("wrong")] {
        for path in ["/v1/models", "/v1/models/calc"] {
            let response = get(base, path, token).await;
            assert_eq!(response.status().as_u16(), 401, "{path} {token:?}");
            assert_eq!(response.text().await.unwrap(), "");
        }
        let response = post(base, token, &ask_body("calc", "hi", json!({}))).await;
        assert_eq!(response.status().as_u16(), 401);
    }
}

#[tokio::test]
async fn a_completion_is_the_agents_answer_with_its_usage_and_none_of_its_tool_calls() {
    let runs = Arc::new(AtomicU32::new(0));
    let model = scripted(add_then_answer(2, 3, "2 + 3 = 5"));
    let server = serve(
        model.clone(),
        vec![calc_agent("calc", MODEL, runs.clone())],
        tokens(),
    )
    .await;

    let response = post(
        &server.base,
        Some("all"),
        &ask_body("calc", "What is 2 + 3?", json!({})),
    )
    .await;
    let thread = response.headers()["x-motet-thread"]
        .to_str()
        .unwrap()
        .to_owned();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "calc");
    let request = body["motet"]["request"].as_str().unwrap();
    assert_eq!(body["id"], format!("chatcmpl-{request}"));
    assert_eq!(body["motet"]["thread"], thread.as_str());
    let choice = &body["choices"][0];
    assert_eq!(
        choice["message"],
        json!({"role": "assistant", "content": "2 + 3 = 5", "refusal": null})
    );
    assert_eq!(choice["finish_reason"], "stop");
    // Both of the agent's model calls are counted.
    assert_eq!(body["usage"]["prompt_tokens"], 30);
    assert_eq!(body["usage"]["completion_tokens"], 10);
    assert_eq!(body["usage"]["total_tokens"], 40);
    // The tool ran inside the agent; the client sees no call of it.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!body.to_string().contains("tool_calls") && !body.to_string().contains("call_add"));
    // The agent was asked the user's text, on the thread the response names.
    let asked = model.requests();
    assert_eq!(asked.len(), 2);
    let stored = server.agents[0]
        .get_thread(Some(&thread))
        .await
        .unwrap()
        .unwrap();
    assert!(
        stored.entry_count() >= 4,
        "the ask, the call, its result, the answer"
    );
}

#[tokio::test]
async fn a_stream_sends_the_role_the_text_the_finish_the_usage_then_done() {
    let runs = Arc::new(AtomicU32::new(0));
    let model = scripted(add_then_answer(2, 3, "It is 5."));
    let server = serve(
        model,
        vec![calc_agent("calc", MODEL, runs.clone())],
        tokens(),
    )
    .await;

    let body = ask_body(
        "calc",
        "What is 2 + 3?",
        json!({"stream": true, "stream_options": {"include_usage": true}}),
    );
    let response = post(&server.base, Some("all"), &body).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert!(response.headers().contains_key("x-motet-thread"));
    let payloads = data_of(&response.text().await.unwrap());

    assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = payloads[..payloads.len() - 1]
        .iter()
        .map(|p| serde_json::from_str(p).unwrap())
        .collect();
    assert!(chunks.len() >= 4, "{chunks:?}");
    let id = chunks[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"));
    assert!(
        chunks
            .iter()
            .all(|c| c["id"] == id && c["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "It is 5.");
    // One finish, on the chunk before the usage; the usage chunk has no choices.
    let finishes: Vec<usize> = chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| !c["choices"][0]["finish_reason"].is_null())
        .map(|(at, _)| at)
        .collect();
    assert_eq!(finishes, [chunks.len() - 2]);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "stop"
    );
    let last = &chunks[chunks.len() - 1];
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], 30);
    assert_eq!(last["usage"]["completion_tokens"], 10);
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c["usage"].is_null())
    );
    assert!(!payloads.iter().any(|p| p.contains("call_add")));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_stateless_client_gets_a_fresh_thread_and_a_stateful_one_continues_its_own() {
    let server = serve(
        EchoModel::default(),
        vec![ReActAgent::new("echo", MODEL)],
        Tokens::open(),
    )
    .await;
    let conversation = json!({"model": "echo", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "one"},
    ]});
    let first = post(&server.base, None, &conversation).await;
    let thread = first.headers()["x-motet-thread"]
        .to_str()
        .unwrap()
        .to_owned();
    let (_, first) = json_of(first).await;
    // The earlier messages reach the agent inside the ask.
    assert_eq!(
        first["choices"][0]["message"]["content"],
        "The conversation so far:\nsystem: Be brief.\n\nThe user now says:\none"
    );

    // Named, the thread holds what came before: only the last message is asked.
    let next = json!({"model": "echo", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "..."},
        {"role": "user", "content": "two"},
    ]});
    let continued = http()
        .post(format!("{}/v1/chat/completions", server.base))
        .header("X-Motet-Thread", &thread)
        .json(&next)
        .send()
        .await
        .unwrap();
    assert_eq!(continued.headers()["x-motet-thread"], thread.as_str());
    let (_, continued) = json_of(continued).await;
    let seen = continued["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    assert!(seen.ends_with("The user now says:\none|two"), "{seen}");

    // Not named again: a fresh thread, whatever came before.
    let (_, fresh) =
        json_of(post(&server.base, None, &ask_body("echo", "three", json!({}))).await).await;
    assert_eq!(fresh["choices"][0]["message"]["content"], "three");
    assert_ne!(fresh["motet"]["thread"], thread.as_str());
}

/// A runtime with the agent `janitor`, whose `rm` waits for a person's approval: the model
/// calls it once, then answers `done`.
async fn janitor(runs: Arc<AtomicU32>) -> openai_common::Server {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct RmArgs {
        path: String,
    }
    let rm = tool_fn("rm", "Removes a path.", move |args: RmArgs| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>(format!("removed {}", args.path)) }
    });
    let tools = Arc::new(
        ToolSet::builder()
            .tool(rm)
            .require_approval("rm", Approval::default())
            .build()
            .unwrap(),
    );
    let call =
        AssistantBlock::tool_use("call_rm", "rm", ToolArgs::from_text(r#"{"path":"/tmp/x"}"#));
    let model = scripted([
        turn(vec![call], 5, 1),
        turn(vec![AssistantBlock::text("done")], 5, 1),
    ]);
    let runtime = Runtime::builder().llm(model).build().unwrap();
    let strategy = motet_agents::ReAct::new(
        motet_agents::ReActConfig::new(MODEL.parse().unwrap()).with_tools(tools.definitions()),
    );
    let agent = runtime
        .spawn(AgentSpec::new("janitor", strategy).with_tools(tools))
        .await
        .unwrap();
    serve_handles(runtime, vec![agent], Tokens::open()).await
}

/// Waits until request `id` of `runtime` has `status`.
async fn until_status(runtime: &Runtime, id: &str, status: RequestStatus) {
    for _ in 0..200 {
        if runtime.request(id).map(|r| r.status) == Some(status) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "request {id} is {:?}, not {status:?}",
        runtime.request(id).map(|r| r.status)
    );
}

#[tokio::test]
async fn a_wait_for_a_person_ends_the_response_and_the_request_goes_on_once_approved() {
    let runs = Arc::new(AtomicU32::new(0));
    let server = janitor(runs.clone()).await;
    let (status, body) = json_of(
        post(
            &server.base,
            None,
            &ask_body("janitor", "Clean up.", json!({})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let text = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        text.contains("`call_rm` (`rm`) needs a person's approval"),
        "{text}"
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        body["motet"]["waiting"],
        json!([{"tool_call_id": "call_rm", "tool": "rm", "kind": "approval"}])
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // The request waits on; answered elsewhere (here the runtime itself), it completes.
    let request = body["motet"]["request"].as_str().unwrap();
    until_status(&server.runtime, request, RequestStatus::AwaitingApproval).await;
    let waiting = server.runtime.waiting().await.unwrap();
    assert_eq!(waiting.len(), 1);
    server
        .runtime
        .respond(&waiting[0], Response::Approve)
        .await
        .unwrap();
    until_status(&server.runtime, request, RequestStatus::Completed).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_streamed_wait_for_a_person_ends_with_the_notice_the_finish_and_done() {
    let server = janitor(Arc::new(AtomicU32::new(0))).await;
    let body = ask_body("janitor", "Clean up.", json!({"stream": true}));
    let payloads = data_of(&post(&server.base, None, &body).await.text().await.unwrap());
    assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = payloads[..payloads.len() - 1]
        .iter()
        .map(|p| serde_json::from_str(p).unwrap())
        .collect();
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["motet"]["waiting"][0]["tool_call_id"], "call_rm");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(text.contains("needs a person's approval"), "{text}");
}

#[tokio::test]
async fn a_client_that_goes_away_mid_stream_cancels_nothing() {
    let model = EchoModel {
        delay: Duration::from_millis(300),
    };
    let server = serve(model, vec![ReActAgent::new("echo", MODEL)], Tokens::open()).await;
    let body = ask_body("echo", "still there?", json!({"stream": true}));
    let mut response = post(&server.base, None, &body).await;
    // The first chunk (the role) comes at once; the client leaves before the answer.
    let first = response.chunk().await.unwrap().unwrap();
    let first = String::from_utf8_lossy(&first).into_owned();
    let chunk: Value = serde_json::from_str(&data_of(&first)[0]).unwrap();
    let request = chunk["id"]
        .as_str()
        .unwrap()
        .strip_prefix("chatcmpl-")
        .unwrap()
        .to_owned();
    drop(response);
    until_status(&server.runtime, &request, RequestStatus::Completed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_open_at_shutdown_ends_with_an_error_and_the_server_stops() {
    // A model far slower than the test: only the shutdown can end the response in time.
    let model = EchoModel {
        delay: Duration::from_secs(120),
    };
    let runtime = Runtime::builder().llm(model).build().unwrap();
    let agent = runtime.spawn(ReActAgent::new("echo", MODEL)).await.unwrap();
    let served = motet_serve::Served::new(runtime.clone(), [agent], Tokens::open());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(served.serve(listener, async move {
        let _ = stopped.await;
    }));
    let body = ask_body("echo", "still there?", json!({"stream": true}));
    let mut response = post(&base, None, &body).await;
    assert_eq!(response.status(), 200);
    let mut seen = String::from_utf8_lossy(&response.chunk().await.unwrap().unwrap()).into_owned();
    assert!(seen.contains("chat.completion.chunk"), "{seen}");
    stop.send(()).unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .expect("the stream ends at shutdown, not when the model answers")
        .unwrap();
    seen.push_str(&rest);
    let data = data_of(&seen);
    let last: Value = serde_json::from_str(data.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "shutting_down", "{seen}");
    assert!(!data.iter().any(|d| d == "[DONE]"), "{seen}");
    // Nothing holds the server any more.
    tokio::time::timeout(Duration::from_secs(60), serving)
        .await
        .expect("the server stops once its streams ended")
        .unwrap()
        .unwrap();
    // The request was not cancelled: it goes on.
    let opening: Value = serde_json::from_str(&data[0]).unwrap();
    let request = opening["id"]
        .as_str()
        .unwrap()
        .strip_prefix("chatcmpl-")
        .unwrap();
    let record = runtime.request(request).expect("the request is known");
    assert!(record.status.is_running(), "{:?}", record.status);
}

#[tokio::test]
async fn each_refusal_has_its_status_and_openais_error_shape() {
    let runs = Arc::new(AtomicU32::new(0));
    let agents = vec![
        calc_agent("calc", MODEL, runs.clone()),
        calc_agent("writer", MODEL, runs),
    ];
    // The model has no answer: an ask that reaches it fails.
    let server = serve(scripted([]), agents, tokens()).await;
    let base = &server.base;
    let raw = |body: &'static str| {
        http()
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth("all")
            .header("content-type", "application/json")
            .body(body)
    };
    let cases: Vec<(reqwest::RequestBuilder, u16, Option<&str>)> = vec![
        (raw("{not json"), 400, None),
        (raw(r#"{"model": "calc"}"#), 400, None),
        (
            raw(r#"{"model": "calc", "messages": []}"#),
            400,
            Some("messages"),
        ),
        (
            raw(
                r#"{"model": "calc", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}"#,
            ),
            400,
            Some("tools"),
        ),
        (
            raw(r#"{"model": "nobody", "messages": [{"role": "user", "content": "hi"}]}"#),
            404,
            Some("model"),
        ),
        (
            http()
                .post(format!("{base}/v1/chat/completions"))
                .bearer_auth("calc-only")
                .json(&ask_body("writer", "hi", json!({}))),
            404,
            Some("model"),
        ),
        (
            http()
                .post(format!("{base}/v1/chat/completions"))
                .bearer_auth("all")
                .header("X-Motet-Thread", "../etc")
                .json(&ask_body("calc", "hi", json!({}))),
            400,
            None,
        ),
        // Past the server's body limit (axum's default, 2 MB, here).
        (
            http()
                .post(format!("{base}/v1/chat/completions"))
                .bearer_auth("all")
                .json(&ask_body("calc", &"x".repeat(3 * 1024 * 1024), json!({}))),
            413,
            None,
        ),
        (
            raw(r#"{"model": "calc", "messages": [{"role": "user", "content": "hi"}]}"#),
            500,
            None,
        ),
    ];
    for (request, status, param) in cases {
        let (got, body) = json_of(request.send().await.unwrap()).await;
        assert_eq!(got, status, "{body}");
        let error = &body["error"];
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert!(error["type"].is_string(), "{body}");
        assert!(
            error.get("code").is_some() && error.get("param").is_some(),
            "{body}"
        );
        assert_eq!(error["param"].as_str(), param, "{body}");
    }

    // A failure after the stream began is OpenAI's error object in the stream, and no [DONE].
    let body = ask_body("calc", "hi", json!({"stream": true}));
    let payloads = data_of(&post(base, Some("all"), &body).await.text().await.unwrap());
    let last: Value = serde_json::from_str(payloads.last().unwrap()).unwrap();
    assert_eq!(last["error"]["type"], "server_error", "{payloads:?}");
    assert!(!payloads.iter().any(|p| p == "[DONE]"));
}
