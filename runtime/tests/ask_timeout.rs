//! An ask whose wait times out leaves the thread its outcome says, however its answer and its
//! deadline race: answered, the thread holds the answer; timed out, the request was cancelled
//! and the thread holds its question and the cancel's error entry — never an answer nobody was
//! given, nor a note about a cancel that came too late.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "common/flaky_store.rs"]
mod flaky_store;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use motet_agents::EntryBody;
use motet_runtime::agent::{AskError, AskOptions, Runtime};
use motet_runtime::store::ThreadStore;

use common::*;
use flaky_store::FlakyStore;

const TIMEOUT: Duration = Duration::from_millis(20);

/// One ask with the model answering after `model_ms` and each commit taking `commit_ms`:
/// what the asker got, and the kinds of the thread's entries (with the error entry's text).
async fn one_ask(model_ms: u64, commit_ms: u64) -> (Result<String, AskError>, Vec<String>) {
    let store = Arc::new(FlakyStore::default());
    store.write_delay_ms.store(commit_ms, Ordering::SeqCst);
    let runtime = Runtime::builder()
        .llm(EchoModel {
            delay: Duration::from_millis(model_ms),
        })
        .store(store.clone())
        .build()
        .unwrap();
    let agent = runtime.spawn(calc_agent("echo")).await.unwrap();
    let options = AskOptions {
        timeout: TIMEOUT,
        ..AskOptions::default()
    };
    let outcome = agent.ask_with("hello", options).await.map(|a| a.text);
    // Let whatever the ask left behind (a cancel on its way, a late result) settle: the
    // thread answers a read only after the messages before it.
    agent.get_thread(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    agent.get_thread(None).await.unwrap();
    let thread = store
        .inner
        .load("echo/default")
        .await
        .unwrap()
        .expect("the question was committed");
    let kinds = thread
        .to_list()
        .iter()
        .map(|e| match &e.body {
            EntryBody::Error { message } => format!("error: {message}"),
            body => format!("{:?}", body.kind()).to_lowercase(),
        })
        .collect();
    runtime.shutdown().await;
    (outcome, kinds)
}

/// Checks that the thread holds what the asker was told; counts the outcome.
fn check(case: &str, outcome: Result<String, AskError>, kinds: &[String], seen: &mut [u32; 2]) {
    match outcome {
        Ok(text) => {
            seen[0] += 1;
            assert_eq!(text, "hello", "{case}");
            assert_eq!(kinds, ["user", "assistant"], "{case}");
        }
        Err(AskError::Timeout(after)) => {
            seen[1] += 1;
            assert_eq!(after, TIMEOUT, "{case}");
            assert_eq!(kinds.len(), 2, "{case}");
            assert_eq!(kinds[0], "user", "{case}");
            assert!(
                kinds[1].starts_with("error: request cancelled: no answer within 0.02 s"),
                "{case}"
            );
        }
        Err(other) => panic!("{case}: {other}"),
    }
}

/// Sweeps the model's and the store's pace across the deadline, so the answer lands before,
/// at and after it, and the deadline falls before, inside and after the answer's commit.
#[tokio::test(start_paused = true)]
async fn a_timed_out_ask_always_leaves_the_thread_its_outcome_says() {
    let mut seen = [0, 0];
    for commit_ms in [0, 3, 8, 15] {
        for model_ms in 0..=30 {
            let (outcome, kinds) = one_ask(model_ms, commit_ms).await;
            let case = format!("model {model_ms} ms, commit {commit_ms} ms: {outcome:?} {kinds:?}");
            check(&case, outcome, &kinds, &mut seen);
        }
    }
    // Both outcomes were met, so the sweep crossed the deadline.
    assert!(seen[0] > 0 && seen[1] > 0, "answered, timed out: {seen:?}");
}

/// The same on the real clock and two worker threads, where the scheduler picks the winner:
/// many tries with the answer due around the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_real_clock_a_timed_out_ask_leaves_the_thread_its_outcome_says() {
    let mut seen = [0, 0];
    for attempt in 0..60 {
        let (model_ms, commit_ms) = (14 + attempt % 9, attempt % 4);
        let (outcome, kinds) = one_ask(model_ms, commit_ms).await;
        let case = format!("model {model_ms} ms, commit {commit_ms} ms: {outcome:?} {kinds:?}");
        check(&case, outcome, &kinds, &mut seen);
    }
}
