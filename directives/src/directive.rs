//! What a strategy asks the runtime to do: one payload struct per directive.
//!
//! Every directive that produces a result carries the id its result signal echoes
//! ([`CallId`] for LLM calls, tool runs and summaries; [`ScheduleId`] for timers), so the
//! strategy can match a result to its request and ignore stale or duplicated ones.

use std::fmt;
use std::time::Duration;

use arcstr::ArcStr;
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use crate::request::LlmRequest;
use crate::tool::ToolArgs;

/// Correlates a directive with the signal that reports its result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallId(ArcStr);

impl CallId {
    /// A call id (the strategy takes fresh ones from its environment).
    pub fn new(id: impl Into<ArcStr>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id's text, shared rather than copied (what a thread entry's refs hold).
    pub fn shared(&self) -> ArcStr {
        ArcStr::clone(&self.0)
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Names a scheduled signal so it can be cancelled.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ScheduleId(String);

impl ScheduleId {
    /// A schedule id.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ScheduleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A description of work for the runtime. The runtime executes it and reports every result
/// back to the agent as a signal; the strategy itself never performs IO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "directive", rename_all = "snake_case")]
#[allow(
    clippy::large_enum_variant,
    reason = "a directive is built once and moved into its execution; boxing the LLM call, the \
              common one, would add an allocation per call and a `Box` to every strategy"
)]
pub enum Directive {
    /// Stream an LLM call; the result arrives as `llm.result` or `llm.failed`.
    LlmStream(LlmStream),
    /// Run a tool; the result arrives as `tool.result` (a failure is an error result the model
    /// reads).
    ToolExec(ToolExec),
    /// Summarize a range of the thread with the LLM call the strategy built; the strategy
    /// commits the summary entry when the result comes back.
    Summarize(Summarize),
    /// Send a signal somewhere.
    Emit(Emit),
    /// Answer a request: it ends, and the answer goes to whoever asked and onto the bus.
    Reply(Reply),
    /// Start a child agent under this agent's supervisor.
    Spawn(Spawn),
    /// Stop a child agent.
    StopChild(StopChild),
    /// Deliver a signal to this agent after a delay.
    Schedule(Schedule),
    /// Deliver a signal to this agent at every occurrence of a cron expression.
    Cron(Cron),
    /// Cancel a scheduled signal that has not fired yet, or a cron timer.
    CancelSchedule(CancelSchedule),
    /// Stop the actor of the thread handling the signal.
    Stop(Stop),
}

impl Directive {
    /// The directive's kind as a short name (`llm_stream`, `tool_exec`, ...), for logs and spans.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::LlmStream(_) => "llm_stream",
            Self::ToolExec(_) => "tool_exec",
            Self::Summarize(_) => "summarize",
            Self::Emit(_) => "emit",
            Self::Reply(_) => "reply",
            Self::Spawn(_) => "spawn",
            Self::StopChild(_) => "stop_child",
            Self::Schedule(_) => "schedule",
            Self::Cron(_) => "cron",
            Self::CancelSchedule(_) => "cancel_schedule",
            Self::Stop(_) => "stop",
        }
    }
}

/// Stream one LLM call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmStream {
    /// Echoed by `llm.result` / `llm.failed`.
    pub call_id: CallId,
    /// Model, projected messages, tools, tool choice and options.
    pub request: LlmRequest,
    /// Soft budget limits a person approved going past for this call's request (one per level
    /// and measure, the latest step): the runtime admits the call past each, up to the next
    /// step or the hard limit. Never set one nobody approved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_approved: Vec<crate::budget::SoftLimit>,
}

impl LlmStream {
    /// A call of `request`, echoed as `call_id`, with no budget approval.
    pub fn new(call_id: CallId, request: LlmRequest) -> Self {
        Self {
            call_id,
            request,
            budget_approved: Vec::new(),
        }
    }

    /// Carries the soft limits a person approved for the call's request.
    pub fn with_budget_approved(mut self, approved: Vec<crate::budget::SoftLimit>) -> Self {
        self.budget_approved = approved;
        self
    }
}

/// Run one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolExec {
    /// Echoed by `tool.result`.
    pub call_id: CallId,
    /// The model's id for this call; the result carries it back to the model.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// Raw arguments, parsed only by the tool.
    pub args: ToolArgs,
    /// A person approved this call (as the args now stand): it runs even when its tool needs
    /// approval. Never set it for a call nobody approved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
}

impl ToolExec {
    /// A call of tool `name`, answering the model's call `tool_call_id`.
    pub fn new(
        call_id: CallId,
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        args: ToolArgs,
    ) -> Self {
        Self {
            call_id,
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            args,
            approved: false,
        }
    }

    /// The same call, approved by a person.
    pub fn approved(mut self) -> Self {
        self.approved = true;
        self
    }
}

/// Summarize entries `from_seq..=to_seq` of a thread (seed 001 §8) with the call the strategy
/// built: its instructions and the range's transcript are the strategy's (see
/// `motet_agents::summary_request`), the runtime only streams it and answers `summary.result`
/// or `summary.failed`.
///
/// Directives are executed, never stored, so this shape has no older one to read: a
/// `Summarize` with `model` and `instructions` in place of `request` (before the strategy
/// built the call) does not deserialize.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summarize {
    /// Echoed by the result signal.
    pub call_id: CallId,
    /// The thread summarized.
    pub thread_id: String,
    /// First entry covered.
    pub from_seq: u64,
    /// Last entry covered (inclusive).
    pub to_seq: u64,
    /// The summary call: model, instructions and transcript.
    pub request: LlmRequest,
}

/// Where an emitted signal goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "to", content = "name", rename_all = "snake_case")]
pub enum EmitTarget {
    /// Published on the bus, to every subscription whose pattern matches.
    Bus,
    /// Straight to one agent, by name or id.
    Agent(String),
    /// To every member of a named group.
    Group(String),
    /// To this agent's parent.
    Parent,
}

/// Send a signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Emit {
    /// The signal (the runtime links it to the signal being handled: correlation, causation and
    /// trace context).
    pub signal: Signal,
    /// Where it goes.
    pub target: EmitTarget,
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyStatus {
    /// It did what was asked.
    Completed,
    /// It could not (refused, failed, cancelled); the asker gets an error carrying the answer.
    Failed,
}

/// Answer the request named by the signal's request id: the request ends with `status`, the
/// signal reaches whoever asked (as the reply, or inside the error for a failure) and is
/// published on the bus. A strategy says "this answers the caller" with a `Reply`, never by the
/// type of a signal it emits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// How the request ended.
    pub status: ReplyStatus,
    /// The answer; it must carry the request id it answers.
    pub signal: Signal,
}

impl Reply {
    /// The request succeeded with `signal`.
    pub fn completed(signal: Signal) -> Self {
        Self {
            status: ReplyStatus::Completed,
            signal,
        }
    }

    /// The request failed; `signal` says why.
    pub fn failed(signal: Signal) -> Self {
        Self {
            status: ReplyStatus::Failed,
            signal,
        }
    }
}

/// What a child agent is: a registered agent kind, an optional name, and its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildSpec {
    /// The agent kind, as registered with the runtime.
    pub kind: String,
    /// A name to register the child under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Kind-specific configuration.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub config: serde_json::Value,
}

/// Start a child agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spawn {
    /// The parent's handle for this child (used by [`StopChild`]).
    pub tag: String,
    /// What to start.
    pub spec: ChildSpec,
}

/// Stop a child agent started with [`Spawn`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopChild {
    /// The tag given at spawn.
    pub tag: String,
    /// Why, for logs and traces.
    pub reason: String,
}

/// Deliver a signal to this agent after a delay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Names the timer for [`CancelSchedule`].
    pub schedule_id: ScheduleId,
    /// How long to wait.
    #[serde(with = "millis")]
    pub delay: Duration,
    /// What to deliver.
    pub signal: Signal,
}

/// Deliver a signal at every occurrence of a cron expression, until cancelled with
/// [`CancelSchedule`]. Each occurrence is a copy of `signal` with an id of its own
/// (`<signal id>@<occurrence in ms>`) and the occurrence's time; occurrences missed while
/// nothing ran are handled as `misfire` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cron {
    /// Names the timer for [`CancelSchedule`]; a `Schedule` or `Cron` of the same id replaces it.
    pub schedule_id: ScheduleId,
    /// When it fires.
    pub expr: crate::cron::CronExpr,
    /// The IANA time zone the expression's local times are in (`UTC`, `Europe/Berlin`).
    pub zone: String,
    /// What happens to occurrences missed while the runtime was down.
    #[serde(default)]
    pub misfire: crate::cron::Misfire,
    /// What to deliver at each occurrence.
    pub signal: Signal,
}

/// Cancel a timer set with [`Schedule`] or [`Cron`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelSchedule {
    /// The timer.
    pub schedule_id: ScheduleId,
}

/// Stop the actor of the thread handling the signal: its timers and running calls end with it.
/// The agent stays registered; a later signal for the thread starts it again from its stored
/// state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stop {
    /// Why, for logs and traces.
    pub reason: String,
}

/// Durations as whole milliseconds (`"delay_ms"`-style integers read better in logs than
/// serde's `{secs, nanos}`).
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// Optional durations as whole milliseconds.
pub(crate) mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|ms| ms.map(Duration::from_millis))
    }
}
