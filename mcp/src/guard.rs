//! The stdio server's output as read by the MCP transport, cut off at the first message it
//! could not read: one longer than the answer limit, or nested deeper than serde_json reads.
//!
//! rmcp's line transport drops such a line (an overlong one is discarded, a too-deep one fails
//! to parse and is skipped as garbage) and keeps the connection open, so the request it
//! answered would wait out its time limit. Ending the stream there instead closes the
//! connection at once: every waiting request fails, and the client reports the [`Fault`]
//! recorded here rather than a bare "connection closed".

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// The deepest nesting of arrays and objects in one message that is read: serde_json refuses
/// a 128th level, and rmcp would then skip the message as garbage.
pub const MAX_ANSWER_DEPTH: usize = 127;

/// Why the stream was cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// A line longer than the limit.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A line nested deeper than [`MAX_ANSWER_DEPTH`].
    TooDeep,
}

/// Where a reader records its [`Fault`], for the client to read after the connection closed.
#[derive(Clone, Default)]
pub(crate) struct FaultSlot(Arc<Mutex<Option<Fault>>>);

impl FaultSlot {
    /// The fault, if the stream was cut off.
    pub(crate) fn get(&self) -> Option<Fault> {
        match self.0.lock() {
            Ok(fault) => *fault,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    fn set(&self, fault: Fault) {
        match self.0.lock() {
            Ok(mut slot) => *slot = Some(fault),
            Err(poisoned) => *poisoned.into_inner() = Some(fault),
        }
    }
}

/// Follows the JSON lines passing through, without parsing them: the length of the current
/// line and how deep it is nested (brackets inside strings do not count).
#[derive(Debug, Default)]
struct LineScan {
    len: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl LineScan {
    /// Scans `bytes`; the first fault and the offset of the byte where it showed.
    fn scan(&mut self, bytes: &[u8], limit: usize) -> Option<(usize, Fault)> {
        for (at, &byte) in bytes.iter().enumerate() {
            if byte == b'\n' {
                // A newline cannot be inside a JSON string: whatever came before is over.
                *self = Self::default();
                continue;
            }
            self.len += 1;
            if self.len > limit {
                return Some((at, Fault::TooLarge { limit }));
            }
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > MAX_ANSWER_DEPTH {
                        return Some((at, Fault::TooDeep));
                    }
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        None
    }
}

/// A reader that passes `inner` through until a line is too long or too deep, then keeps the
/// whole lines before it and reads as ended.
pub(crate) struct GuardedReader<R> {
    inner: R,
    limit: usize,
    scan: LineScan,
    fault: FaultSlot,
    ended: bool,
}

impl<R> GuardedReader<R> {
    /// Guards `inner`, allowing lines of up to `limit` bytes (the newline not counted).
    pub(crate) fn new(inner: R, limit: usize, fault: FaultSlot) -> Self {
        Self {
            inner,
            limit,
            scan: LineScan::default(),
            fault,
            ended: false,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for GuardedReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let fresh = &buf.filled()[before..];
        if let Some((at, fault)) = this.scan.scan(fresh, this.limit) {
            // The complete lines before the faulty one still reach the transport.
            let keep = fresh[..at]
                .iter()
                .rposition(|&byte| byte == b'\n')
                .map_or(0, |newline| newline + 1);
            buf.set_filled(before + keep);
            this.ended = true;
            this.fault.set(fault);
            tracing::warn!("mcp server output cut off: {fault:?}");
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// The whole lines read through the guard, and its fault. (The start of the faulty line
    /// may have passed in an earlier read; a transport drops it at the end of the stream.)
    async fn read_all(input: &[u8], limit: usize) -> (Vec<u8>, Option<Fault>) {
        let slot = FaultSlot::default();
        let mut reader = GuardedReader::new(input, limit, slot.clone());
        let mut out = Vec::new();
        let read = reader.read_to_end(&mut out).await;
        assert!(read.is_ok());
        let whole = out.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
        out.truncate(whole);
        (out, slot.get())
    }

    #[tokio::test]
    async fn lines_within_the_limits_pass_untouched() {
        let input = b"{\"a\":[1,{\"b\":\"[[[[{{{\"}]}\n\"\\\"[\"\nnot json {{{ ]]]\n";
        assert_eq!(read_all(input, 64).await, (input.to_vec(), None));
    }

    #[tokio::test]
    async fn a_long_line_ends_the_stream_after_the_lines_before_it() {
        let input = b"{\"ok\":1}\n{\"x\":\"0123456789\"}\n{}\n";
        let (out, fault) = read_all(input, 12).await;
        assert_eq!(out, b"{\"ok\":1}\n");
        assert_eq!(fault, Some(Fault::TooLarge { limit: 12 }));
    }

    #[tokio::test]
    async fn deep_nesting_ends_the_stream_but_brackets_in_strings_do_not() {
        let deep = format!(
            "{{}}\n{}{}\n",
            "[".repeat(MAX_ANSWER_DEPTH + 1),
            "]".repeat(MAX_ANSWER_DEPTH + 1)
        );
        let (out, fault) = read_all(deep.as_bytes(), usize::MAX).await;
        assert_eq!(
            (out.as_slice(), fault),
            (&b"{}\n"[..], Some(Fault::TooDeep))
        );

        let fits = format!(
            "{}\"{}\"{}\n",
            "[".repeat(MAX_ANSWER_DEPTH),
            "[".repeat(500),
            "]".repeat(MAX_ANSWER_DEPTH)
        );
        assert_eq!(read_all(fits.as_bytes(), usize::MAX).await.1, None);
    }

    #[tokio::test]
    async fn what_serde_json_reads_the_guard_lets_through() {
        let at_limit = format!(
            "{}{}",
            "[".repeat(MAX_ANSWER_DEPTH),
            "]".repeat(MAX_ANSWER_DEPTH)
        );
        assert!(serde_json::from_str::<serde_json::Value>(&at_limit).is_ok());
        let over = format!("[{at_limit}]");
        assert!(serde_json::from_str::<serde_json::Value>(&over).is_err());
    }
}
