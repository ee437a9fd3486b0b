//! An agent's named consumers on a durable [`SignalBus`], each delivering to the agent's
//! default thread and settling a delivery only once the thread answered (committed, or why
//! not: [`settle`] decides).

use std::sync::{Arc, Weak};

use tokio::sync::{Semaphore, oneshot};
use tokio::task::AbortHandle;

use super::core::{DEFAULT_THREAD, RuntimeCore, ThreadMsg};
use super::outbox::pause;
use crate::bus::{ConsumerSpec, Inbox, SignalBus, settle};

/// Starts the consumers of agent `agent`, each consuming before this returns (so nothing
/// published after the spawn is missed, even on a bus that keeps nothing); one the bus refuses
/// now is tried again on its task. The tasks end when aborted (the agent stopped) or when the
/// runtime is gone.
pub(crate) async fn start_consumers(
    core: &Arc<RuntimeCore>,
    agent: &str,
    specs: Vec<ConsumerSpec>,
) -> Vec<AbortHandle> {
    let mut tasks = Vec::with_capacity(specs.len());
    for spec in specs {
        let bus = core.signal_bus.clone();
        let inbox = match bus.consume(&spec).await {
            Ok(inbox) => Some(inbox),
            Err(error) => {
                tracing::warn!(%agent, consumer = %spec.name, %error, "could not start a durable consumer; trying again");
                None
            }
        };
        let core = Arc::downgrade(core);
        let agent = agent.to_owned();
        tasks.push(tokio::spawn(consume(core, bus, agent, spec, inbox)).abort_handle());
    }
    tasks
}

/// One consumer: deliveries to the agent's default thread, at most `max_in_flight` unsettled.
async fn consume(
    core: Weak<RuntimeCore>,
    bus: Arc<dyn SignalBus>,
    agent: String,
    spec: ConsumerSpec,
    inbox: Option<Box<dyn Inbox>>,
) {
    let mut inbox = match inbox {
        Some(inbox) => inbox,
        None => {
            let mut attempt = 0;
            loop {
                tokio::time::sleep(pause(attempt)).await;
                if core.strong_count() == 0 {
                    return;
                }
                match bus.consume(&spec).await {
                    Ok(inbox) => break inbox,
                    Err(error) => {
                        tracing::warn!(%agent, consumer = %spec.name, %error, "could not start a durable consumer; trying again");
                        attempt += 1;
                    }
                }
            }
        }
    };
    let spec = Arc::new(spec);
    let room = Arc::new(Semaphore::new(spec.max_in_flight.max(1)));
    while let Some(next) = inbox.next().await {
        let delivered = match next {
            Ok(delivered) => delivered,
            Err(error) => {
                tracing::warn!(%agent, consumer = %spec.name, %error, "a durable consumer failed; it goes on");
                tokio::time::sleep(pause(0)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&room).acquire_owned().await else {
            return;
        };
        let Some(core) = core.upgrade() else {
            return;
        };
        // Into the thread's mailbox from here, in the order the bus delivered them; only the
        // waits for their commits run side by side.
        let (committed, answer) = oneshot::channel();
        let msg = ThreadMsg::Delivered {
            signal: delivered.signal.clone(),
            committed,
            settles: None,
        };
        let sent = core.send(&agent, DEFAULT_THREAD, msg).await;
        drop(core);
        let spec = Arc::clone(&spec);
        let agent = agent.clone();
        tokio::spawn(async move {
            let handled = match sent {
                Ok(()) => answer.await.unwrap_or_else(|_| {
                    Err("the agent's thread stopped before committing it".to_owned())
                }),
                Err(error) => Err(error.to_string()),
            };
            let decision = settle(
                handled.as_ref().map(|_| ()).map_err(String::as_str),
                delivered.attempt,
                &spec,
            );
            let sequence = delivered.sequence;
            if let Err(error) = delivered.settle(decision).await {
                tracing::warn!(%agent, consumer = %spec.name, sequence, %error, "could not settle a delivery; the bus delivers it again");
            }
            drop(permit);
        });
    }
    tracing::info!(%agent, consumer = %spec.name, "a durable consumer ended: the bus closed it");
}
