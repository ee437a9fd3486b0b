//! Forking a thread: a prefix stored as a new thread of the agent, its origin recorded; a
//! question on the fork sees that prefix only, the source stays as it was, and a fork of a
//! thread that is not there (or past its end) is a typed error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;

use motet_agents::{ForkOrigin, ThreadError};
use motet_directives::{AssistantBlock, Message};
use motet_runtime::agent::{AgentSpec, RuntimeError, fork_stored};
use motet_runtime::store::{SqliteStore, StoreError, ThreadKey, ThreadStore as _};

use common::*;

/// The user messages of a request, in order.
fn questions(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => content.as_text(),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_fork_goes_on_from_its_prefix_and_leaves_the_source_alone() {
    let model = scripted([
        vec![AssistantBlock::text("Rome.")],
        vec![AssistantBlock::text("Paris.")],
        vec![AssistantBlock::text("Madrid.")],
    ]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("geo")).await;
    ask_each(&agent, "trip", &["capital of Italy?", "capital of France?"]).await;
    let source = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    assert_eq!(source.entry_count(), 4);

    // Entries 0..=1: the first question and its answer.
    let fork = agent.fork_thread(Some("trip"), Some(1)).await.unwrap();
    assert_ne!(fork, "trip");
    let forked = agent.get_thread(Some(&fork)).await.unwrap().unwrap();
    assert_eq!(forked.id(), format!("geo/{fork}"));
    assert_eq!(forked.entry_count(), 2);
    assert_eq!(
        forked.parent(),
        Some(&ForkOrigin {
            thread_id: "geo/trip".to_owned(),
            at_seq: 1,
        })
    );
    assert_eq!(forked.to_list(), &source.to_list()[..2]);

    // A question on the fork: the model sees the prefix and the question, not the rest.
    let answer = agent
        .ask_with("capital of Spain?", on(&fork))
        .await
        .unwrap();
    assert_eq!(answer.text, "Madrid.");
    let seen = model.requests();
    assert_eq!(
        questions(&seen[2].messages),
        ["capital of Italy?", "capital of Spain?"]
    );
    let shown = format!("{:?}", seen[2].messages);
    assert!(shown.contains("Rome."), "{shown}");
    assert!(
        !shown.contains("France") && !shown.contains("Paris"),
        "{shown}"
    );

    // The source is as it was.
    let after = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    assert_eq!(after.to_list(), source.to_list());
    assert_eq!(after.parent(), None);

    // Typed errors: a thread that is not there, a seq past the end; neither stores anything.
    assert_eq!(
        agent.fork_thread(Some("nowhere"), None).await.unwrap_err(),
        RuntimeError::UnknownThread {
            thread: "geo/nowhere".to_owned()
        }
    );
    assert_eq!(
        agent.fork_thread(Some("trip"), Some(4)).await.unwrap_err(),
        RuntimeError::Thread {
            thread: "geo/trip".to_owned(),
            source: ThreadError::NoSuchSeq { seq: 4, len: 4 },
        }
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_stored_thread_forks_whole_with_its_lineage_and_meta() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fork.db");
    let tools = calculator();
    {
        let runtime = echo_runtime(Arc::new(SqliteStore::open(&path).await.unwrap()));
        let agent = runtime
            .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
            .await
            .unwrap();
        assert_eq!(answer(&agent, "one", "chat").await, "one");
        assert_eq!(answer(&agent, "two", "chat").await, "one|two");
        runtime.shutdown().await;
    }
    // Not running: the fork reads the store; `None` forks the whole thread.
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    let runtime = echo_runtime(store.clone());
    let agent = runtime
        .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let fork = agent.fork_thread(Some("chat"), None).await.unwrap();
    let summary = store
        .summary(&format!("echo/{fork}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.entry_count, 4);
    assert_eq!(
        summary.parent,
        Some(ForkOrigin {
            thread_id: "echo/chat".to_owned(),
            at_seq: 3,
        })
    );
    let meta = store
        .get_meta(&format!("echo/{fork}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(meta.key, Some(ThreadKey::new("echo", fork.as_str())));
    assert_eq!(
        store.load_state(&format!("echo/{fork}")).await.unwrap(),
        None
    );

    // The fork and the source go their own ways.
    assert_eq!(answer(&agent, "three", &fork).await, "one|two|three");
    assert_eq!(answer(&agent, "four", "chat").await, "one|two|four");

    // The store-level helper the CLI uses: a fork of the fork, at its first entry.
    let again = ThreadKey::new("echo", "again");
    fork_stored(store.as_ref(), &format!("echo/{fork}"), &again, Some(0))
        .await
        .unwrap();
    let forked_again = store.load("echo/again").await.unwrap().unwrap();
    assert_eq!(forked_again.entry_count(), 1);
    assert_eq!(
        forked_again.parent().unwrap().thread_id,
        format!("echo/{fork}")
    );
    let taken = fork_stored(store.as_ref(), "echo/chat", &again, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&taken, RuntimeError::Store(failure)
            if matches!(failure.error(), StoreError::AlreadyExists { .. })),
        "an id that is taken is the store's refusal: {taken}"
    );
    runtime.shutdown().await;
}
