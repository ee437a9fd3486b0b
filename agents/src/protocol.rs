//! The runtime ↔ strategy protocol: what every agent is sent, whatever its strategy, and how it
//! answers. The runtime owns this vocabulary; ReAct is one strategy that speaks it.
//!
//! | signal | sent when | payload |
//! |---|---|---|
//! | `agent.request` | a caller asks ([`AgentHandle::ask`]) | [`AgentRequest`] |
//! | `agent.cancel` | a caller cancels, a wait times out, a newer request interrupts | [`AgentCancel`] |
//! | `agent.summarize` | a caller asks for a summary of a range of the thread | [`AgentSummarize`] |
//! | `agent.resume` | the runtime recovers a thread that stopped mid-request | [`AgentResume`] |
//! | `agent.steer` | a caller corrects the course of the request it names ([`Ticket::steer`]) | [`AgentSteer`] |
//! | `agent.respond` | a person answers a tool call the request waits on ([`Ticket::respond`]) | [`AgentRespond`] |
//! | `llm.result`, `tool.result`, ... | a directive's work is done | [`Outcome`] |
//!
//! Requests, summaries and resumes carry a request id; the runtime admits them one at a time
//! per thread (queueing, refusing or interrupting as the agent's request policy says). A
//! strategy ends a request with `Directive::Reply` — [`completed`] or [`failed`] build it —
//! and the runtime answers the caller with it. By convention the reply is an `agent.completed`
//! carrying at least [`AgentCompleted`]'s fields, or an `agent.failed`; any signal may be one.
//!
//! A strategy whose tool call waits for a person (`tool.paused`) announces it with an
//! `agent.waiting` signal ([`Waiting`]) and lists it through
//! [`Strategy::waiting`](crate::Strategy::waiting), which the runtime stores at each commit.
//!
//! [`Input::of`] decodes what arrives, so a strategy matches on types, not strings.
//!
//! [`AgentHandle::ask`]: https://docs.rs/motet-runtime
//! [`Ticket::steer`]: https://docs.rs/motet-runtime
//! [`Ticket::respond`]: https://docs.rs/motet-runtime
//! [`Outcome`]: motet_directives::results::Outcome

use motet_directives::results::Outcome;
use motet_directives::{Directive, Pause, Reply, Response, ToolArgs, Usage};
use motet_signals::Signal;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::StrategyError;
use crate::policy::{ContextPolicy, PolicyOverride};

/// A caller's question starts a request: [`AgentRequest`].
pub const AGENT_REQUEST: &str = "agent.request";
/// Cancels the request it names: [`AgentCancel`].
pub const AGENT_CANCEL: &str = "agent.cancel";
/// Summarizes a range of the thread, queued like a request: [`AgentSummarize`].
pub const AGENT_SUMMARIZE: &str = "agent.summarize";
/// Carries on with what a thread that stopped mid-request still owes: [`AgentResume`].
pub const AGENT_RESUME: &str = "agent.resume";
/// Adds a user message to the request it names, taken in at its next turn boundary:
/// [`AgentSteer`].
pub const AGENT_STEER: &str = "agent.steer";
/// Sets (or clears) the agent's context policy on a thread — the layer between the request's
/// override and the strategy's configured policy — queued like a request: [`AgentPolicy`].
pub const AGENT_POLICY: &str = "agent.policy";
/// A person answers a tool call the request it names waits on: [`AgentRespond`].
pub const AGENT_RESPOND: &str = "agent.respond";
/// Announces a tool call that waits for a person: [`Waiting`]. Published on the bus, with the
/// request's id and thread.
pub const AGENT_WAITING: &str = "agent.waiting";
/// Published by the runtime when a thread's new entries are committed: [`ThreadUpdated`].
pub const THREAD_UPDATED: &str = "thread.updated";
/// The conventional reply of a request that succeeded: [`AgentCompleted`] (and more).
pub const AGENT_COMPLETED: &str = "agent.completed";
/// The conventional reply of a request that failed; its data says why.
pub const AGENT_FAILED: &str = "agent.failed";

/// Data of `agent.request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRequest {
    /// What the caller asks.
    pub query: String,
    /// Changes to the context policy for this request only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_policy: Option<PolicyOverride>,
    /// The shape the answer must have (structured output), for strategies that can give it:
    /// ReAct asks its calls for it and checks the answer against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<motet_directives::ResponseFormat>,
    /// Images, documents or audio sent with the query: the user message is the query's text
    /// then these, in order. Absent from the signal when there are none.
    #[serde(
        default,
        skip_serializing_if = "motet_directives::Attachments::is_empty"
    )]
    pub attachments: motet_directives::Attachments,
}

/// Data of `agent.cancel` (may be absent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCancel {
    /// Why, for the failure report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Data of `agent.steer`: what the person adds. The strategy takes it in as a user message at
/// the request's next turn boundary — after the results of the tool calls it waits for, before
/// its next LLM call — never between a tool call and its result; several keep their order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSteer {
    /// The message.
    pub text: String,
}

/// Data of `agent.policy`: the agent's context policy from now on (`None` clears it, so the
/// strategy's configured policy applies again). The strategy replies `agent.completed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentPolicy {
    /// The policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_policy: Option<ContextPolicy>,
}

/// Data of `thread.updated` (seed 002): a thread's commit reached the store, so a UI or a
/// supervisor can follow the conversation without reading the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadUpdated {
    /// The stored thread's id.
    pub thread_id: String,
    /// The agent that runs it.
    pub agent: String,
    /// The thread's stored revision (its entry count) after the commit.
    pub rev: u64,
    /// Entries this commit added.
    pub appended: u64,
    /// Estimated tokens of the whole thread.
    pub estimated_tokens: u64,
}

/// Data of `agent.respond`: a person's answer to the tool call `tool_call_id` of the request
/// the signal names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRespond {
    /// The model's id of the call.
    pub tool_call_id: String,
    /// The answer.
    pub response: Response,
    /// Who answered, for the thread's record (`deadline` when the call's deadline did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// A tool call that waits for a person: announced as `agent.waiting`, listed by the runtime
/// (per thread, per agent, runtime-wide) and answered with [`AgentRespond`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    /// The agent (filled by the runtime; empty as a strategy writes it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent: String,
    /// The thread (filled by the runtime; empty as a strategy writes it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thread: String,
    /// The request that waits.
    pub request_id: String,
    /// The model's id of the call.
    pub tool_call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments the model gave (a JSON object, as JSON text).
    pub args: ToolArgs,
    /// What the call waits for.
    pub pause: Pause,
    /// When the wait began (Unix milliseconds).
    pub since_ms: u64,
    /// When an unanswered approval expires (Unix milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

/// Data of `agent.summarize`: summarize entries `from_seq..=to_seq` into one summary entry,
/// which the projection then shows in their place. Answered like a request, the summary's text
/// as the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSummarize {
    /// First entry covered.
    pub from_seq: u64,
    /// Last entry covered (inclusive).
    pub to_seq: u64,
}

/// Data of `agent.resume` (may be absent): what the runtime knows that the pure strategy does
/// not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentResume {
    /// Tools safe to run twice: a call of one whose result is missing may run again (same
    /// tool-call id); any other's result is unknown.
    #[serde(default)]
    pub idempotent_tools: Vec<String>,
}

/// The fields every `agent.completed` carries; a strategy may add its own beside them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCompleted {
    /// The answer's text.
    pub answer: String,
    /// What the request's LLM calls used.
    #[serde(default)]
    pub usage: Usage,
}

/// A signal an agent received, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Input<'a> {
    /// `agent.request`.
    Request(AgentRequest),
    /// `agent.cancel`.
    Cancel(AgentCancel),
    /// `agent.summarize`.
    Summarize(AgentSummarize),
    /// `agent.resume`.
    Resume(AgentResume),
    /// `agent.steer`.
    Steer(AgentSteer),
    /// `agent.respond`.
    Respond(AgentRespond),
    /// `agent.policy`.
    Policy(AgentPolicy),
    /// The result of one of the strategy's directives.
    Outcome(Outcome),
    /// Anything else: a signal from the bus, another agent, a schedule.
    Other(&'a Signal),
}

impl<'a> Input<'a> {
    /// Decodes `signal`.
    ///
    /// # Errors
    /// [`StrategyError::InvalidData`] when its type is the protocol's but its data does not fit.
    pub fn of(signal: &'a Signal) -> Result<Self, StrategyError> {
        if let Some(outcome) = Outcome::of(signal) {
            return outcome
                .map(Input::Outcome)
                .map_err(|e| invalid(signal, &e.to_string()));
        }
        Ok(match signal.signal_type().as_str() {
            AGENT_REQUEST => Input::Request(decode(signal)?),
            AGENT_CANCEL => Input::Cancel(decode_or_default(signal)?),
            AGENT_SUMMARIZE => Input::Summarize(decode(signal)?),
            AGENT_RESUME => Input::Resume(decode_or_default(signal)?),
            AGENT_STEER => Input::Steer(decode(signal)?),
            AGENT_RESPOND => Input::Respond(decode(signal)?),
            AGENT_POLICY => Input::Policy(decode_or_default(signal)?),
            _ => Input::Other(signal),
        })
    }
}

/// Whether signals of type `signal_type` start a request on a thread (and so queue behind the
/// running one): requests, summaries, resumes and policy changes (so a policy never changes
/// in the middle of a request).
pub fn starts_request(signal_type: &str) -> bool {
    matches!(
        signal_type,
        AGENT_REQUEST | AGENT_SUMMARIZE | AGENT_RESUME | AGENT_POLICY
    )
}

/// Ends the request `cause` belongs to with `answer`: an `agent.completed` reply on its thread.
///
/// # Errors
/// [`StrategyError::Emit`] when the reply cannot be built (`cause` names no request).
pub fn completed(
    cause: &Signal,
    env: &dyn Env,
    answer: impl Into<String>,
    usage: Usage,
) -> Result<Directive, StrategyError> {
    let data = AgentCompleted {
        answer: answer.into(),
        usage,
    };
    reply_signal(cause, env, AGENT_COMPLETED, data).map(|s| Directive::Reply(Reply::completed(s)))
}

/// Ends the request `cause` belongs to as failed: an `agent.failed` reply whose data is
/// `{"message": why}`.
///
/// # Errors
/// [`StrategyError::Emit`] when the reply cannot be built (`cause` names no request).
pub fn failed(
    cause: &Signal,
    env: &dyn Env,
    why: impl Into<String>,
) -> Result<Directive, StrategyError> {
    let data = serde_json::json!({ "message": why.into() });
    reply_signal(cause, env, AGENT_FAILED, data).map(|s| Directive::Reply(Reply::failed(s)))
}

/// A reply of `signal_type` to the request `cause` belongs to, on its thread.
fn reply_signal(
    cause: &Signal,
    env: &dyn Env,
    signal_type: &str,
    data: impl Serialize,
) -> Result<Signal, StrategyError> {
    let emit_error = |message: String| StrategyError::Emit {
        signal_type: signal_type.to_owned(),
        message,
    };
    let request = cause
        .request_id()
        .ok_or_else(|| emit_error(format!("`{}` names no request", cause.signal_type())))?;
    let mut builder = Signal::builder(signal_type, "motet.agent")
        .with_id(env.fresh_id("sig"))
        .with_time(env.now())
        .caused_by(cause)
        .with_request_id(request)
        .with_data(data);
    if let Some(thread) = cause.thread_id() {
        builder = builder.with_thread_id(thread);
    }
    builder.build().map_err(|e| emit_error(e.to_string()))
}

fn invalid(signal: &Signal, message: &str) -> StrategyError {
    StrategyError::InvalidData {
        signal_type: signal.signal_type().as_str().to_owned(),
        message: message.to_owned(),
    }
}

fn decode<T: DeserializeOwned>(signal: &Signal) -> Result<T, StrategyError> {
    signal
        .data_as()
        .map_err(|e| invalid(signal, &e.to_string()))
}

fn decode_or_default<T: DeserializeOwned + Default>(signal: &Signal) -> Result<T, StrategyError> {
    if signal.data().is_none() {
        return Ok(T::default());
    }
    decode(signal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::FixedEnv;

    fn signal(signal_type: &str, data: Option<serde_json::Value>) -> Signal {
        let mut builder = Signal::builder(signal_type, "test")
            .with_id("s1")
            .with_request_id("r1")
            .with_thread_id("t1");
        if let Some(data) = data {
            builder = builder.with_data(data);
        }
        builder.build().expect("a valid signal")
    }

    #[test]
    fn the_protocols_signals_decode_to_their_payloads() {
        let request = signal(AGENT_REQUEST, Some(serde_json::json!({"query": "hi"})));
        assert_eq!(
            Input::of(&request).expect("decodes"),
            Input::Request(AgentRequest {
                attachments: Default::default(),
                query: "hi".into(),
                context_policy: None,
                response_format: None,
            })
        );
        let cancel = signal(AGENT_CANCEL, None);
        assert_eq!(
            Input::of(&cancel).expect("decodes"),
            Input::Cancel(AgentCancel::default())
        );
        let resume = signal(AGENT_RESUME, None);
        assert_eq!(
            Input::of(&resume).expect("decodes"),
            Input::Resume(AgentResume::default())
        );
        let summarize = signal(
            AGENT_SUMMARIZE,
            Some(serde_json::json!({"from_seq": 1, "to_seq": 4})),
        );
        assert_eq!(
            Input::of(&summarize).expect("decodes"),
            Input::Summarize(AgentSummarize {
                from_seq: 1,
                to_seq: 4
            })
        );
        let other = signal("swarm.task", None);
        assert_eq!(Input::of(&other).expect("decodes"), Input::Other(&other));
    }

    #[test]
    fn a_protocol_signal_with_the_wrong_data_is_a_typed_error() {
        for bad in [
            signal(AGENT_REQUEST, Some(serde_json::json!({"question": "hi"}))),
            signal(AGENT_REQUEST, None),
            signal(AGENT_CANCEL, Some(serde_json::json!({"reason": 7}))),
            signal("llm.result", Some(serde_json::json!(3))),
        ] {
            match Input::of(&bad) {
                Err(StrategyError::InvalidData { signal_type, .. }) => {
                    assert_eq!(signal_type, bad.signal_type().as_str());
                }
                other => panic!("{}: {other:?}", bad.signal_type()),
            }
        }
    }

    #[test]
    fn replies_answer_the_request_of_their_cause_on_its_thread() {
        let env = FixedEnv::new(0);
        let cause = signal(AGENT_REQUEST, Some(serde_json::json!({"query": "hi"})));
        let Directive::Reply(reply) =
            completed(&cause, &env, "hello", Usage::default()).expect("builds")
        else {
            panic!("a reply");
        };
        assert_eq!(reply.status, motet_directives::ReplyStatus::Completed);
        assert_eq!(reply.signal.signal_type().as_str(), AGENT_COMPLETED);
        assert_eq!(reply.signal.request_id(), Some("r1"));
        assert_eq!(reply.signal.thread_id(), Some("t1"));
        let done: AgentCompleted = reply.signal.data_as().expect("its payload");
        assert_eq!(done.answer, "hello");

        let Directive::Reply(reply) = failed(&cause, &env, "no").expect("builds") else {
            panic!("a reply");
        };
        assert_eq!(reply.status, motet_directives::ReplyStatus::Failed);
        assert_eq!(reply.signal.signal_type().as_str(), AGENT_FAILED);
    }

    #[test]
    fn a_reply_needs_a_request_to_answer() {
        let env = FixedEnv::new(0);
        let cause = Signal::builder("tick", "test")
            .with_id("s2")
            .build()
            .expect("a valid signal");
        assert!(matches!(
            completed(&cause, &env, "x", Usage::default()),
            Err(StrategyError::Emit { .. })
        ));
    }
}
