//! How a thread's stored data is checked, encoded and decoded, the same for every store: the
//! entries an append must continue with, what they add to the thread's totals, a thread rebuilt
//! from its entries' JSON, and the errors a stale writer or a damaged value gets.

use std::collections::BTreeMap;
use std::sync::Arc;

use motet_agents::{Entry, EntryBody, ForkOrigin, Thread};
use motet_directives::Usage;
use serde::Serialize;

use super::{StoreError, ThreadMeta, ThreadSummary};

/// A stored value of `thread_id` that does not decode: the thread fails closed.
pub(crate) fn corrupt(thread_id: &str, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::CorruptThread {
        thread_id: thread_id.to_owned(),
        reason: format!("{what}: {e}"),
    }
}

/// `value` as the JSON text of a column of `thread_id`.
pub(crate) fn encode_json<T: Serialize>(thread_id: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Encode {
        thread_id: thread_id.to_owned(),
        reason: e.to_string(),
    })
}

/// A thread's meta read back from its JSON; JSON that does not decode fails the thread closed.
pub(crate) fn decode_meta(thread_id: &str, json: &str) -> Result<ThreadMeta, StoreError> {
    serde_json::from_str(json).map_err(|e| corrupt(thread_id, "meta", e))
}

/// [`StoreError::NotFound`] for `thread_id`.
pub(crate) fn not_found(thread_id: &str) -> StoreError {
    StoreError::NotFound {
        thread_id: thread_id.to_owned(),
    }
}

/// Checks, before an append, that the thread is still at the rev its writer saw:
/// [`StoreError::Conflict`] when another writer got there first.
pub(crate) fn check_rev(
    thread_id: &str,
    expected_rev: u64,
    current: u64,
) -> Result<(), StoreError> {
    if current == expected_rev {
        return Ok(());
    }
    Err(StoreError::Conflict {
        thread_id: thread_id.to_owned(),
        expected: expected_rev,
        current,
    })
}

/// Checks, before a fenced append, that no other writer claimed the thread since its writer
/// did: [`StoreError::Fenced`] when the thread's epoch moved on.
pub(crate) fn check_epoch(thread_id: &str, epoch: u64, current: u64) -> Result<(), StoreError> {
    if current == epoch {
        return Ok(());
    }
    Err(StoreError::Fenced {
        thread_id: thread_id.to_owned(),
        epoch,
        current,
    })
}

/// What an append is checked against and writes beside its entries: the trait's three appends
/// (plain, with the agent's state, fenced) as one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Append<'a> {
    /// The rev the writer saw: the thread must still be at it.
    pub(crate) expected_rev: u64,
    /// The agent state to store with the entries, replacing the one before.
    pub(crate) state: Option<&'a str>,
    /// For a fenced append, the epoch the writer holds: the thread must still be at it.
    pub(crate) epoch: Option<u64>,
}

impl<'a> Append<'a> {
    /// An append at `expected_rev` with nothing beside its entries.
    pub(crate) fn plain(expected_rev: u64) -> Self {
        Self {
            expected_rev,
            state: None,
            epoch: None,
        }
    }

    /// An append at `expected_rev` that stores `state` too.
    pub(crate) fn with_state(expected_rev: u64, state: &'a str) -> Self {
        Self {
            state: Some(state),
            ..Self::plain(expected_rev)
        }
    }

    /// An append at `expected_rev` by the writer holding `epoch`, storing `state` when given.
    pub(crate) fn fenced(expected_rev: u64, state: Option<&'a str>, epoch: u64) -> Self {
        Self {
            expected_rev,
            state,
            epoch: Some(epoch),
        }
    }
}

/// One entry, checked and encoded for storage.
#[derive(Debug)]
pub(crate) struct EncodedEntry {
    pub(crate) seq: u64,
    pub(crate) kind: &'static str,
    pub(crate) at: u64,
    pub(crate) json: String,
}

/// What an append adds to a thread's running totals.
#[derive(Debug, Default)]
pub(crate) struct AppendTotals {
    pub(crate) usage: Usage,
    pub(crate) estimated_tokens: u64,
    pub(crate) max_at: u64,
    pub(crate) latest_summary_seq: Option<u64>,
    pub(crate) latest_boundary_seq: Option<u64>,
}

/// Checks that `entries` continue a thread at `expected_rev`; returns what they add to its
/// totals.
pub(crate) fn check_entries(
    thread_id: &str,
    entries: &[Arc<Entry>],
    expected_rev: u64,
) -> Result<AppendTotals, StoreError> {
    check_contiguous(thread_id, entries, expected_rev)?;
    Ok(totals_of(entries))
}

/// Checks that `entries` continue a thread at `expected_rev`.
pub(crate) fn check_contiguous(
    thread_id: &str,
    entries: &[Arc<Entry>],
    expected_rev: u64,
) -> Result<(), StoreError> {
    for (offset, entry) in entries.iter().enumerate() {
        let expected = expected_rev + offset as u64;
        if u64::from(entry.seq) != expected {
            return Err(StoreError::NonContiguous {
                thread_id: thread_id.to_owned(),
                expected,
                found: entry.seq.into(),
            });
        }
    }
    Ok(())
}

/// What `entries` add to a thread's totals.
pub(crate) fn totals_of(entries: &[Arc<Entry>]) -> AppendTotals {
    let mut totals = AppendTotals::default();
    for entry in entries {
        if let Some(usage) = entry.body.call_usage() {
            totals.usage += usage.to_usage();
        }
        match &entry.body {
            EntryBody::Summary { .. } => totals.latest_summary_seq = Some(entry.seq.into()),
            EntryBody::Boundary { .. } => totals.latest_boundary_seq = Some(entry.seq.into()),
            _ => {}
        }
        totals.estimated_tokens += u64::from(entry.tokens);
        totals.max_at = totals.max_at.max(entry.at);
    }
    totals
}

/// Checks that `entries` continue a thread at `expected_rev` and encodes them.
pub(crate) fn encode_entries(
    thread_id: &str,
    entries: &[Arc<Entry>],
    expected_rev: u64,
) -> Result<(Vec<EncodedEntry>, AppendTotals), StoreError> {
    let totals = check_entries(thread_id, entries, expected_rev)?;
    let mut encoded = Vec::with_capacity(entries.len());
    for entry in entries {
        let json = serde_json::to_string(entry).map_err(|e| StoreError::Encode {
            thread_id: thread_id.to_owned(),
            reason: format!("entry seq {}: {e}", entry.seq),
        })?;
        encoded.push(EncodedEntry {
            seq: entry.seq.into(),
            kind: entry.kind().as_str(),
            at: entry.at,
            json,
        });
    }
    Ok((encoded, totals))
}

/// A thread's stored header, as needed to rebuild the [`Thread`].
#[derive(Debug, Serialize)]
pub(crate) struct StoredHead<'a> {
    pub(crate) id: &'a str,
    pub(crate) rev: u64,
    pub(crate) created_at: u64,
    pub(crate) updated_at: u64,
    pub(crate) metadata: &'a BTreeMap<String, serde_json::Value>,
    pub(crate) parent: Option<&'a ForkOrigin>,
}

impl<'a> StoredHead<'a> {
    /// The header of the thread `summary` describes.
    pub(crate) fn of(summary: &'a ThreadSummary) -> Self {
        Self {
            id: &summary.id,
            rev: summary.rev,
            created_at: summary.created_at,
            updated_at: summary.updated_at,
            metadata: &summary.metadata,
            parent: summary.parent.as_ref(),
        }
    }
}

/// Rebuilds a thread from its header and its entries' stored JSON, in seq order.
///
/// The entries are spliced into one document as stored and decoded in one pass; when that
/// fails, each entry is decoded alone to name the one at fault.
pub(crate) fn assemble_thread(
    head: &StoredHead<'_>,
    entries: &[(u64, String)],
) -> Result<Thread, StoreError> {
    let thread_id = head.id;
    let corrupt = |reason: String| StoreError::CorruptThread {
        thread_id: thread_id.to_owned(),
        reason,
    };
    if entries.len() as u64 != head.rev {
        return Err(corrupt(format!(
            "rev {} but {} entries stored",
            head.rev,
            entries.len()
        )));
    }
    for (position, (seq, _)) in entries.iter().enumerate() {
        if *seq != position as u64 {
            return Err(corrupt(format!(
                "entry at position {position} has seq {seq}"
            )));
        }
    }
    let head_json = serde_json::to_string(head).map_err(|e| corrupt(e.to_string()))?;
    let Some(open_head) = head_json.strip_suffix('}') else {
        return Err(corrupt("header did not encode as an object".to_owned()));
    };
    let body_len: usize = entries.iter().map(|(_, json)| json.len() + 1).sum();
    let mut doc = String::with_capacity(open_head.len() + body_len + 16);
    doc.push_str(open_head);
    doc.push_str(",\"entries\":[");
    for (position, (_, json)) in entries.iter().enumerate() {
        if position > 0 {
            doc.push(',');
        }
        doc.push_str(json);
    }
    doc.push_str("]}");
    match serde_json::from_str::<Thread>(&doc) {
        Ok(thread) => Ok(thread),
        Err(whole) => Err(first_bad_entry(thread_id, entries)
            .unwrap_or_else(|| corrupt(format!("thread does not decode: {whole}")))),
    }
}

/// Decodes each entry alone; the first that fails (or whose stored seq disagrees).
fn first_bad_entry(thread_id: &str, entries: &[(u64, String)]) -> Option<StoreError> {
    entries.iter().find_map(|(seq, json)| {
        let reason = match serde_json::from_str::<Entry>(json) {
            Ok(entry) if u64::from(entry.seq) == *seq => return None,
            Ok(entry) => format!("its JSON says seq {}", entry.seq),
            Err(e) => e.to_string(),
        };
        Some(StoreError::CorruptEntry {
            thread_id: thread_id.to_owned(),
            seq: *seq,
            reason,
        })
    })
}

/// Decodes entries read for [`ThreadStore::load_after`].
pub(crate) fn decode_entries(
    thread_id: &str,
    rows: &[(u64, String)],
) -> Result<Vec<Arc<Entry>>, StoreError> {
    rows.iter()
        .map(|(seq, json)| match serde_json::from_str::<Entry>(json) {
            Ok(entry) if u64::from(entry.seq) == *seq => Ok(Arc::new(entry)),
            Ok(entry) => Err(StoreError::CorruptEntry {
                thread_id: thread_id.to_owned(),
                seq: *seq,
                reason: format!("its JSON says seq {}", entry.seq),
            }),
            Err(e) => Err(StoreError::CorruptEntry {
                thread_id: thread_id.to_owned(),
                seq: *seq,
                reason: e.to_string(),
            }),
        })
        .collect()
}
