//! A response body decoded as it arrives: bytes → SSE frames → the dialect's [`LlmEvent`]s,
//! within the size limits.
//!
//! Sans-IO, like the SSE decoder under it: the HTTP client feeds it each read, [`transcript`]
//! and the tests feed it slices, so a limit tested offline is the limit a live stream meets.
//!
//! [`transcript`]: crate::transcript

use crate::config::Limits;
use crate::decoder::StreamDecoder;
use crate::dialect::Dialect;
use crate::error::ProviderError;
use crate::event::LlmEvent;
use crate::sse::{SseDecoder, SseEvent};

/// Decodes one response body. Events come out through [`take_events`](Self::take_events);
/// after an error the decoder should be dropped (the events decoded before it stay readable).
///
/// ```
/// use motet_providers::{BodyDecoder, Dialect, Limits, LlmEvent};
///
/// let mut body = BodyDecoder::new(Dialect::OpenAiChat, Limits::default());
/// body.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n")?;
/// body.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")?;
/// body.finish()?;
/// let events = body.take_events();
/// assert!(matches!(&events[1], LlmEvent::TextDelta { delta, .. } if delta == "Hi"));
/// # Ok::<(), motet_providers::ProviderError>(())
/// ```
pub struct BodyDecoder {
    sse: SseDecoder,
    decoder: Box<dyn StreamDecoder>,
    frames: Vec<SseEvent>,
    events: Vec<LlmEvent>,
    /// What the events handed out so far hold ([`LlmEvent::held_bytes`]).
    handed_out: usize,
    max_response_bytes: usize,
}

impl std::fmt::Debug for BodyDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyDecoder")
            .field("handed_out", &self.handed_out)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

impl BodyDecoder {
    /// A decoder for one `dialect` response, held to `limits`, with the SSE decoder's default
    /// event cap.
    pub fn new(dialect: Dialect, limits: Limits) -> Self {
        Self {
            sse: SseDecoder::new(),
            decoder: dialect.decoder(),
            frames: Vec::new(),
            events: Vec::new(),
            handed_out: 0,
            max_response_bytes: limits.max_response_bytes,
        }
    }

    /// With this cap on one server-sent event (see [`SseDecoder::with_max_event_bytes`]).
    pub fn with_max_event_bytes(mut self, max: usize) -> Self {
        self.sse = SseDecoder::with_max_event_bytes(max);
        self
    }

    /// Feeds the next bytes of the body.
    ///
    /// # Errors
    /// The stream's own typed error, a [`ProviderError::Protocol`] for bytes that break the
    /// framing or the dialect, [`ProviderError::ResponseTooLarge`] past the response limit.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.sse.push(bytes, &mut self.frames)?;
        self.decode_frames()
    }

    /// Ends the body.
    ///
    /// A body that stops in the middle of a line may have cut its last event short: the SSE
    /// rules would drop that line without a word, and with it whatever it carried (OpenAI's
    /// usage chunk comes after the finish reason, so the answer would look whole without it).
    /// The line is read as if it had ended instead; if its event is then not what the dialect
    /// expects (JSON cut in half), the stream was truncated. A last line that is whole but for
    /// its line end (`data: [DONE]` with nothing after it) loses nothing and is read as sent.
    ///
    /// # Errors
    /// As [`push`](Self::push), and [`ProviderError::StreamTruncated`] when the dialect's
    /// terminator or finish reason never came, or the body ended inside an event.
    pub fn finish(&mut self) -> Result<(), ProviderError> {
        let cut = self.sse.has_unfinished_line();
        match self.decode_last_frames(cut) {
            Err(ProviderError::Protocol { message }) if cut => {
                return Err(ProviderError::StreamTruncated {
                    reason: format!("the stream ended inside its last event ({message})"),
                });
            }
            other => other?,
        }
        let from = self.events.len();
        self.decoder.finish(&mut self.events)?;
        self.charge(from)
    }

    /// The events decoded since the last call.
    pub fn take_events(&mut self) -> Vec<LlmEvent> {
        std::mem::take(&mut self.events)
    }

    /// The bytes counted against [`Limits::max_response_bytes`] now: what the events handed
    /// out hold (text, reasoning, arguments, and the names, ids and provider meta of their
    /// blocks, with a fixed cost per block), and what the dialect's decoder holds for blocks
    /// still open.
    pub fn held_bytes(&self) -> usize {
        self.handed_out.saturating_add(self.decoder.held_bytes())
    }

    /// Ends the SSE framing (a `cut` last line read as if it had ended) and decodes what it
    /// held.
    fn decode_last_frames(&mut self, cut: bool) -> Result<(), ProviderError> {
        if cut {
            self.sse.push(b"\n", &mut self.frames)?;
        }
        self.sse.finish(&mut self.frames)?;
        self.decode_frames()
    }

    fn decode_frames(&mut self) -> Result<(), ProviderError> {
        // Taken out so the loop can charge `self`; put back to keep its allocation.
        let mut frames = std::mem::take(&mut self.frames);
        for frame in frames.drain(..) {
            let from = self.events.len();
            self.decoder.decode(&frame, &mut self.events)?;
            self.charge(from)?;
        }
        self.frames = frames;
        Ok(())
    }

    /// Counts the events from `from` on, and what the decoder holds now, against the limit.
    fn charge(&mut self, from: usize) -> Result<(), ProviderError> {
        self.handed_out = self.events[from..]
            .iter()
            .fold(self.handed_out, |sum, e| sum.saturating_add(e.held_bytes()));
        if self.held_bytes() > self.max_response_bytes {
            return Err(ProviderError::ResponseTooLarge {
                limit: self.max_response_bytes,
            });
        }
        Ok(())
    }
}
