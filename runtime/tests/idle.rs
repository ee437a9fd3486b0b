//! A thread whose actor stops for idleness loses nothing sent to it on the way out: asks that
//! meet the stop are answered by the actor that comes after, in the order they were asked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use motet_agents::{Entry, Thread};
use motet_runtime::agent::{AskOptions, Runtime};
use motet_runtime::store::{
    MemoryStore, StoreError, ThreadHeader, ThreadMeta, ThreadStore, ThreadSummary,
};

use common::*;

/// The in-memory store, counting how often a thread was loaded: once per actor started.
#[derive(Default)]
struct CountingStore {
    inner: MemoryStore,
    loads: AtomicU64,
}

#[async_trait::async_trait]
impl ThreadStore for CountingStore {
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        self.inner.create(header).await
    }
    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.inner.load(thread_id).await
    }
    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        self.inner.load_after(thread_id, rev).await
    }
    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        self.inner.append(thread_id, entries, expected_rev).await
    }
    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        self.inner
            .append_with_state(thread_id, entries, expected_rev, state)
            .await
    }
    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.inner.load_state(thread_id).await
    }
    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        self.inner.summary(thread_id).await
    }
    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.inner.list().await
    }
    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.inner.delete(thread_id).await
    }
    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        self.inner.put_meta(thread_id, meta).await
    }
    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        self.inner.get_meta(thread_id).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_that_meet_an_idle_stop_are_answered_in_order() {
    let store = Arc::new(CountingStore::default());
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
