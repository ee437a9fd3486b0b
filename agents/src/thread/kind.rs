//! An entry's kind without its payload: the vocabulary filters and policies speak, a leaf so
//! that a policy can name kinds without naming the entries that carry a policy.

use serde::{Deserialize, Serialize};

/// The kind of an entry, without its payload (for filters and policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// [`EntryBody::User`](super::EntryBody::User).
    User,
    /// [`EntryBody::System`](super::EntryBody::System).
    System,
    /// [`EntryBody::Assistant`](super::EntryBody::Assistant).
    Assistant,
    /// [`EntryBody::ToolResult`](super::EntryBody::ToolResult).
    ToolResult,
    /// [`EntryBody::Summary`](super::EntryBody::Summary).
    Summary,
    /// [`EntryBody::Boundary`](super::EntryBody::Boundary).
    Boundary,
    /// [`EntryBody::Note`](super::EntryBody::Note).
    Note,
    /// [`EntryBody::Error`](super::EntryBody::Error).
    Error,
    /// [`EntryBody::Checkpoint`](super::EntryBody::Checkpoint).
    Checkpoint,
    /// [`EntryBody::SignalIn`](super::EntryBody::SignalIn).
    SignalIn,
    /// [`EntryBody::SignalOut`](super::EntryBody::SignalOut).
    SignalOut,
}

impl EntryKind {
    /// The kind's name as serialized (`user`, `tool_result`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::System => "system",
            Self::Assistant => "assistant",
            Self::ToolResult => "tool_result",
            Self::Summary => "summary",
            Self::Boundary => "boundary",
            Self::Note => "note",
            Self::Error => "error",
            Self::Checkpoint => "checkpoint",
            Self::SignalIn => "signal_in",
            Self::SignalOut => "signal_out",
        }
    }
}
