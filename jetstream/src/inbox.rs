//! A consumer's side: [`JetStreamInbox`] turns the pull consumer's messages into deliveries, and
//! [`JetStreamAcker`] settles each one at the server — a server-confirmed ack, a negative
//! acknowledgement with a delay, or a dead letter published (and confirmed) before the ack.

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::pull;
use async_nats::jetstream::message::Acker as NatsAcker;
use async_nats::jetstream::{AckKind, Context};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use motet_runtime::bus::{Acker, BusError, ConsumerSpec, Delivered, Inbox};
use motet_signals::Pattern;

use crate::wire;

/// Dead-letter header: why the signal was given up.
pub const DEAD_REASON: &str = "Motet-Dead-Reason";
/// Dead-letter header: the consumer that gave it up.
pub const DEAD_CONSUMER: &str = "Motet-Dead-Consumer";
/// Dead-letter header: its sequence number in the signals' stream.
pub const DEAD_SEQUENCE: &str = "Motet-Dead-Sequence";
/// Dead-letter header: the subject it was published on.
pub const DEAD_SUBJECT: &str = "Motet-Dead-Subject";

/// What a dead letter needs besides the message: where it goes and whose it is.
#[derive(Clone)]
struct DeadLetters {
    js: Context,
    subject: String,
    consumer: String,
}

/// One message as it arrived, kept to be dead-lettered verbatim.
struct Original {
    subject: String,
    headers: Option<HeaderMap>,
    payload: Bytes,
    sequence: u64,
}

/// A header value NATS can carry: no line breaks or other control characters.
fn header_value(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl DeadLetters {
    /// Publishes `original` to the dead letters with `reason` and waits for the server to
    /// confirm it. The message keeps its payload and its headers (less the `Nats-` ones, which
    /// would steer this publish); its `Nats-Msg-Id` names the consumer and sequence, so dead-
    /// lettering the same delivery twice (the ack after it failed) stores it once.
    async fn publish(&self, original: &Original, reason: &str) -> Result<(), String> {
        let mut headers = HeaderMap::new();
        for (name, values) in original.headers.iter().flat_map(HeaderMap::iter) {
            let text: &str = name.as_ref();
            if text
                .get(..5)
                .is_some_and(|head| head.eq_ignore_ascii_case("nats-"))
            {
                continue;
            }
            for value in values {
                headers.append(name.clone(), value.clone());
            }
        }
        headers.insert(DEAD_REASON, header_value(reason).as_str());
        headers.insert(DEAD_CONSUMER, header_value(&self.consumer).as_str());
        headers.insert(DEAD_SEQUENCE, original.sequence.to_string().as_str());
        headers.insert(DEAD_SUBJECT, header_value(&original.subject).as_str());
        headers.insert(
            async_nats::header::NATS_MESSAGE_ID,
            format!("dead:{}:{}", self.subject, original.sequence).as_str(),
        );
        let pending = self
            .js
            .publish_with_headers(self.subject.clone(), headers, original.payload.clone())
            .await
            .map_err(|e| format!("dead-letter publish failed: {e}"))?;
        pending
            .await
            .map_err(|e| format!("the dead letter was not confirmed: {e}"))?;
        Ok(())
    }
}

/// A consumer's deliveries (see [`Inbox`]).
pub(crate) struct JetStreamInbox {
    messages: pull::Stream,
    /// The pattern to check each signal against, when the server's filter lets more through.
    local: Option<Pattern>,
    max_deliver: u32,
    dead: DeadLetters,
    ended: bool,
}

impl JetStreamInbox {
    pub(crate) fn new(
        messages: pull::Stream,
        spec: &ConsumerSpec,
        local: bool,
        js: Context,
        dead_subject: String,
    ) -> Self {
        Self {
            messages,
            local: local.then(|| spec.pattern.clone()),
            max_deliver: spec.max_deliver.max(1),
            dead: DeadLetters {
                js,
                subject: dead_subject,
                consumer: spec.name.clone(),
            },
            ended: false,
        }
    }

    /// The next message the consumer should see, or what ended the wait.
    async fn next_delivery(&mut self) -> Option<Result<Delivered, BusError>> {
        use async_nats::jetstream::consumer::pull::MessagesErrorKind as Kind;
        loop {
            if self.ended {
                return None;
            }
            let message = match self.messages.next().await {
                None => {
                    self.ended = true;
                    return None;
                }
                Some(Err(e)) => {
                    // These end the pull stream; the rest it outlives (it re-pulls after a
                    // reconnect by itself).
                    let fatal = matches!(
                        e.kind(),
                        Kind::ConsumerDeleted
                            | Kind::PushBasedConsumer
                            | Kind::RequestLimitExceeded
                    );
                    self.ended = fatal;
                    let reason = format!("consumer {}: {e}", self.dead.consumer);
                    return Some(Err(if fatal {
                        BusError::Consumer {
                            name: self.dead.consumer.clone(),
                            reason,
                        }
                    } else {
                        BusError::Unavailable { reason }
                    }));
                }
                Some(Ok(message)) => message,
            };
            let (sequence, attempt) = match message.info() {
                Ok(info) => (
                    info.stream_sequence,
                    u32::try_from(info.delivered.max(1)).unwrap_or(u32::MAX),
                ),
                Err(e) => {
                    return Some(Err(BusError::Unavailable {
                        reason: format!("a delivery without JetStream metadata: {e}"),
                    }));
                }
            };
            let (message, acker) = message.split();
            let original = Original {
                subject: message.subject.to_string(),
                headers: message.headers,
                payload: message.payload,
                sequence,
            };
            let signal = match wire::decode(original.headers.as_ref(), &original.payload) {
                Ok(signal) => signal,
                Err(reason) => {
                    let reason = format!("not a signal: {reason}");
                    match self.give_up(acker, &original, &reason).await {
                        Ok(()) => continue,
                        Err(e) => return Some(Err(e)),
                    }
                }
            };
            if let Some(pattern) = &self.local
                && !pattern.matches(signal.signal_type())
            {
                // The server's filter is wider than the pattern: not this consumer's.
                if let Err(e) = acker.ack().await {
                    return Some(Err(BusError::Settle {
                        sequence,
                        reason: e.to_string(),
                    }));
                }
                continue;
            }
            if attempt > self.max_deliver {
                // Its holder never settled the last allowed delivery (it died holding it).
                let reason = format!(
                    "delivered {attempt} times without being settled (max_deliver {})",
                    self.max_deliver
                );
                match self.give_up(acker, &original, &reason).await {
                    Ok(()) => continue,
                    Err(e) => return Some(Err(e)),
                }
            }
            let settle = JetStreamAcker {
                acker,
                original,
                dead: self.dead.clone(),
            };
            return Some(Ok(Delivered::new(
                signal,
                sequence,
                attempt,
                Box::new(settle),
            )));
        }
    }

    /// Dead-letters a message the consumer never sees, then acknowledges it.
    async fn give_up(
        &self,
        acker: NatsAcker,
        original: &Original,
        reason: &str,
    ) -> Result<(), BusError> {
        tracing::warn!(consumer = %self.dead.consumer, sequence = original.sequence, %reason,
            "message dead-lettered");
        let settle = JetStreamAcker {
            acker,
            original: Original {
                subject: original.subject.clone(),
                headers: original.headers.clone(),
                payload: original.payload.clone(),
                sequence: original.sequence,
            },
            dead: self.dead.clone(),
        };
        Box::new(settle).dead_letter(reason.to_owned()).await
    }
}

impl Inbox for JetStreamInbox {
    fn next(&mut self) -> BoxFuture<'_, Option<Result<Delivered, BusError>>> {
        self.next_delivery().boxed()
    }
}

/// Settles one JetStream delivery.
pub(crate) struct JetStreamAcker {
    acker: NatsAcker,
    original: Original,
    dead: DeadLetters,
}

impl JetStreamAcker {
    fn failed(&self, reason: impl std::fmt::Display) -> BusError {
        BusError::Settle {
            sequence: self.original.sequence,
            reason: reason.to_string(),
        }
    }
}

impl Acker for JetStreamAcker {
    fn ack(self: Box<Self>) -> BoxFuture<'static, Result<(), BusError>> {
        async move {
            // Double ack: the server confirms it recorded the ack, so a commit is never
            // followed by a redelivery the agent believes impossible.
            self.acker
                .double_ack()
                .await
                .map_err(|e| self.failed(format!("ack: {e}")))
        }
        .boxed()
    }

    fn retry(self: Box<Self>, pause: Duration) -> BoxFuture<'static, Result<(), BusError>> {
        async move {
            let kind = AckKind::Nak((!pause.is_zero()).then_some(pause));
            self.acker
                .double_ack_with(kind)
                .await
                .map_err(|e| self.failed(format!("nak: {e}")))
        }
        .boxed()
    }

    fn dead_letter(self: Box<Self>, reason: String) -> BoxFuture<'static, Result<(), BusError>> {
        async move {
            // Unconfirmed dead letter: no ack, so the server delivers the signal again later.
            self.dead
                .publish(&self.original, &reason)
                .await
                .map_err(|e| self.failed(e))?;
            self.acker
                .double_ack()
                .await
                .map_err(|e| self.failed(format!("ack after the dead letter: {e}")))
        }
        .boxed()
    }
}
