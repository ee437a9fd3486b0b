//! A team's side of asking a member: the `agent.request` sent to its name, the cancel that
//! follows it when the team stops waiting, the reply heard back, and the team's own answer.

use motet_directives::{Directive, Emit, EmitTarget, Reply, Usage};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::{TeamCompleted, TeamFailed};
use crate::env::Env;
use crate::error::StrategyError;
use crate::protocol::{
    AGENT_CANCEL, AGENT_COMPLETED, AGENT_FAILED, AGENT_REQUEST, AgentCancel, AgentCompleted,
};
use crate::react::ReactFailed;

/// Where team signals say they come from.
const SOURCE: &str = "motet.team";

/// The team's own request, kept to answer from whichever signal ends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Asker {
    pub(crate) request_id: String,
    thread_id: Option<String>,
}

impl Asker {
    /// The request `signal` belongs to.
    pub(crate) fn of(signal: &Signal) -> Result<Self, StrategyError> {
        let request_id = signal
            .request_id()
            .ok_or_else(|| StrategyError::InvalidData {
                signal_type: signal.signal_type().as_str().to_owned(),
                message: "a team's request needs a request id".to_owned(),
            })?;
        Ok(Self {
            request_id: request_id.to_owned(),
            thread_id: signal.thread_id().map(str::to_owned),
        })
    }

    /// Ends the request with `done`.
    pub(crate) fn completed(
        &self,
        env: &dyn Env,
        done: TeamCompleted,
    ) -> Result<Directive, StrategyError> {
        self.reply(env, AGENT_COMPLETED, done)
            .map(|s| Directive::Reply(Reply::completed(s)))
    }

    /// Ends the request as failed.
    pub(crate) fn failed(
        &self,
        env: &dyn Env,
        failed: TeamFailed,
    ) -> Result<Directive, StrategyError> {
        self.reply(env, AGENT_FAILED, failed)
            .map(|s| Directive::Reply(Reply::failed(s)))
    }

    fn reply(
        &self,
        env: &dyn Env,
        signal_type: &str,
        data: impl Serialize,
    ) -> Result<Signal, StrategyError> {
        let mut builder = Signal::builder(signal_type, SOURCE)
            .with_id(env.fresh_id("sig"))
            .with_time(env.now())
            .with_request_id(&self.request_id)
            .with_data(data);
        if let Some(thread) = &self.thread_id {
            builder = builder.with_thread_id(thread);
        }
        builder.build().map_err(|e| emit_error(signal_type, e))
    }
}

/// One member's request: sent to `agent`, on a thread named after the request, so no two asks
/// share history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ask {
    pub(crate) agent: String,
    pub(crate) request_id: String,
}

impl Ask {
    /// The `agent.request` carrying `data` (an `AgentRequest`, or more fields beside its
    /// `query`), emitted to the member.
    pub(crate) fn send(
        &self,
        data: &serde_json::Value,
        env: &dyn Env,
    ) -> Result<Directive, StrategyError> {
        self.emit(AGENT_REQUEST, data, env)
    }

    /// An `agent.cancel` of the member's request: its work in flight stops.
    pub(crate) fn cancel(&self, reason: &str, env: &dyn Env) -> Result<Directive, StrategyError> {
        let data = AgentCancel {
            reason: Some(reason.to_owned()),
        };
        self.emit(AGENT_CANCEL, &data, env)
    }

    fn emit(
        &self,
        signal_type: &str,
        data: &impl Serialize,
        env: &dyn Env,
    ) -> Result<Directive, StrategyError> {
        let signal = Signal::builder(signal_type, SOURCE)
            .with_id(env.fresh_id("sig"))
            .with_time(env.now())
            .with_request_id(&self.request_id)
            .with_thread_id(&self.request_id)
            .with_data(data)
            .build()
            .map_err(|e| emit_error(signal_type, e))?;
        Ok(Directive::Emit(Emit {
            signal,
            target: EmitTarget::Agent(self.agent.clone()),
        }))
    }
}

/// A member's reply, as a team reads it from any strategy's `agent.completed` or
/// `agent.failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// It answered.
    Answer {
        /// The member's request.
        request_id: String,
        /// The answer's text.
        answer: String,
        /// What it used.
        usage: Usage,
    },
    /// It failed.
    Failure {
        /// The member's request.
        request_id: String,
        /// Why, as text.
        message: String,
        /// What it used.
        usage: Usage,
    },
}

impl Heard {
    /// The member's request this answers.
    pub fn request_id(&self) -> &str {
        match self {
            Self::Answer { request_id, .. } | Self::Failure { request_id, .. } => request_id,
        }
    }
}

/// The reply `signal` carries, or `None` when it is no reply (or names no request). A failure
/// reads ReAct's reason, or the `message` every `agent.failed` carries, or the data as JSON.
///
/// # Errors
/// [`StrategyError::InvalidData`] for an `agent.completed` without the protocol's `answer`.
pub fn heard(signal: &Signal) -> Result<Option<Heard>, StrategyError> {
    let Some(request_id) = signal.request_id().map(str::to_owned) else {
        return Ok(None);
    };
    match signal.signal_type().as_str() {
        AGENT_COMPLETED => {
            let done: AgentCompleted =
                signal.data_as().map_err(|e| StrategyError::InvalidData {
                    signal_type: AGENT_COMPLETED.to_owned(),
                    message: e.to_string(),
                })?;
            Ok(Some(Heard::Answer {
                request_id,
                answer: done.answer,
                usage: done.usage,
            }))
        }
        AGENT_FAILED => {
            let (message, usage) = match signal.data_as::<ReactFailed>() {
                Ok(failed) => (failed.reason.to_string(), failed.usage),
                Err(_) => {
                    let data: serde_json::Value = signal.data_as().unwrap_or_default();
                    let message = data
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .map_or_else(|| data.to_string(), str::to_owned);
                    let usage = data
                        .get("usage")
                        .and_then(|u| serde_json::from_value(u.clone()).ok())
                        .unwrap_or_default();
                    (message, usage)
                }
            };
            Ok(Some(Heard::Failure {
                request_id,
                message,
                usage,
            }))
        }
        _ => Ok(None),
    }
}

pub(crate) fn emit_error(signal_type: &str, error: impl ToString) -> StrategyError {
    StrategyError::Emit {
        signal_type: signal_type.to_owned(),
        message: error.to_string(),
    }
}
