//! The publisher that puts `Emit`s to the bus and replies on a durable [`SignalBus`] beside
//! the in-process one, in the order they were emitted, each tried until the bus confirms it.
//! A leaf: it knows the bus, not the agents.

use std::sync::Arc;
use std::time::Duration;

use motet_agents::AGENT_FAILED;
use motet_signals::Signal;
use tokio::sync::mpsc;

use crate::bus::{BusError, SignalBus};

/// Emits waiting for the durable bus, at most (the publisher task holds them in order).
const PUBLISH_QUEUE: usize = 1024;

/// Pauses between attempts to publish one signal, or to start a consumer, the last repeating.
const PAUSES: [Duration; 4] = [
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(2),
    Duration::from_secs(5),
];

/// Attempts to publish one emitted signal before it is given up (and logged as lost).
const PUBLISH_ATTEMPTS: usize = 10;

/// The pause before attempt `attempt + 1` at something the bus refused.
pub(crate) fn pause(attempt: usize) -> Duration {
    PAUSES[attempt.min(PAUSES.len() - 1)]
}

/// A durable bus the runtime was built with, beside its in-process one.
pub(crate) struct ExternalBus {
    bus: Arc<dyn SignalBus>,
    /// Started with the first emit.
    publisher: std::sync::OnceLock<mpsc::Sender<(Signal, Outgoing)>>,
    /// Signals handed to the publisher and not yet published or given up.
    unpublished: Arc<std::sync::atomic::AtomicUsize>,
}

impl ExternalBus {
    /// A publisher onto `bus`, started with the first signal handed to it.
    pub(crate) fn new(bus: Arc<dyn SignalBus>) -> Self {
        Self {
            bus,
            publisher: std::sync::OnceLock::new(),
            unpublished: Arc::default(),
        }
    }

    /// Waits, at most `patience`, until every signal handed to the durable bus's publisher was
    /// published (or given up); `false` when some were still waiting.
    pub(crate) async fn flush(&self, patience: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + patience;
        while self.unpublished.load(std::sync::atomic::Ordering::Acquire) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Hands an emitted signal to the durable bus's publisher. A full queue makes the emit wait on a task of its
    /// own, so the thread never blocks; such emits may overtake one another.
    pub(crate) fn publish(&self, signal: &Signal, kind: Outgoing) {
        let external = self;
        let queue = external
            .publisher
            .get_or_init(|| publisher(external.bus.clone(), Arc::clone(&external.unpublished)));
        external
            .unpublished
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        match queue.try_send((signal.clone(), kind)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(signal)) => {
                let queue = queue.clone();
                let unpublished = Arc::clone(&external.unpublished);
                tokio::spawn(async move {
                    if queue.send(signal).await.is_err() {
                        unpublished.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                    }
                });
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                external
                    .unpublished
                    .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            }
        }
    }
}
/// What a signal handed to the durable bus's publisher is: what stands in for it when the bus
/// will not take it depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outgoing {
    /// An `Emit` to the bus.
    Emit,
    /// A reply: someone may be waiting on the bus for it.
    Reply,
}

/// Puts signals on the durable bus one at a time, in the order they were handed over, each
/// tried until the bus confirms it, refuses it for good ([`BusError::is_permanent`]: not tried
/// again), or [`PUBLISH_ATTEMPTS`] failed. A reply not published has [`stand_in`] published in
/// its place; an emit not published is logged as lost.
fn publisher(
    bus: Arc<dyn SignalBus>,
    unpublished: Arc<std::sync::atomic::AtomicUsize>,
) -> mpsc::Sender<(Signal, Outgoing)> {
    let (tx, mut rx) = mpsc::channel::<(Signal, Outgoing)>(PUBLISH_QUEUE);
    tokio::spawn(async move {
        while let Some((signal, kind)) = rx.recv().await {
            let _done = Unpublished(&unpublished);
            let Err(error) = publish_retrying(bus.as_ref(), &signal).await else {
                continue;
            };
            let id = signal.id().as_str();
            let Some(stand_in) = stand_in(&signal, kind, &error) else {
                tracing::error!(%id, %error, "an emitted signal could not be published on the durable bus and is lost");
                continue;
            };
            tracing::error!(%id, %error, stand_in = %stand_in.id().as_str(), "a reply could not be published on the durable bus; an agent.failed reply saying why is published in its place");
            if let Err(error) = publish_retrying(bus.as_ref(), &stand_in).await {
                tracing::error!(%id, %error, "neither a reply nor the failure standing in for it could be published on the durable bus; whoever waits for it waits for its timeout");
            }
        }
    });
    tx
}

/// Publishes `signal`, trying again after a pause while the failure may pass, at most
/// [`PUBLISH_ATTEMPTS`] times; the last failure.
async fn publish_retrying(bus: &dyn SignalBus, signal: &Signal) -> Result<(), BusError> {
    let mut attempt = 0;
    loop {
        match bus.publish(signal).await {
            Ok(_) => return Ok(()),
            Err(error) if error.is_permanent() || attempt + 1 >= PUBLISH_ATTEMPTS => {
                return Err(error);
            }
            Err(error) => {
                tracing::warn!(id = %signal.id().as_str(), %error, "publishing a signal on the durable bus failed; trying again");
                tokio::time::sleep(pause(attempt)).await;
                attempt += 1;
            }
        }
    }
}

/// What is published in place of `signal`, which the durable bus would not take (`error`): for
/// a reply, an `agent.failed` reply to the same request on the same thread saying why (with
/// the size and the bus's limit when it was too large), small enough to publish, so whoever
/// waits on the bus for the answer hears of it at once rather than at its timeout. Its id is
/// the reply's with `.unpublished` after it (publishing it twice stores it once). Nothing for
/// an emit, or for a reply that answers no request.
pub(crate) fn stand_in(signal: &Signal, kind: Outgoing, error: &BusError) -> Option<Signal> {
    if kind != Outgoing::Reply {
        return None;
    }
    let request = signal.request_id()?;
    let mut data = serde_json::json!({
        "message": format!("the answer could not be published on the bus: {error}"),
        "unpublished": signal.id().as_str(),
    });
    if let BusError::TooLarge { size, limit, .. } = error {
        data["size"] = (*size).into();
        data["limit"] = (*limit).into();
    }
    let mut builder = Signal::builder(AGENT_FAILED, signal.source())
        .with_id(format!("{}.unpublished", signal.id().as_str()))
        .with_time(signal.time())
        .with_request_id(request)
        .with_trace(signal.trace().clone())
        .with_data(data);
    if let Some(thread) = signal.thread_id() {
        builder = builder.with_thread_id(thread);
    }
    if let Some(cause) = signal.causation_id() {
        builder = builder.with_causation_id(cause.clone());
    }
    if let Some(correlation) = signal.correlation_id() {
        builder = builder.with_correlation_id(correlation);
    }
    builder.build().ok()
}

/// Counts one handed-over signal as done when dropped (published, given up, or its task
/// aborted).
struct Unpublished<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Unpublished<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> Signal {
        Signal::builder("agent.completed", "motet.agent")
            .with_id("r-1")
            .with_request_id("req-1")
            .with_thread_id("t-1")
            .with_causation_id("c-1")
            .with_data(serde_json::json!({"answer": "long"}))
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_reply_too_large_for_the_bus_has_a_failure_stand_in_for_it() {
        let error = BusError::TooLarge {
            id: "r-1".into(),
            size: 2_097_424,
            limit: 1_048_576,
        };
        let Some(stand_in) = stand_in(&reply(), Outgoing::Reply, &error) else {
            panic!("no stand-in for a refused reply");
        };
        assert_eq!(stand_in.signal_type().as_str(), AGENT_FAILED);
        assert_eq!(stand_in.id().as_str(), "r-1.unpublished");
        assert_eq!(stand_in.request_id(), Some("req-1"));
        assert_eq!(stand_in.thread_id(), Some("t-1"));
        assert_eq!(stand_in.causation_id().map(|c| c.as_str()), Some("c-1"));
        assert_eq!(
            stand_in.data_as::<serde_json::Value>().ok(),
            Some(serde_json::json!({
                "message": "the answer could not be published on the bus: signal r-1 is 2097424 bytes on the wire, over the bus's limit of 1048576 bytes",
                "unpublished": "r-1",
                "size": 2_097_424,
                "limit": 1_048_576,
            }))
        );
    }

    #[test]
    fn an_emit_or_a_reply_to_no_request_has_no_stand_in() {
        let error = BusError::Encode {
            id: "r-1".into(),
            reason: "no".into(),
        };
        assert_eq!(stand_in(&reply(), Outgoing::Emit, &error), None);
        let no_request = Signal::builder("agent.completed", "motet.agent")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stand_in(&no_request, Outgoing::Reply, &error), None);
    }

    #[test]
    fn only_what_cannot_pass_is_permanent() {
        let too_large = BusError::TooLarge {
            id: "s".into(),
            size: 2,
            limit: 1,
        };
        assert!(too_large.is_permanent());
        assert!(
            !BusError::NotConfirmed {
                id: "s".into(),
                reason: "timeout".into()
            }
            .is_permanent()
        );
        assert!(
            !BusError::Unavailable {
                reason: "down".into()
            }
            .is_permanent()
        );
    }
}
