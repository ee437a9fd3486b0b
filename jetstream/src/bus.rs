//! [`JetStreamBus`]: the [`SignalBus`] on NATS JetStream — connecting, the streams, publishing,
//! starting consumers, and reading what they gave up on.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer, pull};
use async_nats::jetstream::stream::{self, DiscardPolicy, StorageType};
use async_nats::jetstream::{self, Context};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use motet_runtime::bus::{BusError, ConsumerSpec, Inbox, Published, SignalBus, StartAt};
use motet_signals::Signal;

use crate::config::JetStreamConfig;
use crate::inbox::{DEAD_CONSUMER, DEAD_REASON, DEAD_SEQUENCE, DEAD_SUBJECT, JetStreamInbox};
use crate::subject::{self, Filter};
use crate::url::Credentials;
use crate::wire;

/// The durable signal bus on NATS JetStream (see the crate docs and docs/bus.md). Cheap to
/// clone; clones share the connection.
#[derive(Clone)]
pub struct JetStreamBus {
    inner: Arc<Inner>,
}

struct Inner {
    client: async_nats::Client,
    js: Context,
    config: JetStreamConfig,
}

impl std::fmt::Debug for JetStreamBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamBus")
            .field("stream", &self.inner.config.stream)
            .field("subject_prefix", &self.inner.config.subject_prefix)
            .finish_non_exhaustive()
    }
}

/// A signal a consumer gave up on, as the dead-letter stream holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// The consumer's name.
    pub consumer: String,
    /// Why it was given up (the last failure, or why it is not a signal).
    pub reason: String,
    /// Its sequence number in the signals' stream.
    pub sequence: u64,
    /// The subject it was published on.
    pub subject: String,
    /// The message's payload as it was published.
    pub payload: Bytes,
    /// The signal, when the message is one (`None` for a message that is not a signal).
    pub signal: Option<Signal>,
}

/// What the server holds for one consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerState {
    /// Signals not yet delivered to it.
    pub pending: u64,
    /// Signals delivered and not yet settled (at most its `max_in_flight`).
    pub in_flight: usize,
    /// Signals delivered more than once and not yet settled.
    pub redelivered: usize,
}

fn unavailable(reason: impl std::fmt::Display) -> BusError {
    BusError::Unavailable {
        reason: reason.to_string(),
    }
}

fn consumer_error(name: &str, reason: impl std::fmt::Display) -> BusError {
    BusError::Consumer {
        name: name.to_owned(),
        reason: reason.to_string(),
    }
}

/// The environment variable [`JetStreamBus::from_env`] reads: the NATS server's URL.
pub const NATS_URL_VAR: &str = "MOTET_NATS_URL";

impl JetStreamBus {
    /// Connects to the NATS server at `url` (`nats://host:port`, several comma-separated) and
    /// creates, or updates to `config`, the signals' and the dead letters' streams. The client
    /// reconnects by itself for as long as the bus lives.
    ///
    /// Credentials in the URL (`nats://user:password@host`, `nats://token@host`) are taken out
    /// and handed to the client on their own: the client, its logs and this crate's errors see
    /// the URL without them (errors show it as `nats://user:***@host`).
    ///
    /// # Errors
    /// [`BusError::Unavailable`] when the server cannot be reached, has no JetStream, or refuses
    /// a stream.
    pub async fn connect(url: &str, config: JetStreamConfig) -> Result<Self, BusError> {
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
            .name("motet")
            .connection_timeout(config.timeout)
            .request_timeout(Some(config.timeout))
            .connect(split.servers.as_str())
            .await
            .map_err(|e| {
                let shown = crate::url::redact(url);
                unavailable(format!("connecting to {shown}: {e}"))
            })?;
        Self::with_client(client, config).await
    }

    /// The bus at `MOTET_NATS_URL` with `config`, or `None` when the variable is unset or
    /// empty (the runtime then keeps its in-process bus).
    ///
    /// # Errors
    /// As [`JetStreamBus::connect`].
    pub async fn from_env(config: JetStreamConfig) -> Result<Option<Self>, BusError> {
        match std::env::var(NATS_URL_VAR) {
            Ok(url) if !url.trim().is_empty() => Self::connect(url.trim(), config).await.map(Some),
            _ => Ok(None),
        }
    }

    /// The bus over a client already connected.
    ///
    /// # Errors
    /// As [`JetStreamBus::connect`].
    pub async fn with_client(
        client: async_nats::Client,
        config: JetStreamConfig,
    ) -> Result<Self, BusError> {
        let js = jetstream::ContextBuilder::new()
            .timeout(config.timeout)
            .max_ack_inflight(config.max_publishes_in_flight.max(1))
            .backpressure_on_inflight(true)
            .build(client.clone());
        let storage = if config.memory {
            StorageType::Memory
        } else {
            StorageType::File
        };
        let limits = config.limits;
        let signals = stream::Config {
            name: config.stream.clone(),
            subjects: vec![format!("{}.>", config.subject_prefix)],
            storage,
            duplicate_window: config.duplicate_window,
            max_messages: limits.max_messages.unwrap_or(-1),
            max_bytes: limits.max_bytes.unwrap_or(-1),
            max_age: limits.max_age.unwrap_or(Duration::ZERO),
            discard: DiscardPolicy::New,
            description: Some("motet signals (CloudEvents)".into()),
            ..Default::default()
        };
        let dead = stream::Config {
            name: config.dead_letter_stream.clone(),
            subjects: vec![format!("{}.>", config.dead_letter_prefix)],
            storage,
            duplicate_window: config.duplicate_window,
            description: Some("motet dead letters".into()),
            ..Default::default()
        };
        for stream in [signals, dead] {
            let name = stream.name.clone();
            js.create_or_update_stream(stream)
                .await
                .map_err(|e| unavailable(format!("stream {name}: {e}")))?;
        }
        Ok(Self {
            inner: Arc::new(Inner { client, js, config }),
        })
    }

    /// The configuration the bus runs with.
    pub fn config(&self) -> &JetStreamConfig {
        &self.inner.config
    }

    /// The NATS client underneath (for tests and tools that speak NATS directly).
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }

    /// What the server holds for consumer `name`.
    ///
    /// # Errors
    /// [`BusError::Consumer`] for a name that cannot be a durable name or a consumer that does
    /// not exist; [`BusError::Unavailable`] when the server does not answer.
    pub async fn consumer_state(&self, name: &str) -> Result<ConsumerState, BusError> {
        let durable = subject::durable_name(name).map_err(|e| consumer_error(name, e))?;
        let stream = self
            .inner
            .js
            .get_stream_no_info(&self.inner.config.stream)
            .await
            .map_err(unavailable)?;
        let info = stream
            .consumer_info(&durable)
            .await
            .map_err(|e| consumer_error(name, e))?;
        Ok(ConsumerState {
            pending: info.num_pending,
            in_flight: info.num_ack_pending,
            redelivered: info.num_redelivered,
        })
    }

    /// The dead letters of consumer `name`, oldest first, at most `limit`.
    ///
    /// # Errors
    /// [`BusError::Consumer`] for a name that cannot be a durable name;
    /// [`BusError::Unavailable`] when the server does not answer.
    pub async fn dead_letters(
        &self,
        name: &str,
        limit: usize,
    ) -> Result<Vec<DeadLetter>, BusError> {
        let durable = subject::durable_name(name).map_err(|e| consumer_error(name, e))?;
        let config = &self.inner.config;
        let stream = self
            .inner
            .js
            .get_stream_no_info(&config.dead_letter_stream)
            .await
            .map_err(unavailable)?;
        // An ephemeral reader: unacknowledged, gone a minute after its last use.
        let reader: PullConsumer = stream
            .create_consumer(pull::Config {
                filter_subject: format!("{}.{durable}", config.dead_letter_prefix),
                deliver_policy: DeliverPolicy::All,
                ack_policy: AckPolicy::None,
                inactive_threshold: Duration::from_secs(60),
                ..Default::default()
            })
            .await
            .map_err(unavailable)?;
        let mut letters = Vec::new();
        while letters.len() < limit {
            let mut batch = reader
                .fetch()
                .max_messages(limit - letters.len())
                .expires(Duration::from_millis(500))
                .messages()
                .await
                .map_err(unavailable)?;
            let before = letters.len();
            let mut more = false;
            while let Some(message) = batch.next().await {
                let message = message.map_err(unavailable)?;
                more = message.info().map(|i| i.pending > 0).unwrap_or(false);
                let headers = message.headers.as_ref();
                let text = |key: &str| wire::header(headers, key).unwrap_or_default().to_owned();
                letters.push(DeadLetter {
                    consumer: text(DEAD_CONSUMER),
                    reason: text(DEAD_REASON),
                    sequence: text(DEAD_SEQUENCE).parse().unwrap_or(0),
                    subject: text(DEAD_SUBJECT),
                    payload: message.payload.clone(),
                    signal: wire::decode(headers, &message.payload).ok(),
                });
            }
            if letters.len() == before || !more {
                break;
            }
        }
        Ok(letters)
    }

    async fn start(&self, spec: &ConsumerSpec) -> Result<Box<dyn Inbox>, BusError> {
        let config = &self.inner.config;
        let durable =
            subject::durable_name(&spec.name).map_err(|e| consumer_error(&spec.name, e))?;
        let Filter { subjects, local } = subject::filter_for(&config.subject_prefix, &spec.pattern);
        let max_in_flight = spec.max_in_flight.max(1);
        let (filter_subject, filter_subjects) = match <[String; 1]>::try_from(subjects) {
            Ok([one]) => (one, Vec::new()),
            Err(many) => (String::new(), many),
        };
        let wanted = pull::Config {
            durable_name: Some(durable.clone()),
            description: Some(format!("motet consumer {} of {}", spec.name, spec.pattern)),
            deliver_policy: deliver_policy(spec.start),
            ack_policy: AckPolicy::Explicit,
            ack_wait: spec.ack_wait,
            // The server redelivers without limit; the consumer dead-letters a signal delivered
            // more than `max_deliver` times (one whose holder died on its last attempt), so a
            // signal is never dropped silently at the limit.
            max_deliver: -1,
            max_ack_pending: i64::try_from(max_in_flight).unwrap_or(i64::MAX),
            filter_subject,
            filter_subjects,
            // A consumer of one run goes once idle; zero is JetStream's "never" for a durable.
            inactive_threshold: spec.inactive_threshold.unwrap_or(Duration::ZERO),
            ..Default::default()
        };
        let stream = self
            .inner
            .js
            .get_stream_no_info(&config.stream)
            .await
            .map_err(unavailable)?;
        let mut consumer: PullConsumer = stream
            .get_or_create_consumer(&durable, wanted.clone())
            .await
            .map_err(|e| consumer_error(&spec.name, e))?;
        // An existing consumer keeps its place (and where it started); the rest follows `spec`.
        let existing = consumer.cached_info().config.clone();
        let differs = existing.filter_subject != wanted.filter_subject
            || existing.filter_subjects != wanted.filter_subjects
            || existing.ack_wait != wanted.ack_wait
            || existing.max_ack_pending != wanted.max_ack_pending
            || existing.max_deliver != wanted.max_deliver
            || existing.inactive_threshold != wanted.inactive_threshold;
        if differs {
            let updated = pull::Config {
                deliver_policy: existing.deliver_policy,
                ..wanted
            };
            consumer = stream
                .update_consumer(updated)
                .await
                .map_err(|e| consumer_error(&spec.name, e))?;
        }
        let messages = consumer
            .stream()
            .max_messages_per_batch(max_in_flight)
            .messages()
            .await
            .map_err(|e| consumer_error(&spec.name, e))?;
        Ok(Box::new(JetStreamInbox::new(
            messages,
            spec,
            local,
            self.inner.js.clone(),
            format!("{}.{durable}", config.dead_letter_prefix),
        )))
    }

    async fn send(&self, signal: &Signal) -> Result<Published, BusError> {
        let id = signal.id().as_str().to_owned();
        let (headers, payload) =
            wire::encode(signal, &subject::message_id(signal)).map_err(|reason| {
                BusError::Encode {
                    id: id.clone(),
                    reason,
                }
            })?;
        let subject = subject::subject_for(
            &self.inner.config.subject_prefix,
            signal.signal_type().as_str(),
        );
        let not_confirmed = |reason: String| BusError::NotConfirmed {
            id: id.clone(),
            reason,
        };
        // The server's `max_payload` (told at connect, 1 MiB by default) bounds headers and
        // payload together; over it, no publish can succeed, so it is refused here, typed,
        // rather than sent to be refused (a server that sees it closes the connection).
        let size = wire::size(&headers, &payload);
        let limit = self.inner.client.max_payload();
        let too_large = || BusError::TooLarge {
            id: id.clone(),
            size,
            limit,
        };
        if size > limit {
            return Err(too_large());
        }
        let pending = self
            .inner
            .js
            .publish_with_headers(subject, headers, payload)
            .await
            .map_err(|e| match e.kind() {
                // The limit changed under us (a reconnect to a server with another).
                jetstream::context::PublishErrorKind::MaxPayloadExceeded => BusError::TooLarge {
                    id: id.clone(),
                    size,
                    limit: self.inner.client.max_payload(),
                },
                _ => not_confirmed(e.to_string()),
            })?;
        let ack = pending.await.map_err(|e| not_confirmed(e.to_string()))?;
        Ok(Published {
            sequence: Some(ack.sequence),
            duplicate: ack.duplicate,
        })
    }
}

/// Where a consumer seen for the first time starts.
fn deliver_policy(start: StartAt) -> DeliverPolicy {
    match start {
        StartAt::New => DeliverPolicy::New,
        StartAt::All => DeliverPolicy::All,
        StartAt::Sequence(start_sequence) => DeliverPolicy::ByStartSequence {
            start_sequence: start_sequence.max(1),
        },
        StartAt::Time(at) => DeliverPolicy::ByStartTime {
            start_time: time::OffsetDateTime::from(at.max(SystemTime::UNIX_EPOCH)),
        },
    }
}

impl SignalBus for JetStreamBus {
    fn publish<'a>(&'a self, signal: &'a Signal) -> BoxFuture<'a, Result<Published, BusError>> {
        self.send(signal).boxed()
    }

    fn consume<'a>(
        &'a self,
        spec: &'a ConsumerSpec,
    ) -> BoxFuture<'a, Result<Box<dyn Inbox>, BusError>> {
        self.start(spec).boxed()
    }

    fn kind(&self) -> &'static str {
        "jetstream"
    }
}
