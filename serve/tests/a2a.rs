//! A2A over raw HTTP, without a client library: tokens and scopes on the cards and the
//! endpoint, every JSON-RPC error code a malformed call gets, tasks kept to their agent, a run
//! started over A2A seen by the native API, and the card of a router mounted under a prefix.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::collections::BTreeSet;

use common::{json_of, serve, text};
use motet_serve::{RunLimits, Scope, Tokens};
use serde_json::{Value, json};

const ALL: &str = "a2a-all-token-0123456789";
const OTHER: &str = "a2a-other-token-0123456789";

fn tokens() -> Tokens {
    Tokens::open()
        .with(ALL, Scope::All)
        .with(OTHER, Scope::Agents(BTreeSet::from(["other".to_owned()])))
}

/// The JSON-RPC answer to `body` posted to agent `agent`'s endpoint with `token` and
/// `A2A-Version: 1.0`; it must be an HTTP 200.
async fn rpc(server: &common::Server, agent: &str, token: &str, body: &str) -> Value {
    let response = server
        .http
        .post(server.at(&format!("/a2a/{agent}")))
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    json_of(response, 200).await
}

#[tokio::test]
async fn tokens_and_scopes_hold_on_cards_and_calls() {
    let server = serve(tokens(), RunLimits::default()).await;
    let bare = server
        .http
        .get(server.at("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 401);
    assert_eq!(bare.text().await.unwrap(), "", "a 401 says nothing");
    let post = server
        .http
        .post(server.at("/a2a/janitor"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 401);

    // The root card is the first agent (by name) the token reaches.
    let root = |token: &'static str| {
        server
            .http
            .get(server.at("/.well-known/agent-card.json"))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(
        json_of(root(ALL).await.unwrap(), 200).await["name"],
        "janitor"
    );
    let other = json_of(root(OTHER).await.unwrap(), 200).await;
    assert_eq!(other["name"], "other");
    assert_eq!(
        other["supportedInterfaces"][0]["url"],
        server.at("/a2a/other")
    );

    // Another scope's agent is not there at all.
    let card = server
        .http
        .get(server.at("/a2a/janitor/.well-known/agent-card.json"))
        .bearer_auth(OTHER)
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(card, 404).await["error"]["code"], "not_found");
    let call = server
        .http
        .post(server.at("/a2a/janitor"))
        .bearer_auth(OTHER)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(call.status(), 404);
    server.stop().await;
}

#[tokio::test]
async fn each_malformed_call_gets_its_json_rpc_error_and_tasks_stay_with_their_agent() {
    let server = serve(tokens(), RunLimits::default()).await;
    let code = |answer: Value| answer["error"]["code"].as_i64().unwrap();
    assert_eq!(code(rpc(&server, "janitor", ALL, "{").await), -32700);
    assert_eq!(
        code(rpc(&server, "janitor", ALL, r#"{"id":1}"#).await),
        -32600
    );
    let unknown = rpc(
        &server,
        "janitor",
        ALL,
        r#"{"jsonrpc":"2.0","id":"a","method":"message/send","params":{}}"#,
    )
    .await;
    assert_eq!(
        (code(unknown.clone()), &unknown["id"]),
        (-32601, &json!("a"))
    );
    assert_eq!(
        code(
            rpc(
                &server,
                "janitor",
                ALL,
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}"#
            )
            .await
        ),
        -32001
    );
    assert_eq!(
        code(rpc(&server, "janitor", ALL, r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"url":"https://x/y.png"}]}}}"#).await),
        -32005
    );
    // No A2A-Version is 0.3, which is not served.
    let old = server
        .http
        .post(server.at("/a2a/janitor"))
        .bearer_auth(ALL)
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(code(json_of(old, 200).await), -32009);

    // A task started at `other`, answered at once, is not `janitor`'s; the native API shows
    // the same run.
    server.model.push(vec![text("Done.")]);
    let started = rpc(
        &server,
        "other",
        ALL,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Go."}]},
        }})
        .to_string(),
    )
    .await;
    let task = &started["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{started}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Done.");
    let id = task["id"].as_str().unwrap();
    let get =
        json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": id}}).to_string();
    assert_eq!(code(rpc(&server, "janitor", ALL, &get).await), -32001);
    assert_eq!(
        rpc(&server, "other", OTHER, &get).await["result"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let native = server
        .http
        .get(server.at(&format!("/api/agents/other/runs/{id}")))
        .bearer_auth(ALL)
        .send()
        .await
        .unwrap();
    let native = json_of(native, 200).await;
    assert_eq!(native["answer"], "Done.");
    assert_eq!(native["thread"], task["contextId"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_on_a_working_task_steers_its_run() {
    let server = serve(tokens(), RunLimits::default()).await;
    // The first turn takes a few seconds to write, time for the steer to arrive.
    server.model.delay_by(std::time::Duration::from_millis(100));
    server.model.push(vec![text(&"Working on it. ".repeat(4))]);
    server.model.push(vec![text("Steered.")]);
    let send = |message: Value, immediately: bool| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": message, "configuration": {"returnImmediately": immediately}}})
        .to_string()
    };
    let started = rpc(
        &server,
        "janitor",
        ALL,
        &send(
            json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Tidy up."}]}),
            true,
        ),
    )
    .await;
    let task = &started["result"]["task"];
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
            .contains(&task["status"]["state"].as_str().unwrap()),
        "{started}"
    );
    let steered = rpc(
        &server,
        "janitor",
        ALL,
        &send(
            json!({"messageId": "m2", "role": "ROLE_USER", "taskId": task["id"],
                   "contextId": task["contextId"], "parts": [{"text": "Only /tmp, please."}]}),
            false,
        ),
    )
    .await;
    let done = &steered["result"]["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{steered}");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "Steered.");
    let users: Vec<&Value> = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .map(|m| &m["parts"][0]["text"])
        .collect();
    assert_eq!(users, vec!["Tidy up.", "Only /tmp, please."], "{done}");
    // Its context must be the task's.
    let wrong = rpc(
        &server,
        "janitor",
        ALL,
        &send(
            json!({"messageId": "m3", "role": "ROLE_USER", "taskId": task["id"],
                   "contextId": "another", "parts": [{"text": "hi"}]}),
            false,
        ),
    )
    .await;
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    server.stop().await;
}

#[tokio::test]
async fn a_router_mounted_under_a_prefix_names_its_endpoint_under_it() {
    let model = common::Writer::default();
    let runtime = motet_runtime::agent::Runtime::builder()
        .llm(model)
        .build()
        .unwrap();
    let agent = runtime
        .spawn(motet_runtime::agent::ReActAgent::new(
            "calc",
            "openai:gpt-5.2",
        ))
        .await
        .unwrap();
    let served = motet_serve::Served::new(runtime, [agent], Tokens::open());
    let app = axum::Router::new().nest("/agents", served.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::new();
    for path in [
        "/agents/.well-known/agent-card.json",
        "/agents/a2a/calc/.well-known/agent-card.json",
    ] {
        let card = json_of(http.get(format!("{base}{path}")).send().await.unwrap(), 200).await;
        assert_eq!(
            card["supportedInterfaces"][0]["url"],
            format!("{base}/agents/a2a/calc"),
            "{path}"
        );
        assert!(card.get("securitySchemes").is_none());
    }
}
