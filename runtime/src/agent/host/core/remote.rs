//! Messages for an agent another node hosts, carried over the node [`Link`]: an ask (its
//! reply, and on the way its `llm.delta` and `agent.waiting` signals, published again on the
//! asker's bus, so a [`Ticket`](crate::agent::Ticket) reads them as from a local agent), a
//! signal, an expired wait. The owning node hands them to the agent as if they were its own
//! (never forwarding them again: an agent that moved meanwhile is the asker's to find anew).
//!
//! The frames are JSON: [`Request`] one way, [`Frame`] back.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use motet_signals::{Delivery, Pattern, Signal};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::{Forward, RuntimeCore, ThreadMsg};
use crate::agent::errors::AskError;
use crate::cluster::link::{Handler, Link, LinkError, Replier};

/// What one node asks of another.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Request {
    /// An ask: the reply comes back as the call's last frame.
    Ask {
        agent: String,
        thread: String,
        signal: Signal,
        /// Whether the asker's node listens to `llm.delta`: they are sent along then.
        stream: bool,
    },
    /// A signal for the agent's thread (a tell).
    Signal {
        agent: String,
        thread: String,
        signal: Signal,
    },
    /// The asker of `request` stopped waiting after `after_ms` (a tell).
    Expire {
        agent: String,
        thread: String,
        request: String,
        after_ms: u64,
    },
}

/// One frame of an ask's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Frame {
    /// A signal of the request published on the owner's bus: published again on the asker's.
    Event(Signal),
    /// The reply.
    Reply(Signal),
    /// The ask failed on the owner.
    Failed(Failure),
}

/// An [`AskError`] as it crosses the link.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(crate) enum Failure {
    Timeout { after_ms: u64 },
    AgentStopped,
    AgentRestarted,
    Strategy { message: String },
    Failed { reply: Box<Signal> },
    Elsewhere { node: String, address: String },
    Unavailable { message: String },
}

impl Failure {
    fn of(error: AskError) -> Self {
        match error {
            AskError::Timeout(after) => Self::Timeout {
                after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
            },
            AskError::AgentStopped { .. } => Self::AgentStopped,
            AskError::AgentRestarted { .. } => Self::AgentRestarted,
            AskError::Strategy { message } => Self::Strategy { message },
            AskError::Failed { reply } => Self::Failed { reply },
            AskError::Elsewhere { node, address, .. } => Self::Elsewhere { node, address },
            other => Self::Unavailable {
                message: other.to_string(),
            },
        }
    }

    fn into_error(self, agent: &str, thread: &str) -> AskError {
        let agent = agent.to_owned();
        match self {
            Self::Timeout { after_ms } => AskError::Timeout(Duration::from_millis(after_ms)),
            Self::AgentStopped => AskError::AgentStopped { agent },
            Self::AgentRestarted => AskError::AgentRestarted { agent },
            Self::Strategy { message } => AskError::Strategy { message },
            Self::Failed { reply } => AskError::Failed { reply },
            Self::Elsewhere { node, address } => AskError::Elsewhere {
                agent,
                node,
                address,
            },
            Self::Unavailable { message } => AskError::ThreadUnavailable {
                agent,
                thread: thread.to_owned(),
                message,
            },
        }
    }
}

fn encode<T: Serialize>(value: &T) -> Option<Bytes> {
    serde_json::to_vec(value).ok().map(Bytes::from)
}

impl RuntimeCore {
    /// Sends `msg` for thread `thread` of `agent` over `link` to the node at `address`; gives
    /// it back when it is not one that crosses nodes.
    pub(crate) fn forward(
        self: &Arc<Self>,
        link: &Arc<dyn Link>,
        address: &str,
        agent: &str,
        thread: &str,
        msg: ThreadMsg,
    ) -> Result<(), ThreadMsg> {
        forward(self, link, address, agent, thread, msg)
    }

    /// Answers on `address` over `link` from now on (retrying while the link is unavailable),
    /// until the runtime shuts down.
    pub(crate) fn serve_link(self: &Arc<Self>, link: Arc<dyn Link>, address: String) {
        tokio::spawn(listen(Arc::downgrade(self), link, address));
    }
}

/// [`RuntimeCore::forward`].
fn forward(
    core: &Arc<RuntimeCore>,
    link: &Arc<dyn Link>,
    address: &str,
    agent: &str,
    thread: &str,
    msg: ThreadMsg,
) -> Result<(), ThreadMsg> {
    let (agent, thread, address) = (agent.to_owned(), thread.to_owned(), address.to_owned());
    let link = Arc::clone(link);
    match msg {
        ThreadMsg::Ask { signal, reply } => {
            let stream = core
                .bus
                .has_subscribers_for(crate::agent::events::LLM_DELTA);
            let core = Arc::downgrade(core);
            tokio::spawn(async move {
                let request = Request::Ask {
                    agent: agent.clone(),
                    thread: thread.clone(),
                    signal,
                    stream,
                };
                let mut answer = ask(&core, link.as_ref(), &address, &request).await;
                // The node it was sent to does not hold it (another still does, until it is
                // idle): asked once more, there.
                if let Err(Failure::Elsewhere {
                    address: holder, ..
                }) = &answer
                    && *holder != address
                {
                    let holder = holder.clone();
                    answer = ask(&core, link.as_ref(), &holder, &request).await;
                }
                let answer = answer.map_err(|failure| failure.into_error(&agent, &thread));
                let _ = reply.send(answer);
            });
            Ok(())
        }
        ThreadMsg::Signal(signal) => {
            tell(
                link,
                address,
                Request::Signal {
                    agent,
                    thread,
                    signal,
                },
            );
            Ok(())
        }
        ThreadMsg::Expire { request, after } => {
            tell(
                link,
                address,
                Request::Expire {
                    agent,
                    thread,
                    request,
                    after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                },
            );
            Ok(())
        }
        other => Err(other),
    }
}

/// Sends a one-way request in the background: best effort, as a tell is.
fn tell(link: Arc<dyn Link>, address: String, request: Request) {
    let Some(bytes) = encode(&request) else {
        return;
    };
    tokio::spawn(async move {
        if let Err(error) = link.tell(&address, bytes).await {
            tracing::warn!(target: "motet::cluster", %address, %error, "a signal for an agent on another node was not sent");
        }
    });
}

/// Makes the ask `request` of the node at `address` and follows its frames to the reply,
/// publishing its events on this node's bus.
async fn ask(
    core: &Weak<RuntimeCore>,
    link: &dyn Link,
    address: &str,
    request: &Request,
) -> Result<Signal, Failure> {
    let unavailable = |error: LinkError| Failure::Unavailable {
        message: format!("the node at {address} hosting it could not be reached: {error}"),
    };
    let bytes = encode(request).ok_or_else(|| Failure::Unavailable {
        message: "the ask could not be written for another node".to_owned(),
    })?;
    let mut frames = link.call(address, bytes).await.map_err(unavailable)?;
    while let Some(frame) = frames.next().await {
        let frame = frame.map_err(unavailable)?;
        match serde_json::from_slice::<Frame>(&frame) {
            Ok(Frame::Event(signal)) => {
                if let Some(core) = core.upgrade() {
                    core.bus.publish(&signal);
                }
            }
            Ok(Frame::Reply(signal)) => return Ok(signal),
            Ok(Frame::Failed(failure)) => return Err(failure),
            Err(error) => {
                return Err(Failure::Unavailable {
                    message: format!(
                        "the node at {address} answered a frame that does not read: {error}"
                    ),
                });
            }
        }
    }
    Err(Failure::Unavailable {
        message: format!("the node at {address} ended the ask without a reply"),
    })
}

/// What a node answers on its link address: asks, signals and expired waits for the agents it
/// hosts.
pub(crate) struct Serve {
    pub(crate) core: Weak<RuntimeCore>,
}

#[async_trait]
impl Handler for Serve {
    async fn call(&self, request: Bytes, mut replier: Replier) {
        let frame = match self.answer(request, &mut replier).await {
            Ok(signal) => Frame::Reply(signal),
            Err(failure) => Frame::Failed(failure),
        };
        if let Some(bytes) = encode(&frame)
            && replier.send(bytes).await.is_ok()
        {
            let _ = replier.finish().await;
        }
    }

    async fn tell(&self, message: Bytes) {
        let Some(core) = self.core.upgrade() else {
            return;
        };
        let (agent, thread, msg) = match serde_json::from_slice::<Request>(&message) {
            Ok(Request::Signal {
                agent,
                thread,
                signal,
            }) => (agent, thread, ThreadMsg::Signal(signal)),
            Ok(Request::Expire {
                agent,
                thread,
                request,
                after_ms,
            }) => (
                agent,
                thread,
                ThreadMsg::Expire {
                    request,
                    after: Duration::from_millis(after_ms),
                },
            ),
            Ok(Request::Ask { .. }) | Err(_) => {
                tracing::warn!(target: "motet::cluster", "a tell from another node does not read; dropped");
                return;
            }
        };
        if let Err(error) = core.send_with(&agent, &thread, msg, Forward::No).await {
            tracing::warn!(target: "motet::cluster", %agent, %error, "a signal from another node could not be delivered");
        }
    }
}

impl Serve {
    /// Runs one ask here, sending its events as frames on the way; returns its reply.
    async fn answer(&self, request: Bytes, replier: &mut Replier) -> Result<Signal, Failure> {
        let core = self.core.upgrade().ok_or(Failure::AgentStopped)?;
        let Ok(Request::Ask {
            agent,
            thread,
            signal,
            stream,
        }) = serde_json::from_slice::<Request>(&request)
        else {
            return Err(Failure::Unavailable {
                message: "the ask from another node does not read".to_owned(),
            });
        };
        let request_id = signal.request_id().map(str::to_owned).unwrap_or_default();
        let (events, mut incoming) = mpsc::unbounded_channel::<Signal>();
        let mut types = vec![motet_agents::protocol::AGENT_WAITING];
        if stream {
            types.push(crate::agent::events::LLM_DELTA);
        }
        // Subscribed before the ask is sent: no event of it is missed.
        let _subscriptions: Vec<_> = types
            .into_iter()
            .filter_map(|ty| ty.parse::<Pattern>().ok())
            .map(|pattern| {
                let events = events.clone();
                let id = request_id.clone();
                core.bus.subscribe(pattern, move |signal: &Signal| {
                    if signal.request_id() != Some(id.as_str()) {
                        return Delivery::Delivered;
                    }
                    match events.send(signal.clone()) {
                        Ok(()) => Delivery::Delivered,
                        Err(_) => Delivery::Closed,
                    }
                })
            })
            .collect();
        drop(events);
        let (reply, mut answer) = oneshot::channel();
        core.send_with(
            &agent,
            &thread,
            ThreadMsg::Ask { signal, reply },
            Forward::No,
        )
        .await
        .map_err(|error| Failure::of(AskError::unreachable(&agent, &thread, error)))?;
        drop(core);
        loop {
            tokio::select! {
                biased;
                Some(event) = incoming.recv() => {
                    if let Some(bytes) = encode(&Frame::Event(event)) {
                        // A frame too large to carry is left out: the reply still comes.
                        let _ = replier.send(bytes).await;
                    }
                }
                outcome = &mut answer => {
                    // What was published before the reply goes first.
                    while let Ok(event) = incoming.try_recv() {
                        if let Some(bytes) = encode(&Frame::Event(event)) {
                            let _ = replier.send(bytes).await;
                        }
                    }
                    return match outcome {
                        Ok(Ok(signal)) => Ok(signal),
                        Ok(Err(error)) => Err(Failure::of(error)),
                        Err(_) => Err(Failure::AgentStopped),
                    };
                }
            }
        }
    }
}

/// Starts answering on `address` over `link` (retrying while the link is unavailable), and
/// keeps the listener in the core until the runtime shuts down.
async fn listen(core: Weak<RuntimeCore>, link: Arc<dyn Link>, address: String) {
    let mut pause = Duration::from_millis(100);
    loop {
        let handler = Arc::new(Serve { core: core.clone() });
        match link.listen(&address, handler).await {
            Ok(listening) => {
                if let Some(core) = core.upgrade()
                    && let Ok(mut slot) = core.listening.lock()
                {
                    *slot = Some(listening);
                }
                tracing::info!(target: "motet::cluster", %address, "listening for the other nodes");
                return;
            }
            Err(error) => {
                if core.strong_count() == 0 {
                    return;
                }
                tracing::warn!(target: "motet::cluster", %address, %error, "could not listen for the other nodes; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    }
}
