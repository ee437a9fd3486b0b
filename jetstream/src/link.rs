//! [`NatsLink`]: node links on core NATS — a call with a streamed reply, tells, listeners
//! ([`Link`]; docs/bus.md, "Node links").
//!
//! A call: the caller subscribes a fresh inbox and publishes the request to
//! `<prefix>.<address>` with the inbox as its reply subject. With nobody subscribed there, the
//! server answers at once with a 503 status (no responders): [`LinkError::NoListener`]. The
//! listener answers `accept` at once, then the handler's frames (`frame`, numbered from 0), then
//! `end` with the count of frames, or `broken` when the replier was dropped; `alive` every
//! keep-alive period while the replier lives. The `Motet-Link` header says which; NATS keeps the
//! order of one publisher's messages, so a gap in the numbers is a lost frame.

mod wire;

use std::sync::Arc;
use std::time::Duration;

use async_nats::client::{PublishErrorKind, RequestErrorKind};
use async_nats::{Client, HeaderMap, Subscriber};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use motet_runtime::cluster::link::{
    FrameSource, Frames, Handler, Link, LinkConfig, LinkError, Listening, Replier, ReplySink,
    check_address, listener_stopped,
};
use tokio::sync::{oneshot, watch};

use crate::url::Credentials;
use wire::{Kind, Sequence, Step};

/// The subject prefix links use unless told otherwise: calls to `node-b` go to
/// `motet.link.node-b`.
pub const LINK_PREFIX: &str = "motet.link";

/// The queue group every listener joins: were two processes to listen at one address, each
/// call would still reach one of them, never both.
const QUEUE_GROUP: &str = "motet-link";

/// Node links on core NATS (see the module docs). Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct NatsLink {
    client: Client,
    config: LinkConfig,
    prefix: Arc<str>,
}

impl std::fmt::Debug for NatsLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsLink")
            .field("prefix", &self.prefix)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn unavailable(reason: impl std::fmt::Display) -> LinkError {
    LinkError::Unavailable {
        reason: reason.to_string(),
    }
}

impl NatsLink {
    /// A link over `client`, with the default [`LinkConfig`] and [`LINK_PREFIX`].
    pub fn new(client: Client) -> Self {
        Self {
            client,
            config: LinkConfig::default(),
            prefix: Arc::from(LINK_PREFIX),
        }
    }

    /// Connects to the NATS server at `url` (several comma-separated allowed). Credentials in
    /// the URL (`nats://user:password@host`, `nats://token@host`) are handed to the client
    /// apart, and errors show the URL masked.
    ///
    /// # Errors
    /// [`LinkError::Unavailable`] when the server cannot be reached within `timeout`.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, LinkError> {
        let split = crate::url::split(url);
        let mut options = async_nats::ConnectOptions::new();
        match split.credentials {
            Some(Credentials::UserPassword { user, password }) => {
                options = options.user_and_password(user, password);
            }
            Some(Credentials::Token(token)) => options = options.token(token),
            None => {}
        }
        let client = options
            .name("motet-link")
            .connection_timeout(timeout)
            .connect(split.servers.as_str())
            .await
            .map_err(|e| {
                let shown = crate::url::redact(url);
                unavailable(format!("connecting to {shown}: {e}"))
            })?;
        Ok(Self::new(client))
    }

    /// With keep-alives and the silence limit of `config`.
    #[must_use]
    pub fn with_config(mut self, config: LinkConfig) -> Self {
        self.config = config;
        self
    }

    /// With calls published under `prefix` (one or more subject tokens) instead of
    /// [`LINK_PREFIX`]: links with different prefixes do not hear each other.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Arc::from(prefix.into());
        self
    }

    /// The client underneath.
    pub fn get_ref(&self) -> &Client {
        &self.client
    }

    /// The settings it runs with.
    pub fn config(&self) -> LinkConfig {
        self.config
    }

    fn subject(&self, address: &str) -> Result<String, LinkError> {
        check_address(address)?;
        Ok(format!("{}.{address}", self.prefix))
    }
}

/// Publishes one link message, its size checked first against the server's max_payload.
async fn publish(
    client: &Client,
    subject: &str,
    reply: Option<&str>,
    kind: Kind,
    payload: Bytes,
) -> Result<(), LinkError> {
    let headers = kind.headers();
    let size = payload_size(&headers, payload.len());
    let max = client.max_payload();
    if size > max {
        return Err(LinkError::TooLarge { size, max });
    }
    let sent = match reply {
        Some(reply) => {
            client
                .publish_with_reply_and_headers(
                    subject.to_owned(),
                    reply.to_owned(),
                    headers,
                    payload,
                )
                .await
        }
        None => {
            client
                .publish_with_headers(subject.to_owned(), headers, payload)
                .await
        }
    };
    sent.map_err(|e| match e.kind() {
        // The client counts as the server does; only a max_payload lowered since our check
        // gets here.
        PublishErrorKind::MaxPayloadExceeded => LinkError::TooLarge {
            size,
            max: client.max_payload(),
        },
        _ => unavailable(e),
    })
}

fn payload_size(headers: &HeaderMap, payload: usize) -> usize {
    wire::headers_len(headers) + payload
}

/// Returns once the server has processed everything `client` sent before: a request to a
/// fresh inbox nobody listens at, whose "no responders" answer comes after the server took the
/// earlier commands of the connection in order (`Client::flush` only empties the socket).
async fn round_trip(client: &Client) -> Result<(), LinkError> {
    match client.request(client.new_inbox(), Bytes::new()).await {
        Err(e) if e.kind() == RequestErrorKind::NoResponders => Ok(()),
        Ok(_) => Ok(()),
        Err(e) => Err(unavailable(format!("confirming a subscription: {e}"))),
    }
}

/// The caller's side of one call: its inbox.
struct NatsFrames {
    to: String,
    inbox: Subscriber,
    silence: Duration,
    sequence: Sequence,
}

impl NatsFrames {
    /// The next message on the inbox, or [`LinkError::Silent`] after the silence limit.
    async fn receive(&mut self) -> Result<async_nats::Message, LinkError> {
        match tokio::time::timeout(self.silence, self.inbox.next()).await {
            Err(_) => Err(LinkError::Silent {
                to: self.to.clone(),
                after: self.silence,
            }),
            Ok(None) => Err(unavailable("the connection to the NATS server closed")),
            Ok(Some(message)) => Ok(message),
        }
    }

    fn malformed(&self, reason: String) -> LinkError {
        LinkError::Malformed {
            to: self.to.clone(),
            reason,
        }
    }
}

#[async_trait]
impl FrameSource for NatsFrames {
    async fn next(&mut self) -> Option<Result<Bytes, LinkError>> {
        loop {
            let message = match self.receive().await {
                Ok(message) => message,
                Err(e) => return Some(Err(e)),
            };
            let kind = match wire::read(message.status, message.headers.as_ref()) {
                Ok(kind) => kind,
                Err(reason) => return Some(Err(self.malformed(reason))),
            };
            return match self.sequence.take(kind) {
                Step::Wait => continue,
                Step::Frame => Some(Ok(message.payload)),
                Step::End => None,
                Step::Broken => Some(Err(LinkError::Broken {
                    to: self.to.clone(),
                })),
                Step::Lost { expected, got } => Some(Err(LinkError::Lost { expected, got })),
            };
        }
    }
}

/// The callee's side of one call: frames to the caller's inbox, the keep-alives on a task
/// that also sends `broken` if the replier is dropped unfinished.
struct NatsSink {
    client: Client,
    inbox: String,
    sent: u64,
    /// Told `()` on finish; dropped with the sink otherwise, which the keep-alive task reads
    /// as a broken call.
    finished: Option<oneshot::Sender<()>>,
}

#[async_trait]
impl ReplySink for NatsSink {
    async fn send(&mut self, frame: Bytes) -> Result<(), LinkError> {
        publish(
            &self.client,
            &self.inbox,
            None,
            Kind::Frame(self.sent),
            frame,
        )
        .await?;
        self.sent += 1;
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<(), LinkError> {
        let ended = publish(
            &self.client,
            &self.inbox,
            None,
            Kind::End(self.sent),
            Bytes::new(),
        )
        .await;
        if let Some(finished) = self.finished.take() {
            let _ = finished.send(());
        }
        ended
    }
}

/// Sends `alive` to `inbox` every `period` until the replier finishes or is dropped; dropped
/// unfinished, sends `broken`.
async fn keep_alive(
    client: Client,
    inbox: String,
    period: Duration,
    mut finished: oneshot::Receiver<()>,
) {
    let start = tokio::time::Instant::now() + period;
    let mut ticks = tokio::time::interval_at(start, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            ended = &mut finished => {
                if ended.is_err() {
                    let _ = publish(&client, &inbox, None, Kind::Broken, Bytes::new()).await;
                }
                return;
            }
            _ = ticks.tick() => {
                // A failed keep-alive is the caller's silence to notice, not ours to report.
                let _ = publish(&client, &inbox, None, Kind::Alive, Bytes::new()).await;
            }
        }
    }
}

#[async_trait]
impl Link for NatsLink {
    async fn call(&self, to: &str, request: Bytes) -> Result<Frames, LinkError> {
        let subject = self.subject(to)?;
        let inbox_subject = self.client.new_inbox();
        let mut frames = NatsFrames {
            to: to.to_owned(),
            inbox: self
                .client
                .subscribe(inbox_subject.clone())
                .await
                .map_err(unavailable)?,
            silence: self.config.silence,
            sequence: Sequence::default(),
        };
        publish(
            &self.client,
            &subject,
            Some(&inbox_subject),
            Kind::Call,
            request,
        )
        .await?;
        // The first message says whether anybody took the call: the listener's `accept`, or
        // the server's 503 when nobody is subscribed.
        let first = frames.receive().await?;
        if first.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
            return Err(LinkError::NoListener { to: to.to_owned() });
        }
        match wire::read(first.status, first.headers.as_ref()) {
            Ok(Kind::Accept) => Ok(Frames::new(frames)),
            Ok(Kind::Gone) => Err(LinkError::NoListener { to: to.to_owned() }),
            Ok(other) => Err(frames.malformed(format!("answered with {other:?} before an accept"))),
            Err(reason) => Err(frames.malformed(reason)),
        }
    }

    async fn tell(&self, to: &str, message: Bytes) -> Result<(), LinkError> {
        let subject = self.subject(to)?;
        publish(&self.client, &subject, None, Kind::Tell, message).await
    }

    async fn listen(
        &self,
        address: &str,
        handler: Arc<dyn Handler>,
    ) -> Result<Listening, LinkError> {
        let subject = self.subject(address)?;
        let calls = self
            .client
            .queue_subscribe(subject, QUEUE_GROUP.to_owned())
            .await
            .map_err(unavailable)?;
        // Once the server has the subscription, a call made after `listen` returns finds it.
        round_trip(&self.client).await?;
        let (stop, on_stop) = oneshot::channel::<()>();
        tokio::spawn(serve(self.clone(), calls, handler, on_stop));
        Ok(Listening::new(address, move || drop(stop)))
    }
}

/// Takes the calls and tells arriving on `calls`, each on a task of its own, until `stop`
/// resolves (the [`Listening`] dropped). Then the server forgets the subscription, the calls
/// already on their way are answered `gone` (their callers see [`LinkError::NoListener`], not
/// silence), and the handlers still running end with the `stopping` sender.
async fn serve(
    link: NatsLink,
    mut calls: Subscriber,
    handler: Arc<dyn Handler>,
    mut stop: oneshot::Receiver<()>,
) {
    let (_stopping, stopped) = watch::channel(());
    loop {
        let message = tokio::select! {
            _ = &mut stop => break,
            message = calls.next() => match message {
                Some(message) => message,
                None => return,
            },
        };
        take(&link, &handler, &stopped, message).await;
    }
    if calls.drain().await.is_err() {
        return;
    }
    let until = tokio::time::Instant::now() + link.config.silence;
    while let Ok(Some(message)) = tokio::time::timeout_at(until, calls.next()).await {
        if let (Ok(Kind::Call), Some(inbox)) = (
            wire::read(message.status, message.headers.as_ref()),
            message.reply,
        ) {
            let _ = publish(&link.client, &inbox, None, Kind::Gone, Bytes::new()).await;
        }
    }
}

/// Serves one message that arrived at a listener's address.
async fn take(
    link: &NatsLink,
    handler: &Arc<dyn Handler>,
    stopped: &watch::Receiver<()>,
    message: async_nats::Message,
) {
    match wire::read(message.status, message.headers.as_ref()) {
        Ok(Kind::Call) => {
            let Some(inbox) = message.reply.map(|r| r.to_string()) else {
                tracing::warn!(subject = %message.subject, "a link call without a reply subject");
                return;
            };
            if let Err(e) = publish(&link.client, &inbox, None, Kind::Accept, Bytes::new()).await {
                tracing::warn!(error = %e, "a link call could not be accepted");
                return;
            }
            let (finished, on_finish) = oneshot::channel();
            tokio::spawn(keep_alive(
                link.client.clone(),
                inbox.clone(),
                link.config.keep_alive,
                on_finish,
            ));
            let replier = Replier::new(NatsSink {
                client: link.client.clone(),
                inbox,
                sent: 0,
                finished: Some(finished),
            });
            let (handler, stopped, request) = (handler.clone(), stopped.clone(), message.payload);
            tokio::spawn(async move {
                tokio::select! {
                    () = handler.call(request, replier) => {}
                    () = listener_stopped(stopped) => {}
                }
            });
        }
        Ok(Kind::Tell) => {
            let handler = handler.clone();
            let stopped = stopped.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = handler.tell(message.payload) => {}
                    () = listener_stopped(stopped) => {}
                }
            });
        }
        Ok(other) => {
            tracing::warn!(subject = %message.subject, kind = ?other, "not a call or a tell on a link address");
        }
        Err(reason) => {
            tracing::warn!(subject = %message.subject, %reason, "a bad message on a link address");
        }
    }
}
