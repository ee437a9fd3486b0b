//! Stream decoding (placeholder).

use crate::decoder::StreamDecoder;
use crate::error::ProviderError;
use crate::event::LlmEvent;
use crate::sse::SseEvent;

/// Decodes one response stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder;

impl Decoder {
    pub(crate) fn new() -> Self {
        Self
    }
}

impl StreamDecoder for Decoder {
    fn decode(&mut self, _event: &SseEvent, _out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        Err(ProviderError::StreamTruncated {
            reason: "dialect not yet available".to_owned(),
        })
    }
}
