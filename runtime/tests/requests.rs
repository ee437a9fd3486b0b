//! Requests on a thread: isolated from other threads, queued, rejected or interrupted by
//! policy, cancelled (closing their provider connection), streamed as they are written, and
//! tracked after they end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{AGENT_FAILED, ReactCompleted};
use motet_directives::AssistantBlock;
use motet_providers::{Dialect, HttpClient, ProviderError};
use motet_runtime::agent::{AskError, AskOptions, DeltaKind, RequestPolicy, Runtime};

use common::*;

#[tokio::test]
async fn requests_on_different_threads_never_see_each_other() {
    let (runtime, agent) = echo_agent(Duration::from_millis(5), |spec| spec).await;
    // 100 concurrent asks on 100 threads, then a second round on the same threads.
    for round in 0..2 {
        let asks = (0..100).map(|t| {
            let agent = agent.clone();
            async move {
                let options = AskOptions {
                    thread_id: Some(format!("t{t}")),
                    ..AskOptions::default()
                };
                let reply = agent
                    .ask_with(format!("q{t}.{round}"), options)
                    .await
                    .unwrap();
                (t, reply)
            }
        });
        for (t, reply) in futures::future::join_all(asks).await {
            assert_eq!(reply.signal.thread_id(), Some(format!("t{t}").as_str()));
            let answer = reply.signal.data_as::<ReactCompleted>().unwrap().answer;
            let expected: Vec<String> = (0..=round).map(|r| format!("q{t}.{r}")).collect();
            assert_eq!(
                answer,
                expected.join("|"),
                "thread t{t} saw only its own history"
            );
        }
    }
    assert_eq!(
        runtime.thread_count(),
        101,
        "100 threads and the default one"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn asks_on_one_thread_queue_and_run_in_order() {
    let (runtime, agent) = echo_agent(Duration::from_millis(20), |spec| spec).await;
    // All sent at once (join_all polls them in order, so they arrive m0, m1, ...): each
    // arrives while the one before it runs.
    let asks = (0..5).map(|n| agent.ask(format!("m{n}")));
    let replies = answers(futures::future::join_all(asks).await);
    for (n, answer) in replies.into_iter().enumerate() {
        let expected: Vec<String> = (0..=n).map(|i| format!("m{i}")).collect();
        assert_eq!(
            answer,
            expected.join("|"),
            "request {n} ran after the ones before it"
        );
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_reject_policy_answers_busy() {
    let (runtime, agent) = echo_agent(Duration::from_millis(200), |spec| {
        spec.with_request_policy(RequestPolicy::Reject)
    })
    .await;
    // join! polls in order: "slow" reaches the agent first and runs while "impatient" arrives.
    let (first, second) = tokio::join!(agent.ask("slow"), agent.ask("impatient"));
    let data = failure_data(second);
    assert!(data.contains("busy"), "{data}");
    assert!(first.is_ok());
    runtime.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_request_stops_its_llm_stream() {
    let model = HangingModel::default();
    let (runtime, agent) = spawned(model.clone(), calc_agent("slow")).await;
    let request = motet_signals::Signal::builder(motet_agents::AGENT_REQUEST, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::AgentRequest {
            attachments: Default::default(),
            query: "think forever".into(),
            context_policy: None,
            response_format: None,
        })
        .build()
        .unwrap();
    let ask = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.ask_signal(request, Duration::from_secs(10)).await })
    };
    tokio::time::timeout(Duration::from_secs(5), model.started.notified())
        .await
        .unwrap();
    let cancel = motet_signals::Signal::builder(motet_agents::AGENT_CANCEL, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::AgentCancel {
            reason: Some("user pressed stop".into()),
        })
        .build()
        .unwrap();
    agent.send(cancel).await.unwrap();
    match ask.await.unwrap() {
        Err(AskError::Failed { reply }) => assert_eq!(reply.signal_type().as_str(), AGENT_FAILED),
        other => panic!("{other:?}"),
    }
    // The call's task was aborted, which dropped the provider stream (closing its connection).
    for _ in 0..100 {
        if model.dropped.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(model.dropped.load(std::sync::atomic::Ordering::SeqCst));
    runtime.shutdown().await;
}

#[tokio::test]
async fn streamed_text_is_published_as_llm_delta() {
    let model = scripted([vec![AssistantBlock::text("hello world")]]);
    let runtime = Runtime::builder().llm(Arc::new(model)).build().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = runtime.bus().subscribe(
        "llm.delta".parse().unwrap(),
        move |signal: &motet_signals::Signal| {
            sink.lock()
                .unwrap()
                .push(signal.data_as::<motet_runtime::agent::LlmDelta>().unwrap());
            motet_signals::Delivery::Delivered
        },
    );
    let agent = runtime.spawn(calc_agent("talker")).await.unwrap();
    agent.ask("hi").await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].kind, DeltaKind::Text);
    assert_eq!(seen[0].delta, "hello world");
    runtime.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_request_closes_its_provider_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A provider that starts a stream and then says nothing, and reports when the client
    // hangs up.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    let (open_tx, open_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = socket.read(&mut buf).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let event = "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking\"},\"finish_reason\":null}]}\n\n";
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        socket.write_all(chunk.as_bytes()).await.unwrap();
        let _ = open_tx.send(());
        // Wait for EOF: the client closed the connection.
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = closed_tx.send(());
    });
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    let (runtime, agent) = spawned(client, calc_agent_on("slow", "openai-compat:m")).await;
    let request = motet_signals::Signal::builder(motet_agents::AGENT_REQUEST, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::AgentRequest {
            attachments: Default::default(),
            query: "go".into(),
            context_policy: None,
            response_format: None,
        })
        .build()
        .unwrap();
    let ask = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.ask_signal(request, Duration::from_secs(10)).await })
    };
    tokio::time::timeout(Duration::from_secs(5), open_rx)
        .await
        .unwrap()
        .unwrap();
    let cancel = motet_signals::Signal::builder(motet_agents::AGENT_CANCEL, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::AgentCancel { reason: None })
        .build()
        .unwrap();
    agent.send(cancel).await.unwrap();
    assert!(matches!(ask.await.unwrap(), Err(AskError::Failed { .. })));
    tokio::time::timeout(Duration::from_secs(5), closed_rx)
        .await
        .expect("the provider saw the connection close")
        .unwrap();
    runtime.shutdown().await;
}

#[tokio::test]
async fn requests_are_tracked_and_threads_can_be_reset() {
    use motet_runtime::agent::RequestStatus;
    let (runtime, agent) = echo_agent(Duration::from_millis(30), |spec| spec).await;
    let (first, second) = tokio::join!(agent.ask("one"), agent.ask("two"));
    let first = first.unwrap();
    let second = second.unwrap();
    let records = agent.requests();
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(record.status, RequestStatus::Completed);
        assert_eq!(record.thread, "default");
        let started = record.started_at.unwrap();
        let finished = record.finished_at.unwrap();
        assert!(record.submitted_at <= started && started <= finished);
        assert!(record.result.is_some());
    }
    // The second waited in the queue: it started when the first finished.
    let one = runtime.request(first.signal.request_id().unwrap()).unwrap();
    let two = runtime
        .request(second.signal.request_id().unwrap())
        .unwrap();
    assert_eq!(one.status, RequestStatus::Completed);
    assert!(two.started_at.unwrap() >= one.finished_at.unwrap());

    // Reset: the next ask starts from an empty history.
    agent.reset_thread(None).await.unwrap();
    assert!(agent.get_thread(None).await.unwrap().is_none());
    assert_eq!(answer(&agent, "three", "default").await, "three");
    runtime.shutdown().await;
}

#[tokio::test]
async fn only_the_last_finished_requests_are_kept_with_their_replies() {
    use motet_runtime::agent::RequestStatus;
    let runtime = Runtime::builder()
        .llm(EchoModel::default())
        .keep_finished_requests(2)
        .build()
        .unwrap();
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    let mut ids = Vec::new();
    for question in ["one", "two", "three"] {
        ids.push(agent.ask(question).await.unwrap().request_id);
    }
    assert!(
        runtime.request(&ids[0]).is_none(),
        "the oldest is forgotten"
    );
    for id in &ids[1..] {
        let record = runtime.request(id).unwrap();
        assert_eq!(record.status, RequestStatus::Completed);
        assert_eq!(
            (record.agent.as_str(), record.thread.as_str()),
            ("echo", "default")
        );
        assert_eq!(record.result.unwrap().request_id(), Some(id.as_str()));
    }
    let kept: Vec<String> = agent.requests().into_iter().map(|r| r.id).collect();
    assert_eq!(kept, ids[1..]);
    runtime.shutdown().await;
}

/// Streams its answer in three pieces, a little apart.
#[derive(Clone, Default)]
struct TypingModel;

#[async_trait::async_trait]
impl motet_providers::LlmClient for TypingModel {
    async fn stream(
        &self,
        _req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        use motet_providers::LlmEvent;
        let mut events: Vec<LlmEvent> = ["Hel", "lo ", "world"]
            .into_iter()
            .map(|piece| LlmEvent::TextDelta {
                delta: piece.into(),
                meta: None,
            })
            .collect();
        events.push(LlmEvent::Done {
            stop_reason: motet_directives::StopReason::EndTurn,
        });
        Ok(Box::pin(futures::stream::unfold(
            events.into_iter(),
            |mut rest| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                rest.next().map(|e| (Ok(e), rest))
            },
        )))
    }
}

#[tokio::test]
async fn a_request_streams_its_deltas_then_its_reply() {
    let (runtime, agent) = spawned(TypingModel, calc_agent("typist")).await;
    let mut request = agent
        .submit(
            "type",
            AskOptions {
                stream: true,
                ..AskOptions::default()
            },
        )
        .await
        .unwrap();
    let mut pieces = Vec::new();
    while let Some(delta) = request.next_delta().await {
        assert_eq!(delta.kind, DeltaKind::Text);
        pieces.push(delta.delta);
    }
    assert_eq!(pieces, ["Hel", "lo ", "world"]);
    let reply = request.wait().await.unwrap();
    assert_eq!(
        reply.signal.data_as::<ReactCompleted>().unwrap().answer,
        "Hello world"
    );
    runtime.shutdown().await;
}

/// Its first call is cut after "Hel"; its second writes the whole answer.
#[derive(Clone, Default)]
struct CutOnceModel {
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for CutOnceModel {
    async fn stream(
        &self,
        _req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        use motet_providers::LlmEvent;
        let text = |piece: &str| {
            Ok(LlmEvent::TextDelta {
                delta: piece.into(),
                meta: None,
            })
        };
        let events = if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            vec![
                text("Hel"),
                Err(ProviderError::StreamTruncated {
                    reason: "the connection closed mid-stream".into(),
                }),
            ]
        } else {
            vec![
                text("Hello world"),
                Ok(LlmEvent::Done {
                    stop_reason: motet_directives::StopReason::EndTurn,
                }),
            ]
        };
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[tokio::test]
async fn a_call_cut_after_it_streamed_is_discarded_before_its_retry_streams() {
    let (runtime, agent) = spawned(CutOnceModel::default(), calc_agent("typist")).await;
    let options = AskOptions {
        stream: true,
        ..AskOptions::default()
    };
    let mut request = agent.submit("type", options).await.unwrap();
    let mut seen = Vec::new();
    while let Some(delta) = request.next_delta().await {
        seen.push((delta.call_id, delta.kind, delta.delta));
    }
    let kinds: Vec<(DeltaKind, &str)> = seen.iter().map(|(_, k, d)| (*k, d.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (DeltaKind::Text, "Hel"),
            (DeltaKind::Discard, ""),
            (DeltaKind::Text, "Hello world"),
        ]
    );
    // The discard names the cut call; the retry is another call.
    assert_eq!(seen[0].0, seen[1].0);
    assert_ne!(seen[1].0, seen[2].0);
    let reply = request.wait().await.unwrap();
    assert_eq!(
        reply.signal.data_as::<ReactCompleted>().unwrap().answer,
        "Hello world"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_started_request_can_be_cancelled() {
    let model = HangingModel::default();
    let (runtime, agent) = spawned(model.clone(), calc_agent("slow")).await;
    let request = agent.submit("think", AskOptions::default()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), model.started.notified())
        .await
        .unwrap();
    request.cancel("changed my mind").await.unwrap();
    let data = failure_data(request.wait().await);
    assert!(data.contains("changed my mind"), "{data}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_interrupt_policy_cancels_the_running_request_for_the_new_one() {
    let (runtime, agent) = echo_agent(Duration::from_millis(200), |spec| {
        spec.with_request_policy(RequestPolicy::Interrupt)
    })
    .await;
    let (first, second) = tokio::join!(agent.ask("old question"), agent.ask("new question"));
    let data = failure_data(first);
    assert!(data.contains("interrupted"), "{data}");
    let answer = second
        .unwrap()
        .signal
        .data_as::<ReactCompleted>()
        .unwrap()
        .answer;
    assert!(answer.ends_with("new question"), "{answer}");
    runtime.shutdown().await;
}
