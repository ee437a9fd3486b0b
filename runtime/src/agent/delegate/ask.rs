//! One ask of another agent on behalf of a tool call: the request sent under a derived id with
//! the delegation chain on it, the callee's deltas and waits relayed to the caller's ticket
//! while it runs, and a cancel sent to the callee when the caller stops waiting first (its
//! request ended, was cancelled, or the tool's time ran out).

use std::sync::Arc;
use std::time::Duration;

use motet_agents::delegate::{CHAIN_EXTENSION, Chain, PAYERS_EXTENSION, Payers};
use motet_agents::{AGENT_REQUEST, AGENT_WAITING, AgentRequest};
use motet_signals::{Delivery, Pattern, Signal, Subscription};
use tokio::sync::oneshot;

use crate::agent::caller::ticket::{Answer, Ticket};
use crate::agent::errors::AskError;
use crate::agent::events::{LLM_DELTA, LlmDelta};
use crate::agent::host::core::{RuntimeCore, ThreadMsg};
use crate::agent::requests::RequestStatus;
use crate::agent::signals::{CALLER, from_caller};

/// What to ask, of whom, where, for whom.
pub(super) struct Call<'a> {
    pub(super) core: &'a Arc<RuntimeCore>,
    /// The agent asked.
    pub(super) callee: &'a str,
    /// Its thread.
    pub(super) thread: String,
    /// The request id it is asked under (derived from the caller's request and tool call).
    pub(super) request: String,
    pub(super) query: String,
    /// The chain with the callee at its end.
    pub(super) chain: &'a Chain,
    /// The requests the callee's request works for (the caller's last).
    pub(super) payers: &'a Payers,
    /// The caller's request: its ticket sees the callee's deltas and waits.
    pub(super) caller_request: Option<&'a str>,
    pub(super) timeout: Duration,
}

/// Asks `call.callee` and waits for its answer.
///
/// # Errors
/// As [`AgentHandle::ask`](crate::agent::AgentHandle::ask): the callee's failure reply, a
/// timeout, a callee that is not running.
pub(super) async fn ask(call: Call<'_>) -> Result<Answer, AskError> {
    let Call {
        core,
        callee,
        thread,
        request,
        query,
        chain,
        payers,
        caller_request,
        timeout,
    } = call;
    // Known in this process already: a restart's `recover` carried the callee's request on
    // before this call was run again. Its answer stands, or is waited for: sent again, the
    // request would be asked a second time once it ended.
    if core.requests.get(&request).is_some() {
        let relay = caller_request.map(|to| Relay::start(core, callee, &request, to));
        let answered = answer_of(core, &request, &thread, timeout).await;
        drop(relay);
        return answered;
    }
    let data = AgentRequest {
        query,
        context_policy: None,
        response_format: None,
        attachments: motet_directives::Attachments::default(),
    };
    // Built in the tool's span: the callee's request continues the caller's trace under it.
    let signal = from_caller(AGENT_REQUEST, &thread, Some(&request), data)
        .and_then(|signal| with_chain(signal, chain, payers))
        .map_err(AskError::send)?;
    // Subscribed before the request is sent, so nothing it writes is missed.
    let relay = caller_request.map(|to| Relay::start(core, callee, &request, to));
    let (reply, answer) = oneshot::channel();
    core.send(callee, &thread, ThreadMsg::Ask { signal, reply })
        .await
        .map_err(|e| AskError::unreachable(callee, &thread, e))?;
    let mut guard = CancelOnDrop {
        core: Arc::clone(core),
        agent: callee.to_owned(),
        thread: thread.clone(),
        request: request.clone(),
        armed: true,
    };
    let ticket = Ticket::new(core, callee, request, thread, answer, timeout);
    let answered = ticket.wait().await;
    // Answered (or timed out, which cancelled it already): nothing left to cancel.
    guard.armed = false;
    drop(relay);
    answered
}

/// The answer of request `request`, which someone else sent, once it ends (within `timeout`).
async fn answer_of(
    core: &RuntimeCore,
    request: &str,
    thread: &str,
    timeout: Duration,
) -> Result<Answer, AskError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let record = core.requests.get(request);
        if let Some(reply) = record.as_ref().and_then(|r| r.result.clone()) {
            let completed = record.is_some_and(|r| r.status == RequestStatus::Completed);
            return if completed {
                Ok(Answer::of(reply, thread, request))
            } else {
                Err(AskError::Failed {
                    reply: Box::new(reply),
                })
            };
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(AskError::Timeout(timeout));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `signal` with `chain` as its [`CHAIN_EXTENSION`] and `payers` as its [`PAYERS_EXTENSION`].
fn with_chain(
    signal: Signal,
    chain: &Chain,
    payers: &Payers,
) -> Result<Signal, motet_signals::SignalError> {
    let mut value = serde_json::to_value(&signal)
        .map_err(|e| motet_signals::SignalError::Json(e.to_string()))?;
    if let Some(object) = value.as_object_mut() {
        object.insert(
            CHAIN_EXTENSION.to_owned(),
            serde_json::Value::String(chain.to_extension()),
        );
        if !payers.is_empty() {
            object.insert(
                PAYERS_EXTENSION.to_owned(),
                serde_json::Value::String(payers.to_extension()),
            );
        }
    }
    Signal::from_json_value(value)
}

/// Sends the callee `agent.cancel` for its request when dropped armed: the caller's tool call
/// was dropped (its request ended or was cancelled) before the callee answered.
struct CancelOnDrop {
    core: Arc<RuntimeCore>,
    agent: String,
    thread: String,
    request: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let why = "the request that asked for it ended".to_owned();
        let Some(cancel) = crate::agent::signals::cancel(CALLER, &self.thread, &self.request, why)
        else {
            return;
        };
        let (core, agent, thread) = (
            Arc::clone(&self.core),
            std::mem::take(&mut self.agent),
            std::mem::take(&mut self.thread),
        );
        runtime.spawn(async move {
            if let Err(error) = core.send(&agent, &thread, ThreadMsg::Signal(cancel)).await {
                tracing::debug!(%error, %agent, "a delegated request could not be cancelled");
            }
        });
    }
}

/// The callee's `llm.delta` and `agent.waiting` signals, published again under the caller's
/// request id while the ask runs, so the caller's ticket sees them (deltas tagged with the
/// agent that wrote them). Dropped, it stops.
struct Relay {
    _deltas: Option<Subscription>,
    _waits: Option<Subscription>,
}

impl Relay {
    fn start(core: &Arc<RuntimeCore>, callee: &str, request: &str, caller_request: &str) -> Self {
        let watch = |ty: &str| {
            let (id, callee, to) = (
                request.to_owned(),
                callee.to_owned(),
                caller_request.to_owned(),
            );
            // Weak: the bus holds this closure while subscribed.
            let bus = Arc::downgrade(&core.bus);
            ty.parse::<Pattern>().ok().map(|pattern| {
                core.bus.subscribe(pattern, move |signal: &Signal| {
                    if signal.request_id() != Some(id.as_str()) {
                        return Delivery::Delivered;
                    }
                    let Some(bus) = bus.upgrade() else {
                        return Delivery::Closed;
                    };
                    // The bus delivers outside its lock, so publishing from here is safe.
                    if let Some(relayed) = relayed(signal, &callee, &to) {
                        bus.publish(&relayed);
                    }
                    Delivery::Delivered
                })
            })
        };
        // Deltas only when someone listens to deltas at all (a caller's streaming ticket
        // subscribes before it asks): otherwise the callee would stream them for nobody.
        let deltas = if core.wants_deltas() {
            watch(LLM_DELTA)
        } else {
            None
        };
        Self {
            _deltas: deltas,
            _waits: watch(AGENT_WAITING),
        }
    }
}

/// `signal` (a callee's delta or wait) as the caller's request `to` publishes it: a delta
/// tagged with `callee` unless a deeper callee tagged it already; a wait naming the agent,
/// thread and request it waits in, where it is answered.
fn relayed(signal: &Signal, callee: &str, to: &str) -> Option<Signal> {
    let builder = Signal::builder(signal.signal_type().as_str(), signal.source())
        .caused_by(signal)
        .with_request_id(to);
    let builder = if signal.signal_type().as_str() == LLM_DELTA {
        let mut delta = signal.data_as::<LlmDelta>().ok()?;
        delta.agent.get_or_insert_with(|| callee.to_owned());
        builder.with_data(delta)
    } else {
        let mut waiting = signal.data_as::<motet_agents::Waiting>().ok()?;
        if waiting.agent.is_empty() {
            waiting.agent = callee.to_owned();
        }
        if waiting.thread.is_empty() {
            waiting.thread = signal.thread_id()?.to_owned();
        }
        builder.with_data(waiting)
    };
    builder.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::events::DeltaKind;
    use motet_directives::CallId;

    #[test]
    fn a_relayed_delta_is_the_callers_and_names_who_wrote_it() {
        let delta = LlmDelta {
            call_id: CallId::new("c1"),
            kind: DeltaKind::Text,
            delta: "hel".into(),
            agent: None,
        };
        let from_callee = Signal::builder(LLM_DELTA, "motet.agent.researcher")
            .with_request_id("r1.tc1")
            .with_data(&delta)
            .build()
            .unwrap();
        let relayed = relayed(&from_callee, "researcher", "r1").unwrap();
        assert_eq!(relayed.request_id(), Some("r1"));
        let got: LlmDelta = relayed.data_as().unwrap();
        assert_eq!(got.agent.as_deref(), Some("researcher"));
        assert_eq!(got.delta, "hel");

        // Relayed again one level up, it still names the agent that wrote it.
        let up = super::relayed(&relayed, "middle", "r0").unwrap();
        assert_eq!(
            up.data_as::<LlmDelta>().unwrap().agent.as_deref(),
            Some("researcher")
        );
    }

    #[test]
    fn a_request_carries_its_chain_as_an_extension() {
        let signal = Signal::builder(AGENT_REQUEST, CALLER)
            .with_request_id("r")
            .build()
            .unwrap();
        let chain = Chain::root("a").enter("b", 4).unwrap();
        let payers = Payers::default().with("a", "r");
        let signal = with_chain(signal, &chain, &payers).unwrap();
        let text = signal.extension(CHAIN_EXTENSION).and_then(|v| v.as_str());
        assert_eq!(Chain::of_request("b", text), chain);
        let text = signal.extension(PAYERS_EXTENSION).and_then(|v| v.as_str());
        assert_eq!(Payers::of_extension(text), payers);
    }
}
