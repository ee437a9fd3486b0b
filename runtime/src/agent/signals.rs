//! The runtime's own protocol signals, each written once: what a caller sends an agent
//! ([`from_caller`]: a request, a resume, a person's response, a summary or policy change), the
//! results of directives, the cancels the host decides (an interrupt, an expired wait), the
//! resume of an interrupted request, and the host's timer notes.
//!
//! One convention for `source`: `motet.caller` for what a caller sends, `motet.agent.<name>`
//! for what an agent's thread makes ([`agent_source`]), `motet.runtime` for the runtime's own
//! notices.

use motet_agents::{AgentCancel, protocol};
use motet_signals::Signal;
use serde::Serialize;

/// The source of what a caller sends an agent.
pub(crate) const CALLER: &str = "motet.caller";

/// The source of the runtime's own notices (a thread restarted, an agent stopped, a thread
/// updated).
pub(crate) const RUNTIME: &str = "motet.runtime";

/// A signal of type `ty` a caller sends to `thread` for `request` (when given), with `data`:
/// a fresh id, and the caller's current span as its trace context, so the agent's work
/// continues the caller's trace.
///
/// # Errors
/// When `data` does not serialize, or a given id is not a valid one.
pub(crate) fn from_caller<T: Serialize>(
    ty: &str,
    thread: &str,
    request: Option<&str>,
    data: T,
) -> Result<Signal, motet_signals::SignalError> {
    let mut builder = Signal::builder(ty, CALLER)
        .with_id(motet_agents::Env::fresh_id(
            &crate::agent::env::SystemEnv,
            "sig",
        ))
        .with_thread_id(thread)
        .with_data(data);
    if let Some(request) = request {
        builder = builder.with_request_id(request);
    }
    Ok(traced(builder.build()?, &tracing::Span::current()))
}

/// One of the runtime's own notices (a thread updated or restarted, an agent stopped, a child
/// stopped): source `motet.runtime`, a fresh id, on `thread` when it is about one.
pub(crate) fn notice<T: Serialize>(ty: &str, thread: Option<&str>, data: T) -> Option<Signal> {
    let mut builder = Signal::builder(ty, RUNTIME)
        .with_id(motet_agents::Env::fresh_id(
            &crate::agent::env::SystemEnv,
            "sig",
        ))
        .with_data(data);
    if let Some(thread) = thread {
        builder = builder.with_thread_id(thread);
    }
    match builder.build() {
        Ok(signal) => Some(signal),
        Err(error) => {
            tracing::error!(%error, ty, "could not build a runtime notice");
            None
        }
    }
}

/// The `source` of the signals an agent's threads make.
pub(crate) fn agent_source(agent: &str) -> String {
    format!("motet.agent.{agent}")
}

/// A result signal, caused by the signal whose directive produced it (same thread, request,
/// correlation and trace).
pub(crate) fn result_signal<T: Serialize>(
    ty: &str,
    source: &str,
    cause: &Signal,
    data: T,
) -> Signal {
    let built = Signal::builder(ty, source)
        .caused_by(cause)
        .with_data(data)
        .build();
    match built {
        Ok(signal) => signal,
        // The type is a constant and the source is built from a checked name: this cannot fail,
        // and if it ever did, an empty result of the right type is better than no answer.
        Err(error) => {
            tracing::error!(%error, ty, "could not build a result signal");
            Signal::builder(ty, RUNTIME)
                .caused_by(cause)
                .build()
                .unwrap_or_else(|_| cause.clone())
        }
    }
}

/// The `agent.cancel` the host sends a thread's strategy for `request`, saying why.
pub(crate) fn cancel(source: &str, thread: &str, request: &str, reason: String) -> Option<Signal> {
    Signal::builder(protocol::AGENT_CANCEL, source)
        .with_id(motet_agents::Env::fresh_id(
            &crate::agent::env::SystemEnv,
            "sig",
        ))
        .with_request_id(request)
        .with_thread_id(thread)
        .with_data(AgentCancel {
            reason: Some(reason),
        })
        .build()
        .ok()
}

/// The `agent.resume` that carries on `request`, sent again (as `sent`) after the process that
/// ran it stopped: same id and trace, so it is the same delivery.
pub(crate) fn resume(
    source: &str,
    thread: &str,
    request: &str,
    sent: &Signal,
    idempotent_tools: Vec<String>,
) -> Option<Signal> {
    Signal::builder(protocol::AGENT_RESUME, source)
        .with_id(sent.id().clone())
        .with_request_id(request)
        .with_thread_id(thread)
        .with_trace(sent.trace().clone())
        .with_data(protocol::AgentResume { idempotent_tools })
        .build()
        .ok()
}

/// What a failure reply says, for its span's status: the `reason` of its data when it has
/// one, else its type.
pub(crate) fn failure_text(reply: &Signal) -> String {
    reply
        .data_as::<serde_json::Value>()
        .ok()
        .and_then(|data| {
            let why = data.get("reason").or_else(|| data.get("message"))?;
            Some(why.as_str().map_or_else(|| why.to_string(), str::to_owned))
        })
        .unwrap_or_else(|| reply.signal_type().as_str().to_owned())
}

/// `signal` with the trace of `span` when it carries none yet: a signal made while handling
/// another continues that trace.
pub(crate) fn traced(signal: Signal, span: &tracing::Span) -> Signal {
    if signal.trace().traceparent.is_some() {
        return signal;
    }
    let context = crate::telemetry::context_of(span);
    if context.traceparent.is_some() {
        signal.with_trace(context)
    } else {
        signal
    }
}
