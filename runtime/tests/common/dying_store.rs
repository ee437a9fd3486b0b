//! A store whose process dies right after a commit: it passes everything to the store it wraps
//! until a chosen step's commit has returned, then refuses every call, as if the process had
//! been killed at that moment — what was committed is in the wrapped store, nothing after it
//! reaches it. A new runtime on the wrapped store is the process started again.

#![allow(dead_code, reason = "each test file uses some of these")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use motet_agents::{Entry, Thread};
use motet_runtime::store::{
    StepCommit, StoreError, StoredTimer, ThreadHeader, ThreadKey, ThreadMeta, ThreadStore,
    ThreadSummary,
};

/// The store that dies after its `commits`-th step commit (`commit_step`) returned.
pub(crate) struct DyingStore {
    inner: Arc<dyn ThreadStore>,
    commits_left: AtomicUsize,
    dead: AtomicBool,
}

impl DyingStore {
    /// `inner`, dying after `commits` step commits.
    pub(crate) fn new(inner: Arc<dyn ThreadStore>, commits: usize) -> Self {
        Self {
            inner,
            commits_left: AtomicUsize::new(commits),
            dead: AtomicBool::new(false),
        }
    }

    /// Whether it died.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    fn alive(&self) -> Result<(), StoreError> {
        if self.is_dead() {
            return Err(StoreError::Server {
                source: "the process was killed (the test's crash)".into(),
            });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ThreadStore for DyingStore {
    async fn commit_step(&self, step: &StepCommit<'_>) -> Result<u64, StoreError> {
        self.alive()?;
        let rev = self.inner.commit_step(step).await?;
        if self.commits_left.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.dead.store(true, Ordering::SeqCst);
        }
        Ok(rev)
    }
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        self.alive()?;
        self.inner.create(header).await
    }
    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        self.alive()?;
        self.inner.create_with(header, meta, entries).await
    }
    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        self.alive()?;
        self.inner.load(thread_id).await
    }
    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        self.alive()?;
        self.inner.load_after(thread_id, rev).await
    }
    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        self.alive()?;
        self.inner.append(thread_id, entries, expected_rev).await
    }
    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        self.alive()?;
        self.inner
            .append_with_state(thread_id, entries, expected_rev, state)
            .await
    }
    async fn append_fenced(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: Option<&str>,
        epoch: u64,
    ) -> Result<u64, StoreError> {
        self.alive()?;
        self.inner
            .append_fenced(thread_id, entries, expected_rev, state, epoch)
            .await
    }
    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.alive()?;
        self.inner.load_state(thread_id).await
    }
    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.alive()?;
        self.inner.epoch(thread_id).await
    }
    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.alive()?;
        self.inner.claim(thread_id).await
    }
    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        self.alive()?;
        self.inner.summary(thread_id).await
    }
    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.alive()?;
        self.inner.list().await
    }
    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.alive()?;
        self.inner.delete(thread_id).await
    }
    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        self.alive()?;
        self.inner.put_meta(thread_id, meta).await
    }
    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        self.alive()?;
        self.inner.get_meta(thread_id).await
    }
    fn keeps_timers(&self) -> bool {
        self.inner.keeps_timers()
    }
    async fn put_timer(&self, timer: &StoredTimer) -> Result<(), StoreError> {
        self.alive()?;
        self.inner.put_timer(timer).await
    }
    async fn remove_timer(&self, key: &ThreadKey, id: &str) -> Result<bool, StoreError> {
        self.alive()?;
        self.inner.remove_timer(key, id).await
    }
    async fn timer_fired(
        &self,
        key: &ThreadKey,
        id: &str,
        fired_ms: u64,
        signal_id: &str,
        next_ms: Option<u64>,
    ) -> Result<bool, StoreError> {
        self.alive()?;
        self.inner
            .timer_fired(key, id, fired_ms, signal_id, next_ms)
            .await
    }
    async fn due_timers(
        &self,
        due: std::ops::Range<u64>,
        agents: &motet_runtime::store::TimerOwners,
        limit: usize,
    ) -> Result<Vec<StoredTimer>, StoreError> {
        self.alive()?;
        self.inner.due_timers(due, agents, limit).await
    }
    async fn timers_of(&self, key: &ThreadKey) -> Result<Vec<StoredTimer>, StoreError> {
        self.alive()?;
        self.inner.timers_of(key).await
    }
}
