//! A thread store for tests of what the runtime does when its store misbehaves: the in-memory
//! store, whose writes fail on demand, whose reads can be down, and whose writes can be slow;
//! it also counts the threads loaded (one per thread actor started).

#![allow(dead_code, reason = "each test file uses some of these")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use motet_agents::{Entry, Thread};
use motet_runtime::store::{
    MemoryStore, StoreError, ThreadHeader, ThreadMeta, ThreadStore, ThreadSummary,
};

/// The in-memory store, whose writes fail on demand (after `skip` more writes succeed, the
/// next `fail` ones fail, as the store being down or, with `conflicting`, as a conflict), whose reads fail while `reads_down` is set, and whose writes each
/// take `write_delay_ms` (on tokio's clock, so a paused test controls it).
#[derive(Default)]
pub(crate) struct FlakyStore {
    pub(crate) inner: MemoryStore,
    skip: AtomicUsize,
    fail: AtomicUsize,
    pub(crate) reads_down: AtomicBool,
    pub(crate) write_delay_ms: AtomicU64,
    /// The failed writes say the thread changed concurrently (another writer), not that the
    /// store is down.
    pub(crate) conflicting: AtomicBool,
    /// How many times a thread was loaded.
    pub(crate) loads: AtomicU64,
}

impl FlakyStore {
    /// Lets `skip` writes through, then fails `fail` of them.
    pub(crate) fn fail_writes(&self, skip: usize, fail: usize) {
        self.skip.store(skip, Ordering::SeqCst);
        self.fail.store(fail, Ordering::SeqCst);
    }

    async fn write(&self, thread_id: &str) -> Result<(), StoreError> {
        let delay = self.write_delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if self
            .skip
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Ok(());
        }
        match self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        {
            Ok(_) if self.conflicting.load(Ordering::SeqCst) => Err(StoreError::Conflict {
                thread_id: thread_id.to_owned(),
                expected: 0,
                current: 0,
            }),
            Ok(_) => Err(down(thread_id)),
            Err(_) => Ok(()),
        }
    }

    fn read(&self, thread_id: &str) -> Result<(), StoreError> {
        if self.reads_down.load(Ordering::SeqCst) {
            return Err(down(thread_id));
        }
        Ok(())
    }
}

fn down(thread_id: &str) -> StoreError {
    StoreError::ServerThread {
        thread_id: thread_id.to_owned(),
        source: "connection refused (the test's outage)".into(),
    }
}

#[async_trait::async_trait]
impl ThreadStore for FlakyStore {
    async fn create(&self, header: &ThreadHeader) -> Result<(), StoreError> {
        self.write(&header.id).await?;
        self.inner.create(header).await
    }
    async fn create_with(
        &self,
        header: &ThreadHeader,
        meta: Option<&ThreadMeta>,
        entries: &[Arc<Entry>],
    ) -> Result<u64, StoreError> {
        self.write(&header.id).await?;
        self.inner.create_with(header, meta, entries).await
    }
    async fn load(&self, thread_id: &str) -> Result<Option<Thread>, StoreError> {
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.read(thread_id)?;
        self.inner.load(thread_id).await
    }
    async fn load_after(&self, thread_id: &str, rev: u64) -> Result<Vec<Arc<Entry>>, StoreError> {
        self.read(thread_id)?;
        self.inner.load_after(thread_id, rev).await
    }
    async fn append(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
    ) -> Result<u64, StoreError> {
        self.write(thread_id).await?;
        self.inner.append(thread_id, entries, expected_rev).await
    }
    async fn append_with_state(
        &self,
        thread_id: &str,
        entries: &[Arc<Entry>],
        expected_rev: u64,
        state: &str,
    ) -> Result<u64, StoreError> {
        self.write(thread_id).await?;
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
        self.write(thread_id).await?;
        self.inner
            .append_fenced(thread_id, entries, expected_rev, state, epoch)
            .await
    }
    async fn load_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        self.read(thread_id)?;
        self.inner.load_state(thread_id).await
    }
    async fn epoch(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.read(thread_id)?;
        self.inner.epoch(thread_id).await
    }
    async fn claim(&self, thread_id: &str) -> Result<u64, StoreError> {
        self.write(thread_id).await?;
        self.inner.claim(thread_id).await
    }
    async fn summary(&self, thread_id: &str) -> Result<Option<ThreadSummary>, StoreError> {
        self.read(thread_id)?;
        self.inner.summary(thread_id).await
    }
    async fn list(&self) -> Result<Vec<ThreadSummary>, StoreError> {
        self.inner.list().await
    }
    async fn delete(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.inner.delete(thread_id).await
    }
    async fn put_meta(&self, thread_id: &str, meta: &ThreadMeta) -> Result<(), StoreError> {
        self.write(thread_id).await?;
        self.inner.put_meta(thread_id, meta).await
    }
    async fn get_meta(&self, thread_id: &str) -> Result<Option<ThreadMeta>, StoreError> {
        self.read(thread_id)?;
        self.inner.get_meta(thread_id).await
    }
}
