//! Server-sent events: the framing every provider streams in.
//!
//! [`SseDecoder`] is an incremental parser of the WHATWG event-stream format: bytes go in as
//! they arrive, whole events come out. It accepts LF, CR and CRLF line ends (Gemini sends
//! CRLF), a line end split across reads, a leading byte-order mark, `:` comments, and UTF-8
//! characters split across reads. Each byte is scanned once, so a multi-megabyte `data:` line
//! arriving in a thousand pieces costs what it would cost whole (docs/sse.md has the
//! measurements that led us to write it instead of using eventsource-stream).

use crate::error::ProviderError;

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

/// The largest event the decoder accepts by default: 64 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 64 << 20;

/// An incremental SSE parser. One per response stream.
///
/// ```
/// use motet_providers::sse::SseDecoder;
///
/// let mut decoder = SseDecoder::new();
/// let mut events = Vec::new();
/// decoder.push(b"event: ping\r\ndata: {\"a\":", &mut events)?;
/// decoder.push(b"1}\r\n\r\n", &mut events)?;
/// decoder.finish(&mut events)?;
/// assert_eq!(events[0].event, "ping");
/// assert_eq!(events[0].data, r#"{"a":1}"#);
/// # Ok::<(), motet_providers::ProviderError>(())
/// ```
#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes of the line being read (no line end).
    line: Vec<u8>,
    /// The last byte consumed was a CR: an LF right after it belongs to the same line end.
    after_cr: bool,
    /// Still at the very start of the stream (a BOM may come).
    at_start: bool,
    /// Fields of the event being built.
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
    /// The most bytes the event being built may hold: its `data` so far plus the line being read.
    max_event_bytes: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default event size cap ([`DEFAULT_MAX_EVENT_BYTES`]).
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder that rejects events larger than `max` bytes with a protocol error instead of
    /// buffering without bound.
    pub fn with_max_event_bytes(max: usize) -> Self {
        Self {
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            event: String::new(),
            data: String::new(),
            has_data: false,
            id: None,
            max_event_bytes: max,
        }
    }

    /// Feeds the next bytes of the stream; complete events are pushed to `out`.
    ///
    /// # Errors
    /// [`ProviderError::Protocol`] when a line is not UTF-8 or an event outgrows the cap.
    /// After an error the decoder should be dropped.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        if self.at_start && !chunk.is_empty() {
            // The BOM may itself arrive split; hold the first bytes until we can tell.
            let held = self.line.len();
            let bom = b"\xEF\xBB\xBF";
            let want = bom.len() - held;
            let take = want.min(chunk.len());
            if bom[held..held + take] == chunk[..take] {
                if held + take == bom.len() {
                    self.line.clear();
                    self.at_start = false;
                } else {
                    self.line.extend_from_slice(&chunk[..take]);
                }
                chunk = &chunk[take..];
            } else {
                self.at_start = false;
            }
            if self.at_start {
                return Ok(());
            }
        }
        if chunk.is_empty() {
            return Ok(());
        }
        if self.after_cr && chunk[0] == b'\n' {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            if self.line.is_empty() {
                self.dispatch_line(&chunk[..end], out)?;
            } else {
                self.grow(&chunk[..end])?;
                let line = std::mem::take(&mut self.line);
                self.dispatch_line(&line, out)?;
                self.line = line;
                self.line.clear();
            }
            let cr = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.grow(chunk)
    }

    /// Ends the stream. A last event not followed by a blank line is still delivered when its
    /// last line ended (providers close the connection right after their final event); a line
    /// cut off in the middle is discarded, as the SSE specification says.
    ///
    /// # Errors
    /// [`ProviderError::Protocol`] when the held bytes are not UTF-8.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        self.line.clear();
        self.at_start = false;
        self.dispatch_event(out);
        Ok(())
    }

    /// Whether bytes of an unfinished line or event are held.
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data || !self.event.is_empty()
    }

    /// Whether bytes of a line that has not ended are held: at the end of a body, the body
    /// stopped in the middle of a line (and [`finish`](Self::finish) would discard it).
    pub fn has_unfinished_line(&self) -> bool {
        !self.line.is_empty()
    }

    fn grow(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.check_size(self.line.len() + bytes.len())?;
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Refuses a line of `line_len` bytes that would take the event past the cap. Every line
    /// is measured whole, whether it arrived in one read or was gathered in `line` from
    /// several: the same stream is refused however it was cut.
    fn check_size(&self, line_len: usize) -> Result<(), ProviderError> {
        if self.data.len().saturating_add(line_len) > self.max_event_bytes {
            return Err(ProviderError::Protocol {
                message: format!(
                    "a server-sent event is larger than the {} byte limit",
                    self.max_event_bytes
                ),
            });
        }
        Ok(())
    }

    fn dispatch_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        self.check_size(line.len())?;
        if line.is_empty() {
            self.dispatch_event(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = std::str::from_utf8(value).map_err(|_| ProviderError::Protocol {
            message: "a server-sent event line is not valid UTF-8".to_owned(),
        })?;
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            b"event" => value.clone_into(&mut self.event),
            b"id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            // `retry` and unknown fields do not concern a one-shot response stream.
            _ => {}
        }
        Ok(())
    }

    fn dispatch_event(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
                id: self.id.clone(),
            });
        } else {
            self.event.clear();
        }
        self.has_data = false;
    }
}
