//! A thread whose actor stops for idleness loses nothing sent to it on the way out: asks that
//! meet the stop are answered by the actor that comes after, in the order they were asked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "common/flaky_store.rs"]
mod flaky_store;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use motet_runtime::agent::{AskOptions, Runtime};

use common::*;
use flaky_store::FlakyStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_that_meet_an_idle_stop_are_answered_in_order() {
    // A store that never fails, counting how often a thread was loaded: once per actor started.
    let store = Arc::new(FlakyStore::default());
    let runtime = Runtime::builder()
        .llm(EchoModel::default())
        .store(store.clone())
        .build()
        .unwrap();
    // The sweeper asks every millisecond; a thread quiet for 2 ms stops.
    let spec =
        calc_agent("echo").agent(move |s| s.with_idle_timeout(Some(Duration::from_millis(2))));
    let agent = runtime.spawn(spec).await.unwrap();
    let threads = (0..8).map(|t| {
        let agent = agent.clone();
        async move {
            let mut asked = Vec::new();
            for n in 0..40 {
                let question = format!("t{t}q{n}");
                let options = AskOptions {
                    thread_id: Some(format!("t{t}")),
                    ..AskOptions::default()
                };
                let answer = agent
                    .ask_with(question.as_str(), options)
                    .await
                    .unwrap_or_else(|e| panic!("ask {question} was lost: {e}"));
                asked.push(question);
                // The model echoes every question the thread holds: none lost, none twice, in
                // the order asked.
                assert_eq!(answer.text, asked.join("|"));
                // Pauses around the idle timeout, so asks keep meeting actors as they stop.
                tokio::time::sleep(Duration::from_micros(fastrand::u64(0..4_000))).await;
            }
        }
    });
    futures::future::join_all(threads).await;
    let started = store.loads.load(Ordering::Relaxed);
    assert!(
        started > 8 * 5,
        "the threads should have stopped and started again many times, not {started}"
    );
    runtime.shutdown().await;
}
