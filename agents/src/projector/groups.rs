//! Atomic history groups, found walking the thread from its newest entry.
//!
//! A group is what the projector keeps or drops as a unit: a user or system message, a plain
//! assistant turn, or an assistant turn with tool calls together with one result for each of its
//! calls. A turn whose results are not all there, and results whose call is not right before
//! them, are never shown: a provider rejects a tool call without its result and a result without
//! its call.

use crate::policy::ContextPolicy;
use crate::thread::{Entry, EntryBody, EntryKind};

/// One atomic unit of history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    /// Index of the group's first entry (the message or the assistant turn).
    pub(crate) head: usize,
    /// Indices of the tool results, in the order of the turn's calls (empty otherwise).
    pub(crate) results: Vec<usize>,
    /// Summed token estimates of the group's entries.
    pub(crate) tokens: u64,
    /// True when the group is a user message (it starts a turn).
    pub(crate) is_user: bool,
}

impl Group {
    /// Messages the group renders to: one, or two for a tool turn and its results.
    pub(crate) fn message_count(&self) -> u64 {
        if self.results.is_empty() { 1 } else { 2 }
    }

    /// Entries in the group.
    pub(crate) fn entry_count(&self) -> usize {
        1 + self.results.len()
    }
}

/// Yields the groups of `entries[start..end]` newest first, reading only as far back as it is
/// asked to.
pub(crate) struct GroupsRev<'a> {
    entries: &'a [std::sync::Arc<Entry>],
    start: usize,
    next: usize,
    show_messages: [bool; 2],
    show_assistant: bool,
    show_tools: bool,
    /// Tool results seen since the last group, newest first.
    results: Vec<usize>,
}

impl<'a> GroupsRev<'a> {
    pub(crate) fn new(
        entries: &'a [std::sync::Arc<Entry>],
        start: usize,
        policy: &ContextPolicy,
    ) -> Self {
        let show_assistant = policy.includes(EntryKind::Assistant);
        Self {
            entries,
            start: start.min(entries.len()),
            next: entries.len(),
            show_messages: [
                policy.includes(EntryKind::User),
                policy.includes(EntryKind::System),
            ],
            show_assistant,
            // Results are only shown beside their call, so both kinds must be included.
            show_tools: show_assistant && policy.includes(EntryKind::ToolResult),
            results: Vec::new(),
        }
    }

    fn single(&mut self, index: usize, is_user: bool) -> Group {
        self.results.clear();
        Group {
            head: index,
            results: Vec::new(),
            tokens: u64::from(self.entries[index].tokens),
            is_user,
        }
    }

    /// The tool group headed by the assistant turn at `index`, if every call has a result.
    fn tool_group(&mut self, index: usize) -> Option<Group> {
        let EntryBody::Assistant { message, .. } = &self.entries[index].body else {
            return None;
        };
        let mut used = vec![false; self.results.len()];
        let mut ordered = Vec::with_capacity(self.results.len());
        for call in message.tool_calls() {
            // `results` is newest first; the oldest matching result is the one committed first.
            let found = (0..self.results.len()).rev().find(|&k| {
                !used[k]
                    && matches!(&self.entries[self.results[k]].body,
                        EntryBody::ToolResult { result, .. } if result.tool_use_id == call.id)
            })?;
            used[found] = true;
            ordered.push(self.results[found]);
        }
        let tokens = std::iter::once(index)
            .chain(ordered.iter().copied())
            .map(|i| u64::from(self.entries[i].tokens))
            .sum();
        Some(Group {
            head: index,
            results: ordered,
            tokens,
            is_user: false,
        })
    }
}

impl Iterator for GroupsRev<'_> {
    type Item = Group;

    fn next(&mut self) -> Option<Group> {
        while self.next > self.start {
            self.next -= 1;
            let index = self.next;
            match &self.entries[index].body {
                EntryBody::ToolResult { .. } if self.show_tools => self.results.push(index),
                EntryBody::Assistant { message, .. } => {
                    if !self.show_assistant {
                        self.results.clear();
                    } else if !message.has_tool_calls() {
                        return Some(self.single(index, false));
                    } else {
                        let group = if self.show_tools {
                            self.tool_group(index)
                        } else {
                            None
                        };
                        self.results.clear();
                        if group.is_some() {
                            return group;
                        }
                    }
                }
                EntryBody::User { .. } if self.show_messages[0] => {
                    return Some(self.single(index, true));
                }
                EntryBody::System { .. } if self.show_messages[1] => {
                    return Some(self.single(index, false));
                }
                _ => {}
            }
        }
        None
    }
}
