//! One entry of a thread: its kind and payload, its correlation refs, its token estimate.

use motet_directives::{ArcStr, AssistantMessage, ToolResult, Usage, UserContent};
use motet_signals::Signal;

use super::EntryId;
use super::kind::EntryKind;
use serde::{Deserialize, Serialize};

/// What an entry records, with its payload. Serialized as `{"kind": ..., "payload": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum EntryBody {
    /// What the user said: plain text (stored as a string, as before parts existed) or parts
    /// (text, images, documents, audio).
    User {
        /// The text or the parts.
        content: UserContent,
    },
    /// A system message recorded in the conversation (not the agent's system prompt).
    System {
        /// The text.
        content: String,
    },
    /// One whole assistant turn: its ordered blocks (text, reasoning with provider meta,
    /// tool use), its stop reason, and what it cost.
    Assistant {
        /// The turn, exactly as assembled (provider meta included, replayed byte for byte).
        message: AssistantMessage,
        /// Tokens the call consumed.
        #[serde(default)]
        usage: CallUsage,
        /// What the call's projection was made from, so it can be made again
        /// ([`Thread::as_of_call`](crate::Thread::as_of_call)); absent in turns committed
        /// by older versions or by hand.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        basis: Option<Box<CallBasis>>,
    },
    /// The result of one tool call, referencing the call by `result.tool_use_id`.
    ToolResult {
        /// The tool's name (Gemini's `functionResponse` names it).
        name: ArcStr,
        /// The result as the model will see it.
        result: ToolResult,
    },
    /// A summary of entries `from_seq..=to_seq`; the latest summary is a projection boundary.
    Summary {
        /// First entry covered.
        from_seq: u64,
        /// Last entry covered (inclusive).
        to_seq: u64,
        /// The summary text.
        content: String,
        /// Tokens the summary call consumed (none in summaries committed before they were
        /// counted, or written by hand).
        #[serde(default, skip_serializing_if = "CallUsage::is_zero")]
        usage: CallUsage,
    },
    /// A window boundary: history before `from_seq` is not projected raw.
    Boundary {
        /// First entry the projection may show raw.
        from_seq: u64,
    },
    /// A free-form note (for example an ignored stale result). Never projected.
    Note {
        /// The note.
        text: String,
    },
    /// An error that happened during the conversation. Never projected.
    Error {
        /// What went wrong.
        message: String,
    },
    /// Application checkpoint data. Never projected.
    Checkpoint {
        /// The data.
        data: serde_json::Value,
    },
    /// A signal the agent received. Never projected.
    SignalIn {
        /// The signal.
        signal: Signal,
    },
    /// A signal the agent emitted. Never projected.
    SignalOut {
        /// The signal.
        signal: Signal,
    },
}

/// What the projection of one LLM call was made from, kept with the call's assistant turn
/// (seed 001 §3.1 and §6): the thread up to `last_seq` (as it stood at revision `rev`) and the
/// policy in force. With the strategy's system prompt and tools, that is all a projection
/// depends on, so the messages the call saw can be rebuilt byte for byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallBasis {
    /// The thread revision projected.
    pub rev: u64,
    /// The last entry the projection could read (`None`: the thread was empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<u64>,
    /// What the projection estimated the context at (tools included): beside the provider's
    /// count in the turn's usage, it calibrates the next estimates
    /// ([`Thread::calibration`](crate::Thread::calibration)).
    #[serde(default)]
    pub estimated_tokens: u64,
    /// The policy in force, when it differs from the one the thread's previous recorded call
    /// used (`None`: the same); a thread keeps one copy per change, not one per call — boxed,
    /// so the basis of a call that kept the policy is five words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Box<crate::policy::ContextPolicy>>,
    /// The model that answered, when it was not the agent's own but a fallback of its chain
    /// (`None`: the agent's model). A resume reads it to go on where the request was. Boxed:
    /// most calls are the agent's model's, and their basis keeps one word for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Box<motet_directives::ModelRef>>,
}

/// What one LLM call consumed, as its assistant entry keeps it: [`Usage`]'s counts, exactly.
/// Reads and writes as a [`Usage`]: the JSON is the same.
///
/// Most calls count only input and output tokens, well below four billion: those two are held
/// in place in 32 bits each, and nothing else. A call that also counted cache reads, cache
/// writes or reasoning, or whose counts do not fit 32 bits (a provider's `u64::MAX`), keeps
/// its whole [`Usage`] boxed instead, so no count is ever cut down to fit. Sixteen bytes
/// rather than forty in place bring an entry's body to 64 bytes (the largest of its kinds,
/// with a tool result's), in every entry of every thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "Usage", into = "Usage")]
pub struct CallUsage {
    input_tokens: u32,
    output_tokens: u32,
    /// Every count, when the two above cannot say them all; then those two are 0.
    wide: Option<Box<Usage>>,
}

impl CallUsage {
    /// The counts as a [`Usage`].
    pub fn to_usage(&self) -> Usage {
        match self.wide.as_deref() {
            Some(usage) => *usage,
            None => Usage {
                input_tokens: self.input_tokens.into(),
                output_tokens: self.output_tokens.into(),
                ..Usage::default()
            },
        }
    }

    /// True when nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl From<Usage> for CallUsage {
    fn from(usage: Usage) -> Self {
        let only_in_and_out = usage.cache_read_tokens == 0
            && usage.cache_write_tokens == 0
            && usage.reasoning_tokens == 0;
        match (
            u32::try_from(usage.input_tokens),
            u32::try_from(usage.output_tokens),
        ) {
            (Ok(input_tokens), Ok(output_tokens)) if only_in_and_out => Self {
                input_tokens,
                output_tokens,
                wide: None,
            },
            _ => Self {
                input_tokens: 0,
                output_tokens: 0,
                wide: Some(Box::new(usage)),
            },
        }
    }
}

impl From<CallUsage> for Usage {
    fn from(usage: CallUsage) -> Self {
        usage.to_usage()
    }
}

impl EntryBody {
    /// What the LLM call this entry records consumed: an assistant turn's or a summary's
    /// usage, `None` for the other kinds. A thread's totals are the sum of these.
    pub fn call_usage(&self) -> Option<&CallUsage> {
        match self {
            Self::Assistant { usage, .. } | Self::Summary { usage, .. } => Some(usage),
            _ => None,
        }
    }

    /// This body's kind.
    pub fn kind(&self) -> EntryKind {
        match self {
            Self::User { .. } => EntryKind::User,
            Self::System { .. } => EntryKind::System,
            Self::Assistant { .. } => EntryKind::Assistant,
            Self::ToolResult { .. } => EntryKind::ToolResult,
            Self::Summary { .. } => EntryKind::Summary,
            Self::Boundary { .. } => EntryKind::Boundary,
            Self::Note { .. } => EntryKind::Note,
            Self::Error { .. } => EntryKind::Error,
            Self::Checkpoint { .. } => EntryKind::Checkpoint,
            Self::SignalIn { .. } => EntryKind::SignalIn,
            Self::SignalOut { .. } => EntryKind::SignalOut,
        }
    }
}

/// Correlation refs (seed 001 §6.1): which request, LLM call, tool call and iteration an entry
/// belongs to.
///
/// The ids are shared text: every entry of a request holds the request's one id, and a call's
/// entries hold the call's ([`CallId::shared`](motet_directives::CallId::shared)), so a long thread does not keep a copy per entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refs {
    /// The outer ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<ArcStr>,
    /// The directive call this entry came from (LLM call or tool run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<ArcStr>,
    /// The model's id of the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<ArcStr>,
    /// The ReAct iteration (1 for the first LLM call of a request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// The call that caused this one (a tool run's LLM call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<ArcStr>,
}

impl EntryBody {
    /// Gives back the room its text and vectors grew while they were built or decoded: an
    /// entry is kept for the life of its thread, so it holds what it says and no more.
    pub(crate) fn shrink_to_fit(&mut self) {
        match self {
            Self::User { content } => content.shrink_to_fit(),
            Self::System { content } | Self::Summary { content, .. } => content.shrink_to_fit(),
            Self::Assistant { message, .. } => message.shrink_to_fit(),
            Self::ToolResult { result, .. } => result.content.shrink_to_fit(),
            Self::Note { text } => text.shrink_to_fit(),
            Self::Error { message } => message.shrink_to_fit(),
            _ => {}
        }
    }
}

impl Refs {
    /// Refs of one request.
    pub fn request(request_id: impl Into<ArcStr>) -> Self {
        Self {
            request_id: Some(request_id.into()),
            ..Self::default()
        }
    }

    /// Sets the call id.
    pub fn with_call_id(mut self, call_id: impl Into<ArcStr>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// Sets the tool call id.
    pub fn with_tool_call_id(mut self, tool_call_id: impl Into<ArcStr>) -> Self {
        self.tool_call_id = Some(tool_call_id.into());
        self
    }

    /// Sets the iteration.
    pub fn with_iteration(mut self, iteration: u32) -> Self {
        self.iteration = Some(iteration);
        self
    }

    /// Sets the parent call id.
    pub fn with_parent_call_id(mut self, parent_call_id: impl Into<ArcStr>) -> Self {
        self.parent_call_id = Some(parent_call_id.into());
        self
    }

    /// True when no ref is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The value of one ref, as text.
    pub fn get(&self, key: RefKey) -> Option<String> {
        match key {
            RefKey::RequestId => self.request_id.as_deref().map(str::to_owned),
            RefKey::CallId => self.call_id.as_deref().map(str::to_owned),
            RefKey::ToolCallId => self.tool_call_id.as_deref().map(str::to_owned),
            RefKey::Iteration => self.iteration.map(|i| i.to_string()),
            RefKey::ParentCallId => self.parent_call_id.as_deref().map(str::to_owned),
        }
    }
}

/// Names one of the [`Refs`], for [`crate::Thread::filter_by_ref`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKey {
    /// [`Refs::request_id`].
    RequestId,
    /// [`Refs::call_id`].
    CallId,
    /// [`Refs::tool_call_id`].
    ToolCallId,
    /// [`Refs::iteration`] (compared as decimal text).
    Iteration,
    /// [`Refs::parent_call_id`].
    ParentCallId,
}

/// An entry as committed: the thread assigned its id, seq, time and token estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Unique entry id (from the environment).
    pub id: EntryId,
    /// Position in the thread, from 0, without gaps. 32 bits (a thread of four billion
    /// entries would hold half a terabyte), so it shares a word with [`Entry::tokens`].
    pub seq: u32,
    /// When it was committed, in Unix milliseconds.
    pub at: u64,
    /// Kind and payload.
    #[serde(flatten)]
    pub body: EntryBody,
    /// Correlation refs.
    #[serde(default, skip_serializing_if = "Refs::is_empty")]
    pub refs: Refs,
    /// Estimated tokens of this entry as a message, computed once when it was appended.
    #[serde(default)]
    pub tokens: u32,
}

impl Entry {
    /// The entry's kind.
    pub fn kind(&self) -> EntryKind {
        self.body.kind()
    }
}

/// An entry to append: the thread assigns id, seq, time and token estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    /// Kind and payload.
    pub body: EntryBody,
    /// Correlation refs.
    pub refs: Refs,
}

impl NewEntry {
    /// An entry with no refs.
    pub fn new(body: EntryBody) -> Self {
        Self {
            body,
            refs: Refs::default(),
        }
    }

    /// A user message of plain text.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(EntryBody::User {
            content: UserContent::Text(content.into()),
        })
    }

    /// A user message of text or parts (images, documents, audio).
    pub fn user_content(content: impl Into<UserContent>) -> Self {
        Self::new(EntryBody::User {
            content: content.into(),
        })
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(EntryBody::System {
            content: content.into(),
        })
    }

    /// An assistant turn.
    pub fn assistant(message: AssistantMessage, usage: Usage) -> Self {
        Self::new(EntryBody::Assistant {
            message,
            usage: usage.into(),
            basis: None,
        })
    }

    /// Records what the call's projection was made from, when this is an assistant turn
    /// (other entries are unchanged).
    pub fn with_basis(mut self, basis: CallBasis) -> Self {
        if let EntryBody::Assistant { basis: slot, .. } = &mut self.body {
            *slot = Some(Box::new(basis));
        }
        self
    }

    /// A tool result.
    pub fn tool_result(name: impl Into<Box<str>>, result: ToolResult) -> Self {
        Self::new(EntryBody::ToolResult {
            name: ArcStr::from(&*name.into()),
            result,
        })
    }

    /// A summary of `from_seq..=to_seq`, with nothing counted ([`with_usage`](Self::with_usage)
    /// records what its call consumed).
    pub fn summary(from_seq: u64, to_seq: u64, content: impl Into<String>) -> Self {
        Self::new(EntryBody::Summary {
            from_seq,
            to_seq,
            content: content.into(),
            usage: CallUsage::default(),
        })
    }

    /// Records what the LLM call behind this entry consumed, when it is an assistant turn or a
    /// summary (other entries are unchanged).
    pub fn with_usage(mut self, counted: Usage) -> Self {
        if let EntryBody::Assistant { usage, .. } | EntryBody::Summary { usage, .. } =
            &mut self.body
        {
            *usage = counted.into();
        }
        self
    }

    /// A window boundary at `from_seq`.
    pub fn boundary(from_seq: u64) -> Self {
        Self::new(EntryBody::Boundary { from_seq })
    }

    /// A note.
    pub fn note(text: impl Into<String>) -> Self {
        Self::new(EntryBody::Note { text: text.into() })
    }

    /// Sets the refs.
    pub fn with_refs(mut self, refs: Refs) -> Self {
        self.refs = refs;
        self
    }
}

impl From<EntryBody> for NewEntry {
    fn from(body: EntryBody) -> Self {
        Self::new(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            output_tokens: n + 1,
            cache_read_tokens: n + 2,
            cache_write_tokens: n + 3,
            reasoning_tokens: n + 4,
        }
    }

    #[test]
    fn a_call_usage_reads_and_writes_as_a_usage_and_keeps_its_counts() {
        let wide = usage(1_000);
        let narrow = CallUsage::from(wide);
        assert_eq!(narrow.to_usage(), wide);
        let json = serde_json::to_string(&narrow).expect("serializes");
        assert_eq!(json, serde_json::to_string(&wide).expect("serializes"));
        let back: CallUsage = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, narrow);
        // Fields left out read as zero, as a Usage's do.
        let partial: CallUsage = serde_json::from_str(r#"{"input_tokens": 7}"#).expect("reads");
        assert_eq!(partial.to_usage().input_tokens, 7);
        assert_eq!(partial.to_usage().output_tokens, 0);
        assert!(CallUsage::default().is_zero() && !partial.is_zero());
    }

    #[test]
    fn a_count_beyond_32_bits_is_kept_whole_rather_than_cut_to_the_largest() {
        let huge = CallUsage::from(usage(u64::from(u32::MAX) + 1));
        assert_eq!(huge.to_usage().input_tokens, u64::from(u32::MAX) + 1);
        assert_eq!(huge.to_usage(), usage(u64::from(u32::MAX) + 1));
        let stored = format!(r#"{{"input_tokens": {}}}"#, u64::MAX);
        let read: CallUsage = serde_json::from_str(&stored).expect("reads");
        assert_eq!(read.to_usage().input_tokens, u64::MAX);
    }

    #[test]
    fn an_entry_reads_back_its_seq_and_refuses_one_past_32_bits() {
        let json = |seq: u64| {
            format!(
                r#"{{"id": "e1", "seq": {seq}, "at": 5, "kind": "user",
                    "payload": {{"content": "hi"}}, "tokens": 1}}"#
            )
        };
        let entry: Entry = serde_json::from_str(&json(u64::from(u32::MAX))).expect("reads");
        assert_eq!(entry.seq, u32::MAX);
        let written = serde_json::to_value(&entry).expect("writes");
        assert_eq!(written["seq"], u64::from(u32::MAX));
        let error = serde_json::from_str::<Entry>(&json(u64::from(u32::MAX) + 1));
        assert!(
            error.is_err(),
            "a seq beyond 32 bits is an error, not a wrap"
        );
    }

    #[test]
    fn an_entry_stays_small() {
        // Every entry of every thread pays these: a conversing agent's memory is mostly them.
        // The assistant turn's call basis (one boxed word) sets the body's size.
        assert!(size_of::<EntryBody>() <= 72, "{}", size_of::<EntryBody>());
        assert!(size_of::<Entry>() <= 144, "{}", size_of::<Entry>());
        assert_eq!(size_of::<CallUsage>(), 16);
    }

    #[test]
    fn a_call_that_counted_no_cache_nor_reasoning_holds_nothing_boxed() {
        let plain = CallUsage::from(Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        });
        assert!(plain.wide.is_none());
        assert_eq!(plain.to_usage().output_tokens, 5);
        let reasoning = Usage {
            reasoning_tokens: 3,
            ..Usage::default()
        };
        let kept = CallUsage::from(reasoning);
        assert_eq!(kept.wide.as_deref(), Some(&reasoning));
        assert_eq!(kept.to_usage(), reasoning);
        assert!(!kept.is_zero());
    }

    #[test]
    fn counts_past_32_bits_are_kept_exactly() {
        for usage in [
            Usage {
                cache_read_tokens: u64::MAX,
                ..Usage::default()
            },
            Usage {
                input_tokens: u64::from(u32::MAX) + 1,
                output_tokens: 7,
                ..Usage::default()
            },
            Usage {
                input_tokens: 1,
                output_tokens: u64::MAX,
                cache_write_tokens: u64::from(u32::MAX) + 5,
                reasoning_tokens: u64::MAX - 1,
                ..Usage::default()
            },
        ] {
            let kept = CallUsage::from(usage);
            assert_eq!(kept.to_usage(), usage);
            let json = serde_json::to_string(&kept).expect("writes");
            let back: CallUsage = serde_json::from_str(&json).expect("reads");
            assert_eq!(back.to_usage(), usage, "{json}");
        }
        // The largest count that fits stays in place.
        let edge = Usage {
            input_tokens: u64::from(u32::MAX),
            output_tokens: u64::from(u32::MAX),
            ..Usage::default()
        };
        let kept = CallUsage::from(edge);
        assert!(kept.wide.is_none());
        assert_eq!(kept.to_usage(), edge);
    }
}
