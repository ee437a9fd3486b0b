//! The Thread: an append-only log of what happened in one conversation (seed 003).
//!
//! Entries get their id, sequence number, time and token estimate from the thread when they
//! are appended. Nothing is ever rewritten: summaries and window boundaries are entries too.
//! The thread keeps a small index (the latest summary and boundary) so a projection finds its
//! window without scanning the log.
//!
//! Entries are held behind `Arc`: once appended an entry never changes, so the thread, a store
//! that keeps entries in memory, a fork and a copy of the thread all share one copy of each.

mod entry;
mod entry_id;
mod kind;
mod show;

use std::collections::BTreeMap;
use std::sync::Arc;

use motet_directives::Usage;
use serde::{Deserialize, Serialize};

pub use entry::{CallBasis, CallUsage, Entry, EntryBody, NewEntry, RefKey, Refs};
pub use entry_id::EntryId;
pub use kind::EntryKind;

use crate::env::Env;
use crate::error::ThreadError;
use crate::estimate::{Heuristic, TokenEstimator, estimate_body};

/// Cached aggregates, updated on every append.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadStats {
    /// Number of entries.
    pub entry_count: u64,
    /// Sum of the entries' token estimates.
    pub estimated_tokens: u64,
    /// Usage summed over every LLM call the thread records: its assistant turns and its
    /// summaries.
    pub usage: Usage,
}

impl ThreadStats {
    /// True for a thread without entries.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a forked thread came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The parent thread's id.
    pub thread_id: String,
    /// The last entry copied from the parent.
    pub at_seq: u64,
}

/// The position of an indexed entry in 32 bits, `u32::MAX` for none: three of them share two
/// words (a thread sits in its actor's task for the actor's life, and its size counts there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot(u32);

impl Default for Slot {
    fn default() -> Self {
        Self::NONE
    }
}

impl Slot {
    const NONE: Self = Self(u32::MAX);

    /// The slot of `index` (none past 32 bits: a thread in memory never nears 2^32 entries).
    fn at(index: usize) -> Self {
        u32::try_from(index).map_or(Self::NONE, Self)
    }

    fn get(self) -> Option<usize> {
        (self != Self::NONE).then_some(self.0 as usize)
    }
}

/// The longest list of entries [`Thread::settle`] gives room back for.
const SETTLE_UP_TO: usize = 64;

/// Whether a quiet thread's list of `len` entries with room for `capacity` should give the
/// rest back: only when there is room to give and the list is short enough that regrowing it
/// costs little.
fn worth_settling(len: usize, capacity: usize) -> bool {
    capacity > len && len <= SETTLE_UP_TO
}

/// An append-only conversation log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ThreadRepr")]
pub struct Thread {
    /// Boxed text: a thread's id never grows.
    id: Box<str>,
    rev: u64,
    entries: Vec<Arc<Entry>>,
    created_at: u64,
    updated_at: u64,
    /// Metadata and fork origin, which few threads have: one word for the rest. Written as
    /// the thread's own `metadata` and `parent` fields.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    lineage: Option<Box<Lineage>>,
    /// Written for readers of the JSON, rebuilt from the entries on load; an empty thread's
    /// (a strategy's snapshot holds its thread emptied) is left out.
    #[serde(skip_serializing_if = "ThreadStats::is_empty")]
    stats: ThreadStats,
    /// Index of the latest summary entry, in 32 bits: a thread in memory never nears 2^32
    /// entries (32 GiB of pointers alone).
    #[serde(skip)]
    latest_summary: Slot,
    /// Index of the latest boundary entry, in 32 bits.
    #[serde(skip)]
    latest_boundary: Slot,
    /// Index of the latest assistant turn whose call basis records a policy.
    #[serde(skip)]
    latest_policy: Slot,
}

/// A thread's metadata and the thread it was forked from: what few threads have, so a thread
/// (and a store's record of one) holds it boxed, and nothing for the rest ([`Lineage::of`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Lineage {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<ForkOrigin>,
}

impl Lineage {
    /// The lineage of `metadata` and `parent`, boxed; `None` when there is neither.
    pub fn of(
        metadata: BTreeMap<String, serde_json::Value>,
        parent: Option<ForkOrigin>,
    ) -> Option<Box<Self>> {
        (!metadata.is_empty() || parent.is_some()).then(|| Box::new(Self { metadata, parent }))
    }

    /// The metadata of `lineage` (empty for `None`).
    pub fn metadata_of(lineage: Option<&Self>) -> &BTreeMap<String, serde_json::Value> {
        lineage.map_or(&NO_METADATA, |l| &l.metadata)
    }

    /// The fork origin of `lineage`, if any.
    pub fn parent_of(lineage: Option<&Self>) -> Option<&ForkOrigin> {
        lineage.and_then(|l| l.parent.as_ref())
    }
}

/// No metadata, for the threads that have none.
static NO_METADATA: BTreeMap<String, serde_json::Value> = BTreeMap::new();

/// The serialized form; the index and stats are rebuilt from the entries on load.
#[derive(Deserialize)]
struct ThreadRepr {
    id: String,
    rev: u64,
    entries: Vec<Entry>,
    created_at: u64,
    updated_at: u64,
    #[serde(default)]
    metadata: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    parent: Option<ForkOrigin>,
}

impl From<ThreadRepr> for Thread {
    fn from(repr: ThreadRepr) -> Self {
        let mut thread = Thread {
            id: repr.id.into_boxed_str(),
            rev: repr.rev,
            entries: Vec::with_capacity(repr.entries.len()),
            created_at: repr.created_at,
            updated_at: repr.updated_at,
            lineage: Lineage::of(repr.metadata, repr.parent),
            stats: ThreadStats::default(),
            latest_summary: Slot::NONE,
            latest_boundary: Slot::NONE,
            latest_policy: Slot::NONE,
        };
        for entry in repr.entries {
            thread.push_indexed(Arc::new(entry));
        }
        thread
    }
}

/// What a store keeps of a thread besides its entries: enough to rebuild the [`Thread`]
/// around entries it already holds ([`Thread::from_entries`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadHead {
    /// The thread's id.
    pub id: String,
    /// The stored revision.
    pub rev: u64,
    /// When it was created (Unix milliseconds).
    pub created_at: u64,
    /// When its last entry was committed (Unix milliseconds).
    pub updated_at: u64,
    /// Application metadata.
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// The thread it was forked from.
    pub parent: Option<ForkOrigin>,
}

impl Thread {
    /// An empty thread with this id, created at `created_at` (Unix milliseconds).
    pub fn new(id: impl Into<String>, created_at: u64) -> Self {
        Self {
            id: id.into().into_boxed_str(),
            rev: 0,
            entries: Vec::new(),
            created_at,
            updated_at: created_at,
            lineage: None,
            stats: ThreadStats::default(),
            latest_summary: Slot::NONE,
            latest_boundary: Slot::NONE,
            latest_policy: Slot::NONE,
        }
    }

    /// The thread `head` describes, holding `entries` (oldest first) without copying them: a
    /// store that keeps entries in memory hands back the very entries it was given. An entry
    /// whose seq is not its position is given its position (copied, only then).
    pub fn from_entries(head: ThreadHead, entries: impl IntoIterator<Item = Arc<Entry>>) -> Self {
        let entries = entries.into_iter();
        let mut thread = Thread {
            id: head.id.into_boxed_str(),
            rev: head.rev,
            entries: Vec::with_capacity(entries.size_hint().0),
            created_at: head.created_at,
            updated_at: head.updated_at,
            lineage: Lineage::of(head.metadata, head.parent),
            stats: ThreadStats::default(),
            latest_summary: Slot::NONE,
            latest_boundary: Slot::NONE,
            latest_policy: Slot::NONE,
        };
        for entry in entries {
            thread.push_indexed(entry);
        }
        thread
    }

    /// An empty thread with a fresh `thread_…` id and the environment's time.
    pub fn create(env: &dyn Env) -> Self {
        Self::new(env.fresh_id("thread"), env.now_ms())
    }

    /// Attaches metadata.
    pub fn with_metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.lineage
            .get_or_insert_default()
            .metadata
            .insert(key.into(), value);
        self
    }

    /// Appends one entry, estimating its tokens with the seeds' heuristic.
    pub fn append(&mut self, env: &dyn Env, entry: impl Into<NewEntry>) -> &Entry {
        self.append_with(env, entry, &Heuristic)
    }

    /// Appends one entry, estimating its tokens with `estimator`.
    pub fn append_with(
        &mut self,
        env: &dyn Env,
        entry: impl Into<NewEntry>,
        estimator: &dyn TokenEstimator,
    ) -> &Entry {
        self.rev += 1;
        self.push_new(env, entry.into(), estimator)
    }

    /// Appends several entries as one revision; returns how many were appended.
    pub fn append_all<I>(&mut self, env: &dyn Env, entries: I) -> usize
    where
        I: IntoIterator,
        I::Item: Into<NewEntry>,
    {
        let mut count = 0;
        for entry in entries {
            self.push_new(env, entry.into(), &Heuristic);
            count += 1;
        }
        if count > 0 {
            self.rev += 1;
        }
        count
    }

    fn push_new(
        &mut self,
        env: &dyn Env,
        mut new: NewEntry,
        estimator: &dyn TokenEstimator,
    ) -> &Entry {
        let at = env.now_ms();
        new.body.shrink_to_fit();
        let entry = Entry {
            id: EntryId::new(env.fresh_id("entry")),
            seq: seq_at(self.entries.len()),
            at,
            tokens: estimate_body(estimator, &new.body),
            body: new.body,
            refs: new.refs,
        };
        self.updated_at = self.updated_at.max(at);
        self.push_indexed(Arc::new(entry))
    }

    /// Pushes an entry whose seq is its position, updating stats and the index.
    fn push_indexed(&mut self, mut entry: Arc<Entry>) -> &Entry {
        let index = self.entries.len();
        let seq = seq_at(index);
        if entry.seq != seq {
            Arc::make_mut(&mut entry).seq = seq;
        }
        if let Some(usage) = entry.body.call_usage() {
            self.stats.usage += usage.to_usage();
        }
        match &entry.body {
            EntryBody::Summary { .. } => self.latest_summary = Slot::at(index),
            EntryBody::Boundary { .. } => self.latest_boundary = Slot::at(index),
            EntryBody::Assistant {
                basis: Some(basis), ..
            } if basis.policy.is_some() => self.latest_policy = Slot::at(index),
            _ => {}
        }
        self.stats.entry_count += 1;
        self.stats.estimated_tokens += u64::from(entry.tokens);
        if self.entries.len() == self.entries.capacity() {
            // Grown by half rather than doubled: a thread keeps its entries for its life, so
            // it holds less room it may never fill, for a few more (pointer-sized) copies.
            self.entries.reserve_exact((self.entries.len() / 2).max(4));
        }
        self.entries.push(entry);
        &self.entries[index]
    }

    /// The thread's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The revision: increases by one on every append.
    pub fn rev(&self) -> u64 {
        self.rev
    }

    /// When the thread was created (Unix milliseconds).
    pub fn created_at(&self) -> u64 {
        self.created_at
    }

    /// When the last entry was appended (Unix milliseconds).
    pub fn updated_at(&self) -> u64 {
        self.updated_at
    }

    /// Application metadata.
    pub fn metadata(&self) -> &BTreeMap<String, serde_json::Value> {
        Lineage::metadata_of(self.lineage.as_deref())
    }

    /// Cached aggregates.
    pub fn stats(&self) -> &ThreadStats {
        &self.stats
    }

    /// Usage summed over every LLM call the thread records: its assistant turns and its
    /// summaries ([`EntryBody::call_usage`]).
    pub fn usage(&self) -> Usage {
        self.stats.usage
    }

    /// The thread this one was forked from, if any.
    pub fn parent(&self) -> Option<&ForkOrigin> {
        Lineage::parent_of(self.lineage.as_deref())
    }

    /// For a thread going quiet (the runtime calls it when a thread's last open request
    /// ends): gives back the room its list of entries grew ahead of appends, while the list is
    /// short enough (64 entries) that growing it again on the next append copies
    /// next to nothing. A longer list keeps its room: giving it back at every request would
    /// make each request copy the whole list again, and the room (at most half the list's
    /// pointers, 4 bytes an entry) is small beside the entries. The entries themselves are
    /// shared and stay as they are.
    pub fn settle(&mut self) {
        if worth_settling(self.entries.len(), self.entries.capacity()) {
            self.entries.shrink_to_fit();
        }
    }

    /// Number of entries.
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The newest entry.
    pub fn last(&self) -> Option<&Entry> {
        self.entries.last().map(|e| &**e)
    }

    /// The entry with this sequence number.
    pub fn get_entry(&self, seq: u64) -> Option<&Entry> {
        usize::try_from(seq)
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|e| &**e)
    }

    /// All entries, oldest first (shared: cloning one is a reference count).
    pub fn to_list(&self) -> &[Arc<Entry>] {
        &self.entries
    }

    /// Entries of any of these kinds, oldest first.
    pub fn filter_by_kind<'a>(
        &'a self,
        kinds: &'a [EntryKind],
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries
            .iter()
            .map(|e| &**e)
            .filter(|e| kinds.contains(&e.kind()))
    }

    /// Entries whose ref `key` equals `value`, oldest first.
    pub fn filter_by_ref<'a>(
        &'a self,
        key: RefKey,
        value: &'a str,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries
            .iter()
            .map(|e| &**e)
            .filter(move |e| e.refs.get(key).as_deref() == Some(value))
    }

    /// Entries with `from <= seq <= to` (empty when the range is empty or outside the thread).
    pub fn slice(&self, from: u64, to: u64) -> &[Arc<Entry>] {
        let len = self.entries.len();
        let start = usize::try_from(from).unwrap_or(len).min(len);
        let end = usize::try_from(to)
            .ok()
            .and_then(|t| t.checked_add(1))
            .unwrap_or(len)
            .min(len);
        if start >= end {
            return &[];
        }
        &self.entries[start..end]
    }

    /// A new thread holding entries `0..=at_seq` of this one, with a fresh id and this thread
    /// recorded as its parent.
    ///
    /// # Errors
    /// [`ThreadError::NoSuchSeq`] when `at_seq` is past the last entry.
    pub fn fork(&self, env: &dyn Env, at_seq: u64) -> Result<Thread, ThreadError> {
        if self.get_entry(at_seq).is_none() {
            return Err(ThreadError::NoSuchSeq {
                seq: at_seq,
                len: self.entries.len() as u64,
            });
        }
        let mut fork = Thread::new(env.fresh_id("thread"), env.now_ms());
        fork.lineage = Lineage::of(
            self.metadata().clone(),
            Some(ForkOrigin {
                thread_id: self.id.to_string(),
                at_seq,
            }),
        );
        for entry in self.slice(0, at_seq) {
            fork.push_indexed(entry.clone());
        }
        fork.rev = 1;
        Ok(fork)
    }

    /// The latest summary entry.
    pub fn latest_summary(&self) -> Option<&Entry> {
        self.latest_summary
            .get()
            .and_then(|i| self.entries.get(i))
            .map(|e| &**e)
    }

    /// The latest window boundary entry.
    pub fn latest_boundary(&self) -> Option<&Entry> {
        self.latest_boundary
            .get()
            .and_then(|i| self.entries.get(i))
            .map(|e| &**e)
    }

    /// Entries after the latest summary's range (all of them when there is no summary).
    pub fn entries_since_summary(&self) -> u64 {
        (self.entries.len() - self.summary_end()) as u64
    }

    /// Estimated tokens of the entries after the latest summary's range (the whole thread's
    /// when there is no summary). Reads those entries: a policy that triggers summaries on
    /// tokens keeps them few.
    pub fn tokens_since_summary(&self) -> u64 {
        self.entries[self.summary_end()..]
            .iter()
            .map(|e| u64::from(e.tokens))
            .sum()
    }

    /// The index of the first entry after the latest summary's range.
    fn summary_end(&self) -> usize {
        let covered = match self.latest_summary().map(|e| &e.body) {
            Some(EntryBody::Summary { to_seq, .. }) => to_seq.saturating_add(1),
            _ => 0,
        };
        usize::try_from(covered)
            .unwrap_or(usize::MAX)
            .min(self.entries.len())
    }

    /// The policy the latest recorded LLM call of this thread was projected with.
    pub fn policy_in_force(&self) -> Option<&crate::policy::ContextPolicy> {
        self.latest_policy
            .get()
            .and_then(|i| self.entries.get(i))
            .and_then(|e| match &e.body {
                EntryBody::Assistant { basis, .. } => basis.as_ref()?.policy.as_deref(),
                _ => None,
            })
    }

    /// The heuristic calibrated by the latest call the provider counted: its prompt tokens
    /// (`Usage::input_tokens`, cached ones included) over what its projection estimated.
    /// `None` before any such call.
    pub fn calibration(&self) -> Option<crate::estimate::Calibrated> {
        self.entries.iter().rev().find_map(|e| match &e.body {
            EntryBody::Assistant {
                usage,
                basis: Some(basis),
                ..
            } => {
                let counted = usage.to_usage().input_tokens;
                (counted > 0 && basis.estimated_tokens > 0).then(|| {
                    crate::estimate::Calibrated::from_usage(basis.estimated_tokens, counted)
                })
            }
            _ => None,
        })
    }

    /// The assistant turn of LLM call `call_id` and the basis its projection was made from.
    fn call_turn(&self, call_id: &str) -> Option<(usize, &CallBasis)> {
        self.entries.iter().enumerate().rev().find_map(|(i, e)| {
            match (&e.body, e.refs.call_id.as_deref()) {
                (EntryBody::Assistant { basis: Some(b), .. }, Some(id)) if id == call_id => {
                    Some((i, &**b))
                }
                _ => None,
            }
        })
    }

    /// The entries LLM call `call_id` could see when its context was projected (seed 001's
    /// `entries_before_call`): the thread up to the basis recorded with the call's assistant
    /// turn. `None` when the thread holds no recorded turn of that call.
    pub fn entries_before_call(&self, call_id: &str) -> Option<&[Arc<Entry>]> {
        let (_, basis) = self.call_turn(call_id)?;
        let end = basis
            .last_seq
            .and_then(|s| usize::try_from(s).ok())
            .map_or(0, |s| s.saturating_add(1));
        self.entries.get(..end.min(self.entries.len()))
    }

    /// The thread as LLM call `call_id` saw it (its entries up to the call's basis, at the
    /// basis revision, sharing this thread's entries) and the policy in force for it: project
    /// those with the strategy's system prompt and tools, and the call's messages come back
    /// byte for byte. `None` when the thread holds no recorded turn of that call or no policy
    /// recorded at or before it.
    pub fn as_of_call(&self, call_id: &str) -> Option<(Thread, crate::policy::ContextPolicy)> {
        let (turn, basis) = self.call_turn(call_id)?;
        let policy = self.entries[..=turn]
            .iter()
            .rev()
            .find_map(|e| match &e.body {
                EntryBody::Assistant { basis: Some(b), .. } => b.policy.as_deref().cloned(),
                _ => None,
            })?;
        let entries = self.entries_before_call(call_id)?;
        let mut thread = Thread {
            id: self.id.clone(),
            rev: basis.rev,
            entries: Vec::with_capacity(entries.len()),
            created_at: self.created_at,
            updated_at: self.updated_at,
            lineage: self.lineage.clone(),
            stats: ThreadStats::default(),
            latest_summary: Slot::NONE,
            latest_boundary: Slot::NONE,
            latest_policy: Slot::NONE,
        };
        for entry in entries {
            thread.push_indexed(entry.clone());
        }
        Some((thread, policy))
    }
}

/// The seq of the entry at `index`. An entry takes well over a hundred bytes, so a thread in
/// memory never reaches four billion of them; past that the seq would stay at the last one.
fn seq_at(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use motet_directives::{AssistantMessage, ToolResult, Usage};

    use super::*;
    use crate::env::FixedEnv;

    fn sample(env: &FixedEnv) -> Thread {
        let mut thread = Thread::create(env);
        thread.append(env, NewEntry::user("hi").with_refs(Refs::request("r1")));
        env.advance_ms(10);
        thread.append_all(
            env,
            [
                NewEntry::assistant(
                    AssistantMessage::text("hello"),
                    Usage {
                        input_tokens: 5,
                        output_tokens: 2,
                        ..Usage::default()
                    },
                )
                .with_refs(Refs::request("r1").with_call_id("call_1")),
                NewEntry::tool_result("t", ToolResult::ok("tc", "x"))
                    .with_refs(Refs::request("r2").with_tool_call_id("tc")),
            ],
        );
        thread
    }

    #[test]
    fn append_assigns_seq_id_time_and_counts() {
        let env = FixedEnv::new(100);
        let thread = sample(&env);
        assert_eq!(thread.id(), "thread_1");
        assert_eq!(thread.entry_count(), 3);
        assert_eq!(thread.rev(), 2);
        let seqs: Vec<u32> = thread.to_list().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert_eq!(
            thread.get_entry(1).map(|e| e.id.to_string()).as_deref(),
            Some("entry_2")
        );
        assert_eq!(thread.get_entry(0).map(|e| e.at), Some(100));
        assert_eq!(thread.last().map(|e| e.at), Some(110));
        assert_eq!(thread.updated_at(), 110);
        assert_eq!(thread.usage().total_tokens(), 7);
        assert_eq!(thread.stats().entry_count, 3);
        assert!(thread.get_entry(3).is_none());
    }

    #[test]
    fn the_estimate_is_made_once_at_append_with_the_given_estimator() {
        struct Words;
        impl TokenEstimator for Words {
            fn estimate_parts(&self, parts: &[&str]) -> u32 {
                parts
                    .iter()
                    .map(|p| p.split_whitespace().count() as u32)
                    .sum()
            }
        }
        let env = FixedEnv::new(0);
        let mut thread = Thread::create(&env);
        thread.append_with(&env, NewEntry::user("one two three"), &Words);
        thread.append(&env, NewEntry::user("one two three"));
        thread.append(&env, NewEntry::boundary(1));
        let tokens: Vec<u32> = thread.to_list().iter().map(|e| e.tokens).collect();
        assert_eq!(tokens, [3, 13, 0]);
        assert_eq!(thread.stats().estimated_tokens, 16);
    }

    #[test]
    fn filters_and_slices() {
        let env = FixedEnv::new(0);
        let thread = sample(&env);
        let kinds = [EntryKind::User, EntryKind::ToolResult];
        let seqs: Vec<u32> = thread.filter_by_kind(&kinds).map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 2]);
        let r1: Vec<u32> = thread
            .filter_by_ref(RefKey::RequestId, "r1")
            .map(|e| e.seq)
            .collect();
        assert_eq!(r1, [0, 1]);
        assert_eq!(thread.slice(1, 2).len(), 2);
        assert_eq!(thread.slice(2, 1).len(), 0);
        assert_eq!(thread.slice(1, u64::MAX).len(), 2);
        assert_eq!(thread.slice(9, 12).len(), 0);
    }

    #[test]
    fn fork_copies_prefix_and_records_parent() {
        let env = FixedEnv::new(0);
        let thread = sample(&env);
        let fork = thread.fork(&env, 1).unwrap();
        assert_eq!(fork.entry_count(), 2);
        assert_eq!(
            fork.parent(),
            Some(&ForkOrigin {
                thread_id: thread.id().to_owned(),
                at_seq: 1
            })
        );
        assert_ne!(fork.id(), thread.id());
        assert_eq!(
            thread.fork(&env, 3),
            Err(ThreadError::NoSuchSeq { seq: 3, len: 3 })
        );
    }

    #[test]
    fn metadata_and_the_fork_origin_are_written_as_the_threads_own_fields() {
        let env = FixedEnv::new(0);
        let plain = sample(&env);
        let json: serde_json::Value = serde_json::to_value(&plain).unwrap();
        assert!(
            json.get("metadata").is_none() && json.get("parent").is_none(),
            "{json}"
        );
        assert!(plain.metadata().is_empty());

        let tagged = sample(&env).with_metadata("team", serde_json::json!("blue"));
        let fork = tagged.fork(&env, 1).unwrap();
        let json: serde_json::Value = serde_json::to_value(&fork).unwrap();
        assert_eq!(json["metadata"], serde_json::json!({"team": "blue"}));
        assert_eq!(
            json["parent"],
            serde_json::json!({"thread_id": tagged.id(), "at_seq": 1})
        );
        let back: Thread = serde_json::from_value(json).unwrap();
        assert_eq!(back, fork);
        assert_eq!(
            back.metadata().get("team"),
            Some(&serde_json::json!("blue"))
        );
    }

    #[test]
    fn only_a_short_quiet_thread_gives_its_room_back() {
        assert!(worth_settling(21, 27));
        assert!(worth_settling(SETTLE_UP_TO, SETTLE_UP_TO + 32));
        assert!(!worth_settling(21, 21), "no room to give");
        assert!(
            !worth_settling(SETTLE_UP_TO + 1, 2 * SETTLE_UP_TO),
            "a long list would be copied again at the next append"
        );
    }

    #[test]
    fn settling_keeps_a_long_threads_room() {
        let env = FixedEnv::new(0);
        let mut short = Thread::create(&env);
        for _ in 0..5 {
            short.append(&env, NewEntry::user("hi"));
        }
        assert!(short.entries.capacity() > 5);
        short.settle();
        assert_eq!(short.entries.capacity(), 5);
        let mut long = Thread::create(&env);
        for _ in 0..=SETTLE_UP_TO {
            long.append(&env, NewEntry::user("hi"));
        }
        let room = long.entries.capacity();
        assert!(room > SETTLE_UP_TO + 1);
        long.settle();
        assert_eq!(long.entries.capacity(), room);
        assert_eq!(long.entry_count(), SETTLE_UP_TO + 1);
    }

    #[test]
    fn serde_round_trip_rebuilds_the_index() {
        let env = FixedEnv::new(0);
        let mut thread = sample(&env);
        thread.append(&env, NewEntry::summary(0, 1, "they greeted"));
        thread.append(&env, NewEntry::boundary(2));
        let signal = motet_signals::Signal::builder("agent.request", "test")
            .with_id("s1")
            .with_time(None)
            .with_data(serde_json::json!({"query": "hi"}))
            .build()
            .unwrap();
        thread.append_all(
            &env,
            [
                NewEntry::system("be brief"),
                NewEntry::note("a note"),
                EntryBody::Error {
                    message: "oops".into(),
                }
                .into(),
                EntryBody::Checkpoint {
                    data: serde_json::json!({"step": 3}),
                }
                .into(),
                EntryBody::SignalIn {
                    signal: signal.clone(),
                }
                .into(),
                EntryBody::SignalOut { signal }.into(),
            ],
        );
        let json = serde_json::to_string(&thread).unwrap();
        let back: Thread = serde_json::from_str(&json).unwrap();
        assert_eq!(back, thread);
        assert_eq!(back.latest_summary().map(|e| e.seq), Some(3));
        assert_eq!(back.latest_boundary().map(|e| e.seq), Some(4));
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["entries"][0]["kind"], "user");
        assert_eq!(value["entries"][0]["payload"]["content"], "hi");
        let kinds: Vec<&str> = back.to_list().iter().map(|e| e.kind().as_str()).collect();
        assert_eq!(
            kinds,
            [
                "user",
                "assistant",
                "tool_result",
                "summary",
                "boundary",
                "system",
                "note",
                "error",
                "checkpoint",
                "signal_in",
                "signal_out"
            ]
        );
        for (entry, value) in back
            .to_list()
            .iter()
            .zip(value["entries"].as_array().unwrap())
        {
            assert_eq!(value["kind"], entry.kind().as_str());
        }
    }
}
