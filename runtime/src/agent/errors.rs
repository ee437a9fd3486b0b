//! Why the runtime could not do what was asked ([`RuntimeError`]), and why an ask got no
//! answer ([`AskError`]).

use std::sync::Arc;
use std::time::Duration;

use motet_signals::Signal;

use crate::store::StoreError;

/// A thread store's failure, as the runtime's errors carry it: the [`StoreError`] itself (its
/// variant and its sources), shared so the error stays `Clone`. Two are equal when they say the
/// same thing.
#[derive(Debug, Clone)]
pub struct StoreFailure(Arc<StoreError>);

impl StoreFailure {
    /// The store's error.
    pub fn error(&self) -> &StoreError {
        &self.0
    }
}

impl From<StoreError> for StoreFailure {
    fn from(error: StoreError) -> Self {
        Self(Arc::new(error))
    }
}

impl std::fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StoreFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for StoreFailure {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for StoreFailure {}

/// Why the runtime could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No LLM client was given and none could be configured from the environment.
    #[error("no LLM client: {message} (give one with RuntimeBuilder::llm)")]
    NoLlmClient {
        /// Why the environment's providers could not be configured.
        message: String,
    },
    /// An agent description is not a valid agent (a model ref that does not parse, two tools
    /// of one name).
    #[error("agent `{name}` is not valid: {message}")]
    InvalidSpec {
        /// The agent.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The agent's model cannot do what the agent asks of it (reasoning it cannot replay, a
    /// hosted tool it lacks), or is not in the configured allowlist: refused at spawn (seed 004
    /// §1.3), not at the first ask.
    #[error("agent `{name}`: model `{model}` is not supported: {reason}")]
    UnsupportedModel {
        /// The agent.
        name: String,
        /// The model.
        model: String,
        /// Why.
        reason: String,
    },
    /// An agent with this name is already running.
    #[error("an agent named `{name}` is already running")]
    NameTaken {
        /// The name.
        name: String,
    },
    /// The agent's actor could not start.
    #[error("agent `{name}` could not start: {message}")]
    SpawnFailed {
        /// The agent.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// No virtual agent kind of this name is registered
    /// ([`RuntimeBuilder::virtual_kind`](crate::agent::RuntimeBuilder::virtual_kind)).
    #[error("no virtual agent kind `{kind}` is registered")]
    UnknownKind {
        /// The kind asked for.
        kind: String,
    },
    /// The agent is not running.
    #[error("agent `{name}` is not running")]
    NotRunning {
        /// The agent.
        name: String,
    },
    /// In a cluster: another live node hosts the agent (it holds its lease), at `address`.
    #[error("agent `{name}` is hosted by node {node} (at {address})")]
    Elsewhere {
        /// The agent.
        name: String,
        /// The node hosting it.
        node: String,
        /// Where that node is reached.
        address: String,
    },
    /// In a cluster: this node may not host the agent now (it has not joined yet, its
    /// membership is in doubt or gone, or it is draining).
    #[error("agent `{name}` cannot be hosted on this node now: {reason}")]
    NotHosting {
        /// The agent.
        name: String,
        /// Why.
        reason: String,
    },
    /// The cluster configuration cannot work (a store that keeps no leases).
    #[error("the cluster cannot start: {message}")]
    Cluster {
        /// Why.
        message: String,
    },
    /// The thread store failed.
    #[error("the thread store failed: {0}")]
    Store(#[source] StoreFailure),
    /// A signal the runtime was to send could not be built (its data does not serialize, or
    /// an id is not a valid one).
    #[error("the signal could not be built: {0}")]
    Signal(#[source] motet_signals::SignalError),
    /// A steer must say something.
    #[error("a steer of request {request} says nothing")]
    EmptySteer {
        /// The request.
        request: String,
    },
    /// The request is not running, so there is nothing to steer (it waits its turn, or ended).
    #[error("request {request} is {status:?}, not running: there is nothing to steer")]
    RequestNotRunning {
        /// The request.
        request: String,
        /// Where it is.
        status: super::RequestStatus,
    },
    /// A response for a request that waits for no person.
    #[error("request {request} waits for no person: there is nothing to answer")]
    RequestNotPaused {
        /// The request.
        request: String,
    },
    /// A response naming a tool call the request never made or never paused.
    #[error(
        "request {request} has no tool call `{tool_call_id}` waiting for a person (it waits on: {})",
        waiting.join(", ")
    )]
    UnknownCall {
        /// The request.
        request: String,
        /// The call named.
        tool_call_id: String,
        /// The calls that do wait.
        waiting: Vec<String>,
    },
    /// A response for a call that no longer waits: answered already (or ended with its
    /// request), or one that ran without waiting.
    #[error(
        "tool call `{tool_call_id}` of request {request} does not wait for a person: it was answered already or has run"
    )]
    AlreadyAnswered {
        /// The request.
        request: String,
        /// The call.
        tool_call_id: String,
    },
    /// A response that does not fit what the call waits for (an approval for a question, an
    /// answer for an approval).
    #[error("tool call `{tool_call_id}` waits for {waits_for}; `{response}` does not answer it")]
    WrongResponse {
        /// The call.
        tool_call_id: String,
        /// What it waits for (`approval` or `question`).
        waits_for: &'static str,
        /// The response's kind.
        response: &'static str,
    },
    /// Edited arguments that are not a JSON object.
    #[error("the edited arguments of tool call `{tool_call_id}` are not a JSON object: {message}")]
    InvalidEdit {
        /// The call.
        tool_call_id: String,
        /// What is wrong with them.
        message: String,
    },
    /// No thread of this id is stored (nor running).
    #[error("no thread `{thread}`")]
    UnknownThread {
        /// The thread's id in the store (`<agent>/<thread>`).
        thread: String,
    },
    /// The thread cannot do what was asked of it (a fork at a seq past its end).
    #[error("thread `{thread}`: {source}")]
    Thread {
        /// The thread's id in the store (`<agent>/<thread>`).
        thread: String,
        /// What the thread refused.
        source: motet_agents::ThreadError,
    },
}

/// Why an ask got no answer. Its `Debug` is its reason, as its `Display` is: a failure reply
/// shows what it says, never the whole signal envelope (`main` returning an error prints
/// `Debug`).
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// No reply came within the timeout.
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    /// The agent stopped before replying.
    #[error("agent `{agent}` stopped before replying")]
    AgentStopped {
        /// The agent.
        agent: String,
    },
    /// The agent's thread failed while the request ran and was restarted; the request is not
    /// resumed (send it again).
    #[error("agent `{agent}` failed and was restarted before replying")]
    AgentRestarted {
        /// The agent.
        agent: String,
    },
    /// The strategy rejected the request.
    #[error("the strategy rejected the request: {message}")]
    Strategy {
        /// Its error.
        message: String,
    },
    /// The agent replied with a failure signal (e.g. `agent.failed`); its data says why.
    #[error("the request failed: {}", failure_reason(reply))]
    Failed {
        /// The failure signal.
        reply: Box<Signal>,
    },
    /// The thread's actor could not start — typically its stored history cannot be read. The
    /// thread is never replaced by a fresh, empty one.
    #[error("thread `{thread}` of agent `{agent}` is unavailable: {message}")]
    ThreadUnavailable {
        /// The agent.
        agent: String,
        /// The thread.
        thread: String,
        /// Why (the store's error, naming the thread).
        message: String,
    },
    /// The thread could not be stored or read back, so the request was not carried out.
    #[error("the thread could not be stored: {0}")]
    Store(#[source] StoreFailure),
    /// In a cluster: another node hosts the agent, and this one cannot reach it for the ask.
    #[error("agent `{agent}` is hosted by node {node} (at {address})")]
    Elsewhere {
        /// The agent.
        agent: String,
        /// The node hosting it.
        node: String,
        /// Where that node is reached.
        address: String,
    },
    /// The request signal carried no request id to match the reply by.
    #[error("an ask needs a request id")]
    NoRequestId,
    /// The request to carry on runs in this runtime already.
    #[error("request `{request}` is running already")]
    RequestRunning {
        /// The request.
        request: String,
    },
    /// The request to carry on ended in this runtime already (another caller carried it on
    /// to its end): there is nothing left of it to resume.
    #[error("request `{request}` has ended already")]
    RequestEnded {
        /// The request.
        request: String,
    },
    /// The request signal could not be built (its data does not serialize, or an id is not a
    /// valid one).
    #[error("the request could not be sent: {0}")]
    Send(#[source] motet_signals::SignalError),
}

impl AskError {
    /// A request signal that could not be built.
    pub(crate) fn send(error: motet_signals::SignalError) -> Self {
        Self::Send(error)
    }

    /// How an ask sees thread `thread` of `agent` that could not be reached (`error`): a
    /// thread that cannot start or be read is unavailable, anything else means the agent
    /// stopped.
    pub(crate) fn unreachable(agent: &str, thread: &str, error: RuntimeError) -> Self {
        match error {
            RuntimeError::SpawnFailed { message, .. } => Self::ThreadUnavailable {
                agent: agent.to_owned(),
                thread: thread.to_owned(),
                message,
            },
            RuntimeError::Store(failure) => Self::ThreadUnavailable {
                agent: agent.to_owned(),
                thread: thread.to_owned(),
                message: failure.to_string(),
            },
            RuntimeError::Elsewhere { node, address, .. } => Self::Elsewhere {
                agent: agent.to_owned(),
                node,
                address,
            },
            error @ RuntimeError::NotHosting { .. } => Self::ThreadUnavailable {
                agent: agent.to_owned(),
                thread: thread.to_owned(),
                message: error.to_string(),
            },
            _ => Self::AgentStopped {
                agent: agent.to_owned(),
            },
        }
    }
}

impl std::fmt::Debug for AskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AskError(\"{self}\")")
    }
}

/// What a failure reply says: ReAct's reason (`llm call failed: …`), else the `message` or
/// `reason` its data carries, else its type.
fn failure_reason(reply: &Signal) -> String {
    if let Ok(failed) = reply.data_as::<motet_agents::ReactFailed>() {
        return failed.reason.to_string();
    }
    let said = reply.data_as::<serde_json::Value>().ok().and_then(|data| {
        ["message", "reason", "error"]
            .iter()
            .find_map(|key| data.get(*key).and_then(|v| v.as_str()).map(str::to_owned))
    });
    said.unwrap_or_else(|| reply.signal_type().as_str().to_owned())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_store_failure_travels_with_its_variant_and_its_sources() {
        use crate::store::StoreError;
        let io = std::io::Error::other("disk on fire");
        let store = StoreError::Server {
            source: Box::new(io),
        };
        let error = RuntimeError::Store(store.into());
        let RuntimeError::Store(failure) = &error else {
            panic!("{error:?}");
        };
        assert!(matches!(failure.error(), StoreError::Server { .. }));
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        assert!(
            causes.iter().any(|c| c.contains("disk on fire")),
            "{causes:?}"
        );
        assert_eq!(error.clone(), error, "Clone and Eq still hold");
    }

    use super::*;

    fn failed(data: serde_json::Value) -> AskError {
        let reply = Signal::builder(motet_agents::AGENT_FAILED, "test")
            .with_request_id("r1")
            .with_data(data)
            .build()
            .unwrap_or_else(|e| unreachable!("{e}"));
        AskError::Failed {
            reply: Box::new(reply),
        }
    }

    #[test]
    fn a_failure_says_its_reason_in_display_and_debug_alike() {
        let error = failed(serde_json::json!({
            "request_id": "r1",
            "reason": {"kind": "llm", "error": {"kind": "invalid_request", "message": "MOTET_X_API_KEY is not set", "retryable": false}},
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }));
        let shown = error.to_string();
        assert!(shown.contains("MOTET_X_API_KEY is not set"), "{shown}");
        let debug = format!("{error:?}");
        assert!(debug.contains("MOTET_X_API_KEY is not set"), "{debug}");
        assert!(!debug.contains("specversion"), "{debug}");
        assert!(
            failed(serde_json::json!({"message": "too large"}))
                .to_string()
                .contains("too large")
        );
        assert!(
            failed(serde_json::json!(7))
                .to_string()
                .contains("agent.failed")
        );
    }
}
