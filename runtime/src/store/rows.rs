//! What the SQL stores share: a thread row as it is inserted, a summary row as it is read, and
//! the columns they read it from. Each store reads and binds its own driver's types around
//! them.

use motet_agents::ForkOrigin;
use motet_directives::Usage;

use super::codec::{corrupt, encode_json};
use super::{StoreError, ThreadHeader, ThreadSummary};

/// The columns of a `threads` row that make its [`SummaryRow`], in the order it lists them.
pub(super) const SUMMARY_COLUMNS: &str = "id, created_at, updated_at, rev, usage, \
                                          estimated_tokens, metadata, parent, \
                                          latest_summary_seq, latest_boundary_seq";

/// The thread id named in the error of a row whose id itself cannot be read.
pub(super) const UNREADABLE_ID: &str = "<unreadable id>";

/// A thread row about to be inserted, its JSON columns encoded.
pub(super) struct NewThreadRow {
    pub(super) id: String,
    pub(super) created_at: u64,
    pub(super) metadata: String,
    pub(super) parent: Option<String>,
    pub(super) usage: String,
}

impl NewThreadRow {
    pub(super) fn of(header: &ThreadHeader) -> Result<Self, StoreError> {
        let id = header.id.clone();
        Ok(Self {
            metadata: encode_json(&id, &header.metadata)?,
            parent: header
                .parent
                .as_ref()
                .map(|p| encode_json(&id, p))
                .transpose()?,
            usage: encode_json(&id, &Usage::default())?,
            created_at: header.created_at,
            id,
        })
    }
}

/// A thread's summary columns as read, its JSON columns still text.
pub(super) struct SummaryRow {
    pub(super) id: String,
    pub(super) created_at: u64,
    pub(super) updated_at: u64,
    pub(super) rev: u64,
    pub(super) usage: String,
    pub(super) estimated_tokens: u64,
    pub(super) metadata: String,
    pub(super) parent: Option<String>,
    pub(super) latest_summary_seq: Option<u64>,
    pub(super) latest_boundary_seq: Option<u64>,
}

impl SummaryRow {
    /// The summary, its JSON columns decoded; a column that does not decode is an error naming
    /// the thread.
    pub(super) fn decode(self) -> Result<ThreadSummary, StoreError> {
        let id = self.id;
        let usage = serde_json::from_str(&self.usage).map_err(|e| corrupt(&id, "usage", e))?;
        let metadata =
            serde_json::from_str(&self.metadata).map_err(|e| corrupt(&id, "metadata", e))?;
        let parent = match &self.parent {
            Some(text) => Some(
                serde_json::from_str::<ForkOrigin>(text).map_err(|e| corrupt(&id, "parent", e))?,
            ),
            None => None,
        };
        Ok(ThreadSummary {
            created_at: self.created_at,
            updated_at: self.updated_at,
            rev: self.rev,
            entry_count: self.rev,
            usage,
            estimated_tokens: self.estimated_tokens,
            metadata,
            parent,
            latest_summary_seq: self.latest_summary_seq,
            latest_boundary_seq: self.latest_boundary_seq,
            id,
        })
    }
}
