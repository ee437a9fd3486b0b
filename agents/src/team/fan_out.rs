//! [`FanOut`]: a request split into tasks for members (map), their answers joined into one
//! (reduce) under a [`Join`] rule, each member given a timeout.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use motet_directives::{Directive, Usage};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::ask::Asker;
use super::gather::{Gather, Join, end_round};
use super::{MemberAnswer, TeamFailed, TeamFailure, common, joined};
use crate::env::Env;
use crate::error::StrategyError;
use crate::protocol::{AgentRequest, Input};
use crate::strategy::Strategy;

/// One member's part of a request: the agent asked, and the `agent.request` data it gets (its
/// `query`, and any fields of the team's own beside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Map-reduce over members: each request is split into [`Task`]s (by default the same query to
/// every member), sent at once, and the answers joined ([`joined`] by default) once the
/// [`Join`] rule says the round is over.
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
///     .with_timeout(Duration::from_secs(30));
/// assert_eq!(team.members(), ["en", "fr", "de"]);
/// ```
#[derive(Clone)]
pub struct FanOut {
    members: Vec<String>,
    split: Split,
    reduce: Reduce,
    join: Join,
    timeout: Option<Duration>,
}

impl fmt::Debug for FanOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanOut")
            .field("members", &self.members)
            .field("join", &self.join)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl FanOut {
    /// A fan-out to `members` (agent names): every one asked the request's query, all must
    /// answer, no timeout.
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
            join: Join::All,
            timeout: None,
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

    /// The members, by agent name.
    pub fn members(&self) -> &[String] {
        &self.members
    }
}

/// A [`FanOut`]'s state: the open request's round, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanOutState {
    open: Option<(Asker, Gather)>,
}

impl FanOutState {
    /// Whether a request is open.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
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
        let mut next = state.clone();
        let out = self.step(&mut next, signal, env)?;
        *state = next;
        Ok(out)
    }
}

impl FanOut {
    fn step(
        &self,
        state: &mut FanOutState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let input = Input::of(signal)?;
        if let Some(out) = common(&mut state.open, &input, signal, env)? {
            return Ok(out);
        }
        if let Input::Request(request) = &input {
            let asker = Asker::of(signal)?;
            let tasks = (self.split)(request, &self.members);
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
                out.extend(gather.ask(&task.agent, id, &task.data(), env)?);
            }
            // A rule that cannot be met (more answers than tasks) fails at once.
            if let Some(end) = end_round(&asker, &mut gather, Usage::default(), &*self.reduce, env)?
            {
                return Ok(out.into_iter().chain(end).collect());
            }
            state.open = Some((asker, gather));
            return Ok(out);
        }
        let Some((asker, gather)) = state.open.as_mut() else {
            return Ok(Vec::new());
        };
        let Some(mut out) = gather.take(signal, env)? else {
            return Ok(Vec::new());
        };
        if let Some(end) = end_round(asker, gather, Usage::default(), &*self.reduce, env)? {
            out.extend(end);
            state.open = None;
        }
        Ok(out)
    }
}
