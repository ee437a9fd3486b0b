//! What a node link puts on NATS (pure): the `Motet-Link` headers of each message, read back
//! without trusting them, and the caller's check of the frames' sequence.

use async_nats::HeaderMap;
use async_nats::StatusCode;

/// The header naming what a link message is.
pub(crate) const KIND: &str = "Motet-Link";
/// The header carrying a frame's sequence number (from 0), or at the end the count of frames.
pub(crate) const SEQ: &str = "Motet-Link-Seq";

/// What one link message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request, its reply subject the caller's inbox.
    Call,
    /// A one-way message.
    Tell,
    /// The listener took the call (sent at once, before the handler runs).
    Accept,
    /// A keep-alive: the callee's replier still lives.
    Alive,
    /// Reply frame number `seq`.
    Frame(u64),
    /// The callee finished after `count` frames.
    End(u64),
    /// The callee dropped its replier without finishing.
    Broken,
    /// The listener stopped before it could take the call.
    Gone,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Call => "call",
            Self::Tell => "tell",
            Self::Accept => "accept",
            Self::Alive => "alive",
            Self::Frame(_) => "frame",
            Self::End(_) => "end",
            Self::Broken => "broken",
            Self::Gone => "gone",
        }
    }

    /// The headers that say it.
    pub(crate) fn headers(self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(KIND, self.name());
        if let Self::Frame(n) | Self::End(n) = self {
            headers.insert(SEQ, n.to_string().as_str());
        }
        headers
    }
}

/// What a message on a caller's inbox or a listener's subject is, from its status and headers.
/// Anything else is an error saying why, never a panic.
pub(crate) fn read(
    status: Option<StatusCode>,
    headers: Option<&HeaderMap>,
) -> Result<Kind, String> {
    if let Some(status) = status {
        return Err(format!("status {status}"));
    }
    let headers = headers.ok_or("no headers")?;
    let kind = headers
        .get(KIND)
        .ok_or_else(|| format!("no {KIND} header"))?
        .as_str();
    let seq = || -> Result<u64, String> {
        let value = headers.get(SEQ).ok_or_else(|| format!("no {SEQ} header"))?;
        value
            .as_str()
            .parse()
            .map_err(|_| format!("{SEQ} {:?} is not a sequence number", value.as_str()))
    };
    Ok(match kind {
        "call" => Kind::Call,
        "tell" => Kind::Tell,
        "accept" => Kind::Accept,
        "alive" => Kind::Alive,
        "frame" => Kind::Frame(seq()?),
        "end" => Kind::End(seq()?),
        "broken" => Kind::Broken,
        "gone" => Kind::Gone,
        other => return Err(format!("unknown {KIND} {other:?}")),
    })
}

/// The bytes `headers` add to a message on the wire (`NATS/1.0\r\n`, a line per value, a
/// blank line), which the server counts against its max_payload.
pub(crate) fn headers_len(headers: &HeaderMap) -> usize {
    let lines: usize = headers
        .iter()
        .map(|(name, values)| {
            values
                .iter()
                .map(|v| AsRef::<str>::as_ref(name).len() + 2 + v.as_str().len() + 2)
                .sum::<usize>()
        })
        .sum();
    "NATS/1.0\r\n".len() + lines + 2
}

/// What the caller makes of the next message of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing for the caller (an accept, a keep-alive): keep waiting.
    Wait,
    /// A frame to hand over.
    Frame,
    /// The call ended cleanly.
    End,
    /// The callee gave up.
    Broken,
    /// A frame is missing: `expected` was next, `got` came.
    Lost { expected: u64, got: u64 },
}

/// The caller's count of the frames of one call.
#[derive(Debug, Default)]
pub(crate) struct Sequence {
    next: u64,
}

impl Sequence {
    /// Takes the next message's kind.
    pub(crate) fn take(&mut self, kind: Kind) -> Step {
        match kind {
            Kind::Accept | Kind::Alive | Kind::Call | Kind::Tell => Step::Wait,
            Kind::Frame(seq) if seq == self.next => {
                self.next += 1;
                Step::Frame
            }
            Kind::End(count) if count == self.next => Step::End,
            Kind::Frame(got) | Kind::End(got) => Step::Lost {
                expected: self.next,
                got,
            },
            // `gone` answers a call instead of `accept`; after one it can only be a stop.
            Kind::Broken | Kind::Gone => Step::Broken,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back() {
        for kind in [
            Kind::Call,
            Kind::Tell,
            Kind::Accept,
            Kind::Alive,
            Kind::Frame(0),
            Kind::Frame(u64::MAX),
            Kind::End(7),
            Kind::Broken,
            Kind::Gone,
        ] {
            assert_eq!(read(None, Some(&kind.headers())), Ok(kind));
        }
    }

    #[test]
    fn bad_messages_are_errors() {
        let mut no_seq = HeaderMap::new();
        no_seq.insert(KIND, "frame");
        let mut bad_seq = Kind::Frame(1).headers();
        bad_seq.insert(SEQ, "-1");
        let mut unknown = HeaderMap::new();
        unknown.insert(KIND, "gossip");
        for headers in [
            Some(&no_seq),
            Some(&bad_seq),
            Some(&unknown),
            Some(&HeaderMap::new()),
            None,
        ] {
            assert!(read(None, headers).is_err(), "{headers:?}");
        }
        assert_eq!(
            read(
                Some(StatusCode::NO_RESPONDERS),
                Some(&Kind::Accept.headers())
            ),
            Err("status 503".to_owned())
        );
    }

    #[test]
    fn header_length_is_what_the_server_counts() {
        // NATS/1.0\r\n + "Motet-Link: frame\r\n" + "Motet-Link-Seq: 12\r\n" + \r\n
        assert_eq!(headers_len(&Kind::Frame(12).headers()), 10 + 19 + 20 + 2);
    }

    #[test]
    fn a_sequence_takes_frames_in_order_and_sees_gaps() {
        let mut seq = Sequence::default();
        assert_eq!(seq.take(Kind::Accept), Step::Wait);
        assert_eq!(seq.take(Kind::Frame(0)), Step::Frame);
        assert_eq!(seq.take(Kind::Alive), Step::Wait);
        assert_eq!(seq.take(Kind::Frame(1)), Step::Frame);
        assert_eq!(
            seq.take(Kind::Frame(3)),
            Step::Lost {
                expected: 2,
                got: 3
            }
        );
        let mut seq = Sequence::default();
        assert_eq!(seq.take(Kind::Frame(0)), Step::Frame);
        assert_eq!(
            seq.take(Kind::End(2)),
            Step::Lost {
                expected: 1,
                got: 2
            }
        );
        let mut seq = Sequence::default();
        assert_eq!(seq.take(Kind::Frame(0)), Step::Frame);
        assert_eq!(seq.take(Kind::End(1)), Step::End);
        assert_eq!(Sequence::default().take(Kind::Broken), Step::Broken);
    }
}
