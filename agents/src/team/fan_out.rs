//! [`FanOut`]: a request split into tasks for members (map), their answers joined into one
//! (reduce) under a [`Join`] rule, each member given a timeout.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use motet_directives::{Directive, Usage};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::ask::{Asker, Heard};
use super::gather::{AskView, Gather, Join, end_round};
use super::step::{Team, handle, on_copy};
use super::{MemberAnswer, TeamFailed, TeamFailure, joined};
use crate::env::Env;
use crate::error::StrategyError;
use crate::protocol::{AgentRequest, Input};
use crate::strategy::Strategy;

/// One member's part of a request: the agent asked, and the `agent.request` data it gets (its
/// `query`, and any fields of the team's own beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The member's agent name.
    pub agent: String,
    /// What it is asked.
    pub query: String,
    /// More `agent.request` fields for a member that reads them (ReAct ignores them).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl Task {
    /// Ask `agent` `query`.
    pub fn new(agent: impl Into<String>, query: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            query: query.into(),
            fields: serde_json::Map::new(),
        }
    }

    /// The same task with `name: value` in its request's data.
    pub fn with_field(mut self, name: impl Into<String>, value: serde_json::Value) -> Self {
        self.fields.insert(name.into(), value);
        self
    }

    /// The `agent.request` data.
    pub(crate) fn data(&self) -> serde_json::Value {
        let mut data = self.fields.clone();
        data.insert(
            "query".to_owned(),
            serde_json::Value::from(self.query.as_str()),
        );
        serde_json::Value::Object(data)
    }
}

type Split = Arc<dyn Fn(&AgentRequest, &[String]) -> Vec<Task> + Send + Sync>;
type Reduce = Arc<dyn Fn(&[MemberAnswer]) -> String + Send + Sync>;
type Reassign = Arc<dyn Fn(&Task, &[String]) -> Option<Task> + Send + Sync>;

/// Map-reduce over members: each request is split into [`Task`]s (by default the same query to
/// every member), sent at once, and the answers joined ([`joined`] by default) once the
/// [`Join`] rule says the round is over. With [`with_attempts`](FanOut::with_attempts), a task
/// whose member failed (or timed out) is asked again — of the member
/// [`with_reassign`](FanOut::with_reassign) picks — before it counts as failed.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use motet_agents::team::{FanOut, Join, Task};
///
/// let team = FanOut::new(["en", "fr", "de"])
///     .with_split(|request, members| {
///         members.iter().map(|m| Task::new(m, format!("Translate into {m}: {}", request.query))).collect()
///     })
///     .with_join(Join::AtLeast(2))
///     .with_timeout(Duration::from_secs(30))
///     .with_attempts(2);
/// assert_eq!(team.members(), ["en", "fr", "de"]);
/// ```
#[derive(Clone)]
pub struct FanOut {
    members: Vec<String>,
    split: Split,
    reduce: Reduce,
    reassign: Reassign,
    join: Join,
    timeout: Option<Duration>,
    attempts: u32,
    window: Option<usize>,
}

impl fmt::Debug for FanOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanOut")
            .field("members", &self.members)
            .field("join", &self.join)
            .field("timeout", &self.timeout)
            .field("attempts", &self.attempts)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl FanOut {
    /// A fan-out to `members` (agent names): every one asked the request's query, all must
    /// answer, no timeout, one attempt each.
    pub fn new<I: IntoIterator<Item = impl Into<String>>>(members: I) -> Self {
        Self {
            members: members.into_iter().map(Into::into).collect(),
            split: Arc::new(|request, members| {
                members
                    .iter()
                    .map(|m| Task::new(m, &request.query))
                    .collect()
            }),
            reduce: Arc::new(joined),
            reassign: Arc::new(|task, up| up.contains(&task.agent).then(|| task.clone())),
            join: Join::All,
            timeout: None,
            attempts: 1,
            window: None,
        }
    }

    /// Splits each request into tasks (the map), given the members.
    pub fn with_split(
        mut self,
        split: impl Fn(&AgentRequest, &[String]) -> Vec<Task> + Send + Sync + 'static,
    ) -> Self {
        self.split = Arc::new(split);
        self
    }

    /// Joins the answers into the team's answer (the reduce).
    pub fn with_reduce(
        mut self,
        reduce: impl Fn(&[MemberAnswer]) -> String + Send + Sync + 'static,
    ) -> Self {
        self.reduce = Arc::new(reduce);
        self
    }

    /// The rule for how many answers the round needs.
    pub fn with_join(mut self, join: Join) -> Self {
        self.join = join;
        self
    }

    /// How long each member has to answer; past it its ask fails and it is cancelled.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks for each task at most `attempts` times in all (at least once): a failed or timed
    /// out ask is asked again, as [`with_reassign`](Self::with_reassign) says, before the join
    /// rule counts it as failed. Default 1.
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// Picks the next attempt of a failed task — given the task as last asked and the members
    /// still up (not [gone](Self::member_gone)) — or `None` to give it up. Default: the same
    /// task of the same member, while it is up.
    pub fn with_reassign(
        mut self,
        reassign: impl Fn(&Task, &[String]) -> Option<Task> + Send + Sync + 'static,
    ) -> Self {
        self.reassign = Arc::new(reassign);
        self
    }

    /// Asks at most `window` (at least 1) tasks at once: the rest wait, in task order, and
    /// each answer or failure lets the next one go (a task asked again keeps its place). For
    /// members that are costly to have busy at once — virtual agents under a cap, a shared
    /// model. A member's timeout counts from when it is asked. Default: every task at once.
    pub fn with_window(mut self, window: usize) -> Self {
        self.window = Some(window.max(1));
        self
    }

    /// The members, by agent name.
    pub fn members(&self) -> &[String] {
        &self.members
    }
}

/// A [`FanOut`]'s state: the open request's round, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanOutState {
    open: Option<(Asker, Gather)>,
    /// The open round's tasks as last asked, kept when a task may be asked again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tasks: Vec<Task>,
    /// Members that stopped for good: nothing more is asked of them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    gone: BTreeSet<String>,
}

impl FanOutState {
    /// Whether a request is open.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// The open round's asks, in task order (a task asked again shows its latest ask).
    pub fn asks(&self) -> Vec<AskView<'_>> {
        self.open
            .as_ref()
            .map(|(_, gather)| gather.asks().collect())
            .unwrap_or_default()
    }

    /// The open round's ask made as request `request_id`, while it is the latest of its task.
    pub fn ask(&self, request_id: &str) -> Option<AskView<'_>> {
        let (_, gather) = self.open.as_ref()?;
        gather.asks().find(|a| a.request_id == request_id)
    }
}

impl Strategy for FanOut {
    type State = FanOutState;

    fn init(&self, _env: &dyn Env) -> FanOutState {
        FanOutState::default()
    }

    fn handle(
        &self,
        state: &mut FanOutState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        handle(self, state, signal, env)
    }
}

impl Team for FanOut {
    type State = FanOutState;

    fn round(state: &mut FanOutState) -> &mut Option<(Asker, Gather)> {
        &mut state.open
    }

    fn request(
        &self,
        state: &mut FanOutState,
        request: AgentRequest,
        asker: Asker,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let tasks = (self.split)(&request, &self.members);
        self.begin(state, asker, tasks, env)
    }

    fn other(
        &self,
        state: &mut FanOutState,
        _input: Input<'_>,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some((_, gather)) = state.open.as_mut() else {
            return Ok(Vec::new());
        };
        match gather.take_slot(signal, env)? {
            Some((slot, out)) => self.settled(state, slot, out, env),
            None => Ok(Vec::new()),
        }
    }

    fn ended(state: &mut FanOutState) {
        state.tasks.clear();
    }
}

impl FanOut {
    /// Starts a round for the request `request` names, with `tasks` made by the caller rather
    /// than the split: for a strategy that runs a fan-out inside its own (its reply is the
    /// `Reply` among the directives this and the calls after it return).
    ///
    /// # Errors
    /// [`StrategyError::InvalidData`] for a signal with no request id; a signal that cannot be
    /// built.
    pub fn start(
        &self,
        state: &mut FanOutState,
        request: &Signal,
        tasks: Vec<Task>,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let asker = Asker::of(request)?;
        if let Some((open, _)) = &state.open {
            let failure = TeamFailure::Busy {
                active_request_id: open.request_id.clone(),
            };
            return Ok(vec![
                asker.failed(env, TeamFailed::new(failure, Usage::default()))?,
            ]);
        }
        on_copy(state, |next| self.begin(next, asker, tasks, env))
    }

    /// The member of ask `request_id` lost it (its thread restarted, say): the ask fails with
    /// `reason`, and is asked again when attempts are left. Nothing for an ask that is not
    /// open.
    ///
    /// # Errors
    /// A signal that cannot be built.
    pub fn lost(
        &self,
        state: &mut FanOutState,
        request_id: &str,
        reason: &str,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        on_copy(state, |next| self.fail_ask(next, request_id, reason, env))
    }

    /// Member `agent` stopped for good: nothing more is asked of it, and its open asks fail
    /// with `reason` (asked again of another member when attempts are left).
    ///
    /// # Errors
    /// A signal that cannot be built.
    pub fn member_gone(
        &self,
        state: &mut FanOutState,
        agent: &str,
        reason: &str,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        on_copy(state, |next| {
            next.gone.insert(agent.to_owned());
            let theirs: Vec<String> = next
                .asks()
                .iter()
                .filter(|a| a.open && !a.queued && a.agent == agent)
                .map(|a| a.request_id.to_owned())
                .collect();
            let mut out = Vec::new();
            for request_id in theirs {
                out.extend(self.fail_ask(next, &request_id, reason, env)?);
            }
            Ok(out)
        })
    }

    /// Asks every task, or fails at once when there is none or the rule cannot be met.
    fn begin(
        &self,
        state: &mut FanOutState,
        asker: Asker,
        tasks: Vec<Task>,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        if tasks.is_empty() {
            let failure = TeamFailure::NoRoute {
                message: "the split made no task".to_owned(),
            };
            return Ok(vec![
                asker.failed(env, TeamFailed::new(failure, Usage::default()))?,
            ]);
        }
        let mut gather = Gather::new(self.join, self.timeout);
        let mut out = Vec::new();
        for (k, task) in tasks.iter().enumerate() {
            let id = format!("{}.{k}", asker.request_id);
            if self.window.is_none_or(|window| k < window) {
                out.extend(gather.ask(&task.agent, id, &task.data(), env)?);
            } else {
                gather.queue(&task.agent, id);
            }
        }
        // A rule that cannot be met (more answers than tasks) fails at once.
        if let Some(end) = end_round(&asker, &mut gather, Usage::default(), &*self.reduce, env)? {
            return Ok(out.into_iter().chain(end).collect());
        }
        state.open = Some((asker, gather));
        let kept = self.attempts > 1 || self.window.is_some_and(|w| w < tasks.len());
        state.tasks = if kept { tasks } else { Vec::new() };
        Ok(out)
    }

    /// Ask `request_id` failed with `reason`, as if its member had said so.
    fn fail_ask(
        &self,
        state: &mut FanOutState,
        request_id: &str,
        reason: &str,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some((_, gather)) = state.open.as_mut() else {
            return Ok(Vec::new());
        };
        let heard = Heard::Failure {
            request_id: request_id.to_owned(),
            message: reason.to_owned(),
            usage: Usage::default(),
        };
        match gather.hear(heard) {
            Some((slot, out)) => self.settled(state, slot, out, env),
            None => Ok(Vec::new()),
        }
    }

    /// Slot `slot` settled (with `out` to do about it): asked again when it failed and may
    /// be, then the round ended when its rule says so.
    fn settled(
        &self,
        state: &mut FanOutState,
        slot: usize,
        mut out: Vec<Directive>,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some((asker, gather)) = state.open.as_mut() else {
            return Ok(out);
        };
        let attempt = gather
            .asks()
            .nth(slot)
            .map_or(u32::MAX, |a| a.attempt.saturating_add(1));
        if gather.failed(slot) && attempt < self.attempts {
            let up: Vec<String> = self
                .members
                .iter()
                .filter(|m| !state.gone.contains(*m))
                .cloned()
                .collect();
            let again = state
                .tasks
                .get(slot)
                .and_then(|task| (self.reassign)(task, &up));
            if let (Some(task), Some(place)) = (again, state.tasks.get_mut(slot)) {
                let id = format!("{}.{slot}.{attempt}", asker.request_id);
                out.extend(gather.again(slot, &task.agent, id, &task.data(), env)?);
                *place = task;
                return Ok(out);
            }
        }
        if let Some(end) = end_round(asker, gather, Usage::default(), &*self.reduce, env)? {
            out.extend(end);
            state.open = None;
            state.tasks.clear();
            return Ok(out);
        }
        out.extend(self.refill(state, env)?);
        Ok(out)
    }

    /// Asks the waiting tasks while the window has room: a task whose member has stopped goes
    /// to the member [`with_reassign`](Self::with_reassign) picks, or is given up (and the round
    /// ended when its rule says so).
    fn refill(
        &self,
        state: &mut FanOutState,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(window) = self.window else {
            return Ok(Vec::new());
        };
        let FanOutState { open, tasks, gone } = state;
        let mut out = Vec::new();
        while let Some((asker, gather)) = open.as_mut() {
            if gather.in_flight() >= window {
                break;
            }
            let Some(slot) = gather.next_queued() else {
                break;
            };
            let Some(task) = tasks.get(slot) else {
                break;
            };
            let task = if gone.contains(&task.agent) {
                let up: Vec<String> = self
                    .members
                    .iter()
                    .filter(|m| !gone.contains(*m))
                    .cloned()
                    .collect();
                (self.reassign)(task, &up).ok_or_else(|| task.agent.clone())
            } else {
                Ok(task.clone())
            };
            match task {
                Ok(task) => {
                    out.extend(gather.send_queued(slot, &task.agent, &task.data(), env)?);
                    if let Some(place) = tasks.get_mut(slot) {
                        *place = task;
                    }
                }
                Err(agent) => {
                    let failure = TeamFailure::Member {
                        agent,
                        message: "the member stopped before it was asked".to_owned(),
                    };
                    gather.give_up(slot, failure);
                    let reduce = &*self.reduce;
                    if let Some(end) = end_round(asker, gather, Usage::default(), reduce, env)? {
                        out.extend(end);
                        *open = None;
                        tasks.clear();
                    }
                }
            }
        }
        Ok(out)
    }
}
