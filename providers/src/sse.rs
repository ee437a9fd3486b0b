//! Server-sent events: the framing every provider streams in.

/// One server-sent event: its `event:` name (if any) and its `data:` payload (lines joined
/// with `\n`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the provider sends none (OpenAI Chat, Gemini).
    pub event: String,
    /// The `data:` payload.
    pub data: String,
    /// The `id:` field, if any.
    pub id: Option<String>,
}
