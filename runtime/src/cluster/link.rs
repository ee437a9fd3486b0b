//! Node links: one node calls another and the answer comes back as a stream of frames.
//!
//! An ask made on one node for an agent active on another travels as a call over a [`Link`];
//! the owner's answer, its streamed deltas and its "waiting for a person" notices come back as
//! the call's frames, in order. The link moves bytes only: what the frames say is the
//! runtime's business.
//!
//! What every implementation promises (docs/bus.md, "Node links"):
//! - a call to an address nobody listens at fails at once with [`LinkError::NoListener`];
//! - frames arrive in the order the callee sent them, or the caller sees [`LinkError::Lost`];
//! - a callee that drops its [`Replier`] without [`Replier::finish`] makes the caller see
//!   [`LinkError::Broken`];
//! - while a [`Replier`] lives, the callee's side sends keep-alives the caller never sees, so a
//!   call may last minutes; nothing at all for [`LinkConfig::silence`] means the callee's node
//!   died or is cut off: [`LinkError::Silent`];
//! - a request or frame the transport cannot carry is [`LinkError::TooLarge`] for its sender,
//!   never a silent drop.
//!
//! [`LocalLink`] is the in-process implementation; `motet_jetstream::NatsLink` the one between
//! processes.

mod local;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

pub use local::LocalLink;

/// Why a call, a frame or a listener failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// Nobody listens at the address called.
    #[error("no node listens at {to}")]
    NoListener {
        /// The address called.
        to: String,
    },
    /// The transport itself failed (the server cannot be reached, refused a subscription).
    #[error("link unavailable: {reason}")]
    Unavailable {
        /// What failed.
        reason: String,
    },
    /// Nothing, not even a keep-alive, came from the callee for the silence limit: its node
    /// died or is cut off.
    #[error("{to} sent nothing for {after:?}")]
    Silent {
        /// The address called.
        to: String,
        /// The silence limit that passed.
        after: Duration,
    },
    /// The callee dropped its replier without finishing the call.
    #[error("{to} dropped the call without finishing it")]
    Broken {
        /// The address called.
        to: String,
    },
    /// Frames were lost on the way: the next frame to come was not the one expected.
    #[error("frames lost: expected frame {expected}, got {got}")]
    Lost {
        /// The sequence number expected.
        expected: u64,
        /// The sequence number that came.
        got: u64,
    },
    /// A request or frame is larger than the transport carries.
    #[error("{size} bytes is over the link's limit of {max} bytes")]
    TooLarge {
        /// Its size on the wire, in bytes.
        size: usize,
        /// The most the transport carries, in bytes.
        max: usize,
    },
    /// A message on the link that is not one of its frames (bad or missing headers).
    #[error("bad frame from {to}: {reason}")]
    Malformed {
        /// The address called.
        to: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An address that cannot be one (see [`check_address`]).
    #[error("bad link address {address:?}: {reason}")]
    BadAddress {
        /// The address given.
        address: String,
        /// Why it cannot be one.
        reason: &'static str,
    },
    /// This link already listens at the address.
    #[error("already listening at {address}")]
    AddressInUse {
        /// The address given.
        address: String,
    },
}

/// Checks that `address` can name a listener: 1 to 128 characters among ASCII letters, digits,
/// `-`, `_` and `.`, with no empty segment between dots (it becomes part of a NATS subject, and
/// `*`, `>` or spaces there would mean something else).
///
/// # Errors
/// [`LinkError::BadAddress`] saying why not.
pub fn check_address(address: &str) -> Result<(), LinkError> {
    let bad = |reason| {
        Err(LinkError::BadAddress {
            address: address.to_owned(),
            reason,
        })
    };
    if address.is_empty() || address.len() > 128 {
        return bad("it must be 1 to 128 characters long");
    }
    if !address
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return bad("only ASCII letters, digits, '-', '_' and '.' are allowed");
    }
    if address.split('.').any(str::is_empty) {
        return bad("a '.' must sit between two non-empty parts");
    }
    Ok(())
}

/// How a link paces its keep-alives and when it gives up on a silent callee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkConfig {
    /// How often the callee's side sends a keep-alive while a replier lives (default 1 s).
    pub keep_alive: Duration,
    /// How long a caller waits for anything from the callee before [`LinkError::Silent`]
    /// (default 5 s). Keep it several keep-alive periods long.
    pub silence: Duration,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            keep_alive: Duration::from_secs(1),
            silence: Duration::from_secs(5),
        }
    }
}

impl LinkConfig {
    /// The defaults: a keep-alive every second, silent after five.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// With keep-alives every `period`.
    #[must_use]
    pub fn with_keep_alive(mut self, period: Duration) -> Self {
        self.keep_alive = period;
        self
    }

    /// With callers giving up after `limit` without anything from the callee.
    #[must_use]
    pub fn with_silence(mut self, limit: Duration) -> Self {
        self.silence = limit;
        self
    }
}

/// A transport between nodes: calls with a streamed reply, one-way tells, and listeners.
/// Object safe: the runtime holds an `Arc<dyn Link>`.
#[async_trait]
pub trait Link: Send + Sync + fmt::Debug {
    /// Sends `request` to the listener at `to`; its reply frames come back through the
    /// returned [`Frames`], in order.
    ///
    /// # Errors
    /// [`LinkError::NoListener`] at once when nobody listens at `to`;
    /// [`LinkError::TooLarge`] for a request the transport cannot carry;
    /// [`LinkError::Silent`] when the listener does not take the call within the silence
    /// limit; [`LinkError::BadAddress`], [`LinkError::Unavailable`].
    async fn call(&self, to: &str, request: Bytes) -> Result<Frames, LinkError>;

    /// Sends `message` one way to the listener at `to`, best effort: nobody listening is not
    /// an error, and nothing says whether it arrived (cancels use it).
    ///
    /// # Errors
    /// [`LinkError::TooLarge`], [`LinkError::BadAddress`], [`LinkError::Unavailable`].
    async fn tell(&self, to: &str, message: Bytes) -> Result<(), LinkError>;

    /// Serves the calls and tells addressed to `address` with `handler`, until the returned
    /// [`Listening`] is dropped; calls still running then end, and their callers see
    /// [`LinkError::Broken`].
    ///
    /// # Errors
    /// [`LinkError::BadAddress`], [`LinkError::AddressInUse`], [`LinkError::Unavailable`].
    async fn listen(
        &self,
        address: &str,
        handler: Arc<dyn Handler>,
    ) -> Result<Listening, LinkError>;
}

/// What a listener does with what arrives at its address. Each call and tell runs on a task
/// of its own, so a handler may take its time.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Answers one call: any number of [`Replier::send`], then [`Replier::finish`]. Returning
    /// without finishing makes the caller see [`LinkError::Broken`].
    async fn call(&self, request: Bytes, replier: Replier);

    /// Takes one tell. Ignores it unless overridden.
    async fn tell(&self, message: Bytes) {
        let _ = message;
    }
}

/// Where a call's frames come from, as an implementation provides them; callers use
/// [`Frames`].
#[async_trait]
pub trait FrameSource: Send {
    /// The next frame; `None` once the callee finished; an error when the call failed.
    async fn next(&mut self) -> Option<Result<Bytes, LinkError>>;
}

/// The reply frames of one call, in the order the callee sent them. Dropping it stops
/// listening for them.
pub struct Frames {
    source: Box<dyn FrameSource>,
    ended: bool,
}

impl fmt::Debug for Frames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frames")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Frames {
    /// Frames read from `source`.
    pub fn new(source: impl FrameSource + 'static) -> Self {
        Self {
            source: Box::new(source),
            ended: false,
        }
    }

    /// The next frame: `None` once the callee finished cleanly; an error when frames were
    /// lost ([`LinkError::Lost`]), the callee gave up ([`LinkError::Broken`]) or went silent
    /// ([`LinkError::Silent`]). After `None` or an error, always `None`.
    pub async fn next(&mut self) -> Option<Result<Bytes, LinkError>> {
        if self.ended {
            return None;
        }
        let next = self.source.next().await;
        if !matches!(next, Some(Ok(_))) {
            self.ended = true;
        }
        next
    }

    /// Every remaining frame, until the callee finishes.
    ///
    /// # Errors
    /// The first error [`Frames::next`] gives.
    pub async fn collect(mut self) -> Result<Vec<Bytes>, LinkError> {
        let mut frames = Vec::new();
        while let Some(frame) = self.next().await {
            frames.push(frame?);
        }
        Ok(frames)
    }
}

/// The callee's side of one call, as an implementation provides it; handlers use
/// [`Replier`]. Dropping it without `finish` must make the caller see [`LinkError::Broken`].
#[async_trait]
pub trait ReplySink: Send {
    /// Sends one frame.
    async fn send(&mut self, frame: Bytes) -> Result<(), LinkError>;
    /// Ends the call cleanly.
    async fn finish(self: Box<Self>) -> Result<(), LinkError>;
}

/// The callee's side of one call: its frames go back to the caller in order. Dropped without
/// [`Replier::finish`], the caller sees [`LinkError::Broken`].
pub struct Replier {
    sink: Box<dyn ReplySink>,
}

impl fmt::Debug for Replier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replier").finish_non_exhaustive()
    }
}

impl Replier {
    /// A replier sending through `sink`.
    pub fn new(sink: impl ReplySink + 'static) -> Self {
        Self {
            sink: Box::new(sink),
        }
    }

    /// Sends one frame; it reaches the caller after every frame sent before it.
    ///
    /// # Errors
    /// [`LinkError::TooLarge`] for a frame the transport cannot carry (the call goes on: a
    /// smaller frame may follow); [`LinkError::Unavailable`] when the transport failed.
    pub async fn send(&mut self, frame: impl Into<Bytes> + Send) -> Result<(), LinkError> {
        self.sink.send(frame.into()).await
    }

    /// Ends the call: the caller's [`Frames::next`] gives `None` after the last frame.
    ///
    /// # Errors
    /// [`LinkError::Unavailable`] when the end could not be sent.
    pub async fn finish(self) -> Result<(), LinkError> {
        self.sink.finish().await
    }
}

/// A listener at an address; it stops serving when dropped.
pub struct Listening {
    address: String,
    stop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl fmt::Debug for Listening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listening")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Listening {
    /// A listener at `address` that runs `stop` when dropped.
    pub fn new(address: impl Into<String>, stop: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self {
            address: address.into(),
            stop: Some(Box::new(stop)),
        }
    }

    /// The address it listens at.
    pub fn address(&self) -> &str {
        &self.address
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop();
        }
    }
}

/// Resolves when `stopped`'s sender is dropped: the listener a call or tell came through
/// stopped. Implementations race each handler against it.
pub async fn listener_stopped(mut stopped: tokio::sync::watch::Receiver<()>) {
    while stopped.changed().await.is_ok() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_subject_safe() {
        for good in ["node-a", "n1", "eu.node_7", "A.b.C"] {
            assert_eq!(check_address(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "a b",
            "a.*",
            ">",
            "a..b",
            ".a",
            "a.",
            "nœud",
            &"x".repeat(129),
        ] {
            assert!(
                matches!(check_address(bad), Err(LinkError::BadAddress { .. })),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn errors_read_well() {
        let silent = LinkError::Silent {
            to: "node-b".into(),
            after: Duration::from_secs(5),
        };
        assert_eq!(silent.to_string(), "node-b sent nothing for 5s");
        let lost = LinkError::Lost {
            expected: 3,
            got: 5,
        };
        assert_eq!(lost.to_string(), "frames lost: expected frame 3, got 5");
    }

    #[test]
    fn config_builders_set_what_they_say() {
        let config = LinkConfig::new()
            .with_keep_alive(Duration::from_millis(100))
            .with_silence(Duration::from_millis(700));
        assert_eq!(config.keep_alive, Duration::from_millis(100));
        assert_eq!(config.silence, Duration::from_millis(700));
        assert_eq!(LinkConfig::default().silence, Duration::from_secs(5));
    }
}
