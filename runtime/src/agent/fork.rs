//! Forking a thread: a prefix of one thread stored as a new thread of the same agent, its
//! origin recorded, so a question asked there goes on from that point (LangGraph's "time
//! travel"). The source is never changed.
//!
//! The fork is stored without an agent state: its actor, when it starts, builds one from the
//! stored thread (`Strategy::restore_thread`), as for a thread another program wrote.

use motet_agents::{ForkOrigin, Thread};

use super::env::SystemEnv;
use super::errors::RuntimeError;
use crate::store::{StoreError, ThreadHeader, ThreadKey, ThreadMeta, ThreadStore};

/// Stores entries `0..=at` of the stored thread `from_id` (all of them for `None`) as the new
/// thread `to`: its entries are the source's, byte for byte, its metadata the source's, its
/// parent `from_id` at `at`, and its meta the source's (policy, strategy configuration) naming
/// `to` as its key. `from_id` is a store id (`<agent>/<thread>`).
///
/// # Errors
/// [`RuntimeError::UnknownThread`] when no thread `from_id` is stored;
/// [`RuntimeError::Thread`] ([`ThreadError::NoSuchSeq`](motet_agents::ThreadError::NoSuchSeq))
/// when `at` is past its end; [`RuntimeError::Store`] when the store fails, `to` included
/// when it is taken ([`StoreError::AlreadyExists`]).
pub async fn fork_stored(
    store: &dyn ThreadStore,
    from_id: &str,
    to: &ThreadKey,
    at: Option<u64>,
) -> Result<(), RuntimeError> {
    let source = store
        .load(from_id)
        .await
        .map_err(store_failed)?
        .ok_or_else(|| RuntimeError::UnknownThread {
            thread: from_id.to_owned(),
        })?;
    fork_into(store, &source, from_id, to, at).await
}

/// As [`fork_stored`], from `source`, the thread `from_id` as its caller read it (from its
/// running actor, whose thread is its last commit between two steps).
pub(crate) async fn fork_into(
    store: &dyn ThreadStore,
    source: &Thread,
    from_id: &str,
    to: &ThreadKey,
    at: Option<u64>,
) -> Result<(), RuntimeError> {
    // The whole thread by default; an empty one has no seq to fork at (`NoSuchSeq`).
    let at = at.unwrap_or_else(|| (source.entry_count() as u64).saturating_sub(1));
    let fork = source
        .fork(&SystemEnv, at)
        .map_err(|source| RuntimeError::Thread {
            thread: from_id.to_owned(),
            source,
        })?;
    // Named by the store id, whatever id the source's Thread carries in memory: the parent is
    // where a reader of the store finds it.
    let header = ThreadHeader {
        id: to.store_id(),
        parent: Some(ForkOrigin {
            thread_id: from_id.to_owned(),
            at_seq: at,
        }),
        ..ThreadHeader::of(&fork)
    };
    let meta = match store.get_meta(from_id).await {
        Ok(meta) => meta.unwrap_or_default(),
        // Running, never stored: nothing to copy.
        Err(StoreError::NotFound { .. }) => ThreadMeta::default(),
        Err(e) => return Err(store_failed(e)),
    };
    // Keyed as the fork, so recovery and the waiting listings find it under its agent.
    let meta = ThreadMeta {
        key: Some(to.clone()),
        ..meta
    };
    store
        .create_with(&header, Some(&meta), fork.to_list())
        .await
        .map(|_| ())
        .map_err(store_failed)
}

/// A store failure as the runtime reports it.
fn store_failed(error: StoreError) -> RuntimeError {
    RuntimeError::Store(error.into())
}
