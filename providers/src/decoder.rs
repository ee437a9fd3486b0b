//! The contract between SSE framing and one provider dialect.

use crate::error::ProviderError;
use crate::event::LlmEvent;
use crate::sse::SseEvent;

/// Turns one dialect's SSE events into [`LlmEvent`]s. One decoder per response stream.
pub trait StreamDecoder: Send {
    /// Decodes one SSE event, pushing zero or more events to `out`. Keep-alives, pings and
    /// unknown event types produce nothing. A provider error event is returned as `Err`.
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError>;

    /// Called when the byte stream ends. Returns [`ProviderError::StreamTruncated`] when the
    /// dialect's terminator or finish reason never came; may push a final event.
    fn finish(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError>;

    /// The bytes the decoder itself holds for blocks not yet handed out whole (a signature
    /// gathered until its block stops, a record per open block or item), measured as
    /// [`LlmEvent`]s are, in O(1). It counts against the response limit with the events, so a
    /// stream cannot grow the decoder instead of the response. Default 0: nothing held.
    fn held_bytes(&self) -> usize {
        0
    }
}
