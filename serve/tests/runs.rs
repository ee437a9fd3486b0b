//! Runs over real HTTP: started, streamed as SSE with ids, resumed after a drop with
//! `Last-Event-ID` (the same events as an uninterrupted subscriber: none lost, none twice),
//! subscribed to after they ended, with a gap when the delta buffer no longer holds the
//! position; cancelled, steered; subscribers bounded; streams ended at shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::time::Duration;

use common::{Server, Sse, SseEvent, json_of, rm_call, serve, text, waits_for};
use motet_serve::{BufferLimits, RunLimits, StreamLimits, Tokens};

/// Starts a run of `janitor` on `thread` asking `query`; returns its JSON.
async fn start(server: &Server, thread: &str, query: &str) -> serde_json::Value {
    let response = server
        .http
        .post(server.at(&format!("/api/agents/janitor/threads/{thread}/runs")))
        .json(&serde_json::json!({ "query": query }))
        .send()
        .await
        .unwrap();
    json_of(response, 201).await
}

/// Waits until the run has ended and its log holds its outcome, for up to 10 s.
async fn until_ended(server: &Server, run: &serde_json::Value) {
    let id = run["id"].as_str().unwrap();
    for _ in 0..500 {
        let read = json_of(
            server
                .http
                .get(server.at(&format!("/api/agents/janitor/runs/{id}")))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        // The run's own outcome, not just the request's status: its log is complete.
        if read.get("answer").is_some() || read.get("error").is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the run did not end within 10 s");
}

fn events_url(server: &Server, run: &serde_json::Value) -> String {
    server.at(&format!(
        "/api/agents/janitor/runs/{}/events",
        run["id"].as_str().unwrap()
    ))
}

async fn approve(server: &Server, run: &serde_json::Value, call: &str) {
    let url = format!(
        "/api/agents/janitor/threads/{}/waiting/{call}",
        run["thread"].as_str().unwrap()
    );
    let response = server
        .http
        .post(server.at(&url))
        .json(&serde_json::json!({"action": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
}

fn ids(events: &[SseEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| e.id.as_deref().map(|id| id.parse().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_drops_and_resumes_sees_what_an_uninterrupted_one_sees() {
    let server = serve(Tokens::open(), RunLimits::default()).await;
    server.model.clone().delay_by(Duration::from_millis(15));
    server.model.push(vec![
        text("Let me look at what is there first."),
        rm_call("c1", "/tmp/x"),
    ]);
    server.model.push(vec![text(
        "All clean now, nothing is left in /tmp/x at all.",
    )]);
    let run = start(&server, "new", "clean up").await;
    let url = events_url(&server, &run);

    let mut whole = Sse::open(&server.http, &url, None, None).await;
    // The second subscriber drops in the middle of the first turn's text...
    let mut dropping = Sse::open(&server.http, &url, None, None).await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(dropping.next().await.unwrap());
    }
    drop(dropping);
    assert!(seen.iter().all(|e| e.event == "delta"), "{seen:?}");
    // ...comes back, reads up to the wait for a person, and drops again.
    let last = seen.last().unwrap().id.clone().unwrap();
    let mut dropping = Sse::open(&server.http, &url, None, Some(&last)).await;
    loop {
        let event = dropping.next().await.unwrap();
        let waiting = event.event == "waiting";
        seen.push(event);
        if waiting {
            break;
        }
    }
    drop(dropping);
    waits_for(&server, "janitor", 1).await;
    approve(&server, &run, "c1").await;
    // Back while the second turn writes: what it missed, then the live stream.
    let last = seen.last().unwrap().id.clone().unwrap();
    let mut resumed = Sse::open(&server.http, &url, None, Some(&last)).await;
    seen.extend(resumed.rest().await);

    let all = whole.rest().await;
    assert_eq!(
        seen, all,
        "the resumed subscriber saw exactly what the other one did"
    );
    let n = u64::try_from(all.len()).unwrap();
    assert_eq!(
        ids(&all),
        (1..=n).collect::<Vec<_>>(),
        "ids increase by one, no gaps"
    );
    let names: Vec<&str> = all.iter().map(|e| e.event.as_str()).collect();
    for kind in ["delta", "entry", "waiting", "answer"] {
        assert!(names.contains(&kind), "{kind} in {names:?}");
    }
    assert_eq!(names.last(), Some(&"answer"));
    let answer = all.last().unwrap().json();
    assert_eq!(
        answer["answer"],
        "All clean now, nothing is left in /tmp/x at all."
    );
    // The deltas spell the turns' text; the entries hold the question, the turns and the result.
    let written: String = all
        .iter()
        .filter(|e| e.event == "delta")
        .map(|e| e.json()["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        written,
        "Let me look at what is there first.All clean now, nothing is left in /tmp/x at all."
    );
    let kinds: Vec<String> = all
        .iter()
        .filter(|e| e.event == "entry")
        .map(|e| e.json()["kind"].as_str().unwrap().to_owned())
        .filter(|kind| kind != "note") // the wait and its approval, noted
        .collect();
    assert_eq!(kinds, ["user", "assistant", "tool_result", "assistant"]);

    // After the end: a late subscriber gets everything, and the run reads as completed.
    let late = Sse::open(&server.http, &url, None, None).await.rest().await;
    assert_eq!(late, all);
    let id = run["id"].as_str().unwrap();
    let read = json_of(
        server
            .http
            .get(server.at(&format!("/api/agents/janitor/runs/{id}")))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["status"], "completed");
    assert_eq!(read["answer"], answer["answer"]);
    assert_eq!(read["last_event_id"], n);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_the_buffer_no_longer_holds_gets_a_gap_then_every_durable_event() {
    let limits = RunLimits {
        buffer: BufferLimits {
            deltas: 2,
            bytes: usize::MAX,
        },
        ..RunLimits::default()
    };
    let server = serve(Tokens::open(), limits).await;
    server
        .model
        .push(vec![text("One two three four five six seven eight.")]);
    let run = start(&server, "new", "count").await;
    let url = events_url(&server, &run);
    // Wait for the end, then read from the start.
    until_ended(&server, &run).await;
    let mut first = Sse::open(&server.http, &url, None, Some("0")).await;
    let events = first.rest().await;
    let gap = &events[0];
    assert_eq!(gap.event, "gap");
    assert_eq!(gap.id, None);
    let through = gap.json()["through"].as_u64().unwrap();
    let rest = &events[1..];
    let got = ids(rest);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
    assert!(
        rest.iter()
            .filter(|e| e.event == "delta")
            .all(|e| ids(std::slice::from_ref(e))[0] > through),
        "no delta the gap covers is sent"
    );
    // Only the last two deltas are held; every entry and the answer are there.
    assert_eq!(rest.iter().filter(|e| e.event == "delta").count(), 2);
    let kinds: Vec<String> = rest
        .iter()
        .filter(|e| e.event == "entry")
        .map(|e| e.json()["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["user", "assistant"]);
    assert_eq!(rest.last().unwrap().event, "answer");
    // Resuming from the last id: nothing more, and the stream ends.
    let last = rest.last().unwrap().id.clone().unwrap();
    let none = Sse::open(&server.http, &url, None, Some(&last))
        .await
        .rest()
        .await;
    assert_eq!(none, Vec::new());
    // An id the run never had is refused.
    let bad = Sse::request(&server.http, &url, None, Some("9999")).await;
    assert_eq!(json_of(bad, 400).await["error"]["code"], "bad_request");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_cancelled_and_steered_and_an_ended_one_says_so() {
    let server = serve(Tokens::open(), RunLimits::default()).await;
    server.model.push(vec![rm_call("c1", "/a")]);
    let run = start(&server, "new", "remove /a").await;
    let id = run["id"].as_str().unwrap().to_owned();
    waits_for(&server, "janitor", 1).await;
    let at = |what: &str| server.at(&format!("/api/agents/janitor/runs/{id}/{what}"));
    let read = json_of(
        server
            .http
            .get(server.at(&format!("/api/agents/janitor/runs/{id}")))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["status"], "awaiting_approval");

    // A steer while it waits is taken in at its next turn.
    let steered = server
        .http
        .post(at("steer"))
        .json(&serde_json::json!({"text": "only /a"}))
        .send()
        .await
        .unwrap();
    assert_eq!(steered.status(), 202);
    let empty = server
        .http
        .post(at("steer"))
        .json(&serde_json::json!({"text": " "}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(empty, 422).await["error"]["code"], "unprocessable");

    let cancelled = server.http.post(at("cancel")).send().await.unwrap();
    assert_eq!(cancelled.status(), 202);
    let events = Sse::open(&server.http, &at("events"), None, None)
        .await
        .rest()
        .await;
    let end = events.last().unwrap();
    assert_eq!(end.event, "failed", "{events:?}");
    let read = json_of(
        server
            .http
            .get(server.at(&format!("/api/agents/janitor/runs/{id}")))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["status"], "failed");
    assert!(read["error"].as_str().unwrap().contains("cancel"), "{read}");

    let again = server.http.post(at("cancel")).send().await.unwrap();
    assert_eq!(json_of(again, 409).await["error"]["code"], "conflict");
    let late = server
        .http
        .post(at("steer"))
        .json(&serde_json::json!({"text": "more"}))
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 409);
    let unknown = server
        .http
        .post(server.at("/api/agents/janitor/runs/nope/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(unknown, 404).await["error"]["code"], "not_found");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_are_bounded_and_streams_end_at_shutdown() {
    let limits = RunLimits {
        streams: StreamLimits {
            per_run: 1,
            ..StreamLimits::default()
        },
        ..RunLimits::default()
    };
    let server = serve(Tokens::open(), limits).await;
    server.model.push(vec![rm_call("c1", "/a")]);
    let run = start(&server, "new", "remove /a").await;
    let url = events_url(&server, &run);
    let mut first = Sse::open(&server.http, &url, None, None).await;
    first.next().await.unwrap();
    let second = Sse::request(&server.http, &url, None, None).await;
    assert_eq!(json_of(second, 503).await["error"]["code"], "busy");
    // The first one's slot comes back when it leaves.
    drop(first);
    let mut third = None;
    for _ in 0..100 {
        let response = Sse::request(&server.http, &url, None, None).await;
        if response.status() == 200 {
            third = Some(Sse::of(response));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut third = third.expect("a slot once the first subscriber left");
    waits_for(&server, "janitor", 1).await;
    // Shutdown: the open stream is told and ends, and the server stops.
    let url = server.url.clone();
    let stopping = tokio::spawn(server.stop());
    let rest = third.rest().await;
    assert_eq!(
        rest.last().map(|e| e.event.as_str()),
        Some("shutdown"),
        "{rest:?}"
    );
    stopping.await.unwrap();
    assert!(reqwest::get(format!("{url}/healthz")).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_is_let_go_and_the_run_goes_on() {
    use tokio::io::AsyncWriteExt as _;
    let limits = RunLimits {
        streams: StreamLimits {
            per_run: 1,
            stall: Duration::from_millis(300),
            ..StreamLimits::default()
        },
        // Every fragment kept: the stalled reader has them all still to take.
        buffer: BufferLimits {
            deltas: 4_096,
            bytes: 64 << 20,
        },
        ..RunLimits::default()
    };
    let server = serve(Tokens::open(), limits).await;
    // 32 MB of text in 1,024 fragments: more than the socket buffers between a reader that
    // reads nothing and the server hold, and more events than its queue.
    server.model.chunk_by(32 << 10);
    server.model.push(vec![rm_call("c1", "/a")]);
    server.model.push(vec![text(&"x".repeat(32 << 20))]);
    let run = start(&server, "new", "write a lot").await;
    let url = events_url(&server, &run);
    let path = url.strip_prefix(&server.url).unwrap().to_owned();
    let mut stalled = tokio::net::TcpStream::connect(server.url.strip_prefix("http://").unwrap())
        .await
        .unwrap();
    stalled
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    // Its response has begun (so it holds the slot) before it stops reading.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        use tokio::io::AsyncReadExt as _;
        assert_eq!(
            stalled.read(&mut byte).await.unwrap(),
            1,
            "the server closed"
        );
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    waits_for(&server, "janitor", 1).await;
    // The stalled reader holds the run's one slot...
    let busy = Sse::request(&server.http, &url, None, None).await;
    assert_eq!(busy.status(), 503);
    approve(&server, &run, "c1").await;
    // ...the run ends all the same, and once the reader has stalled past the bound its slot is
    // free again.
    let id = run["id"].as_str().unwrap();
    let mut status = serde_json::Value::Null;
    for _ in 0..500 {
        let read = json_of(
            server
                .http
                .get(server.at(&format!("/api/agents/janitor/runs/{id}")))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        status = read["status"].clone();
        if status == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, "completed");
    let mut freed = false;
    for _ in 0..200 {
        let response =
            Sse::request(&server.http, &format!("{url}?last_event_id=1"), None, None).await;
        if response.status() == 200 {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(freed, "the stalled reader's slot came back");
    drop(stalled);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_is_taken_in_at_the_runs_next_turn() {
    let server = serve(Tokens::open(), RunLimits::default()).await;
    server.model.push(vec![rm_call("c1", "/a")]);
    server.model.push(vec![text("Removed /a only.")]);
    let run = start(&server, "new", "remove things").await;
    let id = run["id"].as_str().unwrap();
    waits_for(&server, "janitor", 1).await;
    let steered = server
        .http
        .post(server.at(&format!("/api/agents/janitor/runs/{id}/steer")))
        .json(&serde_json::json!({"text": "only /a, please"}))
        .send()
        .await
        .unwrap();
    assert_eq!(steered.status(), 202);
    approve(&server, &run, "c1").await;
    let events = Sse::open(&server.http, &events_url(&server, &run), None, None)
        .await
        .rest()
        .await;
    assert_eq!(events.last().unwrap().event, "answer");
    // The steer is a user entry of the run, before its last turn.
    let users: Vec<String> = events
        .iter()
        .filter(|e| e.event == "entry" && e.json()["kind"] == "user")
        .map(|e| e.json()["payload"]["content"].to_string())
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[1].contains("only /a, please"), "{users:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_subscribers_dropping_at_random_points_lose_nothing_and_repeat_nothing() {
    // A dropped stream's slot is freed when the server notices the drop, which under load comes
    // after the client's next connection: room for every connection the test makes.
    let limits = RunLimits {
        streams: StreamLimits {
            per_run: 512,
            ..StreamLimits::default()
        },
        ..RunLimits::default()
    };
    let server = serve(Tokens::open(), limits).await;
    server.model.delay_by(Duration::from_millis(2));
    server.model.push(vec![text(
        &"The quick brown fox jumps over the lazy dog. ".repeat(12),
    )]);
    let run = start(&server, "new", "write").await;
    let url = events_url(&server, &run);
    let whole = tokio::spawn({
        let (http, url) = (server.http.clone(), url.clone());
        async move { Sse::open(&http, &url, None, None).await.rest().await }
    });
    let clients: Vec<_> = (0..50u64)
        .map(|n| {
            let (http, url) = (server.http.clone(), url.clone());
            tokio::spawn(async move {
                let mut seen: Vec<SseEvent> = Vec::new();
                let mut drops = 0;
                loop {
                    let last = seen.last().and_then(|e| e.id.clone());
                    let mut stream = Sse::open(&http, &url, None, last.as_deref()).await;
                    // Each client drops after a few events of its own count, up to five times.
                    let mut taken = 0;
                    loop {
                        match stream.next().await {
                            Some(event) => {
                                seen.push(event);
                                taken += 1;
                                if drops < 5 && taken == 3 + (n + drops) % 7 {
                                    break;
                                }
                            }
                            None => return seen,
                        }
                    }
                    drops += 1;
                }
            })
        })
        .collect();
    let whole = whole.await.unwrap();
    assert_eq!(whole.last().unwrap().event, "answer");
    for client in clients {
        assert_eq!(client.await.unwrap(), whole);
    }
    server.stop().await;
}
