//! The ThreadStore contract (tests/common/store.rs) run against the in-memory and the SQLite
//! store.

// The helpers are test code too: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "common/store.rs"]
mod suite;

use std::sync::Arc;

use motet_agents::{EntryBody, FixedEnv, NewEntry};
use motet_runtime::store::{MemoryStore, SqliteStore, ThreadStore};
use suite::{
    conversation, list_summaries_carry_totals_and_window_marks, save,
    thread_ids_come_a_page_at_a_time, two_writers_one_wins, whole_suite,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_keeps_the_contract() {
    whole_suite(Arc::new(MemoryStore::new())).await;
    list_summaries_carry_totals_and_window_marks(&MemoryStore::new()).await;
    thread_ids_come_a_page_at_a_time(&MemoryStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("threads.db"))
        .await
        .unwrap();
    whole_suite(Arc::new(store)).await;
    let other = SqliteStore::open(dir.path().join("list.db")).await.unwrap();
    list_summaries_carry_totals_and_window_marks(&other).await;
    thread_ids_come_a_page_at_a_time(&other).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sqlite_stores_on_one_file_never_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let b: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&path).await.unwrap());
    two_writers_one_wins(a, b).await;
}

#[tokio::test]
async fn committed_entries_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reopen.db");
    let env = FixedEnv::new(0);
    let mut thread = conversation(&env, "thread_r");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        save(&store, &thread).await;
        // The user message is committed before the LLM call that needs it.
        thread.append(&env, NewEntry::user("next question"));
        store.commit(&thread, 4).await.unwrap();
    }
    let store = SqliteStore::open(&path).await.unwrap();
    let back = store.load("thread_r").await.unwrap().unwrap();
    assert_eq!(back.to_list(), thread.to_list());
    assert!(matches!(
        back.last().map(|e| &e.body),
        Some(EntryBody::User { content }) if content == "next question"
    ));
}
