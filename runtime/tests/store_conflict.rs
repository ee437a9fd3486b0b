//! Two processes on one thread: when another writer moved the stored thread on, a new request
//! is decided again on the stored thread instead of failing with a conflict — and keeps
//! failing on every later question, as a chat session did.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;

use motet_agents::EntryBody;
use motet_directives::{AssistantMessage, LlmResponse, Message, Usage};
use motet_runtime::agent::{AskOptions, ReActAgent, Runtime};
use motet_runtime::store::{MemoryStore, ThreadStore};
use motet_runtime::testing::ScriptedModel;

fn says(text: &str) -> Result<LlmResponse, motet_providers::ProviderError> {
    Ok(LlmResponse::new(
        AssistantMessage::text(text),
        Usage::default(),
    ))
}

async fn process<M: motet_providers::LlmClient + 'static>(
    store: Arc<MemoryStore>,
    model: Arc<M>,
) -> (Runtime, motet_runtime::agent::AgentHandle) {
    let runtime = Runtime::builder().llm(model).store(store).build().unwrap();
    let agent = runtime
        .spawn(ReActAgent::new("a", "openai:gpt-5.2"))
        .await
        .unwrap();
    (runtime, agent)
}

#[tokio::test]
async fn a_question_after_another_writer_is_decided_on_the_stored_thread() {
    let store = Arc::new(MemoryStore::new());
    let model_a = Arc::new(ScriptedModel::new([says("a1"), says("a3")]));
    let model_b = Arc::new(ScriptedModel::new([says("a2")]));
    let (runtime_a, a) = process(store.clone(), model_a.clone()).await;
    let (runtime_b, b) = process(store.clone(), model_b).await;

    let answer = |reply: motet_runtime::agent::Answer| reply.text;
    assert_eq!(answer(a.ask("q1").await.unwrap()), "a1");
    assert_eq!(answer(b.ask("q2").await.unwrap()), "a2");
    // A still holds the thread as it was after q1: its commit is stale.
    assert_eq!(answer(a.ask("q3").await.unwrap()), "a3");

    let stored = store.load("a/default").await.unwrap().unwrap();
    let questions: Vec<&str> = stored
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::User { content } => content.as_text(),
            _ => None,
        })
        .collect();
    assert_eq!(questions, ["q1", "q2", "q3"]);
    // The model saw B's turn too: A decided on the stored thread.
    let last = model_a.requests().pop().unwrap();
    let shown: Vec<String> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, ["q1", "q2", "q3"]);
    runtime_a.shutdown().await;
    runtime_b.shutdown().await;
}

/// Answers each call only once its gate is opened.
struct GatedModel {
    gate: tokio::sync::Semaphore,
    started: tokio::sync::Notify,
    inner: ScriptedModel,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for GatedModel {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, motet_providers::ProviderError> {
        self.started.notify_one();
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        self.inner.stream(req).await
    }
}

fn questions(thread: &motet_agents::Thread) -> Vec<String> {
    thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::User { content } => Some(content.to_string()),
            EntryBody::Assistant { message, .. } => Some(format!("= {message}")),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_question_meeting_another_writers_request_in_flight_is_refused_uncommitted() {
    let store = Arc::new(MemoryStore::new());
    let model_a = Arc::new(ScriptedModel::new([says("a1"), says("a5")]));
    let model_b = Arc::new(GatedModel {
        gate: tokio::sync::Semaphore::new(1),
        started: tokio::sync::Notify::new(),
        inner: ScriptedModel::new([says("a2"), says("a3")]),
    });
    let (runtime_a, a) = process(store.clone(), model_a.clone()).await;
    let (runtime_b, b) = process(store.clone(), model_b.clone()).await;
    let answer = |reply: motet_runtime::agent::Answer| reply.text;
    assert_eq!(answer(a.ask("q1").await.unwrap()), "a1");
    assert_eq!(answer(b.ask("q2").await.unwrap()), "a2");
    // B's next question is committed and waits for its model; A still holds the thread as
    // it was after q1.
    let in_flight = b.submit("q3", AskOptions::default()).await.unwrap();
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        model_b.started.notified(),
    )
    .await
    .unwrap();
    let refused = a.ask("q4").await;
    let reply = match refused {
        Err(motet_runtime::agent::AskError::Failed { reply }) => reply,
        other => panic!("{other:?}"),
    };
    let failed = reply.data_as::<motet_agents::ReactFailed>().unwrap();
    assert!(
        matches!(
            &failed.reason,
            motet_agents::FailureReason::Busy { active_request_id }
                if active_request_id == in_flight.id()
        ),
        "{failed:?}"
    );
    // B's request ends as if A had never asked: its model saw no q4, its answer commits.
    model_b.gate.add_permits(1);
    assert_eq!(answer(in_flight.wait().await.unwrap()), "a3");
    let seen = model_b.inner.requests().pop().unwrap();
    assert!(
        !seen
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { content } if content == "q4")),
        "{seen:?}"
    );
    let stored = store.load("a/default").await.unwrap().unwrap();
    assert_eq!(
        questions(&stored),
        ["q1", "= a1", "q2", "= a2", "q3", "= a3"]
    );
    // A's next question, after B's request ended, goes through on the stored thread.
    assert_eq!(answer(a.ask("q5").await.unwrap()), "a5");
    let stored = store.load("a/default").await.unwrap().unwrap();
    assert_eq!(
        questions(&stored),
        ["q1", "= a1", "q2", "= a2", "q3", "= a3", "q5", "= a5"]
    );
    runtime_a.shutdown().await;
    runtime_b.shutdown().await;
}

#[tokio::test]
async fn a_request_whose_answer_cannot_be_stored_is_recorded_failed() {
    let store = Arc::new(MemoryStore::new());
    let model = Arc::new(GatedModel {
        gate: tokio::sync::Semaphore::new(0),
        started: tokio::sync::Notify::new(),
        inner: ScriptedModel::new([says("a1")]),
    });
    let (runtime, agent) = process(store.clone(), model.clone()).await;
    let request = agent.submit("q1", AskOptions::default()).await.unwrap();
    let id = request.id().to_owned();
    tokio::time::timeout(std::time::Duration::from_secs(5), model.started.notified())
        .await
        .unwrap();
    // Another process writes the thread while the answer is being written.
    let stored = store.load("a/default").await.unwrap().unwrap();
    let mut other = stored.clone();
    other.append(
        &motet_runtime::agent::SystemEnv,
        motet_agents::NewEntry::note("another writer"),
    );
    store
        .commit(&other, stored.entry_count() as u64)
        .await
        .unwrap();
    model.gate.add_permits(1);
    match request.wait().await {
        Err(motet_runtime::agent::AskError::Store(_)) => {}
        other => panic!("{other:?}"),
    }
    let record = runtime.request(&id).unwrap();
    assert_eq!(record.status, motet_runtime::agent::RequestStatus::Failed);
    assert!(record.finished_at.is_some());
    runtime.shutdown().await;
}

/// A writer whose thread another writer took over (claimed, as a thread actor does when it
/// starts) cannot commit the rest of its request, even at the right rev: the request fails with
/// the fence named and nothing of it after the claim is stored; the new owner finishes it.
#[tokio::test]
async fn a_writer_whose_thread_was_claimed_cannot_commit_the_rest_of_its_request() {
    let store = Arc::new(MemoryStore::new());
    let model_a = Arc::new(GatedModel {
        gate: tokio::sync::Semaphore::new(1),
        started: tokio::sync::Notify::new(),
        inner: ScriptedModel::new([says("a1"), says("a2, too late"), says("a3")]),
    });
    let (runtime_a, a) = process(store.clone(), model_a.clone()).await;
    assert_eq!(a.ask("q1").await.unwrap().text, "a1");
    assert_eq!(store.epoch("a/default").await.unwrap(), 0);

    let in_flight = a.submit("q2", AskOptions::default()).await.unwrap();
    // The q2 call is at the model's gate once its request committed and the call started (the
    // q1 call left a notification behind, so wait for this one's).
    tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            model_a.started.notified().await;
            let stored = store.load("a/default").await.unwrap().unwrap();
            if questions(&stored).len() == 3 {
                break;
            }
        }
    })
    .await
    .unwrap();
    // Another process starts the agent: its thread actor claims the thread.
    let model_b = Arc::new(ScriptedModel::new([says("b2")]));
    let (runtime_b, b) = process(store.clone(), model_b.clone()).await;
    assert_eq!(store.epoch("a/default").await.unwrap(), 1);

    model_a.gate.add_permits(1);
    let failed = in_flight.wait().await.unwrap_err();
    assert!(
        matches!(&failed, motet_runtime::agent::AskError::Store(failure) if failure.to_string().contains("claimed by another writer")),
        "{failed:?}"
    );
    let stored = store.load("a/default").await.unwrap().unwrap();
    assert_eq!(questions(&stored), ["q1", "= a1", "q2"]);

    // The new owner finds the request unfinished and finishes it.
    let resumed = runtime_b
        .recover(std::time::Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(resumed.len(), 1);
    for ticket in resumed {
        assert_eq!(ticket.wait().await.unwrap().text, "b2");
    }
    let stored = store.load("a/default").await.unwrap().unwrap();
    assert_eq!(questions(&stored), ["q1", "= a1", "q2", "= b2"]);
    // The old owner took the stored thread as it was left: its next question is decided on
    // it, without claiming it back.
    model_a.gate.add_permits(1);
    assert_eq!(a.ask("q3").await.unwrap().text, "a3");
    let stored = store.load("a/default").await.unwrap().unwrap();
    assert_eq!(
        questions(&stored),
        ["q1", "= a1", "q2", "= b2", "q3", "= a3"]
    );
    assert_eq!(store.epoch("a/default").await.unwrap(), 1);
    drop(b);
    runtime_a.shutdown().await;
    runtime_b.shutdown().await;
}
