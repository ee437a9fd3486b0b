//! The native API over real HTTP: threads (create, list, read, entries, delete), waits for a
//! person (listed; approved, edited, rejected, answered; the wrong answer refused), every error
//! code as typed JSON, bearer tokens and their scopes, body limits, and `/openapi.json`
//! against the routes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use common::{Server, Sse, json_of, rm_call, serve, serve_with, text, waits_for, which_call};
use motet_serve::{RunLimits, Scope, Tokens};

async fn get(server: &Server, path: &str) -> reqwest::Response {
    server.http.get(server.at(path)).send().await.unwrap()
}

async fn post(server: &Server, path: &str, body: serde_json::Value) -> reqwest::Response {
    server
        .http
        .post(server.at(path))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Runs `query` on `thread` and waits for its end; returns the run's JSON.
async fn run_to_end(server: &Server, thread: &str, query: &str) -> serde_json::Value {
    let run = json_of(
        post(
            server,
            &format!("/api/agents/janitor/threads/{thread}/runs"),
            serde_json::json!({"query": query}),
        )
        .await,
        201,
    )
    .await;
    let url = server.at(&format!(
        "/api/agents/janitor/runs/{}/events",
        run["id"].as_str().unwrap()
    ));
    let events = Sse::open(&server.http, &url, None, None).await.rest().await;
    assert_eq!(events.last().unwrap().event, "answer", "{events:?}");
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_are_created_listed_read_and_deleted() {
    let server = serve(Tokens::open(), RunLimits::default()).await;
    let created = json_of(
        server
            .http
            .post(server.at("/api/agents/janitor/threads"))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let thread = created["id"].as_str().unwrap().to_owned();
    let empty = json_of(
        get(&server, &format!("/api/agents/janitor/threads/{thread}")).await,
        200,
    )
    .await;
    assert_eq!(empty["entries"], serde_json::json!([]));

    server.model.push(vec![text("Nothing to do.")]);
    let run = run_to_end(&server, &thread, "anything?").await;
    assert_eq!(run["thread"], thread.as_str());
    let listed = json_of(get(&server, "/api/agents/janitor/threads").await, 200).await;
    let ids: Vec<&str> = listed["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [thread.as_str()]);
    let read = json_of(
        get(&server, &format!("/api/agents/janitor/threads/{thread}")).await,
        200,
    )
    .await;
    let kinds: Vec<&str> = read["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.starts_with(&["user"]) && kinds.contains(&"assistant"),
        "{kinds:?}"
    );
    let after = json_of(
        get(
            &server,
            &format!("/api/agents/janitor/threads/{thread}/entries?after=0&limit=1"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(after["entries"].as_array().unwrap().len(), 1);
    assert_eq!(after["entries"][0]["seq"], 1);
    let runs = json_of(
        get(
            &server,
            &format!("/api/agents/janitor/threads/{thread}/runs"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(runs["runs"][0]["id"], run["id"]);
    let bad = get(
        &server,
        &format!("/api/agents/janitor/threads/{thread}/entries?after=x"),
    )
    .await;
    assert_eq!(json_of(bad, 400).await["error"]["code"], "bad_request");

    let deleted = server
        .http
        .delete(server.at(&format!("/api/agents/janitor/threads/{thread}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = get(&server, &format!("/api/agents/janitor/threads/{thread}")).await;
    assert_eq!(json_of(gone, 404).await["error"]["code"], "not_found");
    let again = server
        .http
        .delete(server.at(&format!("/api/agents/janitor/threads/{thread}")))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);
    let bad_id = get(&server, "/api/agents/janitor/threads/%20x").await;
    assert_eq!(json_of(bad_id, 400).await["error"]["code"], "bad_request");
    let no_agent = get(&server, "/api/agents/nobody/threads").await;
    assert_eq!(no_agent.status(), 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_with_a_run_going_is_not_deleted() {
    let server = serve(Tokens::open(), RunLimits::default()).await;
    server.model.push(vec![rm_call("c1", "/a")]);
    let run = json_of(
        post(
            &server,
            "/api/agents/janitor/threads/t1/runs",
            serde_json::json!({"query": "rm /a"}),
        )
        .await,
        201,
    )
    .await;
    waits_for(&server, "janitor", 1).await;
    let refused = server
        .http
        .delete(server.at("/api/agents/janitor/threads/t1"))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(refused, 409).await["error"]["code"], "conflict");
    let id = run["id"].as_str().unwrap();
    assert_eq!(
        server
            .http
            .post(server.at(&format!("/api/agents/janitor/runs/{id}/cancel")))
            .send()
            .await
            .unwrap()
            .status(),
        202
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_for_a_person_are_listed_and_answered_each_way() {
    let server = serve(Tokens::open(), RunLimits::default()).await;
    // Approve; edit; reject — three runs on three threads, each one gated call, then a text.
    for (thread, call) in [("a", "ca"), ("b", "cb"), ("c", "cc")] {
        server.model.push(vec![rm_call(call, "/x")]);
        post(
            &server,
            &format!("/api/agents/janitor/threads/{thread}/runs"),
            serde_json::json!({"query": "rm"}),
        )
        .await;
        waits_for(&server, "janitor", 1).await;
        let all = json_of(get(&server, "/api/waiting").await, 200).await;
        assert_eq!(all["waiting"][0]["tool_call_id"], call);
        assert_eq!(all["waiting"][0]["tool"], "rm");
        server.model.push(vec![text("done")]);
        let path = format!("/api/agents/janitor/threads/{thread}/waiting/{call}");
        // The wrong kind of answer, and edited arguments that are not an object: 422.
        let wrong = post(
            &server,
            &path,
            serde_json::json!({"action": "answer", "text": "x"}),
        )
        .await;
        assert_eq!(json_of(wrong, 422).await["error"]["code"], "unprocessable");
        let decision = match thread {
            "a" => serde_json::json!({"action": "approve"}),
            "b" => {
                let not_object = post(
                    &server,
                    &path,
                    serde_json::json!({"action": "edit", "args": [1]}),
                )
                .await;
                assert_eq!(not_object.status(), 422);
                serde_json::json!({"action": "edit", "args": {"path": "/y"}})
            }
            _ => serde_json::json!({"action": "reject", "reason": "not today"}),
        };
        assert_eq!(post(&server, &path, decision.clone()).await.status(), 202);
        waits_for(&server, "janitor", 0).await;
        // Once the answer is committed, a second one is refused. (One sent before the first
        // is committed is accepted and then ignored by the strategy: the runtime checks the
        // committed waits.)
        let twice = post(&server, &path, decision).await;
        assert!(
            [404, 409].contains(&twice.status().as_u16()),
            "{}",
            twice.status()
        );
        // The call's result says what the person decided.
        let mut result = String::new();
        for _ in 0..100 {
            let read = json_of(
                get(&server, &format!("/api/agents/janitor/threads/{thread}")).await,
                200,
            )
            .await;
            if let Some(entry) = read["entries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["kind"] == "tool_result")
            {
                result = entry["payload"]["result"]["content"].to_string();
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let expected = match thread {
            "a" => "removed /x",
            "b" => "removed /y",
            _ => "not today",
        };
        assert!(result.contains(expected), "{thread}: {result}");
    }
    // A tool's question, answered.
    server.model.push(vec![which_call("cq")]);
    post(
        &server,
        "/api/agents/janitor/threads/q/runs",
        serde_json::json!({"query": "which?"}),
    )
    .await;
    let listed = waits_for(&server, "janitor", 1).await;
    assert_eq!(
        listed["waiting"][0]["pause"]["kind"], "question",
        "{listed}"
    );
    server.model.push(vec![text("ok")]);
    let path = "/api/agents/janitor/threads/q/waiting/cq";
    let approve_a_question = post(&server, path, serde_json::json!({"action": "approve"})).await;
    assert_eq!(approve_a_question.status(), 422);
    assert_eq!(
        post(
            &server,
            path,
            serde_json::json!({"action": "answer", "text": "/tmp"})
        )
        .await
        .status(),
        202
    );
    waits_for(&server, "janitor", 0).await;
    let none = post(
        &server,
        "/api/agents/janitor/threads/q/waiting/nope",
        serde_json::json!({"action": "approve"}),
    )
    .await;
    assert_eq!(json_of(none, 404).await["error"]["code"], "not_found");
    let bad = post(&server, path, serde_json::json!({"action": "maybe"})).await;
    assert_eq!(bad.status(), 422);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_checked_and_scoped_and_errors_are_typed() {
    let tokens = Tokens::open().with("all-token", Scope::All).with(
        "janitor-token",
        Scope::Agents(["janitor".to_owned()].into()),
    );
    let server = serve_with(tokens, RunLimits::default(), |s| s.with_body_limit(1_024)).await;
    let http = &server.http;
    // No token, a wrong one: a bare 401.
    for token in [None, Some("wrong")] {
        let mut request = http.get(server.at("/api/agents"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert_eq!(response.text().await.unwrap(), "");
    }
    // Health needs no token.
    assert_eq!(
        http.get(server.at("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        http.get(server.at("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // A scoped token lists its agents only; another scope's agent and its threads are 404.
    let listed = json_of(
        http.get(server.at("/api/agents"))
            .bearer_auth("janitor-token")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(listed["agents"], serde_json::json!([{"name": "janitor"}]));
    let all = json_of(
        http.get(server.at("/api/agents"))
            .bearer_auth("all-token")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(all["agents"].as_array().unwrap().len(), 2);
    let created = json_of(
        http.post(server.at("/api/agents/other/threads"))
            .bearer_auth("all-token")
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let other_thread = created["id"].as_str().unwrap();
    for path in [
        "/api/agents/other/threads".to_owned(),
        format!("/api/agents/other/threads/{other_thread}"),
        "/api/agents/other/waiting".to_owned(),
    ] {
        let response = http
            .get(server.at(&path))
            .bearer_auth("janitor-token")
            .send()
            .await
            .unwrap();
        assert_eq!(
            json_of(response, 404).await["error"]["code"],
            "not_found",
            "{path}"
        );
    }
    // A run of another scope's agent is not found under it, nor under one's own agent.
    server.model.push(vec![text("hi")]);
    let run = json_of(
        http.post(server.at("/api/agents/other/threads/new/runs"))
            .bearer_auth("all-token")
            .json(&serde_json::json!({"query": "hi"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let id = run["id"].as_str().unwrap();
    for path in [
        format!("/api/agents/other/runs/{id}"),
        format!("/api/agents/janitor/runs/{id}"),
    ] {
        let response = http
            .get(server.at(&path))
            .bearer_auth("janitor-token")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    let start = |body: reqwest::Body, json: bool| {
        let mut request = http
            .post(server.at("/api/agents/janitor/threads/new/runs"))
            .bearer_auth("janitor-token")
            .body(body);
        if json {
            request = request.header("content-type", "application/json");
        }
        request.send()
    };
    // 413, 400, 422, 400 (no content type).
    let large = format!(r#"{{"query": "{}"}}"#, "x".repeat(2_000));
    assert_eq!(
        json_of(start(large.into(), true).await.unwrap(), 413).await["error"]["code"],
        "too_large"
    );
    assert_eq!(
        json_of(start("{not json".into(), true).await.unwrap(), 400).await["error"]["code"],
        "bad_request"
    );
    assert_eq!(
        json_of(
            start(r#"{"question": "x"}"#.into(), true).await.unwrap(),
            422
        )
        .await["error"]["code"],
        "unprocessable"
    );
    assert_eq!(
        json_of(start(r#"{"query": "  "}"#.into(), true).await.unwrap(), 422).await["error"]["code"],
        "unprocessable"
    );
    assert_eq!(
        start(r#"{"query": "x"}"#.into(), false)
            .await
            .unwrap()
            .status(),
        400
    );
    // An unknown route, a method not served: typed too.
    let unknown = http
        .get(server.at("/api/nothing"))
        .bearer_auth("all-token")
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(unknown, 404).await["error"]["code"], "not_found");
    let method = http
        .put(server.at("/api/agents"))
        .bearer_auth("all-token")
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(method, 405).await["error"]["code"],
        "method_not_allowed"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_is_served() {
    let server = serve(Tokens::open(), RunLimits::default()).await;
    let doc = json_of(get(&server, "/openapi.json").await, 200).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 15, "{}", paths.len());
    for (path, operations) in paths {
        let concrete = path
            .replace("{agent}", "janitor")
            .replace("{thread}", "t0")
            .replace("{run}", "r0")
            .replace("{call}", "c0");
        for method in operations.as_object().unwrap().keys() {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut request = server.http.request(method.clone(), server.at(&concrete));
            if method == reqwest::Method::POST {
                request = request.json(&serde_json::json!({}));
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            // Served: anything but the fallbacks' "no such route" and "method not served".
            assert!(
                !body.contains(r#""no such route""#) && status != 405,
                "{method} {path}: {status} {body}"
            );
        }
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_is_off_unless_origins_are_given() {
    let preflight = |server: &Server| {
        server
            .http
            .request(reqwest::Method::OPTIONS, server.at("/api/agents"))
            .header("origin", "https://app.example")
            .header("access-control-request-method", "GET")
            .send()
    };
    let closed = serve(Tokens::open(), RunLimits::default()).await;
    let response = preflight(&closed).await.unwrap();
    assert_eq!(response.headers().get("access-control-allow-origin"), None);
    closed.stop().await;

    let open = serve_with(Tokens::open(), RunLimits::default(), |s| {
        s.with_cors_origins(["https://app.example".to_owned()])
    })
    .await;
    let response = preflight(&open).await.unwrap();
    assert_eq!(
        response
            .headers()
            .get("access-control-allow-origin")
            .map(|v| v.to_str().unwrap()),
        Some("https://app.example")
    );
    let other = open
        .http
        .request(reqwest::Method::OPTIONS, open.at("/api/agents"))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert_eq!(other.headers().get("access-control-allow-origin"), None);
    open.stop().await;
}
